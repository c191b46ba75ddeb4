package engine

import (
	"context"

	"github.com/dpbandit/dpbandit/service/define"
	"github.com/dpbandit/dpbandit/service/outcome"
	"github.com/dpbandit/dpbandit/service/store"
)

// The engine's part of the Personalizer's rank, slate and model
// semantics (package service/rank): what runs under the experiment's
// lock or in replay. A rank's answer, a slate's slots and the model's
// export are rank's; the decision of a rank, the propensities it was
// taken under, the lookups of a slate's stored slots, an activation and
// the reading of the learner under the lock (Learner) are here.

// DecideRank is Decide for a Personalizer rank, whose unit the caller
// took from the rank itself (define.Definition.RankUnit): shared is the
// part of its context the store may keep once (nil: none), deferred
// whether it asks to defer its activation, both as the rank request
// told them (define.RankSet), so that nothing reads the context again.
func (x *Experiment) DecideRank(ctx context.Context, id, unit, ctxt string, shared *store.Shared, deferred bool, set [][]float64) (outcome.Decision, error) {
	return x.decide(ctx, id, unit, ctxt, &rankFacts{shared: shared, deferred: deferred}, set)
}

// Propensities returns, for a decision d among k eligible actions, the
// probability with which the logging policy d was taken under (the
// settings of its operation, not the current ones) gives each of them:
// define.Definition.Propensities around d's policy arm. The action d
// played has d.Probability, its stored propensity.
func (x *Experiment) Propensities(d outcome.Decision, k int) []float64 {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.def.Propensities(d.Seq, d.PolicyArm, k)
}

// StartActivate is Activate without the wait: it returns the channel
// closed once the activation (or the event's decision, when there is
// nothing to activate) is durable.
func (x *Experiment) StartActivate(id string) (chan struct{}, error) {
	return x.startActivate(id)
}

// Events runs f under the experiment's lock, with event returning a copy
// of the event of an id (nil when the experiment has none), so that f's
// lookups see one state; a stopped experiment answers its error without
// running f. f runs under the lock: it must not call the experiment's
// methods that take it (Unknown takes none).
func (x *Experiment) Events(f func(event func(id string) (*store.Event, error)) error) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.failed != nil {
		return x.stopped()
	}
	return f(func(id string) (*store.Event, error) {
		rec, err := x.event(id)
		if rec == nil || err != nil {
			return nil, err
		}
		ev := rec.Event
		return &ev, nil
	})
}

// Unknown returns notFound, the answer to a request about an event the
// experiment does not know, once the experiment is sure that it would
// know it (unknown: on a replica, once it still holds its lease). It
// takes no lock: Events' f may call it.
func (x *Experiment) Unknown(notFound error) error { return x.unknown(notFound) }

// Wait returns once the changes of the given channels (StartReward's,
// StartDecide's, StartActivate's) are durable.
func (x *Experiment) Wait(ctx context.Context, durable []chan struct{}) error {
	for _, c := range durable {
		if err := x.env.Writer.Wait(ctx, c); err != nil {
			return err
		}
	}
	return nil
}

// Learner runs f under the experiment's lock with what a model export
// reads of its learner (package rank: Export, Estimate, ModelTimes): its
// policy (policy.Decider.Policy; nil if the experiment failed to load),
// its settings as they stand (Settings) and its last releases (State's
// Releases). It returns the channel closed once every release they
// reflect is durable (nil: none), and the error of an experiment that
// stopped, for which f ran all the same. f runs under the lock: it reads
// what it is given, changes none of it, and calls none of the
// experiment's methods.
func (x *Experiment) Learner(f func(learner any, eff define.Definition, cur define.Current, recent []store.Release)) (chan struct{}, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	var learner any
	if x.pol != nil {
		learner = x.pol.Policy()
	}
	f(learner, x.set.eff, x.set.cur, x.recent)
	if x.failed != nil {
		return nil, x.stopped()
	}
	return x.last, nil
}
