package bandit_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dpbandit/dpbandit/bandit"
)

// script is a policy with fixed plans that records its feedback.
type script struct {
	plans []bandit.Plan
	i     int
	done  int64
	seen  []bandit.Feedback
}

func (s *script) Next() bandit.Plan {
	p := s.plans[s.i]
	p.Count -= s.done
	return p
}

func (s *script) Update(f bandit.Feedback) error {
	if err := s.Next().Check(f); err != nil {
		return err
	}
	s.seen = append(s.seen, f)
	if s.done += f.Count; s.done == s.plans[s.i].Count {
		s.i, s.done = s.i+1, 0
	}
	return nil
}

func TestDelayedSlotsOverflowAndDrop(t *testing.T) {
	p := &script{plans: []bandit.Plan{{Arm: 2, Count: 3}, {Arm: 0, Count: 1}, {Arm: 1, Count: 5}}}
	d := bandit.NewDelayed(p)
	var in []bandit.Ticket
	for range 3 {
		tk := d.Decide()
		if tk.Arm != 2 || !tk.Learns() {
			t.Fatalf("decision in plan 1: %+v", tk)
		}
		in = append(in, tk)
	}
	over := d.Decide()
	if over.Arm != 2 || over.Learns() {
		t.Fatalf("4th decision of a 3-slot plan must be overflow on its arm, got %+v", over)
	}
	if err := d.Reward(over, 0.5); err == nil {
		t.Fatal("an overflow reward was learned")
	}
	// Slot 2 never gets a reward: dropping it frees a slot for the next decision.
	if err := d.Drop(in[1]); err != nil {
		t.Fatal(err)
	}
	again := d.Decide()
	if again.Arm != in[0].Arm || again.Plan != in[0].Plan {
		t.Fatalf("a freed slot goes to the next decision, got %+v", again)
	}
	for _, tk := range []bandit.Ticket{in[2], again, in[0]} { // out of order
		if err := d.Reward(tk, 1); err != nil {
			t.Fatal(err)
		}
	}
	if len(p.seen) != 3 || p.i != 1 {
		t.Fatalf("the policy saw %d rewards and is at plan %d, want 3 and plan 1", len(p.seen), p.i)
	}
	if err := d.Reward(in[0], 1); !errors.Is(err, bandit.ErrStale) {
		t.Fatalf("a fourth reward for a complete plan: %v, want ErrStale", err)
	}
	next := d.Decide()
	if next.Arm != 0 || next.Plan != 2 {
		t.Fatalf("after its rewards the next plan starts: %+v", next)
	}
	if err := d.Reward(next, math.NaN()); err == nil {
		t.Fatal("NaN reward accepted")
	}
	if d.Pending() != 1 {
		t.Fatalf("pending = %d, want 1", d.Pending())
	}
}

// shown is a script that shows released means.
type shown struct {
	script
	stats []bandit.ArmStat
}

func (s *shown) Released() []bandit.ArmStat { return s.stats }

func TestDelayedOverflowPlaysBestReleased(t *testing.T) {
	p := &shown{script: script{plans: []bandit.Plan{{Arm: 2, Count: 1}}}}
	d := bandit.NewDelayed(p)
	if tk := d.Decide(); tk.Arm != 2 || !tk.Learns() {
		t.Fatalf("first decision %+v", tk)
	}
	if tk := d.Decide(); tk.Arm != 2 || tk.Learns() {
		t.Fatalf("overflow before any release plays the plan's arm, got %+v", tk)
	}
	p.stats = []bandit.ArmStat{{Arm: 0, Mean: 0.3}, {Arm: 1, Mean: 0.7}, {Arm: 3, Mean: 0.7}, {Arm: 2, Mean: 0.5}}
	if tk := d.Decide(); tk.Arm != 1 || tk.Learns() {
		t.Fatalf("overflow plays the highest released mean (first of ties), got %+v", tk)
	}
}

// TestOverdueSlots: a slot is overdue once more decisions have passed
// than twice the 99th percentile of the learned rewards' delays plus 8,
// and only after 32 rewards came (before, no decision count makes it
// overdue); an overdue slot is reported until it is resolved, and only
// then the plan moves on.
func TestOverdueSlots(t *testing.T) {
	p := &script{plans: []bandit.Plan{{Arm: 0, Count: 40}, {Arm: 1, Count: 1000}, {Arm: 0, Count: 1000}}}
	d := bandit.NewDelayed(p)
	if got := d.Patience(); got != math.MaxInt64 {
		t.Fatalf("patience %d before any reward", got)
	}
	// Plan 1: 40 decisions, each rewarded 3 decisions later (delay 3:
	// the bucket [2, 4), so patience 2*4 + 8 = 16 once 32 have come).
	var wait []bandit.Ticket
	for i := range 43 {
		tk := d.Decide()
		if i < 40 {
			wait = append(wait, tk)
		}
		if i >= 3 && len(wait) > 0 && wait[0].Seq <= tk.Seq-3 {
			if err := d.Reward(wait[0], 1); err != nil {
				t.Fatal(err)
			}
			wait = wait[1:]
		}
	}
	for _, tk := range wait {
		if err := d.Reward(tk, 1); err != nil {
			t.Fatal(err)
		}
	}
	if got := d.Patience(); got != 16 {
		t.Fatalf("patience %d, want 16", got)
	}
	// Plan 2: the first slot's reward never comes.
	lost := d.Decide()
	for range 16 {
		d.Decide()
	}
	if o := d.Overdue(); len(o) != 0 {
		t.Fatalf("overdue after 16 decisions: %v", o)
	}
	d.Decide()
	o := d.Overdue()
	if len(o) != 1 || o[0] != lost {
		t.Fatalf("overdue %v, want %v", o, lost)
	}
	if len(d.Overdue()) != 1 {
		t.Error("an unresolved overdue slot is not reported again")
	}
	if err := d.Drop(lost); err != nil {
		t.Fatal(err)
	}
	if len(d.Overdue()) != 0 {
		t.Error("a resolved slot is still overdue")
	}
	if err := d.Reward(lost, 1); !errors.Is(err, bandit.ErrStale) {
		t.Errorf("a reward after the slot was resolved: %v", err)
	}
}

// runDelays drives plans of 64 slots for n decisions; the reward of the
// learning decision t arrives delay(t) decisions later, or never when
// delay(t) < 0; an overdue slot is resolved by def (Default or Drop), and
// a reward that comes after that counts as Seen. It returns the number
// of rewards learned from decision from on.
func runDelays(t *testing.T, d *bandit.Delayed, n, from int, delay func(int) int, def func(bandit.Ticket) error) int {
	t.Helper()
	due := map[int][]bandit.Ticket{}
	learned := 0
	for i := range n {
		for _, tk := range due[i] {
			err := d.Reward(tk, 1)
			switch {
			case errors.Is(err, bandit.ErrStale):
				d.Seen(tk)
			case err != nil:
				t.Fatal(err)
			case i >= from:
				learned++
			}
		}
		delete(due, i)
		tk := d.Decide()
		for _, o := range d.Overdue() {
			if err := def(o); err != nil {
				t.Fatal(err)
			}
		}
		if l := delay(i); tk.Learns() && l >= 0 {
			due[i+1+l] = append(due[i+1+l], tk)
		}
	}
	return learned
}

func manyPlans(n int) *script {
	p := &script{}
	for range n {
		p.plans = append(p.plans, bandit.Plan{Arm: 0, Count: 64})
	}
	return p
}

// TestDefaultsDoNotInflatePatience: a default reward is not a delay. With
// rewards 5 decisions late and 5% never coming, resolved by defaults, the
// patience stays at 2*8 + 8 = 24 (found by review: defaults counted as
// arrivals of delay patience + 1 doubled it without bound).
func TestDefaultsDoNotInflatePatience(t *testing.T) {
	d := bandit.NewDelayed(manyPlans(5000))
	r := rand.New(rand.NewPCG(1, 1))
	runDelays(t, d, 200000, 0, func(int) int {
		if r.Float64() < 0.05 {
			return -1
		}
		return 5
	}, func(tk bandit.Ticket) error { return d.Default(tk, 0) })
	if p := d.Patience(); p != 24 {
		t.Errorf("patience %d after 200 000 decisions, want 24", p)
	}
}

// TestPatienceFollowsGrowingDelays: rewards 5 decisions late, then 100
// (traffic that grows makes the same seconds more decisions): the
// rewards that come late still count as delays and the histogram
// forgets, so the patience grows to match and learning resumes (found by
// review: it stopped for good).
func TestPatienceFollowsGrowingDelays(t *testing.T) {
	d := bandit.NewDelayed(manyPlans(20000))
	learned := runDelays(t, d, 120000, 60000, func(i int) int {
		if i < 20000 {
			return 5
		}
		return 100
	}, d.Drop)
	if p := d.Patience(); p < 2*128+8 {
		t.Errorf("patience %d with rewards 100 decisions late", p)
	}
	if learned < 20000 {
		t.Errorf("%d rewards learned over the last 60 000 decisions", learned)
	}
	t.Logf("patience %d; %d learned over the last 60 000 decisions", d.Patience(), learned)
}
