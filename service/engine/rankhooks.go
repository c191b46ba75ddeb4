package engine

import (
	"context"
	"time"

	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/service/define"
	"github.com/dpbandit/dpbandit/service/fault"
	"github.com/dpbandit/dpbandit/service/store"
)

// The engine's part of the Personalizer's rank, slate and model
// semantics (package service/rank): what runs under the experiment's
// lock or in replay. A rank's answer, a slate's slots and the model's
// export are rank's; the decision of a rank, the propensities it was
// taken under, the lookups of a slate's stored slots, an activation and
// the learner's released estimate are here.

// DecideRank is Decide for a Personalizer rank, whose unit the caller
// took from the rank itself (define.Definition.RankUnit): shared is the
// part of its context the store may keep once (nil: none), deferred
// whether it asks to defer its activation, both as the rank request
// told them (define.RankSet), so that nothing reads the context again.
func (x *Experiment) DecideRank(ctx context.Context, id, unit, ctxt string, shared *store.Shared, deferred bool, set [][]float64) (Decision, error) {
	return x.decide(ctx, id, unit, ctxt, &rankFacts{shared: shared, deferred: deferred}, set)
}

// Propensities returns, for a decision d among k eligible actions, the
// probability with which the logging policy d was taken under (the
// settings of its operation, not the current ones) gives each of them:
// define.Definition.PropensityOf around d's policy arm. The action d
// played has d.Probability, its stored propensity.
func (x *Experiment) Propensities(d Decision, k int) []float64 {
	at := x.definitionAt(d.seq) // (settings.go)
	p := make([]float64, k)
	for j := range p {
		p[j] = at.PropensityOf(j, d.policyArm, k)
	}
	return p
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

// Estimate is a Personalizer experiment's learner's released estimate
// (package rank's Model exports it): never a raw sum or a reward.
type Estimate struct {
	// Algorithm is the learner (a catalogue spec).
	Algorithm string
	// Episodes counts the learner's re-estimations since it started
	// (0: Theta is 0).
	Episodes int64
	// Theta is theta~ of the last re-estimation: V_tau^-1 times the
	// released noisy reward statistics (contextual.OFUL.Estimate), what
	// the learner ranks by.
	Theta []float64
	// Created is when the learner started (the experiment's creation or
	// its last reset); Modified its last release since (Created if none).
	Created, Modified time.Time
}

// estimator is a learner that exports its released estimate.
type estimator interface{ Estimate() []float64 }

// Model returns the learner's released estimate, once every release it
// reflects is durable: NotFound on an experiment of another surface or
// a learner that exports none.
func (x *Experiment) Model(ctx context.Context) (Estimate, error) {
	m, last, err := x.model()
	if err == nil && last != nil {
		err = x.env.Writer.Wait(ctx, last)
	}
	return m, err
}

func (x *Experiment) model() (Estimate, chan struct{}, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.failed != nil {
		return Estimate{}, nil, x.stopped()
	}
	if x.def.Surface != define.SurfacePersonalizer {
		return Estimate{}, nil, fault.Errorf(fault.NotFound, "experiment %q is not a personalizer experiment", x.def.ID)
	}
	est, ok := x.pol.Policy().(estimator)
	if !ok {
		return Estimate{}, nil, fault.Errorf(fault.NotFound, "the learner %s exports no estimate", x.set.eff.Algorithm)
	}
	m := Estimate{Algorithm: x.set.eff.Algorithm, Theta: est.Estimate()}
	if ep, ok := x.pol.Policy().(bandit.Episodic); ok {
		m.Episodes = ep.Episodes()
	}
	m.Created, m.Modified = x.modelTimes()
	return m, x.last, nil
}

// modelTimes returns when the learner started and when it last released
// (its start if it has not). The caller holds x.mu.
func (x *Experiment) modelTimes() (created, modified time.Time) {
	c := x.set.cur.ModelCreated
	mod := c
	if n := len(x.recent); n > 0 && x.recent[n-1].Seq > x.set.cur.LastReset {
		mod = max(mod, x.recent[n-1].At)
	}
	return time.Unix(0, c).UTC(), time.Unix(0, mod).UTC()
}

// ModelTimes returns when the learner started (creation or reset) and
// when it last released since (model/properties).
func (x *Experiment) ModelTimes() (created, modified time.Time) {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.modelTimes()
}

// Now returns the service's time.
func (x *Experiment) Now() time.Time { return x.env.Now() }
