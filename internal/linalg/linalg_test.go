package linalg

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestInvSPD(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for _, m := range []int{1, 2, 5, 12, 130} {
		// A = B B^T + I is symmetric positive definite.
		b := make([]float64, m*m)
		for i := range b {
			b[i] = r.NormFloat64()
		}
		a := make([]float64, m*m)
		for i := range m {
			for j := range m {
				for k := range m {
					a[i*m+j] += b[i*m+k] * b[j*m+k]
				}
			}
			a[i*m+i]++
		}
		inv, ok := InvSPD(a, m)
		if !ok {
			t.Fatalf("m=%d: not positive definite", m)
		}
		for i := range m {
			for j := range m {
				s := 0.0
				for k := range m {
					s += a[i*m+k] * inv[k*m+j]
				}
				want := 0.0
				if i == j {
					want = 1
				}
				if math.Abs(s-want) > 1e-9 {
					t.Fatalf("m=%d: (A A^-1)[%d][%d] = %v", m, i, j, s)
				}
			}
		}
	}
	if _, ok := InvSPD([]float64{1, 2, 2, 1}, 2); ok {
		t.Error("an indefinite matrix was inverted")
	}
}

func TestInvLogDetSPD(t *testing.T) {
	// A = [[4, 2], [2, 3]]: det 8; and the identity scaled by 5 in m = 4:
	// det 625.
	for _, c := range []struct {
		a    []float64
		m    int
		want float64
	}{{[]float64{4, 2, 2, 3}, 2, math.Log(8)}, {[]float64{5, 0, 0, 0, 0, 5, 0, 0, 0, 0, 5, 0, 0, 0, 0, 5}, 4, math.Log(625)}} {
		_, ld, ok := InvLogDetSPD(c.a, c.m)
		if !ok || math.Abs(ld-c.want) > 1e-12 {
			t.Errorf("log det %v, want %v", ld, c.want)
		}
	}
	if _, _, ok := InvLogDetSPD([]float64{1, 2, 2, 1}, 2); ok {
		t.Error("an indefinite matrix passed")
	}
}

// TestDotWithin: for vectors whose products are exact zeros outside
// [lo, hi), DotWithin returns Dot's value to the bit (a zero's sign
// aside), at every length around the kernel's groups of four and the
// plain loop's limit Short, for every span; the products of the span
// have magnitudes over 30 binades, so that any other grouping of the sum
// rounds differently.
func TestDotWithin(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	differs := 0
	for n := 1; n <= 41; n++ {
		for lo := 0; lo < n; lo++ {
			for hi := lo + 1; hi <= n; hi++ {
				a, b := make([]float64, n), make([]float64, n)
				for i := range n {
					b[i] = r.NormFloat64() * math.Ldexp(1, r.IntN(30))
					if i >= lo && i < hi {
						a[i] = r.NormFloat64() * math.Ldexp(1, r.IntN(30))
					}
				}
				want := Dot(a, b)
				if got := DotWithin(a, b, lo, hi); got != want {
					t.Fatalf("n %d, span [%d, %d): %v, Dot %v", n, lo, hi, got, want)
				}
				// The test can fail: the span's sum in order differs
				// from the kernel's grouping for many spans.
				s := 0.0
				for i := lo; i < hi; i++ {
					s += a[i] * b[i]
				}
				if s != want {
					differs++
				}
			}
		}
	}
	if differs < 1000 {
		t.Errorf("only %d spans where a plain sum differs from Dot: the test cannot tell groupings apart", differs)
	}
	if got := DotWithin([]float64{0, 0, 0}, []float64{1, 2, 3}, 2, 1); got != 0 {
		t.Errorf("empty span: %v", got)
	}
}
