// Package linalg holds the small dense linear algebra kernels that the
// design and linear packages run in their inner loops, where gonum's
// general routines (which estimate condition numbers) cost more than the
// arithmetic.
package linalg

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/floats"
)

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
		lj := l[j*m : j*m+j]
		d := a[j*m+j] - Dot(lj, lj)
		if d <= 0 || math.IsNaN(d) {
			return nil, 0, false
		}
		l[j*m+j] = math.Sqrt(d)
		logdet += math.Log(d)
		for i := j + 1; i < m; i++ {
			l[i*m+j] = (a[i*m+j] - Dot(l[i*m:i*m+j], lj)) / l[j*m+j]
		}
	}
	// Solve L L^T X = I column by column, with L^T stored row-major so
	// that both substitutions are contiguous dot products. X is
	// symmetric: column c is row c, and its entries i >= c need y_i and
	// x_i for i >= c only (y_i = 0 below c); the others are copied from
	// the rows before.
	u := make([]float64, m*m)
	for i := range m {
		for k := range i + 1 {
			u[k*m+i] = l[i*m+k]
		}
	}
	inv := make([]float64, m*m)
	y := make([]float64, m)
	for c := range m {
		for i := c; i < m; i++ {
			v := -Dot(l[i*m+c:i*m+i], y[c:i])
			if i == c {
				v = 1
			}
			y[i] = v / l[i*m+i]
		}
		x := inv[c*m : c*m+m]
		for i := m - 1; i >= c; i-- {
			x[i] = (y[i] - Dot(u[i*m+i+1:i*m+m], x[i+1:])) / u[i*m+i]
		}
		for i := range c {
			x[i] = inv[i*m+c]
		}
	}
	return inv, logdet, true
}

// Short is the length below which Dot and AddScaled are plain loops,
// summing in index order: code that repeats such a loop inline for a
// vector shorter than Short gets Dot's result to the bit.
const Short = 16

// Dot is the inner product of a and b[:len(a)]: gonum's assembly kernel
// for long vectors (the large matrices of OFUL), a plain loop for short
// ones, where the call costs more than it saves.
func Dot(a, b []float64) float64 {
	if len(a) >= Short {
		return dotLong(a, b)
	}
	return DotShort(a, b)
}

// DotShort is Dot for a shorter than Short: the plain loop, small enough
// to be inlined where Dot is not, for the hot loops of small d.
func DotShort(a, b []float64) float64 {
	s := 0.0
	for i, x := range a {
		s += x * b[i]
	}
	return s
}

// DotWithin is Dot(a, b) when every product a[i] b[i] outside [lo, hi)
// has an exact zero factor: the same value to the bit (only a zero
// result's sign may differ), at the cost of the span instead of the
// length. The plain loop of short vectors sums in index order, so the
// span alone gives its value. gonum's kernel for long vectors sums the
// elements below n &^ 3 (n = len(a)) into four partial sums, element i
// into sum i mod 4, then adds the rest to the first, in order: the sum
// over [lo &^ 3, hi rounded up to a multiple of 4, or n) adds the same
// non-zero products to the same partial sums in the same order (the
// whole vector's tail included, if hi reaches into it), and adding a
// zero product changes no partial sum's value. TestDotWithin checks it
// against Dot, and would catch a change of the kernel.
func DotWithin(a, b []float64, lo, hi int) float64 {
	n := len(a)
	lo, hi = max(lo, 0), min(hi, n)
	if n >= Short {
		if lo >= hi {
			return 0
		}
		return dotLong(a[lo&^3:min((hi+3)&^3, n)], b[lo&^3:])
	}
	s := 0.0
	for i := lo; i < hi; i++ {
		s += a[i] * b[i]
	}
	return s
}

// SquaredNorm is Dot(a, a), to the bit, reading a once (the unit-ball
// checks and rescalings of every decision set).
func SquaredNorm(a []float64) float64 {
	if len(a) >= Short {
		return dotLong(a, a)
	}
	n := 0.0
	for _, x := range a {
		n += x * x
	}
	return n
}

// ScaleSquaredNorm multiplies a by s in place and returns
// SquaredNorm(a) of the result, to the bit, in one pass when a is at
// least Short long (the unit-ball rescaling of every decision set).
func ScaleSquaredNorm(a []float64, s float64) float64 {
	if len(a) < Short {
		return scaleNormRef(a, s)
	}
	return scaleNorm(a, s)
}

// scaleNormRef is ScaleSquaredNorm in two passes.
func scaleNormRef(a []float64, s float64) float64 {
	for i := range a {
		a[i] *= s
	}
	return SquaredNorm(a)
}

// AddScaled adds alpha s to dst (len(s) >= len(dst)): gonum's assembly
// kernel for long vectors, a plain loop for short ones.
func AddScaled(dst []float64, alpha float64, s []float64) {
	if len(dst) >= Short {
		floats.AddScaled(dst, alpha, s[:len(dst)])
		return
	}
	AddScaledShort(dst, alpha, s)
}

// AddScaledShort is AddScaled for dst shorter than Short: the plain loop,
// small enough to be inlined where AddScaled is not.
func AddScaledShort(dst []float64, alpha float64, s []float64) {
	for i := range dst {
		dst[i] += alpha * s[i]
	}
}

// dotLong is gonum's assembly kernel for the inner product of long vectors.
func dotLong(a, b []float64) float64 { return floats.Dot(a, b[:len(a)]) }

// CheckRows returns an error naming the first of rows whose dimension is
// not d or that has a NaN or infinite entry, as "ROW i has dimension n,
// want d" or "ROW i has a non-finite ENTRY" in the caller's words (row
// "action", entry "coordinate"), or nil.
func CheckRows(rows [][]float64, d int, row, entry string) error {
	for i, r := range rows {
		if len(r) != d {
			return fmt.Errorf("%s %d has dimension %d, want %d", row, i, len(r), d)
		}
		for _, x := range r {
			if x-x != 0 {
				return fmt.Errorf("%s %d has a non-finite %s", row, i, entry)
			}
		}
	}
	return nil
}
