package ope

import (
	"fmt"
	"io"
	"math"
)

// Learner is an adaptive target policy replayed on a log.
type Learner interface {
	// Choose returns the action the learner would play for the event's
	// context.
	Choose(e *Event) (int, error)
	// Learn gives it the reward of the action it chose.
	Learn(reward float64) error
}

// ReplayResult is the replay method's estimate.
type ReplayResult struct {
	Events int `json:"events"`
	// Matched counts the events where the learner chose the logged
	// action: the rounds it was evaluated (and learned) on, about Events/K.
	Matched int      `json:"matched"`
	Skipped int      `json:"skipped_without_reward"`
	Value   Estimate `json:"estimate"`
}

// Replay evaluates an adaptive policy by the replay method (Li, Chu,
// Langford and Wang, WSDM 2011, Algorithm 3): events are served in log
// order; when the learner chooses the logged action, the event counts and
// the learner gets its reward, otherwise the event is discarded. On a log
// whose actions were drawn uniformly and independently of the history,
// the matched events are distributed as an on-policy run of the learner,
// so their mean reward estimates its value after about Matched steps.
// Replay refuses logs whose pscore is not 1/K (non-uniform logging).
// The standard error treats the matched rewards as independent.
func Replay(open func() (io.ReadCloser, error), arms int, l Learner) (*ReplayResult, error) {
	return ReplayWith(open, Options{Arms: arms}, l)
}

// ReplayWith is Replay on the log as o reads it: its Arms, Reading and
// MaxEventsPerUnit (rewards are not clipped, nor weights capped).
func ReplayWith(open func() (io.ReadCloser, error), o Options, l Learner) (*ReplayResult, error) {
	res := &ReplayResult{}
	var m moments
	o = Options{Arms: o.Arms, Reading: o.Reading, MaxEventsPerUnit: o.MaxEventsPerUnit}
	err := scan(open, o, false, func(e *Event, k int) error {
		res.Events++
		if math.Abs(e.PScore-1/float64(k)) > 1e-9 {
			return fmt.Errorf("pscore %v is not 1/K = %v: replay needs uniformly logged actions (use a fixed target policy and IPS for other logs)", e.PScore, 1/float64(k))
		}
		a, err := l.Choose(e)
		if err != nil {
			return err
		}
		if a != e.Action {
			return nil
		}
		res.Matched++
		m.add(e.Reward)
		return l.Learn(e.Reward)
	}, &tally{&res.Skipped, new(int), nil, new(int)})
	if err != nil {
		return nil, err
	}
	if res.Matched == 0 {
		return res, errorf("the learner never chose the logged action in %d events", res.Events)
	}
	res.Value = estimate("replay", m.mean(), m.se())
	return res, nil
}
