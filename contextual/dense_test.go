package contextual

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/dpbandit/dpbandit/env"
	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/privacy"
)

// TestReusedProductAsRecomputed: under OFUL (C = 0) the update reuses the
// index's product V_tau^-1 a of the chosen action as V^-1 a. A twin that
// is made to recompute it at every step (uReady cleared) holds the same
// V^-1 and theta~ to the bit, and chooses the same actions, at d = 30;
// so does a twin saved and restored before each update (the state
// carries no product).
func TestReusedProductAsRecomputed(t *testing.T) {
	e, _ := env.ParseContextual("contextual-gauss:k=10,d=30", 1)
	var ps [3]*OFUL
	for i := range ps {
		p, err := New(Setting{Dim: 30, Horizon: 3000, Bounds: box, Noise: noise.Fast{R: noise.Stream(1)}}, cfg(0, privacy.None()))
		if err != nil {
			t.Fatal(err)
		}
		ps[i] = p
	}
	r := e.NewRun(2, 0)
	reused := 0
	for step := range 3000 {
		acts := r.Next()
		var ks [3]int
		for i, p := range ps {
			k, err := p.Choose(acts)
			if err != nil {
				t.Fatal(err)
			}
			ks[i] = k
		}
		if ps[0].uReady {
			reused++
		}
		ps[1].uReady = false
		b, err := ps[2].MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		if err := ps[2].UnmarshalBinary(b); err != nil {
			t.Fatal(err)
		}
		for _, p := range ps {
			if err := p.Update(r.Reward(ks[0])); err != nil {
				t.Fatal(err)
			}
		}
		for i := 1; i < len(ps); i++ {
			if ks[i] != ks[0] {
				t.Fatalf("step %d: twin %d chose %d, the policy %d", step, i, ks[i], ks[0])
			}
			for j := range ps[0].vinv {
				if math.Float64bits(ps[i].vinv[j]) != math.Float64bits(ps[0].vinv[j]) {
					t.Fatalf("step %d: twin %d has V^-1 entry %d = %v, the policy %v", step, i, j, ps[i].vinv[j], ps[0].vinv[j])
				}
			}
			for j := range ps[0].theta {
				if math.Float64bits(ps[i].theta[j]) != math.Float64bits(ps[0].theta[j]) {
					t.Fatalf("step %d: twin %d has theta~_%d = %v, the policy %v", step, i, j, ps[i].theta[j], ps[0].theta[j])
				}
			}
		}
	}
	if reused < 2990 {
		t.Fatalf("the product was reused at %d steps of 3000", reused)
	}
}

// TestDenseIndexChecksNorms: on the dense path (d = 20, after a few
// steps) the index refuses an action of squared norm one ulp above 1 or
// with a NaN coordinate (mechanism.ErrInput, naming the first bad
// action, before a bad dimension later in the set), and accepts squared
// norm 1: the same check as mechanism.InUnitBall.
func TestDenseIndexChecksNorms(t *testing.T) {
	const d = 20
	e, _ := env.ParseContextual("contextual-gauss:k=10,d=20", 1)
	p, err := New(Setting{Dim: d, Horizon: 100, Bounds: box}, cfg(0, privacy.None()))
	if err != nil {
		t.Fatal(err)
	}
	r := e.NewRun(1, 0)
	for range 5 {
		k, err := p.Choose(r.Next())
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Update(r.Reward(k)); err != nil {
			t.Fatal(err)
		}
	}
	set := func(edit func(a []float64)) [][]float64 {
		s := make([][]float64, 3)
		for k := range s {
			s[k] = make([]float64, d)
			for i := range s[k] {
				s[k][i] = 0.2 // squared norm 0.8 (rounded)
			}
		}
		edit(s[1])
		return s
	}
	unit := func(a []float64) { clear(a); a[0] = 1 }
	if _, err := p.Choose(set(unit)); err != nil || !p.tauDense {
		t.Fatalf("a unit action refused (%v) or not the dense path (%v)", err, p.tauDense)
	}
	_ = p.Update(0)
	for name, edit := range map[string]func(a []float64){
		"1 + 2^-52": func(a []float64) { unit(a); a[1] = 0x1p-26 },
		"NaN":       func(a []float64) { a[3] = math.NaN() },
	} {
		for _, s := range [][][]float64{set(edit), append(set(edit), make([]float64, d+1))} { // a bad dimension after it
			if _, err := p.Choose(s); !errors.Is(err, mechanism.ErrInput) || !strings.Contains(err.Error(), "action 1 ") {
				t.Errorf("%s, %d actions: %v", name, len(s), err)
			}
		}
	}
}
