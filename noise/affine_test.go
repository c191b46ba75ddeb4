package noise

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dpbandit/dpbandit/internal/cputime"
)

// TestNormalsAffineAsNormals: NormalsAffine gives Normals' draws followed
// by the affine map, to the bit, for even and odd lengths and enough
// draws to take the slow paths (the tail and the wedges), and leaves src
// where Normals leaves it.
func TestNormalsAffineAsNormals(t *testing.T) {
	for _, n := range []int{0, 1, 2, 7, 100, 1001} {
		a, b := rand.NewPCG(3, uint64(n)), rand.NewPCG(3, uint64(n))
		want, got := make([]float64, n), make([]float64, n)
		for rep := range 2000 {
			m, s := 0.1*float64(rep%7), math.Sqrt(0.1)
			Normals(a, want)
			for i, z := range want {
				want[i] = m + s*z
			}
			NormalsAffine(b, got, m, s)
			for i := range want {
				if math.Float64bits(want[i]) != math.Float64bits(got[i]) {
					t.Fatalf("n=%d, rep %d: entry %d is %v, want %v", n, rep, i, got[i], want[i])
				}
			}
		}
		if a.Uint64() != b.Uint64() {
			t.Fatalf("n=%d: the sources part", n)
		}
	}
}

// BenchmarkNormalsAffine is the 1,000 coordinates of a decision set of
// K = 10 actions in d = 100 (BenchmarkNormals' sampler, scaled).
func BenchmarkNormalsAffine(b *testing.B) {
	src, x := rand.NewPCG(1, 2), make([]float64, 1000)
	c0 := cputime.Start()
	for b.Loop() {
		NormalsAffine(src, x, 0.1, 0.3)
	}
	cputime.Report(b, c0)
}

// BenchmarkNormalsThenAffine is what NormalsAffine replaces: Normals,
// then the affine map in a second pass.
func BenchmarkNormalsThenAffine(b *testing.B) {
	src, x := rand.NewPCG(1, 2), make([]float64, 1000)
	c0 := cputime.Start()
	for b.Loop() {
		Normals(src, x)
		for i, z := range x {
			x[i] = 0.1 + 0.3*z
		}
	}
	cputime.Report(b, c0)
}
