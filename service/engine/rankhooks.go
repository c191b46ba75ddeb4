package engine

import (
	"context"

	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/service/define"
	"github.com/dpbandit/dpbandit/service/outcome"
	"github.com/dpbandit/dpbandit/service/store"
)

// The engine's part of the Personalizer's rank, slate and model
// semantics (package service/rank): what runs under the experiment's
// lock or in replay. A rank's answer, a slate's slots and the model's
// export are rank's; the decision of a rank, the propensities it was
// taken under, the lookups of a slate's stored slots, an activation and
// the reading of the learner under the lock (Learned) are here.

// DecideRank is Decide for a Personalizer rank of the event id: ctxt is
// its context as stored (define.Definition.ReadRankContext) and rs the
// rank read from it, whose shared action list (rs.Shared) the store may
// keep once and whose DeferActivation says whether its activation is
// deferred, so that nothing reads the context again. Its privacy unit
// is the rank's own (define.Definition.RankUnit: the experiment's
// unit_feature in its contextFeatures, or the event): a rank that lacks
// the feature is refused (Invalid).
func (x *Experiment) DecideRank(ctx context.Context, id, ctxt string, rs *define.RankSet) (outcome.Decision, error) {
	unit, err := x.def.RankUnit(rs.Request.ContextFeatures, id)
	if err != nil {
		return outcome.Decision{}, err
	}
	return x.decide(ctx, id, unit, ctxt, &rankFacts{shared: rs.Shared, deferred: rs.Request.DeferActivation}, rs.Set)
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

// Learned is what a model export reads of an experiment's learner
// (package rank: Export, Estimate, ModelTimes), taken under its lock.
type Learned struct {
	// Def is the experiment's settings as they stand (Settings' eff),
	// Cur its current settings (when its learner started: ModelCreated,
	// LastReset).
	Def define.Definition
	Cur define.Current
	// Last is its last release (Seq 0: none yet).
	Last store.Release
	// Estimate is the learner's released estimate
	// (contextual.OFUL.Estimate; nil: it exports none), Episodes its
	// re-estimations since it started (bandit.Episodic; 0: none).
	Estimate []float64
	Episodes int64
}

// estimator is a learner that exports its released estimate.
type estimator interface{ Estimate() []float64 }

// Learned returns what a model export reads of the experiment's learner,
// and the channel closed once every release it reflects is durable (nil:
// none). A stopped experiment's learner is not read (its policy may hold
// a draw never stored, which is why State hides its releases): it
// answers its error, with its settings and last release only (Def, Cur,
// Last; no Estimate, no Episodes).
func (x *Experiment) Learned() (Learned, chan struct{}, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	l := Learned{Def: x.set.eff, Cur: x.set.cur}
	if n := len(x.recent); n > 0 {
		l.Last = x.recent[n-1]
	}
	if x.failed != nil {
		return l, nil, x.stopped()
	}
	p := x.pol.Policy()
	if est, ok := p.(estimator); ok {
		l.Estimate = est.Estimate()
	}
	if ep, ok := p.(bandit.Episodic); ok {
		l.Episodes = ep.Episodes()
	}
	return l, x.last, nil
}
