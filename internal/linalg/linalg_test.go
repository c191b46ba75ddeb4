package linalg

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestInvSPD(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for _, m := range []int{1, 2, 5, 12} {
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
