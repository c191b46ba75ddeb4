package ope

import (
	"io"
	"slices"

	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/contextual"
	"github.com/dpbandit/dpbandit/mechanism"
)

// tickets is what the bandit and contextual Delayed wrappers share: a
// decision's reward is given, or the decision is dropped (withdrawn), so
// a replayed decision that does not match the log leaves no trace.
type tickets interface {
	Reward(t bandit.Ticket, r float64) error
	Drop(t bandit.Ticket) error
}

// replayed adapts a Delayed wrapper to Learner: Choose decides, and the
// next Choose drops the decision if it was not learned.
type replayed struct {
	d      tickets
	decide func(e *Event) (bandit.Ticket, error)
	open   *bandit.Ticket
}

func (r *replayed) Choose(e *Event) (int, error) {
	if r.open != nil {
		if err := r.d.Drop(*r.open); err != nil {
			return 0, err
		}
		r.open = nil
	}
	t, err := r.decide(e)
	if err != nil {
		return 0, err
	}
	r.open = &t
	return t.Arm, nil
}

func (r *replayed) Learn(reward float64) error {
	t := *r.open
	r.open = nil
	if !t.Learns() {
		return nil // overflow: a decision the plan had no room for
	}
	return r.d.Reward(t, reward)
}

// BanditLearner replays a finite-armed policy (a log without contexts).
func BanditLearner(p bandit.Policy) Learner {
	d := bandit.NewDelayed(p)
	return &replayed{d: d, decide: func(*Event) (bandit.Ticket, error) { return d.Decide(), nil }}
}

// ContextualLearner replays a linear contextual policy of dimension
// DecisionDim(e, k): the decision set is the event's own (a decision-set
// context) or the disjoint-arm encoding e_a (x) (x, 1) of its feature
// vector; vectors of norm above 1 are divided by their norm, as the
// policies require (mechanism.IntoUnitBall).
func ContextualLearner(p contextual.Concurrent, k int) Learner {
	d := contextual.NewDelayed(p)
	var set [][]float64
	return &replayed{d: d, decide: func(e *Event) (bandit.Ticket, error) {
		set = set[:0]
		for a := range k {
			v := slices.Clone(features(e, k, a, nil))
			mechanism.IntoUnitBall(v)
			set = append(set, v)
		}
		return d.Decide(set)
	}}
}

// DecisionDim is the dimension of ContextualLearner's decision sets for
// a log of K actions whose events look like e (0: the log has no
// contexts).
func DecisionDim(e *Event, k int) int {
	if e.X == nil && e.Actions == nil {
		return 0
	}
	return featureDim(e, k)
}

// Survey reads a log once: its first event with a reward, K, and the
// number of events with a reward (the horizon of a replay).
func Survey(open func() (io.ReadCloser, error), arms int) (first Event, k, n int, err error) {
	return SurveyWith(open, Options{Arms: arms})
}

// SurveyWith is Survey on the log as o reads it (ReplayWith).
func SurveyWith(open func() (io.ReadCloser, error), o Options) (first Event, k, n int, err error) {
	o = Options{Arms: o.Arms, Reading: o.Reading, MaxEventsPerUnit: o.MaxEventsPerUnit}
	err = scan(open, o, false, func(e *Event, kk int) error {
		if n == 0 {
			first, k = *e, kk
		}
		n++
		return nil
	}, &tally{new(int), new(int), nil, new(int)})
	return first, k, n, err
}

// noEvents turns the end of a log into ErrNoEvents.
func noEvents(err error) error {
	if err == io.EOF {
		return ErrNoEvents
	}
	return err
}
