package contextual_test

import (
	"errors"
	"testing"

	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/contextual"
)

// ledgerPolicy is a Concurrent that keeps V (without lambda I) and the
// statistic sum r a as plain sums, so that a test can compute them by
// hand; its episodes never end and it always takes the first action.
type ledgerPolicy struct {
	v         [2][2]float64
	stat      [2]float64
	withdrawn int
}

func (p *ledgerPolicy) Choose([][]float64) (int, error) { return 0, nil }
func (p *ledgerPolicy) Update(float64) error            { return nil }
func (p *ledgerPolicy) Open() bool                      { return true }
func (p *ledgerPolicy) Reestimate() error               { return nil }
func (p *ledgerPolicy) Greedy([][]float64) (int, error) { return 0, nil }

func (p *ledgerPolicy) outer(a []float64, s float64) {
	for i := range 2 {
		for j := range 2 {
			p.v[i][j] += s * a[i] * a[j]
		}
	}
}

func (p *ledgerPolicy) Take(actions [][]float64) (int, error) {
	p.outer(actions[0], 1)
	return 0, nil
}

func (p *ledgerPolicy) Give(a []float64, r float64) error {
	p.stat[0] += r * a[0]
	p.stat[1] += r * a[1]
	return nil
}

func (p *ledgerPolicy) Withdraw(a []float64) error {
	p.outer(a, -1)
	p.withdrawn++
	return nil
}

func (p *ledgerPolicy) Enter(a []float64, r float64) error {
	p.outer(a, 1)
	return p.Give(a, r)
}

// lateAction is the action of decision n, exact in binary so that the
// sums compare exactly.
func lateAction(n int) [][]float64 {
	return [][]float64{{float64(n%4) / 4, float64(n%3) / 4}}
}

// TestLateRewardEntersTheOpenEpisode: under the late rule
// (NewDelayedLate), an overdue choice is withdrawn from V by Decide
// itself (Overdue reports nothing for the caller to resolve), and stays
// pending: its reward, when it comes, enters the open episode (V gains
// a a^T, the statistic r a), a default enters the same way, and a Drop
// leaves it out. V and the statistic are computed by hand.
func TestLateRewardEntersTheOpenEpisode(t *testing.T) {
	p := &ledgerPolicy{}
	d := contextual.NewDelayedLate(p)
	var v [2][2]float64
	var stat [2]float64
	add := func(a []float64, r float64) {
		for i := range 2 {
			stat[i] += r * a[i]
			for j := range 2 {
				v[i][j] += a[i] * a[j]
			}
		}
	}
	n := 0
	decide := func() bandit.Ticket {
		tk, err := d.Decide(lateAction(n))
		if err != nil || !tk.Learns() {
			t.Fatalf("decision %d: %+v %v", n, tk, err)
		}
		if o := d.Overdue(); len(o) != 0 {
			t.Fatalf("decision %d: %d overdue for the caller to resolve, want none", n, len(o))
		}
		n++
		return tk
	}
	prompt := func(k int) { // k decisions rewarded at once
		for range k {
			a := lateAction(n)[0]
			tk := decide()
			if err := d.Reward(tk, 0.5); err != nil {
				t.Fatal(err)
			}
			add(a, 0.5)
		}
	}
	prompt(40) // 40 delays of 0: the patience is 2*1 + 8 = 10 decisions
	if got := d.Patience(); got != 10 {
		t.Fatalf("patience %d, want 10", got)
	}
	held := [3][]float64{}
	var tks [3]bandit.Ticket
	for i := range tks {
		held[i] = lateAction(n)[0]
		tks[i] = decide()
	}
	prompt(11) // the held choices are overdue now
	if p.withdrawn != 3 {
		t.Fatalf("%d choices withdrawn, want the 3 overdue", p.withdrawn)
	}
	if d.Pending() != 0 || d.Withdrawn() != 3 {
		t.Fatalf("%d pending, %d withdrawn, want the 3 withdrawn", d.Pending(), d.Withdrawn())
	}
	if p.v != v || p.stat != stat {
		t.Fatalf("after the withdrawals V = %v, stat = %v; by hand %v, %v", p.v, p.stat, v, stat)
	}
	if err := d.Reward(tks[0], 0.75); err != nil {
		t.Fatalf("the late reward: %v", err)
	}
	add(held[0], 0.75)
	if err := d.Default(tks[1], 0.25); err != nil {
		t.Fatalf("the default at the window's end: %v", err)
	}
	add(held[1], 0.25)
	if err := d.Drop(tks[2]); err != nil {
		t.Fatalf("the drop at the window's end: %v", err)
	}
	if p.v != v || p.stat != stat {
		t.Fatalf("after the late rewards V = %v, stat = %v; by hand %v, %v", p.v, p.stat, v, stat)
	}
	if d.Pending() != 0 || d.Withdrawn() != 0 {
		t.Fatalf("%d pending, %d withdrawn", d.Pending(), d.Withdrawn())
	}
	for _, tk := range tks {
		if err := d.Reward(tk, 1); !errors.Is(err, bandit.ErrStale) {
			t.Fatalf("a second reward of %+v: %v, want ErrStale", tk, err)
		}
	}
}

// TestWithdrawnChoiceSurvivesASnapshot: a choice withdrawn as overdue
// and still pending is saved as such: restored, its late reward enters
// the open episode exactly as without the snapshot.
func TestWithdrawnChoiceSurvivesASnapshot(t *testing.T) {
	run := func(d *contextual.Delayed, from, to int, hold map[int]bandit.Ticket) {
		for n := from; n < to; n++ {
			tk, err := d.Decide(decisionSet(n))
			if err != nil {
				t.Fatal(err)
			}
			if n%50 == 7 && tk.Learns() {
				hold[n] = tk
				continue
			}
			if !tk.Learns() {
				d.Seen(tk) // an overflow decision's reward came: its delay counts
			} else if err := d.Reward(tk, float64(n%5)/4); err != nil {
				t.Fatal(err)
			}
		}
	}
	a := contextual.NewDelayedLate(newAdaC(t, 11))
	hold := map[int]bandit.Ticket{}
	run(a, 0, 300, hold)
	if len(hold) == 0 || a.Withdrawn() != int64(len(hold)) {
		t.Fatalf("%d held, %d withdrawn", len(hold), a.Withdrawn())
	}
	saved, err := a.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	b := contextual.NewDelayedLate(newAdaC(t, 11))
	if err := b.UnmarshalBinary(saved); err != nil {
		t.Fatal(err)
	}
	for n, tk := range hold {
		for _, d := range []*contextual.Delayed{a, b} {
			if err := d.Reward(tk, 1); err != nil {
				t.Fatalf("the late reward of decision %d: %v", n, err)
			}
		}
	}
	// (compared before the next release: the noise stream's position is
	// not in a snapshot, the service's tape keeps it)
	if a.Withdrawn() != 0 || b.Withdrawn() != 0 {
		t.Fatalf("%d and %d withdrawn after the late rewards", a.Withdrawn(), b.Withdrawn())
	}
	x, _ := a.MarshalBinary()
	y, _ := b.MarshalBinary()
	if string(x) != string(y) {
		t.Fatal("the restored policy differs after the late rewards")
	}
}
