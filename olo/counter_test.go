package olo

import (
	"errors"
	"math"
	"testing"

	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/privacy"
)

// TestFTRLCounterChoice: the default stays TreeBasedAgg; the smooth
// binary mechanism is taken under zCDP and refused under pure DP; the
// counters with t-dependent variance are refused.
func TestFTRLCounterChoice(t *testing.T) {
	z, _ := privacy.NewZCDP(0.5)
	pure, _ := privacy.NewPure(1)
	s := setting(4, 100, 1)
	f, err := NewFTRLExperts(s, z)
	if err != nil || f.tree == nil || f.counter != nil {
		t.Fatalf("default: tree %v counter %v err %v", f.tree, f.counter, err)
	}
	s.Counter = mechanism.CounterSmooth
	if f, err = NewFTRLExperts(s, z); err != nil || f.tree != nil || f.counter == nil || len(f.L) != 4 {
		t.Fatalf("smooth: %v %v", f, err)
	}
	if _, err := NewFTRLExperts(s, pure); !errors.Is(err, mechanism.ErrInput) {
		t.Fatalf("smooth under pure DP: %v", err)
	}
	for _, k := range []mechanism.CounterKind{mechanism.CounterBinary, mechanism.CounterHonaker, mechanism.CounterFactorisation, "x"} {
		s.Counter = k
		if _, err := NewFTRLExperts(s, z); !errors.Is(err, mechanism.ErrInput) {
			t.Errorf("%s accepted: %v", k, err)
		}
		s.Set = "ball"
		if _, err := NewFTRLQuad(s, z); !errors.Is(err, mechanism.ErrInput) {
			t.Errorf("%s accepted on the ball: %v", k, err)
		}
		s.Set = ""
	}
}

// TestFTRLCounterRegret: private FTRL on the smooth binary mechanism
// against TreeBasedAgg with Gaussian nodes, at rho = 0.5 over T = 10^4
// (20 seeds): the noise term of the bound shrinks by exactly d/(2L) =
// 16/28 (the standard deviation of a release: d/sqrt(8 rho) against
// L/sqrt(2 rho)), both learners stay within their bounds, and the
// measured change of the mean regret is logged with its standard error.
func TestFTRLCounterRegret(t *testing.T) {
	z, _ := privacy.NewZCDP(0.5)
	const T, seeds = 10000, 20
	for _, spec := range []string{"experts-switching:n=10,period=1000", "ball:d=5", "cube:d=5"} {
		losses, _ := ParseLosses(spec, 9)
		type res struct{ mean, se, bound, noise float64 }
		got := map[mechanism.CounterKind]res{}
		for _, kind := range []mechanism.CounterKind{mechanism.CounterTree, mechanism.CounterSmooth} {
			build := func(seed uint64, b privacy.Budget) (Learner, Bounder) {
				s := setting(losses.N, T, seed)
				s.Set, s.Counter = losses.Set(), kind
				if s.Set == "simplex" {
					f, err := NewFTRLExperts(s, b)
					if err != nil {
						t.Fatal(err)
					}
					return f, f
				}
				f, err := NewFTRLQuad(s, b)
				if err != nil {
					t.Fatal(err)
				}
				return f, f
			}
			var sum, sum2 float64
			for seed := range uint64(seeds) {
				l, _ := build(seed, z)
				r := regret(t, l, losses, T, seed)
				sum, sum2 = sum+r, sum2+r*r
			}
			m := sum / seeds
			_, priv := build(0, z)
			_, plain := build(0, privacy.None())
			got[kind] = res{m, math.Sqrt((sum2/seeds - m*m) / (seeds - 1)), priv.Bound(T), priv.Bound(T) - plain.Bound(T)}
			if m > priv.Bound(T) {
				t.Errorf("%s %s: mean regret %v above the bound %v", spec, kind, m, priv.Bound(T))
			}
		}
		tr, sm := got[mechanism.CounterTree], got[mechanism.CounterSmooth]
		if r := sm.noise / tr.noise; math.Abs(r-16.0/28) > 1e-9 {
			t.Errorf("%s: noise term ratio %v, want d/(2L) = 16/28", spec, r)
		}
		t.Logf("%s: mean regret tree %.1f +- %.1f, smooth %.1f +- %.1f (bounds %.1f, %.1f)",
			spec, tr.mean, tr.se, sm.mean, sm.se, tr.bound, sm.bound)
	}
}
