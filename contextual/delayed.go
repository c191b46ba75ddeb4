package contextual

import (
	"errors"
	"fmt"
	"math"

	"github.com/dpbandit/dpbandit/bandit"
)

// Deferrable is a Policy that can take decisions while the reward of its
// last choice is pending: it can forget a choice whose reward will never
// come (Skip), and choose from what it has released without learning
// (Greedy).
type Deferrable interface {
	Policy
	// Skip forgets the pending choice: its reward will never come.
	Skip() error
	// Greedy returns the action of highest estimated reward from the
	// last re-estimate, without recording a choice.
	Greedy(actions [][]float64) (int, error)
}

// Skip forgets the pending choice, whose reward will never come: V and
// the sums are left as they were.
func (o *OFUL) Skip() error {
	if o.pending == nil {
		return fmt.Errorf("contextual: Skip without Choose")
	}
	o.pending = nil
	return nil
}

// Greedy returns argmax_a <theta~, a> for the estimate of the last
// re-estimation: for AdaC-OFUL a post-processing of released values and
// of V (the chosen actions, public in 001's model), so it costs no
// privacy. It records no choice.
func (o *OFUL) Greedy(actions [][]float64) (int, error) {
	if len(actions) == 0 {
		return 0, fmt.Errorf("contextual: empty decision set")
	}
	best, bv := -1, math.Inf(-1)
	for k, a := range actions {
		if len(a) != o.d {
			return 0, fmt.Errorf("contextual: action %d has dimension %d, want %d", k, len(a), o.d)
		}
		v := 0.0
		for i, x := range a {
			v += o.theta[i] * x
		}
		if v != v {
			return 0, fmt.Errorf("contextual: action %d has a non-finite coordinate", k)
		}
		if v > bv {
			best, bv = k, v
		}
	}
	return best, nil
}

// Delayed runs a Deferrable policy one decision at a time when rewards
// arrive late or never: the contextual counterpart of bandit.Delayed,
// with plans of one step. A decision taken while no reward is pending is
// the policy's choice and learns; one taken while the last choice's
// reward is pending is overflow: it plays the policy's greedy action on
// its last released estimate and its reward is never learned. Drop
// forgets a choice whose reward will never come. A choice is overdue
// (Overdue) by bandit.Waits' rule, as a plan's slot is in bandit.Delayed.
type Delayed struct {
	p        Deferrable
	serial   int64
	inflight bool
	arm      int
	waits    bandit.Waits
}

// NewDelayed wraps p.
func NewDelayed(p Deferrable) *Delayed { return &Delayed{p: p} }

// Policy returns the wrapped policy.
func (d *Delayed) Policy() Deferrable { return d.p }

// Decide returns the decision for a decision set.
func (d *Delayed) Decide(actions [][]float64) (bandit.Ticket, error) {
	seq := d.waits.Decide()
	if d.inflight {
		a, err := d.p.Greedy(actions)
		return bandit.Ticket{Arm: a, Seq: seq}, err
	}
	a, err := d.p.Choose(actions)
	if err != nil {
		return bandit.Ticket{}, err
	}
	d.serial++
	d.inflight, d.arm = true, a
	d.waits.Take(seq)
	return bandit.Ticket{Arm: a, Plan: d.serial, Seq: seq}, nil
}

// Overdue returns the pending choice when it is overdue (bandit.Waits):
// the caller resolves it at once, with a default reward or by Drop.
func (d *Delayed) Overdue() []bandit.Ticket {
	var out []bandit.Ticket
	for _, seq := range d.waits.Overdue() {
		out = append(out, bandit.Ticket{Arm: d.arm, Plan: d.serial, Seq: seq})
	}
	return out
}

// Patience returns the number of decisions after which a choice is
// overdue (bandit.Waits.Patience).
func (d *Delayed) Patience() int64 { return d.waits.Patience() }

// Seen counts the arrival of an overflow decision's reward, which is not
// learned, among the delays (bandit.Waits.Saw).
func (d *Delayed) Seen(t bandit.Ticket) { d.waits.Saw(t.Seq) }

func (d *Delayed) check(t bandit.Ticket) error {
	if !t.Learns() {
		return errors.New("contextual: an overflow decision's reward is not learned")
	}
	if !d.inflight || t.Plan != d.serial || t.Arm != d.arm || !d.waits.Pending(t.Seq) {
		return bandit.ErrStale
	}
	return nil
}

// Reward reports the reward of the pending choice.
func (d *Delayed) Reward(t bandit.Ticket, r float64) error {
	if err := d.check(t); err != nil {
		return err
	}
	if err := d.p.Update(r); err != nil {
		return err
	}
	d.inflight = false
	d.waits.Arrive(t.Seq, true)
	return nil
}

// Drop forgets the pending choice.
func (d *Delayed) Drop(t bandit.Ticket) error {
	if err := d.check(t); err != nil {
		return err
	}
	if err := d.p.Skip(); err != nil {
		return err
	}
	d.inflight = false
	d.waits.Arrive(t.Seq, false)
	return nil
}

// Pending returns 1 while a choice waits for its reward, else 0.
func (d *Delayed) Pending() int64 {
	if d.inflight {
		return 1
	}
	return 0
}

// Plan returns the pending choice as a one-step plan, and the number of
// choices made.
func (d *Delayed) Plan() (bandit.Plan, int64) { return bandit.Plan{Arm: d.arm, Count: 1}, d.serial }
