package contextual

import (
	"math"
	"testing"

	"github.com/dpbandit/dpbandit/env"
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
