package olo

import (
	"errors"
	"math"
	"slices"
	"testing"

	"gonum.org/v1/gonum/floats"

	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/privacy"
)

// regret plays the learner on the losses and returns its exact regret.
func regret(t *testing.T, l Learner, losses *Losses, T int64, seed uint64) float64 {
	t.Helper()
	r := losses.NewRun(seed, 0)
	cum := make([]float64, losses.N)
	inc := 0.0
	for range T {
		loss := r.Next()
		x, _, err := l.Play()
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range x {
			inc += v * loss[i]
		}
		if err := l.Observe(loss); err != nil {
			t.Fatal(err)
		}
		for i, v := range loss {
			cum[i] += v
		}
	}
	return inc - losses.Best(cum)
}

func setting(n int, T int64, seed uint64) Setting {
	return Setting{N: n, T: T, Rand: noise.Stream(seed, 1), Noise: noise.NewFast(seed, 2)}
}

// TestHedgeBound: Hedge's regret is at most ln N/eta + eta t, which is
// 2 sqrt(T ln N) at T, on any loss sequence in [0,1]^N (Theorem 3.4
// without noise), at every checkpoint.
func TestHedgeBound(t *testing.T) {
	for _, spec := range []string{"experts-iid:n=10", "experts-switching:n=10,period=1000", "experts-switching:n=5,period=7"} {
		losses, err := ParseLosses(spec, 3)
		if err != nil {
			t.Fatal(err)
		}
		const T = 50000
		h, _ := NewFTRLExperts(setting(losses.N, T, 1), privacy.None())
		if b, want := h.Bound(T), 2*math.Sqrt(T*math.Log(float64(losses.N))); math.Abs(b-want) > 1e-9*want {
			t.Errorf("%s: Bound(T) = %v, want 2 sqrt(T ln N) = %v", spec, b, want)
		}
		for _, c := range []int64{100, 5000, T} {
			if r, b := regret(t, h, losses, c, 1), h.Bound(c); r > b {
				t.Errorf("%s: regret %v after %d steps, above the bound %v", spec, r, c, b)
			}
			h, _ = NewFTRLExperts(setting(losses.N, T, 1), privacy.None())
		}
	}
}

// TestMaxLaplaceSum checks the moment-generating-function bound on
// E[max_i Z_i] (Z_i sums of L Laplace draws) against Monte Carlo: it must
// lie above the estimate (less 4 standard errors) and within 1.5 times it
// at the sizes of the presets (the bound is 1.44 times the mean for N = 10,
// L = 14 and 1.25 times for N = 100, L = 20).
func TestMaxLaplaceSum(t *testing.T) {
	r := noise.Stream(5)
	for _, c := range []struct {
		n, L, m int
		slack   float64
	}{{10, 14, 20000, 1.5}, {100, 20, 2000, 1.3}} {
		var s, s2 float64
		for range c.m {
			mx := math.Inf(-1)
			for range c.n {
				z := 0.0
				for range c.L {
					z += noise.Laplace(r, 2)
				}
				mx = math.Max(mx, z)
			}
			s, s2 = s+mx, s2+mx*mx
		}
		mean := s / float64(c.m)
		se := math.Sqrt((s2/float64(c.m) - mean*mean) / float64(c.m))
		b := maxLaplaceSum(float64(c.n), c.L, 2)
		if b < mean-4*se || b > c.slack*mean {
			t.Errorf("N=%d L=%d: bound %v, Monte Carlo %v ± %v", c.n, c.L, b, mean, se)
		}
	}
}

// TestPrivateFTRLBounds: the mean regret of private FTRL (experts, ball,
// cube) over 10 runs stays below the explicit Theorem 3.4 bound, whose
// noise term D_Lap dominates at eps = 1 (Laplace nodes) and rho = 0.5
// (Gaussian nodes); the bounds reduce to the non-private ones without
// noise.
func TestPrivateFTRLBounds(t *testing.T) {
	pure, _ := privacy.NewPure(1)
	z, _ := privacy.NewZCDP(0.5)
	const T = 10000
	for _, c := range []struct {
		spec string
		b    privacy.Budget
	}{{"experts-switching:n=10,period=1000", pure}, {"ball:d=5", pure}, {"cube:d=5", pure},
		{"experts-switching:n=10,period=1000", z}, {"ball:d=5", z}, {"cube:d=5", z}} {
		spec, e := c.spec, c.b
		losses, _ := ParseLosses(spec, 9)
		build := func(seed uint64, b privacy.Budget) (Learner, Bounder) {
			s := setting(losses.N, T, seed)
			s.Set = losses.Set()
			if s.Set == "simplex" {
				f, _ := NewFTRLExperts(s, b)
				return f, f
			}
			f, _ := NewFTRLQuad(s, b)
			return f, f
		}
		mean := 0.0
		for seed := range uint64(10) {
			l, _ := build(seed, e)
			mean += regret(t, l, losses, T, seed) / 10
		}
		_, priv := build(0, e)
		_, plain := build(0, privacy.None())
		if b := priv.Bound(T); mean > b {
			t.Errorf("%s %s: mean regret %v, bound %v", spec, e, mean, b)
		}
		// The noise term against Monte Carlo on the learner's own noise:
		// L~_0 is one release of the tree on no loss, and D_Lap is the
		// expected width max_x <Z, x> - min_x <Z, x> over the set (the
		// spread of Z on the simplex, 2 ||Z||_2 on the ball, 2 ||Z||_1 on
		// the cube). The bounds are Jensen or MGF bounds: above the
		// estimate and within 1.5 times it.
		const m = 4000
		var sum, sum2 float64
		for seed := range uint64(m) {
			l, _ := build(100+seed, e)
			var z []float64
			switch f := l.(type) {
			case *FTRLExperts:
				z = f.L
			case *FTRLQuad:
				z = f.L
			}
			w := 0.0
			switch losses.Set() {
			case "simplex":
				w = slices.Max(z) - slices.Min(z)
			case "ball":
				w = 2 * floats.Norm(z, 2)
			case "cube":
				w = 2 * floats.Norm(z, 1)
			}
			sum, sum2 = sum+w, sum2+w*w
		}
		mc := sum / m
		se := math.Sqrt((sum2/m - mc*mc) / m)
		if d := priv.Bound(T) - plain.Bound(T); d < mc-4*se || d > 1.5*mc {
			t.Errorf("%s %s: D_Lap term %v, Monte Carlo %v ± %v", spec, e, d, mc, se)
		}
	}
}

// TestEXP2Bound: EXP2 and its private reduction stay within the explicit
// bound of Theorem 4.1's proof, ln N/eta + 2 eta T N (1 + 10 lambda^2
// ln^2 NT) + 2 T gamma (+1 when private), which is 3 sqrt(2 N T ln N)
// without noise; eta and gamma are Theorem 4.1's.
func TestEXP2Bound(t *testing.T) {
	losses, _ := ParseLosses("experts-iid:n=10", 4)
	const T = 100000
	e1, _ := privacy.NewPure(1)
	e10, _ := privacy.NewPure(10)
	for _, b := range []privacy.Budget{privacy.None(), e1, e10} {
		var mean float64
		for seed := range uint64(5) {
			e, err := NewEXP2(setting(10, T, seed), b)
			if err != nil {
				t.Fatal(err)
			}
			mean += regret(t, e, losses, T, seed) / 5
		}
		e, _ := NewEXP2(setting(10, T, 0), b)
		if bound := e.Bound(T); mean > bound {
			t.Errorf("%v: regret %v above %v", b, mean, bound)
		}
	}
	e, _ := NewEXP2(setting(10, T, 1), privacy.None())
	if b, want := e.Bound(T), 3*math.Sqrt(2*10*T*math.Log(10)); math.Abs(b-want) > 1e-9*want {
		t.Errorf("non-private bound %v, want 3 sqrt(2 N T ln N) = %v", b, want)
	}
	e, _ = NewEXP2(setting(10, T, 1), e1)
	eta, gamma := e.Params()
	k := 1 + 2*math.Log(10*T)
	if math.Abs(eta-math.Sqrt(math.Log(10)/(2*10*T*k))) > 1e-15 || math.Abs(gamma-eta*10*math.Sqrt(k)) > 1e-12 {
		t.Errorf("eta %v gamma %v differ from Theorem 4.1", eta, gamma)
	}
}

// TestDPFTRLUsesTree: the private learner plays softmax of the tree's
// noisy sums, with Lap(N L/eps) per node.
func TestDPFTRLUsesTree(t *testing.T) {
	e, _ := privacy.NewPure(2)
	f, err := NewFTRLExperts(setting(4, 100, 1), e)
	if err != nil {
		t.Fatal(err)
	}
	if want := 4.0 * 7 / 2; math.Abs(f.tree.Scale()-want) > 1e-9 {
		t.Errorf("node scale %v, want N L/eps = %v", f.tree.Scale(), want)
	}
	if err := f.Observe([]float64{0.5, math.NaN(), 0, 0}); err == nil {
		t.Error("NaN loss accepted")
	}
	if _, err := NewFTRLExperts(Setting{N: 1, T: 10}, privacy.None()); err == nil {
		t.Error("one expert accepted")
	}
	for _, bad := range []string{"experts-iid:n=1", "experts-foo:n=3", "experts-switching:period=0", "experts-iid:k=3"} {
		if _, err := ParseLosses(bad, 1); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// BenchmarkDPFTRLExperts100 is one step of private FTRL with N = 100
// experts over T = 10^6 (the tree included).
func BenchmarkDPFTRLExperts100(b *testing.B) {
	e, _ := privacy.NewPure(1)
	f, _ := NewFTRLExperts(Setting{N: 100, T: 1 << 40, Noise: noise.NewFast(1)}, e)
	loss := make([]float64, 100)
	for i := range loss {
		loss[i] = float64(i%3) / 2
	}
	for b.Loop() {
		_, _, _ = f.Play()
		_ = f.Observe(loss)
	}
}

// TestFTRLQuadBound: without noise, FTRL with the squared norm has regret
// at most sqrt(2 D_R T) on the ball (D_R = 1) and the cube (D_R = N), on
// the loss sequences of this package (losses in the dual unit ball).
func TestFTRLQuadBound(t *testing.T) {
	for _, c := range []struct {
		spec string
		dr   float64
	}{{"ball:d=5", 1}, {"cube:d=5", 5}, {"ball:d=2", 1}} {
		losses, err := ParseLosses(c.spec, 7)
		if err != nil {
			t.Fatal(err)
		}
		const T = 50000
		s := setting(losses.N, T, 1)
		s.Set = losses.Set()
		f, err := NewFTRLQuad(s, privacy.None())
		if err != nil {
			t.Fatal(err)
		}
		r := losses.NewRun(7, 0)
		cum := make([]float64, losses.N)
		inc := 0.0
		for range T {
			l := r.Next()
			x, _, _ := f.Play()
			for i, v := range x {
				inc += v * l[i]
			}
			_ = f.Observe(l)
			for i, v := range l {
				cum[i] += v
			}
		}
		if reg, b := inc-losses.Best(cum), math.Sqrt(2*c.dr*T); reg > b || reg < 0 {
			t.Errorf("%s: regret %v, bound sqrt(2 D_R T) = %v", c.spec, reg, b)
		}
	}
	if _, err := NewFTRLQuad(Setting{N: 3, T: 10, Set: "simplex"}, privacy.None()); err == nil {
		t.Error("FTRL-ball on the simplex accepted")
	}
	if _, err := NewFTRLExperts(Setting{N: 3, T: 10, Set: "ball"}, privacy.None()); err == nil {
		t.Error("Hedge on the ball accepted")
	}
	e, _ := privacy.NewPure(1)
	s := setting(4, 100, 1)
	s.Set = "ball"
	f, _ := NewFTRLQuad(s, e)
	if want := 2 * 2.0 * 7; math.Abs(f.tree.Scale()-want) > 1e-9 {
		t.Errorf("ball node scale %v, want L * 2 sqrt(N)/eps = %v", f.tree.Scale(), want)
	}
}

// TestFTPL: the private tree's node noise is max(sigma_R, sigma_P) with
// sigma_P the Gaussian mechanism's for the loss set's L2 diameter times
// sqrt(L); FTPL learns (regret well below T/2 on i.i.d. expert losses).
func TestFTPL(t *testing.T) {
	z, _ := privacy.NewZCDP(0.001)
	s := setting(10, 1000, 1)
	f, err := NewFTPL(s, z)
	if err != nil {
		t.Fatal(err)
	}
	L := 10.0                                                   // bits.Len(1000)
	sigmaP := math.Sqrt(10) * math.Sqrt(L) / math.Sqrt(2*0.001) // diameter sqrt(N) for [0,1]^N
	sigmaR := math.Sqrt(10) * math.Sqrt(1000/(math.Sqrt(10)*math.Log(1000)))
	if want := math.Max(sigmaP, sigmaR); math.Abs(f.tree.Scale()-want) > 1e-9*want {
		t.Errorf("node sigma %v, want max(%v, %v)", f.tree.Scale(), sigmaP, sigmaR)
	}
	losses, _ := ParseLosses("experts-iid:n=10", 2)
	g, _ := NewFTPL(setting(10, 50000, 3), privacy.None())
	if r := regret(t, g, losses, 50000, 3); r > 2000 {
		t.Errorf("FTPL regret %v over 50000 steps", r)
	}
}

// TestExpNonPos compares expNonPos with math.Exp on a fine grid of
// [-745, 0] (both sides of the -700 switch) and at 0.
func TestExpNonPos(t *testing.T) {
	if expNonPos(0) != 1 {
		t.Errorf("e^0 = %v", expNonPos(0))
	}
	for i := range 3_000_000 {
		x := -float64(i) * 745.0 / 3_000_000
		if got, want := expNonPos(x), math.Exp(x); math.Abs(got-want) > 1e-15*want {
			t.Fatalf("e^%v = %v, math.Exp %v", x, got, want)
		}
	}
}

// TestUnusableNoiseRefused: a private learner on a noise source that
// cannot draw is refused with noise.ErrNoSource.
func TestUnusableNoiseRefused(t *testing.T) {
	pure, _ := privacy.NewPure(1)
	for _, nz := range []noise.Noise{nil, noise.Fast{}} {
		s := Setting{N: 4, T: 100, Rand: noise.Stream(1), Noise: nz}
		_, e1 := NewFTRLExperts(s, pure)
		_, e2 := NewFTPL(s, pure)
		for i, err := range []error{e1, e2} {
			if !errors.Is(err, noise.ErrNoSource) {
				t.Errorf("learner %d on %#v: %v", i, nz, err)
			}
		}
	}
}
