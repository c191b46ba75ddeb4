package linalg

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dpbandit/dpbandit/internal/cputime"
)

// symmetric returns a random symmetric d x d matrix.
func symmetric(r *rand.Rand, d int) []float64 {
	m := make([]float64, d*d)
	for i := range d {
		for j := i; j < d; j++ {
			v := r.NormFloat64()
			m[i*d+j], m[j*d+i] = v, v
		}
	}
	return m
}

// vectors returns k random vectors of length d and k zero ones.
func vectors(r *rand.Rand, k, d int) (xs, ys [][]float64) {
	xs, ys = make([][]float64, k), make([][]float64, k)
	for i := range xs {
		xs[i], ys[i] = make([]float64, d), make([]float64, d)
		for j := range xs[i] {
			xs[i][j] = r.NormFloat64()
		}
	}
	return xs, ys
}

// TestKernelsMatchReference: MulSym's entries are the chains of fused
// multiply-adds its comment defines, to the bit, and within rounding of
// M x; RankOneSym's entries are fma(c, u_i u_j, m_ij) to the bit and keep
// a symmetric matrix symmetric; with c = 1 they equal AddScaled's.
// Both on the assembly kernels (where the processor has them) and on
// the Go loops.
func TestKernelsMatchReference(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	for _, asm := range []bool{true, false} {
		if asm && !hasAVX2FMA {
			continue
		}
		saved := hasAVX2FMA
		hasAVX2FMA = asm
		for _, d := range []int{16, 17, 30, 33, 100, 131} {
			for _, k := range []int{1, 2, 3, 10} {
				m := symmetric(r, d)
				xs, ys := vectors(r, k, d)
				MulSym(m, d, xs, ys)
				for i := range xs {
					for l := range d {
						s, plain := 0.0, 0.0
						for j := range d {
							s = math.FMA(xs[i][j], m[j*d+l], s)
							plain += m[l*d+j] * xs[i][j]
						}
						if math.Float64bits(s) != math.Float64bits(ys[i][l]) {
							t.Fatalf("asm=%v d=%d k=%d: y[%d][%d] = %v, want the chain %v", asm, d, k, i, l, ys[i][l], s)
						}
						if math.Abs(s-plain) > 1e-12*float64(d) {
							t.Fatalf("asm=%v d=%d: y[%d][%d] = %v, M x has %v", asm, d, i, l, s, plain)
						}
					}
				}
				for i := range xs {
					n := (i * 7) % (d + 1) // lengths 0 to d
					ab, ac := Dot2(xs[i][:n], xs[0], m[:d])
					wb, wc := dot2Ref(xs[i][:n], xs[0], m[:d])
					if math.Float64bits(ab) != math.Float64bits(wb) || math.Float64bits(ac) != math.Float64bits(wc) {
						t.Fatalf("asm=%v n=%d: Dot2 = %v, %v, the reference %v, %v", asm, n, ab, ac, wb, wc)
					}
					tb, tc, aa := Dot3(xs[i][:n], xs[0], m[:d])
					rb, rc, ra := dot3Ref(xs[i][:n], xs[0], m[:d])
					if math.Float64bits(tb) != math.Float64bits(ab) || math.Float64bits(tc) != math.Float64bits(ac) || math.Float64bits(aa) != math.Float64bits(ra) || rb != ab || rc != ac {
						t.Fatalf("asm=%v n=%d: Dot3 = %v, %v, %v, the reference %v, %v, %v", asm, n, tb, tc, aa, rb, rc, ra)
					}
					if n >= Short && math.Float64bits(aa) != math.Float64bits(SquaredNorm(xs[i][:n])) {
						t.Fatalf("asm=%v n=%d: Dot3's a.a = %v, SquaredNorm %v", asm, n, aa, SquaredNorm(xs[i][:n]))
					}
					if pb := Dot(xs[i][:n], xs[0]); math.Abs(ab-pb) > 1e-12*float64(d) {
						t.Fatalf("asm=%v n=%d: Dot2 = %v, Dot %v", asm, n, ab, pb)
					}
				}
				for n := range d + 1 {
					a, b := append([]float64(nil), xs[0][:n]...), append([]float64(nil), xs[0][:n]...)
					c := r.Float64() + 0.5
					got := ScaleSquaredNorm(a, c)
					for i := range b {
						b[i] *= c
					}
					if want := SquaredNorm(b); math.Float64bits(got) != math.Float64bits(want) {
						t.Fatalf("asm=%v n=%d: ScaleSquaredNorm = %v, SquaredNorm after the scaling %v", asm, n, got, want)
					}
					for i := range a {
						if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
							t.Fatalf("asm=%v n=%d: entry %d scaled to %v, want %v", asm, n, i, a[i], b[i])
						}
					}
				}
				u, c := xs[0], r.NormFloat64()
				w := xs[len(xs)-1]
				tm, theta := append([]float64(nil), m...), make([]float64, d)
				RankOneDot(tm, d, u, c, w, theta)
				want := append([]float64(nil), m...)
				for i := range d {
					for j := range d {
						want[i*d+j] = math.FMA(c, u[i]*u[j], want[i*d+j])
					}
				}
				got := append([]float64(nil), m...)
				RankOneSym(got, d, u, c)
				plus := append([]float64(nil), m...)
				RankOneSym(plus, d, u, 1)
				// Up to MaxPending updates of signs +-1 at once, as
				// many RankOneSym calls on the upper triangle.
				np := 1 + (d+k)%MaxPending
				as, signs := make([][]float64, np), make([]float64, np)
				seq, many := append([]float64(nil), m...), append([]float64(nil), m...)
				for p := range as {
					as[p], signs[p] = xs[p%k], float64(1-2*(p%2))
					RankOneSym(seq, d, as[p], signs[p])
				}
				AddPendingUpper(many, d, as, signs)
				for i := range d {
					for j := i; j < d; j++ {
						if math.Float64bits(many[i*d+j]) != math.Float64bits(seq[i*d+j]) {
							t.Fatalf("asm=%v d=%d: %d pending updates give %v at (%d, %d), one at a time %v", asm, d, np, many[i*d+j], i, j, seq[i*d+j])
						}
					}
				}
				for i := range d {
					row := append([]float64(nil), m[i*d:i*d+d]...)
					AddScaled(row, u[i], u)
					for j := range d {
						if math.Float64bits(got[i*d+j]) != math.Float64bits(want[i*d+j]) {
							t.Fatalf("asm=%v d=%d: rank one (%d, %d) = %v, want %v", asm, d, i, j, got[i*d+j], want[i*d+j])
						}
						if math.Float64bits(tm[i*d+j]) != math.Float64bits(want[i*d+j]) {
							t.Fatalf("asm=%v d=%d: RankOneDot (%d, %d) = %v, want %v", asm, d, i, j, tm[i*d+j], want[i*d+j])
						}
						if got[i*d+j] != got[j*d+i] {
							t.Fatalf("asm=%v d=%d: not symmetric at (%d, %d)", asm, d, i, j)
						}
						if math.Float64bits(plus[i*d+j]) != math.Float64bits(row[j]) {
							t.Fatalf("asm=%v d=%d: c = 1 gives %v at (%d, %d), AddScaled %v", asm, d, plus[i*d+j], i, j, row[j])
						}
					}
					if th, _ := dot2Ref(want[i*d:i*d+d], w, w); math.Float64bits(th) != math.Float64bits(theta[i]) {
						t.Fatalf("asm=%v d=%d: RankOneDot's theta_%d = %v, want %v", asm, d, i, theta[i], th)
					}
				}
			}
		}
		hasAVX2FMA = saved
	}
}

// BenchmarkMulSym is the products of a decision set of K = 10 actions
// with V^-1 at d = 100 (10^5 multiply-adds).
func BenchmarkMulSym(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 5))
	const d, k = 100, 10
	m := symmetric(r, d)
	xs, ys := vectors(r, k, d)
	c0 := cputime.Start()
	for b.Loop() {
		MulSym(m, d, xs, ys)
	}
	cputime.Report(b, c0)
}

// BenchmarkRankOneSym is the rank-one update of V^-1 at d = 100.
func BenchmarkRankOneSym(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 5))
	const d = 100
	m := symmetric(r, d)
	u := make([]float64, d)
	for j := range u {
		u[j] = r.NormFloat64() * 1e-3
	}
	c0 := cputime.Start()
	for b.Loop() {
		RankOneSym(m, d, u, 1e-9)
	}
	cputime.Report(b, c0)
}
