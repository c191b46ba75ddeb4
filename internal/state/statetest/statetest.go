// Package statetest holds the checks the policies' tests make of their
// snapshots (package state): a state no run reaches is refused, so that
// the service replays the history instead.
package statetest

import (
	"bytes"
	"encoding"
	"errors"
	"testing"

	"github.com/dpbandit/dpbandit/internal/state"
)

// Of returns p's snapshot and the state S it decodes to; an error fails t.
func Of[S any](t testing.TB, p encoding.BinaryMarshaler) ([]byte, S) {
	t.Helper()
	raw, err := p.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var st S
	if err := state.Decode(raw, &st); err != nil {
		t.Fatal(err)
	}
	return raw, st
}

// Policy is a policy that saves and restores its state.
type Policy interface {
	encoding.BinaryMarshaler
	encoding.BinaryUnmarshaler
}

// Refuses checks that p refuses each edit of its current state S with
// state.ErrMismatch (each edit is of a fresh copy, decoded anew, so that
// no edit reaches another through a shared slice), and then restores the
// state it was edited from, saving the same bytes again.
func Refuses[S any](t testing.TB, p Policy, edits map[string]func(*S)) {
	t.Helper()
	good, _ := Of[S](t, p)
	for name, edit := range edits {
		var bad S
		if err := state.Decode(good, &bad); err != nil {
			t.Fatal(err)
		}
		edit(&bad)
		raw, err := state.Encode(bad)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.UnmarshalBinary(raw); !errors.Is(err, state.ErrMismatch) {
			t.Errorf("%s: err %v, want state.ErrMismatch", name, err)
		}
	}
	if err := p.UnmarshalBinary(good); err != nil {
		t.Fatalf("the state the edits were made of: %v", err)
	}
	if again, _ := Of[S](t, p); !bytes.Equal(again, good) {
		t.Error("the restored state saves differently")
	}
}
