package contextual_test

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/contextual"
	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/privacy"
)

func newAdaC(t *testing.T, seed uint64) *contextual.OFUL {
	b, _ := privacy.NewZCDP(1)
	o, err := contextual.New(contextual.Setting{Dim: 3, Horizon: 5000, Bounds: mechanism.Unit, Noise: noise.NewFast(seed)},
		contextual.Config{Lambda: 1, Delta: 0.01, S: 1, C: 1, Budget: b})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// decisionSet is the n-th decision set of a fixed stream: 5 actions in
// the unit ball of R^3.
func decisionSet(n int) [][]float64 {
	r := rand.New(rand.NewPCG(uint64(n), 9))
	set := make([][]float64, 5)
	for k := range set {
		a := []float64{r.NormFloat64(), r.NormFloat64(), r.NormFloat64()}
		mechanism.IntoUnitBall(a)
		set[k] = a
	}
	return set
}

// TestConcurrentChoicesAreTheSequentialOnes: AdaC-OFUL through Delayed
// with every reward held back as long as possible (given only when a
// decision comes back as overflow, that is when the episode's
// re-estimation waits for them) takes, at its learning decisions, the
// actions the sequential policy takes with every reward at once, on the
// same decision sets and noise: the decisions within an episode use
// only released values and V_tau. Many decisions are in flight at once,
// and overflow decisions never learn.
func TestConcurrentChoicesAreTheSequentialOnes(t *testing.T) {
	reward := func(n int, k int) float64 { return float64((n*7+k*3)%5) / 4 }
	seq := newAdaC(t, 4)
	var want []int
	for n := range 400 {
		k, err := seq.Choose(decisionSet(n))
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, k)
		if err := seq.Update(reward(n, k)); err != nil {
			t.Fatal(err)
		}
	}
	d := contextual.NewDelayed(newAdaC(t, 4))
	type held struct {
		tk bandit.Ticket
		r  float64
	}
	var pending []held
	n, most := 0, 0
	for n < 400 {
		tk, err := d.Decide(decisionSet(n))
		if err != nil {
			t.Fatal(err)
		}
		if !tk.Learns() {
			if err := d.Reward(tk, 1); err == nil {
				t.Fatal("an overflow decision learned")
			}
			for _, h := range pending {
				if err := d.Reward(h.tk, h.r); err != nil {
					t.Fatal(err)
				}
			}
			pending = pending[:0]
			continue
		}
		if tk.Arm != want[n] {
			t.Fatalf("learning decision %d: action %d, the sequential policy's %d", n, tk.Arm, want[n])
		}
		pending = append(pending, held{tk, reward(n, tk.Arm)})
		most = max(most, len(pending))
		n++
	}
	if most < 8 {
		t.Errorf("at most %d decisions were in flight at once", most)
	}
}

// TestDroppedChoiceIsWithdrawn: a choice whose reward never comes is
// withdrawn from V: the later decisions are those of a policy that never
// took it; a reward after the drop is stale.
func TestDroppedChoiceIsWithdrawn(t *testing.T) {
	d := contextual.NewDelayed(newAdaC(t, 5))
	ref := contextual.NewDelayed(newAdaC(t, 5))
	lost, err := d.Decide(decisionSet(0))
	if err != nil || !lost.Learns() {
		t.Fatalf("%+v %v", lost, err)
	}
	if err := d.Drop(lost); err != nil {
		t.Fatal(err)
	}
	if err := d.Reward(lost, 1); !errors.Is(err, bandit.ErrStale) {
		t.Fatalf("reward after drop: %v", err)
	}
	for n := 1; n < 200; n++ {
		a, err := d.Decide(decisionSet(n))
		if err != nil {
			t.Fatal(err)
		}
		b, err := ref.Decide(decisionSet(n))
		if err != nil {
			t.Fatal(err)
		}
		if a.Arm != b.Arm || a.Learns() != b.Learns() {
			t.Fatalf("decision %d: %+v, without the dropped choice %+v", n, a, b)
		}
		if a.Learns() {
			d.Reward(a, 0.5)
			ref.Reward(b, 0.5)
		}
	}
	if d.Pending() != 0 {
		t.Errorf("%d pending", d.Pending())
	}
}

// TestDropReopensTheSameEpisode: dropping the choice that closed an
// episode shrinks V below the doubling threshold and reopens the same
// episode; the other pending choices of that episode must still take
// their rewards (found by review: the episode number moved on, their
// rewards were stale, and the service stopped the experiment).
func TestDropReopensTheSameEpisode(t *testing.T) {
	d := contextual.NewDelayed(newAdaC(t, 6))
	n := 0
	for ; n < 300; n++ { // rewards at once: the episodes grow long
		tk, err := d.Decide(decisionSet(n))
		if err != nil || !tk.Learns() {
			t.Fatalf("%+v %v", tk, err)
		}
		if err := d.Reward(tk, 0.5); err != nil {
			t.Fatal(err)
		}
	}
	var pending []bandit.Ticket
	for ; n < 2000; n++ {
		tk, err := d.Decide(decisionSet(n))
		if err != nil {
			t.Fatal(err)
		}
		if !tk.Learns() {
			break // the episode closed at the last learning decision
		}
		pending = append(pending, tk)
	}
	if len(pending) < 3 || n == 2000 {
		t.Fatalf("%d pending when the episode closed (n = %d)", len(pending), n)
	}
	closing := pending[len(pending)-1]
	if err := d.Drop(closing); err != nil {
		t.Fatal(err)
	}
	again, err := d.Decide(decisionSet(n + 1))
	if err != nil {
		t.Fatal(err)
	}
	if !again.Learns() {
		t.Fatal("the drop did not reopen the episode: the test needs another seed")
	}
	if again.Plan != closing.Plan {
		t.Fatalf("the reopened episode has number %d, the pending choices %d", again.Plan, closing.Plan)
	}
	for _, tk := range append(pending[:len(pending)-1], again) {
		if !tk.Learns() {
			continue
		}
		if err := d.Reward(tk, 0.5); err != nil {
			t.Fatalf("reward of %+v after the drop: %v", tk, err)
		}
	}
}
