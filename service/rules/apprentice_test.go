package rules

import (
	"math"
	"testing"
)

// TestApprenticeLCB: the test's bound, against the formula of
// apprentice.go's comment written out again (delta_j = 6 delta/(pi^2
// j^2), L = ln(2 G^2/delta_j) with G = 600 grid points, the grid
// (9/8)^i), at a point computed by hand: any other constant fails.
func TestApprenticeLCB(t *testing.T) {
	sum, n, v, m, blocks, sigma, delta := 1000.0, 4000.0, 20000.0, 16.0, int64(8), 20/math.Sqrt2, 0.05
	dj := 6 * delta / (math.Pi * math.Pi * 64)
	l := math.Log(2 * 600 * 600 / dj)
	vg := math.Pow(1.125, 85) // ln 20000 / ln 1.125 = 84.08
	mg := math.Pow(1.125, 24) // ln 16 / ln 1.125 = 23.54
	want := (sum - math.Sqrt(2*8*sigma*sigma*math.Log(2/dj)) - math.Sqrt(2*vg*l) - 2*mg*l/3) / n
	if got := LCB(sum, n, v, m, blocks, sigma, delta); math.Abs(got-want) > 1e-12 {
		t.Fatalf("LCB %v, want %v", got, want)
	}
	if got := Sigma(1e9); math.Abs(got-20/math.Sqrt2) > 1e-12 {
		t.Fatalf("sigma at rho = 1: %v, want C/sqrt(2) = %v", got, 20/math.Sqrt2)
	}
	if got := LCB(0, 0, 0, 0, 1, sigma, delta); !math.IsInf(got, -1) {
		t.Fatalf("LCB of nothing: %v", got)
	}
}

// TestGridAbove: the smallest (9/8)^i at or above v, 1 at or below 1;
// a grid point is its own (the ceiling, not one step more).
func TestGridAbove(t *testing.T) {
	for _, c := range []struct{ v, want float64 }{
		{0, 1}, {0.5, 1}, {1, 1}, {1.01, 1.125}, {1.125, 1.125}, {1.2, 1.125 * 1.125},
		{16, math.Pow(1.125, 24)}, {20000, math.Pow(1.125, 85)},
	} {
		if got := gridAbove(c.v); math.Abs(got-c.want) > 1e-12*c.want {
			t.Errorf("gridAbove(%v) = %v, want %v", c.v, got, c.want)
		}
	}
}

// exact is the logging policy's propensity with exploration e among k
// (define.Definition.PropensityOf's formula).
func exact(e float64) Propensity {
	return func(arm, b, k int) float64 {
		q := e / float64(k)
		if arm == b {
			return 1 - e + q
		}
		return q
	}
}

// TestApprenticeCount: the block statistic d = r (min(C, 1/p_pi)
// [a = pi] - [a = b]/p_b), its variance bound min(C, 1/p_pi) + 1/p_b
// and range bound 1 + max(min(C, 1/p_pi), 1/p_b), for each served
// action; the clip at C = 20 (e = 0.03 over 3 actions: 1/p_pi = 100);
// nothing but the count when pi = b; a reward not learned, of a
// decision not kept, or after the switch only forgets the choice.
func TestApprenticeCount(t *testing.T) {
	const e, k = 0.03, 3
	pB := 1 - e + e/k
	var a Apprentice
	a.SetMode(true, false)
	for seq := range int64(7) {
		a.Decided(seq+1, Greedy{Pi: 1, K: k})
	}
	a.Decided(8, Greedy{Pi: 0, K: k})
	count := func(seq int64, served int, r float64, learned bool) {
		if g, ok := a.Settle(seq, learned); ok {
			a.Count(g, served, 0, r, exact(e))
		}
	}
	count(1, 1, 0.5, true)  // served pi: d = 0.5 C
	count(2, 0, 0.25, true) // served b: d = -0.25/p_b
	count(3, 2, 1, true)    // neither: d = 0
	count(4, 1, 1, false)   // not learned
	count(99, 1, 1, true)   // not kept
	count(8, 0, 1, true)    // pi = b: counted, d = 0, no bound
	wantSum := 0.5*Clip - 0.25/pB
	wantVar := 3 * (Clip + 1/pB)
	if a.BlockN != 4 || math.Abs(a.BlockSum-wantSum) > 1e-12 || math.Abs(a.BlockVar-wantVar) > 1e-12 || a.BlockMax != 1+Clip {
		t.Fatalf("block n %d sum %v var %v max %v, want 4, %v, %v, %v", a.BlockN, a.BlockSum, a.BlockVar, a.BlockMax, wantSum, wantVar, 1+Clip)
	}
	if len(a.Greedy) != 3 { // 5, 6, 7 are pending
		t.Fatalf("%d greedy choices kept, want 3: %v", len(a.Greedy), a.Greedy)
	}
	if !a.Doubles(5, 0) || a.Doubles(5, 1) || a.Doubles(1, 0) {
		t.Fatal("Doubles: a pending choice other than the baseline doubles, the baseline's or a settled one does not")
	}
	a.Prune(func(seq int64) bool { return seq == 6 })
	if _, ok := a.Greedy[6]; !ok || len(a.Greedy) != 1 {
		t.Fatalf("after Prune: %v, want 6 alone", a.Greedy)
	}
	a.Switched = true
	count(6, 1, 1, true)
	if a.BlockN != 4 || len(a.Greedy) != 0 || a.Doubles(6, 0) {
		t.Fatalf("after the switch a reward is counted (%d) or kept (%v)", a.BlockN, a.Greedy)
	}
}

// TestApprenticeDue: a block is full at max(64, N/2) rewards.
func TestApprenticeDue(t *testing.T) {
	for _, c := range []struct {
		n, block int64
		want     bool
	}{{0, 63, false}, {0, 64, true}, {100, 64, true}, {200, 99, false}, {200, 100, true}} {
		a := Apprentice{N: c.n, BlockN: c.block}
		if a.Due() != c.want {
			t.Errorf("N %d, block %d: due %v, want %v", c.n, c.block, !c.want, c.want)
		}
	}
}

// TestApprenticeReleased: a released block joins the totals and is
// emptied, the bound is LCB's over the totals, the switch comes at the
// first bound above 0 and stays; the state shows the released values
// only.
func TestApprenticeReleased(t *testing.T) {
	var a Apprentice
	if a.State() != nil {
		t.Fatal("a state off apprentice mode")
	}
	a.SetMode(true, false)
	if st := a.State(); st == nil || st.LCB != 0 || st.Estimate != 0 || st.Delta != Delta {
		t.Fatalf("before any block: %+v", st)
	}
	sigma := Sigma(1e9)
	a.BlockN, a.BlockSum, a.BlockVar, a.BlockMax = 64, 1e6, 100, 5
	a.Released(-10, sigma, 70)
	want := LCB(-10, 64, 100, 5, 1, sigma, Delta)
	if a.N != 64 || a.Sum != -10 || a.Blocks != 1 || a.LCB != want || a.Switched || a.BlockN != 0 || a.BlockSum != 0 || a.BlockVar != 0 || a.BlockMax != 0 {
		t.Fatalf("after a block: %+v, LCB want %v", a, want)
	}
	a.BlockN, a.BlockVar, a.BlockMax = 64, 100, 3
	a.Released(1e4, sigma, 140)
	want = LCB(1e4-10, 128, 200, 5, 2, sigma, Delta)
	if a.LCB != want || !(want > 0) || !a.Switched || a.SwitchedAt != 140 {
		t.Fatalf("after a second block: %+v, LCB want %v", a, want)
	}
	st := a.State()
	if *st != (ApprenticeState{Switched: true, SwitchedAt: 140, Rewards: 128, Blocks: 2, Estimate: (1e4 - 10) / 128, LCB: want, Delta: Delta}) {
		t.Fatalf("state %+v", *st)
	}
	a.BlockN, a.BlockVar = 64, 1e9
	if a.Released(-1e6, sigma, 210); !a.Switched || a.SwitchedAt != 140 {
		t.Fatalf("a switch undone or moved: %+v", a)
	}
}

// TestApprenticeSetMode: the test starts at apprentice mode, stays over
// other changes, starts over at a reset and stops when the mode leaves.
func TestApprenticeSetMode(t *testing.T) {
	var a Apprentice
	a.SetMode(true, false)
	a.Decided(1, Greedy{1, 2})
	a.N = 5
	if a.SetMode(true, false); a.N != 5 || len(a.Greedy) != 1 {
		t.Fatalf("a change within apprentice mode restarted the test: %+v", a)
	}
	if a.SetMode(true, true); a.N != 0 || len(a.Greedy) != 0 || !a.On {
		t.Fatalf("a reset kept the test: %+v", a)
	}
	if a.SetMode(false, false); a.On || a.Serving() {
		t.Fatalf("online, the test is on: %+v", a)
	}
}
