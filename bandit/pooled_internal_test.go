package bandit

import "testing"

// alternating plays arms 0 and 1 in turn, 4 steps each, and forgets
// each plan's rewards when it ends (a Forgetter, as AdaC-UCB).
type alternating struct{ arm, done int64 }

func (p *alternating) Next() Plan { return Plan{Arm: int(p.arm), Count: 4 - p.done} }
func (p *alternating) Update(f Feedback) error {
	if p.done += f.Count; p.done == 4 {
		p.arm, p.done = 1-p.arm, 0
	}
	return nil
}
func (p *alternating) Unreleased() (int64, bool) { return p.done, true }

// TestPooledCoveredBoundedWithoutTracking: a library user of Pooled with a
// forgetting policy who does not call Covered (only the decision service
// does) kept every pooled reward a release ever covered: d.covered grew
// with the history (an independent review's reproduction). The
// bookkeeping is now the caller's choice (TrackCovered).
func TestPooledCoveredBoundedWithoutTracking(t *testing.T) {
	d := NewPooled(&alternating{})
	for range 5000 {
		var tks []Ticket
		for range 6 {
			tk, err := d.Decide()
			if err != nil {
				t.Fatal(err)
			}
			tks = append(tks, tk)
		}
		for _, tk := range tks {
			if err := d.Reward(tk, 0.5); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n := len(d.covered); n > 1000 {
		t.Errorf("after 30000 decisions (pending %d, pooled %d), Pooled holds %d covered seqs for a Covered call that never comes", d.Pending(), d.Pooled(), n)
	}
}

// single plays arms 0 and 1 in turn, one step at a time (as UCB1,
// Thompson and KL-UCB plan: Count 1).
type single struct{ n int64 }

func (p *single) Next() Plan              { return Plan{Arm: int(p.n % 2), Count: 1} }
func (p *single) Update(f Feedback) error { p.n += f.Count; return nil }

// TestPooledOneStepPlansDrain: a plan of Count 1 takes no
// pooled reward ("all but its last"), so with one-step plans a pool only
// grows: a reward that comes while no plan needs it is never fed to the
// policy, and the pools hold the history.
func TestPooledOneStepPlansDrain(t *testing.T) {
	p := &single{}
	d := NewPooled(p)
	for range 10000 {
		a, _ := d.Decide() // counted on: plan 1 step
		b, _ := d.Decide() // the plan has a decision in flight: fallback, same arm
		if err := d.Reward(a, 1); err != nil {
			t.Fatal(err)
		}
		if err := d.Reward(b, 1); err != nil {
			t.Fatal(err)
		}
	}
	if d.Pooled() > 100 {
		t.Errorf("20000 rewards given, %d fed to the policy, %d in the pool", p.n, d.Pooled())
	}
}
