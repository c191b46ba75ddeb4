package mab

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/dpbandit/dpbandit/audit"
	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/privacy"
)

// piecewise is a piecewise-stationary Bernoulli bandit: means[j] holds
// from step changes[j-1] (0 for j = 0) to changes[j] - 1.
type piecewise struct {
	changes []int64
	means   [][]float64
}

func (e piecewise) at(t int64) []float64 {
	j := 0
	for j < len(e.changes) && t >= e.changes[j] {
		j++
	}
	return e.means[j]
}

// dynamicRegret plays p for T steps and returns sum_t (max_i mu_i(t) -
// mu_{A_t}(t)).
func dynamicRegret(t testing.TB, p bandit.Policy, e piecewise, T int64, seed uint64) float64 {
	r := noise.Stream(seed, 5)
	reg := 0.0
	for step := int64(0); step < T; {
		pl := p.Next()
		n := min(pl.Count, T-step)
		sum := 0.0
		var samples []float64
		for i := range n {
			mu := e.at(step + i)
			best := 0.0
			for _, m := range mu {
				best = math.Max(best, m)
			}
			reg += best - mu[pl.Arm]
			x := 0.0
			if r.Float64() < mu[pl.Arm] {
				x = 1
			}
			sum += x
			samples = append(samples, x)
		}
		if err := p.Update(bandit.Feedback{Arm: pl.Arm, Count: n, Sum: sum, Samples: samples}); err != nil {
			t.Fatal(err)
		}
		step += n
	}
	return reg
}

// TestSWUCBWindowSums: without noise, the private policy's window sums
// (differences of the counter's prefix sums) are the exact window sums
// that the non-private policy keeps, at every step, and both make the
// same decisions when the width is 0 (a huge budget is not 0: the
// widths are compared separately).
func TestSWUCBWindowSums(t *testing.T) {
	z, _ := privacy.NewZCDP(1)
	s := setting(3, &countingNoise{})
	s.Horizon = 200
	priv, err := NewSWUCB(s, z, 17, 2, mechanism.CounterSmooth)
	if err != nil {
		t.Fatal(err)
	}
	plain, _ := NewSWUCB(s, privacy.None(), 17, 2, "")
	r := noise.Stream(3)
	for step := range 200 {
		a := step % 3
		if step > 50 {
			a = r.IntN(3)
		}
		f := bandit.Feedback{Arm: a, Count: 1, Sum: r.Float64()}
		if err := priv.Update(f); err != nil {
			t.Fatal(err)
		}
		if err := plain.Update(f); err != nil {
			t.Fatal(err)
		}
		now, then := priv.release(priv.t), priv.release(priv.t-priv.tau)
		for i := range 3 {
			w := now[i]
			if then != nil {
				w -= then[i]
			}
			if math.Abs(w-plain.w[i]) > 1e-9 || priv.n[i] != plain.n[i] {
				t.Fatalf("step %d arm %d: window sum %v, exact %v; counts %d, %d", step, i, w, plain.w[i], priv.n[i], plain.n[i])
			}
		}
	}
	if plain.n[0]+plain.n[1]+plain.n[2] != 17 {
		t.Fatalf("window counts %v do not sum to tau", plain.n)
	}
}

// TestSWUCBWidth: the private width is z sqrt(V_W) with z =
// sqrt(2 ln(2 K T^2)) and, for the smooth counter (variance d^2/(8 rho)
// at every t, d = 16 for T = 10^4), sqrt(V_W) = sqrt(V) before the
// window fills and 2 sqrt(V) after.
func TestSWUCBWidth(t *testing.T) {
	z, _ := privacy.NewZCDP(0.5)
	s := setting(4, noise.NewFast(1))
	s.Horizon = 10000
	p, err := NewSWUCB(s, z, 100, 2, mechanism.CounterSmooth)
	if err != nil {
		t.Fatal(err)
	}
	zz := math.Sqrt(2 * math.Log(2*4*1e8))
	v := 16.0 * 16 / (8 * 0.5)
	for step := range 150 {
		if err := p.Update(bandit.Feedback{Arm: step % 4, Count: 1, Sum: 0.5}); err != nil {
			t.Fatal(err)
		}
		want := zz * math.Sqrt(v)
		if p.t > 100 {
			want *= 2
		}
		if got := p.width(); math.Abs(got-want) > 1e-9*want {
			t.Fatalf("t=%d: width %v, want %v", p.t, got, want)
		}
	}
	for _, bad := range []struct {
		tau   int64
		alpha float64
	}{{0, 2}, {10, 0}, {10, math.NaN()}, {10, math.Inf(1)}} {
		if _, err := NewSWUCB(s, z, bad.tau, bad.alpha, mechanism.CounterSmooth); !errors.Is(err, mechanism.ErrInput) {
			t.Errorf("tau %d alpha %v accepted: %v", bad.tau, bad.alpha, err)
		}
	}
	s.Horizon = 0
	if _, err := NewSWUCB(s, z, 10, 2, mechanism.CounterSmooth); !errors.Is(err, mechanism.ErrInput) {
		t.Error("a private window without a horizon accepted")
	}
	if err := p.Update(bandit.Feedback{Arm: 0, Count: 2, Sum: 1}); !errors.Is(err, mechanism.ErrInput) {
		t.Error("two pulls at once accepted")
	}
	if err := p.Update(bandit.Feedback{Arm: 0, Count: 1, Sum: math.NaN()}); err == nil {
		t.Error("NaN accepted")
	}
}

// TestRestartBlocks: each block's policy is built afresh, with horizon H,
// sees exactly its block's H pulls (plans cut at the block's end), and
// nothing of another block.
func TestRestartBlocks(t *testing.T) {
	z, _ := privacy.NewZCDP(1)
	var built []*recorder
	s := setting(3, noise.NewFast(2))
	s.Horizon = 1000
	p, err := NewRestart(s, 64, func(s bandit.Setting) (bandit.Policy, error) {
		if s.Horizon != 64 {
			t.Fatalf("block horizon %d", s.Horizon)
		}
		inner, err := NewAdaCUCB(s, z, 1)
		rec := &recorder{Policy: inner}
		built = append(built, rec)
		return rec, err
	})
	if err != nil {
		t.Fatal(err)
	}
	dynamicRegret(t, p, piecewise{means: [][]float64{{0.2, 0.5, 0.8}}}, 1000, 1)
	if len(built) != 1000/64+1 || p.Blocks() != int64(len(built)) {
		t.Fatalf("%d policies built, %d blocks", len(built), p.Blocks())
	}
	for i, rec := range built[:len(built)-1] {
		if rec.pulls != 64 {
			t.Errorf("block %d saw %d pulls, want 64", i, rec.pulls)
		}
	}
	if last := built[len(built)-1].pulls; last != 1000%64 {
		t.Errorf("last block saw %d pulls, want %d", last, 1000%64)
	}
	if _, err := NewRestart(s, 0, nil); !errors.Is(err, mechanism.ErrInput) {
		t.Error("blocks of 0 steps accepted")
	}
}

type recorder struct {
	bandit.Policy
	pulls int64
}

func (r *recorder) Update(f bandit.Feedback) error {
	r.pulls += f.Count
	return r.Policy.Update(f)
}

// TestDUCB: discounted counts and sums after a few pulls, and bad
// parameters refused.
func TestDUCB(t *testing.T) {
	p, err := NewDUCB(setting(2, nil), 0.5, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []bandit.Feedback{{Arm: 0, Count: 1, Sum: 1}, {Arm: 1, Count: 1, Sum: 0}, {Arm: 0, Count: 1, Sum: 0}} {
		if err := p.Update(f); err != nil {
			t.Fatal(err)
		}
	}
	// arm 0: n = 0.25 + 1, s = 0.25; arm 1: n = 0.5, s = 0.
	if math.Abs(p.n[0]-1.25) > 1e-12 || math.Abs(p.s[0]-0.25) > 1e-12 || math.Abs(p.n[1]-0.5) > 1e-12 {
		t.Fatalf("n %v s %v", p.n, p.s)
	}
	for _, g := range []float64{0, 1, math.NaN()} {
		if _, err := NewDUCB(setting(2, nil), g, 2); !errors.Is(err, mechanism.ErrInput) {
			t.Errorf("gamma %v accepted", g)
		}
	}
}

// TestNonStationarySnapshots: the private sliding window (smooth
// counter, on the fast noise and on the secure one, whose exact sums the
// state carries), the restarts of AdaC-UCB and discounted UCB restore into a
// fresh policy the state they saved: the same snapshot and the same next
// plan.
func TestNonStationarySnapshots(t *testing.T) {
	z, _ := privacy.NewZCDP(1)
	e := rotating(3000, 2)
	builds := map[string]func(uint64) bandit.Policy{
		"dp-sw-ucb": func(seed uint64) bandit.Policy {
			s := setting(3, noise.NewFast(seed))
			s.Horizon = 3000
			p, _ := NewSWUCB(s, z, 200, 0.6, mechanism.CounterSmooth)
			return p
		},
		"dp-sw-ucb secure": func(uint64) bandit.Policy { // exact node sums in the state
			s := setting(3, noise.Secure{})
			s.Horizon = 3000
			p, _ := NewSWUCB(s, z, 200, 0.6, mechanism.CounterSmooth)
			return p
		},
		"restart": func(seed uint64) bandit.Policy {
			s := setting(3, noise.NewFast(seed))
			s.Horizon = 3000
			p, _ := NewRestart(s, 700, func(s bandit.Setting) (bandit.Policy, error) { return NewAdaCUCB(s, z, 1) })
			return p
		},
		"d-ucb": func(uint64) bandit.Policy {
			p, _ := NewDUCB(setting(3, nil), 0.99, 0.6)
			return p
		},
	}
	for name, build := range builds {
		p := build(1)
		dynamicRegret(t, p, e, 1500, 1)
		b, err := bandit.Save(p)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		q := build(2)
		if err := bandit.Restore(q, b); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		b2, _ := bandit.Save(q)
		if string(b) != string(b2) || p.Next() != q.Next() {
			t.Errorf("%s: the restored policy differs", name)
		}
		if err := bandit.Restore(q, b[:len(b)/2]); err == nil {
			t.Errorf("%s: a truncated snapshot restored", name)
		}
	}
	s := setting(3, noise.NewFast(1))
	s.Horizon = 100
	tree, _ := NewSWUCB(s, z, 10, 0.6, mechanism.CounterTree)
	if _, err := bandit.Save(tree); err == nil {
		t.Error("a tree counter saved: it has no snapshot")
	}
}

// TestSWUCBAuditReleases: the empirical audit of the private sliding
// window's releases (the counter's prefix sums, on the audit's hard
// neighbouring tables, 10 arms, 64 steps, window 32, rho = 0.1, 10 000
// runs per table) finds
// no eps above the claim, (0.1 + 2 sqrt(0.1 ln 1000), 10^-3); the same
// policy with its noise divided by 10 is caught (eps_lo above the claim).
func TestSWUCBAuditReleases(t *testing.T) {
	b := zcdp(t, 0.1)
	claim, err := privacy.ZCDPToApprox(0.1, 1e-3)
	if err != nil {
		t.Fatal(err)
	}
	drive, err := audit.BanditDrive(func(s bandit.Setting) (bandit.Policy, error) {
		return NewSWUCB(s, b, 32, 0.6, mechanism.CounterSmooth)
	}, audit.Hard(10, 64), 1)
	if err != nil {
		t.Fatal(err)
	}
	o := audit.Options{Runs: 10000, Delta: 1e-3, Confidence: 0.95, Workers: 2, Ordered: true}
	for _, c := range []struct {
		name   string
		wrap   func(noise.Noise) noise.Noise
		caught bool
	}{{"honest", nil, false}, {"noise / 10", func(n noise.Noise) noise.Noise { return audit.Scaled{Noise: n, Factor: 0.1} }, true}} {
		trial, err := audit.ReleaseTrial(drive, false, 7, c.wrap)
		if err != nil {
			t.Fatal(err)
		}
		res, err := audit.Empirical(context.Background(), trial, o)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: eps_lo %.3f, claimed %.3f", c.name, res.EpsLo, claim)
		if got := res.EpsLo > claim; got != c.caught {
			t.Errorf("%s: eps_lo %.3f against the claim %.3f", c.name, res.EpsLo, claim)
		}
	}
}
