package contextual

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/privacy"
)

// ballActions returns k random actions of dimension d in the unit ball.
func ballActions(r *rand.Rand, k, d int) [][]float64 {
	out := make([][]float64, k)
	for i := range out {
		a := make([]float64, d)
		for j := range a {
			a[j] = r.NormFloat64()
		}
		mechanism.IntoUnitBall(a)
		out[i] = a
	}
	return out
}

// TestScaledRadius: AdaC-OFUL with Scale s keeps the radius s beta~ of
// the unscaled policy (to the bit) and the same estimate theta~ on the
// same history and noise; Greedy keeps beta~ = 0 and chooses
// argmax_a <theta~, a> (the first of equal maxima) for the estimate in
// force. The scaled and greedy policies are driven with decision sets of
// the unscaled one's choice repeated, so that V and the noise
// stream are the same; the greedy choice is then checked on a second,
// free-running greedy policy. Dimensions 3, 8 and 32 take the three
// index kernels (index3, indexSmall, index).
func TestScaledRadius(t *testing.T) {
	z, _ := privacy.NewZCDP(1)
	for _, d := range []int{3, 8, 32} {
		const T, k = 600, 5
		set := Setting{Dim: d, Horizon: T, Bounds: box}
		build := func(c Config, seed uint64) *OFUL {
			s := set
			s.Noise = noise.NewFast(seed)
			p, err := New(s, c)
			if err != nil {
				t.Fatal(err)
			}
			return p
		}
		base := cfg(1, z)
		scaled, greedy := base, base
		scaled.Scale = 0.3
		greedy.Greedy, greedy.Scale = true, 0.3
		p, q, g := build(base, 7), build(scaled, 7), build(greedy, 7)
		free := build(greedy, 8)
		r := rand.New(rand.NewPCG(uint64(d), 1))
		for step := range T {
			acts := ballActions(r, k, d)
			a, err := p.Choose(acts)
			if err != nil {
				t.Fatal(err)
			}
			one := make([][]float64, k) // as many actions (the refresh schedule counts them), all p's choice
			for i := range one {
				one[i] = acts[a]
			}
			for _, o := range []*OFUL{q, g} {
				if _, err := o.Choose(one); err != nil {
					t.Fatal(err)
				}
			}
			if q.radius != 0.3*p.radius || g.radius != 0 || p.radius <= 0 {
				t.Fatalf("d=%d step %d: radius %v scaled %v greedy %v, want %v and 0", d, step, p.radius, q.radius, g.radius, 0.3*p.radius)
			}
			for i := range d {
				if q.theta[i] != p.theta[i] || g.theta[i] != p.theta[i] {
					t.Fatalf("d=%d step %d: theta~ %v, scaled %v, greedy %v", d, step, p.theta, q.theta, g.theta)
				}
			}
			f, err := free.Choose(acts)
			if err != nil {
				t.Fatal(err)
			}
			// The greedy value is the largest, up to the rounding of the
			// kernels, which sum <theta~, a> in their own order.
			est := free.Estimate()
			dot := func(a []float64) float64 {
				v := 0.0
				for i := range a {
					v += est[i] * a[i]
				}
				return v
			}
			for j, x := range acts {
				if dot(x) > dot(acts[f])+1e-12 {
					t.Fatalf("d=%d step %d: greedy chose %d of value %v, action %d has %v", d, step, f, dot(acts[f]), j, dot(x))
				}
			}
			rw := r.Float64()*2 - 1
			for _, o := range []*OFUL{p, q, g} {
				if err := o.Update(rw); err != nil {
					t.Fatal(err)
				}
			}
			if err := free.Update(rw); err != nil {
				t.Fatal(err)
			}
		}
		if p.Episodes() < 3 || free.Episodes() < 3 {
			t.Fatalf("d=%d: %d and %d episodes: too few to test", d, p.Episodes(), free.Episodes())
		}
	}
}

// TestScaleRefused: a negative, NaN or infinite Scale is an input error.
func TestScaleRefused(t *testing.T) {
	z, _ := privacy.NewZCDP(1)
	for _, s := range []float64{-0.1, math.NaN(), math.Inf(1)} {
		c := cfg(1, z)
		c.Scale = s
		if _, err := New(setting(100, noise.NewFast(1)), c); !errors.Is(err, mechanism.ErrInput) {
			t.Errorf("scale %v: %v", s, err)
		}
	}
}
