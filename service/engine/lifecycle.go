package engine

import (
	"context"
	"errors"

	"github.com/dpbandit/dpbandit/service/define"
	"github.com/dpbandit/dpbandit/service/fault"
	"github.com/dpbandit/dpbandit/service/outcome"
	"github.com/dpbandit/dpbandit/service/store"
)

// Key returns the experiment's key: "tenant/id".
func (x *Experiment) Key() string { return x.def.Key() }

// ID returns the experiment's id, its tenant's own.
func (x *Experiment) ID() string { return x.def.ID }

// Tenant returns the tenant that owns the experiment.
func (x *Experiment) Tenant() string { return x.def.Tenant }

// Definition returns the experiment's definition, with its current
// status.
func (x *Experiment) Definition() define.Definition {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.def
}

// Loaded describes what a load did: the operations of the experiment,
// those replayed after its snapshot, and its releases.
func (x *Experiment) Loaded() (ops, replayed, releases int64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.seq, x.seq - x.snapSeq, x.nrel
}

// SetStatus moves the experiment through its lifecycle: pause (active to
// paused), resume (paused to active) or archive (either to archived, for
// good). The change is stored, fenced like any other, and folds what is
// not folded (an archived experiment is not loaded again), before it
// takes effect. A move to the status the experiment has is done at once
// (an archive retried after its request was cut).
func (x *Experiment) SetStatus(ctx context.Context, to string) error {
	x.mu.Lock()
	if x.failed != nil && (to != store.Archived || errors.Is(x.failed, ErrMoved)) {
		// A failed experiment can only be archived: its policy may be
		// half-changed, and it is not served again.
		defer x.mu.Unlock()
		return x.stopped()
	}
	if change, err := x.def.Transition(to); !change {
		x.mu.Unlock()
		return err
	}
	c := &store.Change{Exp: x.def.Key(), Status: to, Durable: make(chan struct{})}
	x.foldInto(c)
	if err := x.env.Writer.Submit(c); err != nil {
		x.mu.Unlock()
		return fault.Errorf(fault.Unavailable, "%v", err)
	}
	x.last = c.Durable
	x.def.Status = to
	x.mu.Unlock()
	return x.env.Writer.Wait(ctx, c.Durable)
}

// Save submits a snapshot of the experiment, if it changed since its
// last, and a fold of what is not folded, so that a start replays
// nothing of it (the service's stop).
func (x *Experiment) Save() {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.saveNow() == nil { // (an error: the writes stopped; the last snapshot stays)
		x.foldNow()
	}
}

// FoldNow submits a fold of what the experiment has not folded yet,
// and returns the channel closed once everything of it is folded (nil:
// nothing ever was).
func (x *Experiment) FoldNow() (chan struct{}, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.foldNow()
}

// HandOver stops the experiment for good in this process (ErrMoved:
// its requests are answered to retry) after a snapshot of it is
// submitted, and returns the channel closed once its last change is
// durable (nil: none).
func (x *Experiment) HandOver() chan struct{} {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.saveNow()
	if x.failed == nil {
		x.failed = ErrMoved
	}
	return x.last
}

// Series returns the pulls per arm sampled on a geometric grid of
// decision counts, for the dashboard.
func (x *Experiment) Series() []outcome.Sample {
	x.mu.Lock()
	defer x.mu.Unlock()
	return append([]outcome.Sample(nil), x.series...)
}
