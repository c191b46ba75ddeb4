package env

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/dpbandit/dpbandit/internal/cputime"
	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/noise"
)

// TestNextAsThreePasses: a decision set of contextual-gauss, drawn in
// one pass (noise.NormalsAffine) with its values summed four actions at
// a time, is the one of the three passes it replaced (Normals, the
// affine map, the values one action at a time), to the bit, at d = 3,
// 17 and 100 and K = 1, 6 and 10, rescaled or not.
func TestNextAsThreePasses(t *testing.T) {
	for _, spec := range []string{"contextual-gauss:k=10,d=3", "contextual-gauss:k=6,d=17,norm=none", "contextual-gauss:k=1,d=100", "contextual-gauss:k=10,d=100"} {
		c, err := ParseContextual(spec, 2)
		if err != nil {
			t.Fatal(err)
		}
		r := c.NewRun(4, 1).(*ContextRun)
		src := noise.Reseed(rand.NewPCG(0, 0), 4, 1, tagInstance+1)
		buf := make([]float64, c.K*c.D)
		acts := make([][]float64, c.K)
		for k := range acts {
			acts[k] = buf[k*c.D : (k+1)*c.D]
		}
		m, s := 1/math.Sqrt(float64(c.D)), math.Sqrt(0.1)
		for step := range 2000 {
			got := r.Next()
			noise.Normals(src, buf)
			for i, z := range buf {
				buf[i] = m + s*z
			}
			if c.Rescale {
				mechanism.IntoUnitBallSet(acts)
			}
			for k, a := range acts {
				v := 0.0
				for i, x := range a {
					v += x * c.Theta[i]
				}
				for i := range a {
					if math.Float64bits(a[i]) != math.Float64bits(got[k][i]) {
						t.Fatalf("%s, step %d: action %d coordinate %d is %v, want %v", spec, step, k, i, got[k][i], a[i])
					}
				}
				if math.Float64bits(v) != math.Float64bits(r.Value(k)) {
					t.Fatalf("%s, step %d: value %d is %v, want %v", spec, step, k, r.Value(k), v)
				}
			}
		}
	}
}

// BenchmarkContextSteps draws one decision set of contextual-gauss, K =
// 10, at d = 3, 10, 30, 100 and 1000 (BenchmarkContextStep is d = 3).
func BenchmarkContextSteps(b *testing.B) {
	for _, d := range []int{3, 10, 30, 100, 1000} {
		b.Run("d="+strconv.Itoa(d), func(b *testing.B) {
			c, _ := ParseContextual("contextual-gauss:k=10,d="+strconv.Itoa(d), 1)
			r := c.NewRun(1, 0)
			c0 := cputime.Start()
			for b.Loop() {
				r.Next()
			}
			cputime.Report(b, c0)
		})
	}
}
