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
