// Package snapshot is the format of an experiment's snapshot, apart from
// the experiment that takes and restores it (service/engine): what a
// snapshot holds (Snapshot), the layout's number (Version), its encoding
// with a SHA-256 checksum (Encode) and the checks it passes before it is
// used (Decode; a failure is ErrBad), and where the history after it
// starts (Mark). When snapshots are taken, what is gathered into them
// under the experiment's lock, and the replay of the operations after
// one are the engine's (its snapshot.go and load.go; their order is
// package replay's).
//
// A snapshot is the gob encoding (internal/state) of a Snapshot. Gob
// matches fields by name: a snapshot stored by an earlier revision of the
// same Version loads as long as the fields keep their names and types,
// whatever package declares them (testdata/version2.hex, stored before
// this package existed, is decoded by the tests).
package snapshot

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"

	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/internal/state"
	"github.com/dpbandit/dpbandit/service/define"
	"github.com/dpbandit/dpbandit/service/importer"
	"github.com/dpbandit/dpbandit/service/outcome"
	"github.com/dpbandit/dpbandit/service/rules"
	"github.com/dpbandit/dpbandit/service/store"
)

// Version numbers the layout of Snapshot. Version 1 listed the seqs of
// the unreleased rewards (Unfreed), version 2 holds their span: a
// version-1 snapshot is not read, and its experiment replays its whole
// history once (docs/service.md, Upgrading).
const Version = 2

// Snapshot is what an experiment's snapshot holds.
type Snapshot struct {
	Version   int
	Algorithm string // the definition's, checked on load
	Seq       int64  // the last operation it includes
	Releases  int64  // releases recorded up to Seq
	Draws     int64  // random words recorded up to Seq
	Policy    []byte // the decider's state
	Counts    outcome.Counts
	Pulls     []int64
	Series    []outcome.Sample
	Recent    []store.Release
	Slots     []Slot     // the pending events' tickets
	Unfreed   store.Span // learned events whose rewards are stored, not yet released, lie in it
	// Apprentice is apprentice mode's test (rules.Apprentice).
	Apprentice rules.Apprentice
	// Pooled holds, under the pooled rule, the learned rewards that went
	// through a pool and that no release covers yet: their events and
	// tickets (the engine's Experiment.pooledAt).
	Pooled []Slot
	// Imported totals what imports brought (package importer).
	Imported importer.Totals
}

// Slot is a pending event's ticket (its Seq is not stored with the event).
type Slot struct {
	Event  int64 // the event's seq
	Ticket bandit.Ticket
}

// Mark is where the history after sn starts (store.Histories.History):
// after its operation, its releases and random words, with the events
// pending at it.
func (sn *Snapshot) Mark() store.Mark {
	m := store.Mark{Seq: sn.Seq, Releases: sn.Releases, Draws: sn.Draws}
	for _, p := range sn.Slots {
		m.Pending = append(m.Pending, p.Event)
	}
	return m
}

// Tickets returns the tickets of the events pending at sn, by their
// seqs.
func (sn *Snapshot) Tickets() map[int64]bandit.Ticket {
	tks := make(map[int64]bandit.Ticket, len(sn.Slots))
	for _, p := range sn.Slots {
		tks[p.Event] = p.Ticket
	}
	return tks
}

// ErrBad marks a snapshot that cannot be used: Decode's failures, and
// the engine's when the history after it does not fit it.
var ErrBad = errors.New("service: the snapshot cannot be verified")

// Encode returns sn, its Version set to this layout's, encoded with its
// SHA-256 checksum as the store keeps it (store.Snapshot, at sn.Seq).
func Encode(sn Snapshot) (*store.Snapshot, error) {
	sn.Version = Version
	return seal(sn)
}

// seal encodes sn as it is, with its checksum.
func seal(sn Snapshot) (*store.Snapshot, error) {
	b, err := state.Encode(sn)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(b)
	return &store.Snapshot{Seq: sn.Seq, State: b, Sum: sum[:]}, nil
}

// Decode verifies and decodes a stored snapshot of def: its checksum, its
// version, that it is of def (the algorithm def runs at the operation
// after it, the operation it was stored at, def's arms) and that its
// positions are not negative. A failure is ErrBad.
func Decode(def define.Definition, st *store.Snapshot) (*Snapshot, error) {
	sum := sha256.Sum256(st.State)
	if !bytes.Equal(sum[:], st.Sum) {
		return nil, fmt.Errorf("%w: its checksum does not match", ErrBad)
	}
	var sn Snapshot
	if err := state.Decode(st.State, &sn); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBad, err)
	}
	switch {
	case sn.Version != Version:
		return nil, fmt.Errorf("%w: version %d, this service reads %d", ErrBad, sn.Version, Version)
	case sn.Algorithm != algorithmAt(def, sn.Seq+1) || sn.Seq != st.Seq || len(sn.Pulls) != def.Arms:
		return nil, fmt.Errorf("%w: it is of another experiment (%s, operation %d, %d arms)", ErrBad, sn.Algorithm, sn.Seq, len(sn.Pulls))
	case sn.Seq < 0 || sn.Releases < 0 || sn.Draws < 0:
		return nil, fmt.Errorf("%w: negative positions", ErrBad)
	}
	return &sn, nil
}

// algorithmAt returns the learner's algorithm for operation next.
func algorithmAt(def define.Definition, next int64) string {
	eff, _ := def.Effective(next)
	return eff.Algorithm
}
