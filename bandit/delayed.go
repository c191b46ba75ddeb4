package bandit

import (
	"math"

	"github.com/dpbandit/dpbandit/internal/liberr"
)

// Ticket is one decision of a Delayed policy: the arm to play and the
// plan it belongs to. Plan 0 marks an overflow decision, taken while the
// current plan waits for rewards: its reward is never learned.
type Ticket struct {
	Arm  int
	Plan int64
	// Seq numbers the decision among its Delayed's decisions, from 1
	// (overflow ones too): it tells a plan's slots apart.
	Seq int64
}

// Learns reports whether the ticket's reward will be learned.
func (t Ticket) Learns() bool { return t.Plan != 0 }

// Delayed runs a Policy one decision at a time when rewards arrive late,
// out of order, or never. Decisions never wait for rewards. The rule:
//
//   - The policy's current plan (arm a for n steps) has n slots. Each
//     decision takes a free slot and plays a.
//   - Once every slot is taken, further decisions are overflow: their
//     rewards are acknowledged by the caller and never reach the policy.
//     An overflow decision plays the arm of highest released mean when
//     the policy shows its releases (Releaser; post-processing of
//     released values, so it costs no privacy), else a, the arm the
//     policy committed to. Overflow keeps the policy's privacy accounting
//     intact (every learned reward belongs to the plan it was decided
//     in) at the price of the data it does not learn from.
//   - A slot whose reward will never come (Drop: the reward window
//     passed without a default) is freed and taken by a later decision.
//   - A slot is overdue (Overdue) once more decisions have passed since
//     it was taken than the rewards that do come take: Patience, twice
//     the 99th percentile of the delays of the rewards that came (in
//     decisions, on a power-of-two histogram; overflow decisions'
//     rewards count too, Seen) plus 8, once 32 of them have come.
//     The caller resolves an overdue slot at once, with a default reward
//     or by Drop, so that a reward that never comes stalls its plan for
//     about as long as the others take to arrive, not for a whole
//     window. Only the order of decisions and arrivals decides it, never
//     a reward's value; and the plan is never closed on its first
//     arrivals, which could be a biased sample (conversions come early),
//     but on the decisions it took, each resolved by its reward or, late,
//     by the caller's rule.
//   - When every slot of the plan has its reward, the policy sees the
//     whole plan's feedback, one reward at a time, and its next plan
//     starts with the next decision.
//
// Rewards within a plan may arrive in any order: they are rewards of the
// same arm, and plan-based policies only use their sums, or their
// samples in arrival order. The decision service runs this rule for the
// experiments created before Pooled, which learns the rewards this rule
// drops (late ones, and overflow decisions'), so that their histories
// replay.
type Delayed struct {
	p       Policy
	samples bool
	plan    Plan  // the current plan, as Next returned it when it started
	serial  int64 // the current plan's number, from 1; 0 before the first
	taken   int64 // slots taken by decisions and not dropped
	got     int64 // rewards learned in the current plan
	waits   Waits // the decisions and the pending slots
}

// NewDelayed wraps p.
func NewDelayed(p Policy) *Delayed {
	su, ok := p.(SampleUser)
	return &Delayed{p: p, samples: ok && su.NeedsSamples()}
}

// Policy returns the wrapped policy.
func (d *Delayed) Policy() Policy { return d.p }

// Decide returns the next decision.
func (d *Delayed) Decide() Ticket {
	seq := d.waits.Decide()
	if d.serial == 0 || d.got == d.plan.Count {
		d.plan = d.p.Next()
		d.serial++
		d.taken, d.got = 0, 0
	}
	if d.taken < d.plan.Count {
		d.taken++
		d.waits.Take(seq)
		return Ticket{Arm: d.plan.Arm, Plan: d.serial, Seq: seq}
	}
	return Ticket{Arm: d.fallback(), Seq: seq}
}

// Overdue returns the current plan's slots whose rewards are overdue
// (Waits.Overdue), oldest first, as their tickets: the caller resolves
// each at once, with a default reward (Reward) or by Drop.
func (d *Delayed) Overdue() []Ticket {
	var out []Ticket
	for _, seq := range d.waits.Overdue() {
		out = append(out, Ticket{Arm: d.plan.Arm, Plan: d.serial, Seq: seq})
	}
	return out
}

// Patience returns the number of decisions after which a slot is
// overdue (Waits.Patience).
func (d *Delayed) Patience() int64 { return d.waits.Patience() }

// Seen counts among the delays the arrival of a reward that is not
// learned: an overflow decision's, or one that came after its slot was
// resolved as overdue (Waits.Saw), so that the patience follows delays
// that grow.
func (d *Delayed) Seen(t Ticket) { d.waits.Saw(t.Seq) }

// fallback returns the arm of an overflow decision (bestReleased).
func (d *Delayed) fallback() int { return bestReleased(d.p, d.plan.Arm) }

// bestReleased returns the arm of highest released mean of p (lowest
// index among ties), a post-processing of released values, or arm when
// p shows no releases (Releaser).
func bestReleased(p Policy, arm int) int {
	r, ok := p.(Releaser)
	if !ok {
		return arm
	}
	best := math.Inf(-1)
	for _, s := range r.Released() {
		if s.Mean > best {
			best, arm = s.Mean, s.Arm
		}
	}
	return arm
}

// ErrStale is returned for a reward or drop of a ticket that is not of
// the current plan (or that the plan has no slot for).
var ErrStale = liberr.New("bandit", "the ticket is not of the current plan")

func (d *Delayed) check(t Ticket) error {
	if !t.Learns() {
		return inputf("an overflow decision's reward is not learned")
	}
	if t.Plan != d.serial || t.Arm != d.plan.Arm || d.got >= d.taken || !d.waits.Pending(t.Seq) {
		return ErrStale
	}
	return nil
}

// Reward reports the reward of a learning ticket of the current plan.
// The reward must be finite; the policy clips it to its declared range.
func (d *Delayed) Reward(t Ticket, r float64) error { return d.learn(t, r, true) }

// checkReward returns the error of checking a reward's ticket (ticket),
// or one for a reward r that is not finite.
func checkReward(ticket error, r float64) error {
	if ticket != nil {
		return ticket
	}
	if math.IsNaN(r) || math.IsInf(r, 0) {
		return inputf("reward %v is not finite", r)
	}
	return nil
}

// learn gives the policy a slot's reward: one that came, or a default.
func (d *Delayed) learn(t Ticket, r float64, came bool) error {
	if err := checkReward(d.check(t), r); err != nil {
		return err
	}
	f := Feedback{Arm: t.Arm, Count: 1, Sum: r}
	if d.samples {
		f.Samples = []float64{r}
	}
	if err := d.p.Update(f); err != nil {
		return err
	}
	d.got++
	d.waits.Arrive(t.Seq, came)
	return nil
}

// Default gives an overdue slot the default reward r: as Reward, but its
// delay is not one of the rewards that came (Waits): a default is not a
// delay, and counting it would make the patience grow without bound.
func (d *Delayed) Default(t Ticket, r float64) error { return d.learn(t, r, false) }

// Drop frees the slot of a learning ticket of the current plan whose
// reward will never come.
func (d *Delayed) Drop(t Ticket) error {
	if err := d.check(t); err != nil {
		return err
	}
	d.taken--
	d.waits.Arrive(t.Seq, false)
	return nil
}

// Pending returns the number of the current plan's slots that wait for
// a reward.
func (d *Delayed) Pending() int64 { return d.taken - d.got }

// Plan returns the current plan (arm and its number of slots) and its
// number, 0 before the first decision.
func (d *Delayed) Plan() (Plan, int64) { return d.plan, d.serial }
