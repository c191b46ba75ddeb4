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
	// Enter adds a withdrawn action and its reward to the current
	// episode (the open one, or the one waiting for its re-estimation):
	// V += a a^T and the statistic += r a, as Take and Give would.
	Enter(a []float64, reward float64) error
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
//   - Under the rule of late rewards (NewDelayedLate), an overdue choice
//     is withdrawn from V at the next decision (so that its episode may
//     end and re-estimate: one missing reward stalls nothing) but stays
//     pending: when its reward comes (Reward, or the caller's Default at
//     its window's end), the pair (a, r) enters the episode current at
//     that moment (Concurrent.Enter: V += a a^T, the statistic += r a);
//     Drop forgets it.
//
// Privacy is unchanged from the sequential policy (001 Algorithm 3, whose
// Gaussian mechanism releases each episode's statistic sum_s r_s a_s
// once, calibrated for the L2 sensitivity w ||a|| <= w of one reward,
// w the reward range's width): a reward enters the statistic of one
// episode only and is released once, by that episode's re-estimation.
// Under the slot rules it enters its decision's episode (the episode
// cannot end before its rewards are in or withdrawn, and a reward that
// comes after its slot was resolved is not learned). Under the late
// rule a withdrawn choice's action is out of V and its reward out of
// every statistic until the reward comes; it then enters the statistic
// of the current episode, which is released once at that episode's end
// and reset, and it is deleted from the withdrawn choices, so no later
// call enters it again: one reward still changes one release, by at most
// w ||a||. The releases are still one per episode, and the schedule
// depends on the chosen actions (public in 001's model) and on when
// rewards came or which never came (timing, which the service does not
// protect), never on a reward's value. Every decision reads only
// released values and V. With rewards at once the decisions and
// releases are the sequential policy's, under every rule.
type Delayed struct {
	p       Concurrent
	serial  int64               // the current episode's number, from 1: the re-estimations run here, plus one
	pending map[int64][]float64 // taken actions waiting for a reward, by ticket Seq
	waits   bandit.Waits
	// one is the rule before concurrent decisions (NewDelayedOne).
	one bool
	// late is the rule of late rewards (NewDelayedLate); withdrawn holds
	// under it the overdue choices withdrawn from V whose rewards may
	// still come, by ticket Seq.
	late      bool
	withdrawn map[int64][]float64
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

// NewDelayedLate wraps p with the rule of late rewards: an overdue
// choice (bandit.Waits) is withdrawn from V by the next Decide, which
// Overdue then never reports, but stays pending: its reward, whenever it
// comes (Reward, or Default), enters the current episode with its action
// (Concurrent.Enter), and Drop forgets it. The decision service's
// contextual experiments decide under it since rules version 5.
func NewDelayedLate(p Concurrent) *Delayed {
	d := NewDelayed(p)
	d.late, d.withdrawn = true, map[int64][]float64{}
	return d
}

// Policy returns the wrapped policy.
func (d *Delayed) Policy() Concurrent { return d.p }

// Decide returns the decision for a decision set.
func (d *Delayed) Decide(actions [][]float64) (bandit.Ticket, error) {
	seq := d.waits.Decide()
	if err := d.withdrawOverdue(); err != nil {
		return bandit.Ticket{}, err
	}
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

// withdrawOverdue withdraws from V, under the late rule, the choices that
// are overdue (bandit.Waits), oldest first; they stay pending.
func (d *Delayed) withdrawOverdue() error {
	if !d.late {
		return nil
	}
	for _, seq := range d.waits.Overdue() {
		a := d.pending[seq]
		if err := d.p.Withdraw(a); err != nil {
			return err
		}
		delete(d.pending, seq)
		d.withdrawn[seq] = a
		d.waits.Arrive(seq, false) // no longer waited for; its delay counts if its reward comes (Reward)
	}
	return nil
}

// Overdue returns the pending choices that are overdue (bandit.Waits):
// the caller resolves each at once, with a default reward or by Drop.
// Under the late rule it returns none: Decide withdraws them.
func (d *Delayed) Overdue() []bandit.Ticket {
	if d.late {
		return nil
	}
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
// Under the late rule the patience withdraws choices, which changes V:
// the caller must then count only the arrivals a replay repeats (not a
// reward that came after its event was settled).
func (d *Delayed) Seen(t bandit.Ticket) { d.waits.Saw(t.Seq) }

// Late reports whether d has the rule of late rewards (NewDelayedLate).
func (d *Delayed) Late() bool { return d.late }

// entered settles, under the late rule, a withdrawn choice of ticket t:
// its action enters the current episode with r (Concurrent.Enter) when
// give is set, else it is forgotten; came is whether r is a reward that
// came, whose delay counts (bandit.Waits). It reports whether t was one.
func (d *Delayed) entered(t bandit.Ticket, r float64, give, came bool) (bool, error) {
	a, ok := d.withdrawn[t.Seq]
	if !ok || !t.Learns() {
		return false, nil
	}
	if give {
		if math.IsNaN(r) || math.IsInf(r, 0) {
			return true, inputf("reward %v is not finite", r)
		}
		if err := d.p.Enter(a, r); err != nil {
			return true, err
		}
	}
	delete(d.withdrawn, t.Seq)
	if came {
		d.waits.Saw(t.Seq)
	}
	return true, nil
}

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
	if ok, err := d.entered(t, r, true, true); ok {
		return err
	}
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
	if ok, err := d.entered(t, r, true, false); ok {
		return err
	}
	a, err := d.check(t)
	if err != nil {
		return err
	}
	return d.give(t, a, r, false)
}

// Drop withdraws a pending choice whose reward will never come.
func (d *Delayed) Drop(t bandit.Ticket) error {
	if ok, err := d.entered(t, 0, false, false); ok {
		return err
	}
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

// Pending returns the number of the current episode's choices waiting
// for their rewards (not the withdrawn ones: Withdrawn).
func (d *Delayed) Pending() int64 { return int64(len(d.pending)) }

// Withdrawn returns the number of choices withdrawn as overdue whose
// rewards may still come (the late rule; 0 under the others).
func (d *Delayed) Withdrawn() int64 { return int64(len(d.withdrawn)) }

// Plan returns the current episode as a plan (its arm is not one arm:
// -1, and its count the choices pending) and its number.
func (d *Delayed) Plan() (bandit.Plan, int64) {
	return bandit.Plan{Arm: -1, Count: int64(len(d.pending))}, d.serial
}
