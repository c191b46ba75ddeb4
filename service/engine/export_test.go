package engine

// What the engine's external tests (package engine_test, which run on
// enginetest's harness) read of an experiment's memory that no exported
// method shows: the bounds on what it keeps in memory, and the state a
// snapshot restores, compared with a replay of the whole history. Each
// is read under the experiment's lock, as the tests did from inside.

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/service/outcome"
	"github.com/dpbandit/dpbandit/service/policy"
	"github.com/dpbandit/dpbandit/service/store"
)

// ErrUnsettled is errUnsettled, an import's decision not settled
// before the next (TestRunImportSettlesEachDecisionOnce).
var ErrUnsettled = errUnsettled

// Memory is a copy of an experiment's memory, taken by Inspect.
type Memory struct {
	// Failed is why the experiment stopped (nil: it runs).
	Failed error
	// Events holds the ids of the events in memory
	// (TestFoldKeepsUnfoldedEvents, TestOldEventsAnsweredFromTheStore).
	Events map[string]bool
	// Units is the number of units whose counts are in memory
	// (TestUnitCacheIsBounded), UnitCache the cache as fmt prints it
	// (TestSnapshotRestoresTheState).
	Units     int
	UnitCache string
	// Seq counts the operations, SnapSeq is the last snapshot's.
	Seq, SnapSeq int64
	// Releases and Draws are the releases and random words recorded.
	Releases, Draws int64
	Counts          outcome.Counts
	Pulls           []int64
	// Unfreed spans the learned events whose rewards are stored and not
	// yet released; PooledAt maps the tickets of the rewards that went
	// through a pool and no release covers yet to their events' seqs.
	Unfreed  store.Span
	PooledAt map[int64]int64
}

// Inspect returns a copy of x's memory.
func Inspect(x *Experiment) Memory {
	x.mu.Lock()
	defer x.mu.Unlock()
	m := Memory{Failed: x.failed, Events: map[string]bool{}, UnitCache: fmt.Sprint(x.units),
		Seq: x.seq, SnapSeq: x.snapSeq, Releases: x.nrel, Draws: x.draws, Counts: x.n,
		Pulls: append([]int64(nil), x.pulls...), Unfreed: x.unfreed, PooledAt: maps.Clone(x.pooledAt)}
	if x.units != nil { // (nil: it failed to load, Broken)
		m.Units = x.units.Len()
	}
	for id := range x.events {
		m.Events[id] = true
	}
	return m
}

// PolicyState returns the encoded state of x's policy (inside its
// delayed-feedback rule: bandit.Snapshotter) with the rule's plan, plan
// version and pending count; an error if the policy has no snapshot.
func PolicyState(x *Experiment) (string, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	s, ok := x.pol.Policy().(bandit.Snapshotter)
	if !ok {
		return "", fmt.Errorf("%T has no snapshot", x.pol.Policy())
	}
	b, err := s.MarshalBinary()
	if err != nil {
		return "", err
	}
	p, v := x.pol.Plan()
	return fmt.Sprint(b, p, v, x.pol.Pending()), nil
}

// errNotPooled is PooledPolicy's and DescribePooled's answer on an
// experiment whose slots overdue do not pool.
var errNotPooled = errors.New("the experiment's policy is not under the pooled rule")

// PooledPolicy returns the encoded state of x's pooled rule (bandit.Save
// of its bandit.Pooled).
func PooledPolicy(x *Experiment) ([]byte, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	p, ok := policy.PoolsOf(x.pol)
	if !ok {
		return nil, errNotPooled
	}
	return bandit.Save(p)
}

// DescribePooled returns a line on x's pooled rule (its plan, patience,
// pending slots and pooled rewards) and its releases, for a test's log.
func DescribePooled(x *Experiment) string {
	x.mu.Lock()
	defer x.mu.Unlock()
	p, ok := policy.PoolsOf(x.pol)
	if !ok {
		return errNotPooled.Error()
	}
	plan, serial := p.Plan()
	return fmt.Sprintf("plan %d %+v, patience %d, pending %d, pooled %d, releases %d", serial, plan, p.Patience(), p.Pending(), p.Pooled(), x.nrel)
}

// Replay rebuilds x from its whole history in the store of env (no
// snapshot), folded as x is (TestSnapshotRestoresTheState).
func Replay(ctx context.Context, x *Experiment, env *Env) (*Experiment, error) {
	x.mu.Lock()
	folded := x.foldSeq
	x.mu.Unlock()
	return loadFrom(ctx, x.def, nil, &folded, env)
}

// SaveSnapshot returns x's snapshot as a save would store it, without
// storing it (TestSnapshotSizeIndependentOfHistory).
func SaveSnapshot(x *Experiment) (*store.Snapshot, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.save()
}
