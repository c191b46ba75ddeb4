// Package linalg holds the small dense linear algebra kernels that the
// design and linear packages run in their inner loops, where gonum's
// general routines (which estimate condition numbers) cost more than the
// arithmetic.
package linalg

import "math"

// InvSPD inverts a symmetric positive definite m x m matrix (row-major)
// by Cholesky factorisation, without gonum's condition estimate, which
// dominates the cost for the small matrices of designs. ok is false when
// the matrix is not numerically positive definite.
func InvSPD(a []float64, m int) ([]float64, bool) {
	inv, _, ok := InvLogDetSPD(a, m)
	return inv, ok
}

// InvLogDetSPD is InvSPD that also returns ln det A, 2 sum_j ln L_jj of
// the same Cholesky factor.
func InvLogDetSPD(a []float64, m int) ([]float64, float64, bool) {
	l := make([]float64, m*m)
	logdet := 0.0
	for j := range m {
		d := a[j*m+j]
		for k := range j {
			d -= l[j*m+k] * l[j*m+k]
		}
		if d <= 0 || math.IsNaN(d) {
			return nil, 0, false
		}
		l[j*m+j] = math.Sqrt(d)
		logdet += math.Log(d)
		for i := j + 1; i < m; i++ {
			v := a[i*m+j]
			for k := range j {
				v -= l[i*m+k] * l[j*m+k]
			}
			l[i*m+j] = v / l[j*m+j]
		}
	}
	// Solve L L^T X = I column by column.
	inv := make([]float64, m*m)
	y := make([]float64, m)
	for c := range m {
		for i := range m {
			v := 0.0
			if i == c {
				v = 1
			}
			for k := range i {
				v -= l[i*m+k] * y[k]
			}
			y[i] = v / l[i*m+i]
		}
		for i := m - 1; i >= 0; i-- {
			v := y[i]
			for k := i + 1; k < m; k++ {
				v -= l[k*m+i] * inv[k*m+c]
			}
			inv[i*m+c] = v / l[i*m+i]
		}
	}
	return inv, logdet, true
}
