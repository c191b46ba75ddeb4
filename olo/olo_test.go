package olo

import (
	"math"
	"testing"

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
	best := math.Inf(1)
	for _, v := range cum {
		best = math.Min(best, v)
	}
	return inc - best
}

func setting(n int, T int64, seed uint64) Setting {
	return Setting{N: n, T: T, Rand: noise.Stream(seed, 1), Noise: noise.Fast{R: noise.Stream(seed, 2)}}
}

// TestHedgeBound: Hedge's regret is at most ln N/eta + eta T = 2 sqrt(T ln N)
// on any loss sequence in [0,1]^N (Theorem 3.1 without noise).
func TestHedgeBound(t *testing.T) {
	for _, spec := range []string{"experts-iid:n=10", "experts-switching:n=10,period=1000", "experts-switching:n=5,period=7"} {
		losses, err := ParseLosses(spec, 3)
		if err != nil {
			t.Fatal(err)
		}
		const T = 50000
		h, _ := NewFTRLExperts(setting(losses.N, T, 1), privacy.None())
		if r, b := regret(t, h, losses, T, 1), 2*math.Sqrt(T*math.Log(float64(losses.N))); r > b {
			t.Errorf("%s: regret %v above 2 sqrt(T ln N) = %v", spec, r, b)
		}
	}
}

// TestEXP2Bound: EXP2 and its private reduction stay within Theorem 4.1's
// order, 4 sqrt(N T ln N (1 + 2 lambda^2 ln NT)) (the constant 4 covers
// the ln N/eta, variance and exploration terms of the standard analysis).
func TestEXP2Bound(t *testing.T) {
	losses, _ := ParseLosses("experts-iid:n=10", 4)
	const T = 100000
	e1, _ := privacy.NewPure(1)
	for _, b := range []privacy.Budget{privacy.None(), e1} {
		var mean float64
		for seed := range uint64(5) {
			e, err := NewEXP2(setting(10, T, seed), b)
			if err != nil {
				t.Fatal(err)
			}
			mean += regret(t, e, losses, T, seed) / 5
		}
		lambda := 0.0
		if b.IsPrivate() {
			lambda = 1 / b.Eps
		}
		bound := 4 * math.Sqrt(10*T*math.Log(10)*(1+2*lambda*lambda*math.Log(10*T)))
		if mean > bound {
			t.Errorf("%v: regret %v above %v", b, mean, bound)
		}
	}
	e, _ := NewEXP2(setting(10, T, 1), e1)
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
	f, _ := NewFTRLExperts(Setting{N: 100, T: 1 << 40, Noise: noise.Fast{R: noise.Stream(1)}}, e)
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
