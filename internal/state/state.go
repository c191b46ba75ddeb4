// Package state encodes the state of a running policy for a snapshot:
// what changes as it runs, never its configuration, which a restore takes
// from the policy it is restored into (built anew from the same
// definition). A snapshot thus cannot change a policy's parameters, its
// privacy budget among them.
package state

import (
	"bytes"
	"encoding/gob"
	"errors"
	"fmt"
)

// ErrMismatch is returned when a snapshot does not fit the policy it is
// restored into (another size, another kind of policy).
var ErrMismatch = errors.New("state: the snapshot does not fit the policy")

// Encode returns v (a struct of exported fields) encoded with gob.
func Encode(v any) ([]byte, error) {
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(v); err != nil {
		return nil, fmt.Errorf("state: %w", err)
	}
	return b.Bytes(), nil
}

// Decode decodes data, written by Encode, into v (a pointer).
func Decode(data []byte, v any) error {
	if err := gob.NewDecoder(bytes.NewReader(data)).Decode(v); err != nil {
		return fmt.Errorf("%w: %v", ErrMismatch, err)
	}
	return nil
}

// Copy copies src into dst, which must have its length: a restore fills
// the slices the policy was built with, so that their sizes (arms,
// dimension) are the definition's and aliases between them hold.
func Copy[T any](dst, src []T, what string) error {
	if len(dst) != len(src) {
		return fmt.Errorf("%w: %s has %d entries, the policy %d", ErrMismatch, what, len(src), len(dst))
	}
	copy(dst, src)
	return nil
}
