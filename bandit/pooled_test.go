package bandit_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/mab"
	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/privacy"
)

// spy wraps a policy and records every reward it is given.
type spy struct {
	bandit.Policy
	got []float64
}

func (s *spy) Update(f bandit.Feedback) error {
	if f.Count != 1 {
		return errors.New("spy: a sum of several rewards")
	}
	s.got = append(s.got, f.Sum)
	return s.Policy.Update(f)
}

func (s *spy) Released() []bandit.ArmStat { return s.Policy.(bandit.Releaser).Released() }

// lateShape is issue 49's traffic: one client, n decisions; 80% of the
// rewards come 0 to 50 decisions late, in shuffled order, and 20% are
// held and sent at the end in random order. Every reward carries a
// distinct value in [0, 1) so that it can be followed.
type lateShape struct {
	r       *rand.Rand
	pending map[int64][]arrival // by decision number: rewards that arrive before it
	held    []arrival
}

type arrival struct {
	tk bandit.Ticket
	v  float64
}

// run drives a decider through the shape; it returns the values sent.
func (s *lateShape) run(t *testing.T, n int64, decide func() bandit.Ticket, reward func(bandit.Ticket, float64) error) []float64 {
	t.Helper()
	var sent []float64
	deliver := func(as []arrival) {
		s.r.Shuffle(len(as), func(i, j int) { as[i], as[j] = as[j], as[i] })
		for _, a := range as {
			sent = append(sent, a.v)
			if err := reward(a.tk, a.v); err != nil && !errors.Is(err, bandit.ErrStale) && !errors.Is(err, mechanism.ErrInput) {
				t.Fatal(err)
			}
		}
	}
	for i := int64(1); i <= n; i++ {
		deliver(s.pending[i])
		delete(s.pending, i)
		tk := decide()
		a := arrival{tk, float64(i) / float64(n+1)}
		if s.r.Float64() < 0.2 {
			s.held = append(s.held, a)
		} else {
			at := i + 1 + s.r.Int64N(51)
			s.pending[at] = append(s.pending[at], a)
		}
	}
	for i := n + 1; i <= n+52; i++ {
		deliver(s.pending[i])
	}
	deliver(s.held)
	return sent
}

func adacUCB(t *testing.T, seed uint64) bandit.Policy { return adacUCBAt(t, seed, 1) }

// adacUCBAt is AdaC-UCB on 5 arms at rho (0: not private, so that no
// noise stream's position matters).
func adacUCBAt(t *testing.T, seed uint64, rho float64) bandit.Policy {
	t.Helper()
	b := privacy.None()
	if rho > 0 {
		var err error
		if b, err = privacy.NewZCDP(rho); err != nil {
			t.Fatal(err)
		}
	}
	p, err := mab.NewAdaCUCB(bandit.Setting{Arms: 5, Bounds: mechanism.Unit, Rand: noise.Stream(seed), Noise: noise.NewFast(seed)}, b, 1)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPooledLearnsLateAndReorderedRewards: issue 49's shape. The slot
// rule (Delayed) learns a fraction of the rewards; Pooled passes every
// reward sent to the policy or to a pool, exactly once.
func TestPooledLearnsLateAndReorderedRewards(t *testing.T) {
	const n = 6000
	for seed := uint64(1); seed <= 3; seed++ {
		old := &spy{Policy: adacUCB(t, seed)}
		d := bandit.NewDelayed(old)
		s := &lateShape{r: rand.New(rand.NewPCG(seed, 2)), pending: map[int64][]arrival{}}
		s.run(t, n, func() bandit.Ticket {
			for _, tk := range d.Overdue() {
				if err := d.Drop(tk); err != nil {
					t.Fatal(err)
				}
			}
			return d.Decide()
		}, func(tk bandit.Ticket, v float64) error {
			if !tk.Learns() {
				return nil
			}
			return d.Reward(tk, v)
		})
		if len(old.got) > n/2 {
			t.Errorf("seed %d: the slot rule learned %d of %d: the shape no longer shows its waste", seed, len(old.got), n)
		}

		sp := &spy{Policy: adacUCB(t, seed)}
		pd := bandit.NewPooled(sp)
		s = &lateShape{r: rand.New(rand.NewPCG(seed, 2)), pending: map[int64][]arrival{}}
		sent := s.run(t, n, func() bandit.Ticket {
			tk, err := pd.Decide()
			if err != nil {
				t.Fatal(err)
			}
			if !tk.Learns() {
				t.Fatalf("a pooled decision that does not learn: %+v", tk)
			}
			return tk
		}, pd.Reward)
		if len(sent) != n {
			t.Fatalf("sent %d rewards, want %d", len(sent), n)
		}
		if pd.Pending() != 0 {
			t.Errorf("seed %d: %d decisions still pending after every reward came", seed, pd.Pending())
		}
		learned := int64(len(sp.got))
		if learned+pd.Pooled() != n {
			t.Errorf("seed %d: %d rewards fed and %d pooled, want %d in all", seed, learned, pd.Pooled(), n)
		}
		// Each value is fed at most once, and only values that were sent.
		fed := slices.Clone(sp.got)
		slices.Sort(fed)
		for i := 1; i < len(fed); i++ {
			if fed[i] == fed[i-1] {
				t.Fatalf("seed %d: reward %v fed twice", seed, fed[i])
			}
		}
		slices.Sort(sent)
		for _, v := range fed {
			if _, ok := slices.BinarySearch(sent, v); !ok {
				t.Fatalf("seed %d: fed %v, never sent", seed, v)
			}
		}
		t.Logf("seed %d: slot rule %d learned; pooled rule %d fed, %d pooled", seed, len(old.got), learned, pd.Pooled())

	}
}

// script plans: arm 2 for 3, arm 0 for 1, arm 1 for 5, ...
func TestPooledFeedsPlansAndPools(t *testing.T) {
	p := &script{plans: []bandit.Plan{{Arm: 2, Count: 3}, {Arm: 0, Count: 1}, {Arm: 2, Count: 2}, {Arm: 1, Count: 5}}}
	d := bandit.NewPooled(p)
	var in []bandit.Ticket
	for range 4 {
		tk, err := d.Decide()
		if err != nil {
			t.Fatal(err)
		}
		if tk.Arm != 2 || !tk.Learns() {
			t.Fatalf("decision in plan 1: %+v", tk)
		}
		in = append(in, tk)
	}
	// The fourth decision plays arm 2 too (script shows no releases) and
	// learns: its reward serves this plan or arm 2's next.
	for _, i := range []int{3, 1, 0} {
		if err := d.Reward(in[i], 0.25*float64(i)); err != nil {
			t.Fatal(err)
		}
	}
	if len(p.seen) != 3 || p.i != 1 {
		t.Fatalf("the policy saw %d rewards and is at plan %d, want 3 and plan 1", len(p.seen), p.i)
	}
	if err := d.Reward(in[0], 1); !errors.Is(err, bandit.ErrStale) {
		t.Fatalf("a second reward for one decision: %v, want ErrStale", err)
	}
	// in[2]'s reward comes while plan 2 (arm 0) runs: it is pooled, and
	// fed to plan 3 (arm 2) when it starts.
	if err := d.Reward(in[2], 0.5); err != nil {
		t.Fatal(err)
	}
	if d.Pooled() != 1 || len(p.seen) != 3 {
		t.Fatalf("pooled %d, seen %d; want 1 and 3", d.Pooled(), len(p.seen))
	}
	tk, _ := d.Decide()
	if tk.Arm != 0 {
		t.Fatalf("plan 2 plays arm 0, got %+v", tk)
	}
	if err := d.Reward(tk, 1); err != nil {
		t.Fatal(err)
	}
	if d.Pooled() != 1 || len(p.seen) != 4 || p.i != 2 {
		t.Fatalf("plan 2 closed by its reward: pooled %d, seen %v, plan %d; want 1, 4 rewards, plan 2", d.Pooled(), p.seen, p.i)
	}
	// Plan 3 (arm 2, 2 rewards) starts with the next operation and takes
	// the pooled reward; its last comes with a decision of its arm.
	tk, _ = d.Decide()
	if d.Pooled() != 0 || len(p.seen) != 5 || p.seen[4].Sum != 0.5 || tk.Arm != 2 {
		t.Fatalf("the pool feeds plan 3: pooled %d, seen %v, decision %+v", d.Pooled(), p.seen, tk)
	}
	if err := d.Reward(tk, 0.75); err != nil || p.i != 3 {
		t.Fatalf("plan 3's last reward: %v, plan %d", err, p.i)
	}
	if err := d.Reward(tk, math.NaN()); err == nil {
		t.Fatal("a reward for a closed decision accepted")
	}
	tk, _ = d.Decide()
	if err := d.Reward(tk, math.NaN()); err == nil {
		t.Fatal("NaN reward accepted")
	}
	if err := d.Drop(tk); err != nil {
		t.Fatal(err)
	}
	if err := d.Drop(tk); !errors.Is(err, bandit.ErrStale) {
		t.Fatalf("a second drop: %v, want ErrStale", err)
	}
}

// TestPooledOverdueDecisionsAreReplacedAndStillLearn: once a decision is
// overdue the plan takes another in its place, and the late reward is
// learned all the same.
func TestPooledOverdueDecisionsAreReplacedAndStillLearn(t *testing.T) {
	p := &script{plans: []bandit.Plan{{Arm: 0, Count: 1 << 40}}}
	d := bandit.NewPooled(p)
	// A plan of one slot at a time would be too slow to show it: use a
	// large plan, and check that the count of decisions counted on stays
	// bounded once decisions go overdue. First, 40 rewards at once.
	for range 40 {
		tk, _ := d.Decide()
		if err := d.Reward(tk, 1); err != nil {
			t.Fatal(err)
		}
	}
	late, _ := d.Decide()
	for range int(d.Patience()) + 1 {
		tk, _ := d.Decide()
		if err := d.Reward(tk, 1); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Reward(late, 0); err != nil {
		t.Fatalf("an overdue decision's reward: %v", err)
	}
	if got := p.seen[len(p.seen)-1].Sum; got != 0 {
		t.Fatalf("the late reward was not the last learned: %v", got)
	}
}

// TestPooledSnapshot: a Pooled restored from its snapshot continues as
// the saved one does.
func TestPooledSnapshot(t *testing.T) {
	a, b := bandit.NewPooled(adacUCBAt(t, 7, 0)), bandit.NewPooled(adacUCBAt(t, 7, 0))
	r := rand.New(rand.NewPCG(7, 7))
	var open []bandit.Ticket
	step := func(d *bandit.Pooled, rr *rand.Rand, open *[]bandit.Ticket) bandit.Ticket {
		tk, err := d.Decide()
		if err != nil {
			t.Fatal(err)
		}
		*open = append(*open, tk)
		if len(*open) > 30 || rr.Float64() < 0.3 {
			i := rr.IntN(len(*open))
			if err := d.Reward((*open)[i], rr.Float64()); err != nil {
				t.Fatal(err)
			}
			*open = slices.Delete(*open, i, i+1)
		}
		return tk
	}
	for range 500 {
		step(a, r, &open)
	}
	snap, err := a.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	// b replays nothing: it is built anew and restored.
	if err := b.UnmarshalBinary(snap); err != nil {
		t.Fatal(err)
	}
	if a.Pooled() != b.Pooled() || a.Pending() != b.Pending() {
		t.Fatalf("restored pooled %d pending %d, want %d %d", b.Pooled(), b.Pending(), a.Pooled(), a.Pending())
	}
	ra, rb := rand.New(rand.NewPCG(8, 8)), rand.New(rand.NewPCG(8, 8))
	openB := slices.Clone(open)
	for i := range 2000 {
		x, y := step(a, ra, &open), step(b, rb, &openB)
		if x != y {
			t.Fatalf("step %d after the restore: %+v against %+v", i, y, x)
		}
	}
}
