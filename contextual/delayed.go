package contextual

import (
	"math"
	"slices"

	"github.com/dpbandit/dpbandit/bandit"
)

// Concurrent is a Policy that takes decisions while earlier rewards are
// pending, an episode at a time: AdaC-OFUL, RS-OFUL and OFUL, whose
// choices within an episode use only theta~, beta~ and V_tau^-1, fixed
// between re-estimations, and whose V depends on the chosen actions
// alone.
type Concurrent interface {
	Policy
	// Open reports whether the current episode takes more decisions.
	Open() bool
	// Take chooses within the open episode and adds the action to V.
	Take(actions [][]float64) (int, error)
	// Give adds a taken action's reward to the episode's statistic.
	Give(a []float64, reward float64) error
	// Withdraw removes from V a taken action whose reward never comes.
	Withdraw(a []float64) error
	// Reestimate ends the episode, once its rewards are in.
	Reestimate() error
	// Greedy returns the action of highest estimated reward from the
	// last re-estimate, without recording a choice.
	Greedy(actions [][]float64) (int, error)
}

// Greedy returns argmax_a <theta~, a> for the estimate of the last
// re-estimation: for AdaC-OFUL a post-processing of released values and
// of V (the chosen actions, public in 001's model), so it costs no
// privacy. It records no choice.
func (o *OFUL) Greedy(actions [][]float64) (int, error) {
	if len(actions) == 0 {
		return 0, inputf("empty decision set")
	}
	best, bv := -1, math.Inf(-1)
	for k, a := range actions {
		if len(a) != o.d {
			return 0, inputf("action %d has dimension %d, want %d", k, len(a), o.d)
		}
		v := 0.0
		for i, x := range a {
			v += o.theta[i] * x
		}
		if v != v {
			return 0, inputf("action %d has a non-finite coordinate", k)
		}
		if v > bv {
			best, bv = k, v
		}
	}
	return best, nil
}

// Delayed runs a Concurrent policy one decision at a time when rewards
// arrive late, out of order or never: the contextual counterpart of
// bandit.Delayed, with the policy's episodes as plans. The rule:
//
//   - While the episode is open, every decision is the policy's
//     optimistic choice (Take): its action enters V at once and its
//     reward, whenever it comes, enters the episode's statistic. Any
//     number of decisions may be in flight.
//   - Once the episode's schedule ends it (det V > (1 + C) det V_tau),
//     the re-estimation waits for the episode's pending rewards; the
//     decisions meanwhile are overflow: the greedy action of the last
//     re-estimate (post-processing), never learned. When none is
//     pending, the next decision re-estimates and opens the next episode.
//   - A reward that never comes (Drop: its slot overdue by bandit.Waits'
//     rule, or its window passed, without a default) withdraws its
//     action from V: V and the statistic are as if it was not taken.
//
// Privacy is unchanged from the sequential policy (001 Algorithm 3): a
// reward enters the statistic of its decision's episode only (the
// episode cannot end before its rewards are in or withdrawn, and a reward
// that comes after its slot was resolved is not learned), so one reward
// still changes one release by at most w ||a|| <= w, the sensitivity the
// Gaussian mechanism is calibrated for; the releases are still one per
// episode, and the schedule depends on the chosen actions (public in
// 001's model) and on which rewards never came (timing, which the
// service does not protect), never on a reward's value. Every decision
// reads only released values and V. With rewards at once the decisions
// and releases are the sequential policy's.
type Delayed struct {
	p       Concurrent
	serial  int64               // the current episode's number, from 1: the re-estimations run here, plus one
	pending map[int64][]float64 // taken actions waiting for a reward, by ticket Seq
	waits   bandit.Waits
	// one is the rule before concurrent decisions (NewDelayedOne).
	one bool
}

// NewDelayed wraps p, whose first episode is open.
func NewDelayed(p Concurrent) *Delayed {
	return &Delayed{p: p, serial: 1, pending: map[int64][]float64{}}
}

// NewDelayedOne wraps p with the rule before concurrent decisions: one
// choice in flight at a time (a decision taken while a reward is pending
// is overflow), each choice its own plan, numbered from 1. It replays
// histories written under that rule (the decision service's experiments
// created before 2026-11-24): the same decisions, V and releases.
func NewDelayedOne(p Concurrent) *Delayed {
	d := NewDelayed(p)
	d.one, d.serial = true, 0
	return d
}

// Policy returns the wrapped policy.
func (d *Delayed) Policy() Concurrent { return d.p }

// Decide returns the decision for a decision set.
func (d *Delayed) Decide(actions [][]float64) (bandit.Ticket, error) {
	seq := d.waits.Decide()
	if !d.p.Open() && len(d.pending) == 0 {
		if err := d.p.Reestimate(); err != nil {
			return bandit.Ticket{}, err
		}
		if !d.one {
			d.serial++
		}
	}
	if !d.p.Open() || d.one && len(d.pending) > 0 {
		a, err := d.p.Greedy(actions)
		return bandit.Ticket{Arm: a, Seq: seq}, err
	}
	if d.one {
		d.serial++ // each choice its own plan
	}
	// The episode is open: it may also have been reopened by a Withdraw
	// (V shrank below the doubling threshold), and stays the same episode.
	a, err := d.p.Take(actions)
	if err != nil {
		return bandit.Ticket{}, err
	}
	d.pending[seq] = slices.Clone(actions[a])
	d.waits.Take(seq)
	return bandit.Ticket{Arm: a, Plan: d.serial, Seq: seq}, nil
}

// Overdue returns the pending choices that are overdue (bandit.Waits):
// the caller resolves each at once, with a default reward or by Drop.
func (d *Delayed) Overdue() []bandit.Ticket {
	var out []bandit.Ticket
	for _, seq := range d.waits.Overdue() {
		out = append(out, bandit.Ticket{Arm: -1, Plan: d.serial, Seq: seq})
	}
	return out
}

// Patience returns the number of decisions after which a choice is
// overdue (bandit.Waits.Patience).
func (d *Delayed) Patience() int64 { return d.waits.Patience() }

// Seen counts among the delays the arrival of a reward that is not
// learned: an overflow decision's, or a late one (bandit.Waits.Saw).
func (d *Delayed) Seen(t bandit.Ticket) { d.waits.Saw(t.Seq) }

func (d *Delayed) check(t bandit.Ticket) ([]float64, error) {
	if !t.Learns() {
		return nil, inputf("an overflow decision's reward is not learned")
	}
	a, ok := d.pending[t.Seq]
	if !ok || t.Plan != d.serial {
		return nil, bandit.ErrStale
	}
	return a, nil
}

// Reward reports the reward of a pending choice.
func (d *Delayed) Reward(t bandit.Ticket, r float64) error {
	a, err := d.check(t)
	if err != nil {
		return err
	}
	if math.IsNaN(r) || math.IsInf(r, 0) {
		return inputf("reward %v is not finite", r)
	}
	return d.give(t, a, r, true)
}

// give gives the action a of ticket t its reward r and settles it; came is
// whether r is a reward that came (not a default: bandit.Waits).
func (d *Delayed) give(t bandit.Ticket, a []float64, r float64, came bool) error {
	if err := d.p.Give(a, r); err != nil {
		return err
	}
	delete(d.pending, t.Seq)
	d.waits.Arrive(t.Seq, came)
	return nil
}

// Default gives an overdue choice the default reward r: as Reward, but
// its delay is not one of the rewards that came (bandit.Waits).
func (d *Delayed) Default(t bandit.Ticket, r float64) error {
	a, err := d.check(t)
	if err != nil {
		return err
	}
	return d.give(t, a, r, false)
}

// Drop withdraws a pending choice whose reward will never come.
func (d *Delayed) Drop(t bandit.Ticket) error {
	a, err := d.check(t)
	if err != nil {
		return err
	}
	if err := d.p.Withdraw(a); err != nil {
		return err
	}
	delete(d.pending, t.Seq)
	d.waits.Arrive(t.Seq, false)
	return nil
}

// Pending returns the number of choices waiting for their rewards.
func (d *Delayed) Pending() int64 { return int64(len(d.pending)) }

// Plan returns the current episode as a plan (its arm is not one arm:
// -1, and its count the choices pending) and its number.
func (d *Delayed) Plan() (bandit.Plan, int64) {
	return bandit.Plan{Arm: -1, Count: int64(len(d.pending))}, d.serial
}
