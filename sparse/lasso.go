// Package sparse holds the pieces of high-dimensional sparse private
// bandits (seed 002, Shukla, PrivateThresholdLASSO): the LASSO solver
// that SparseEstimation (002, Algorithm 2) runs on each doubling epoch.
package sparse

import (
	"math"

	"github.com/dpbandit/dpbandit/internal/linalg"
)

// Lasso solves the LASSO of 002 Algorithm 2, line 2,
//
//	min_theta (1/(2n)) ||Y - Z theta||_2^2 + lambda ||theta||_1,
//
// by cyclic coordinate descent with soft thresholding, from the warm
// start theta0 (nil: zero), and returns the solution and the number of
// sweeps. The seed prints an l2 penalty and no 1/n; the objective is the
// usual LASSO, and the 1/(2n) normalisation fixes the scale of lambda:
// lambda_t of the order sigma sqrt(log d / t) for rows of norm O(1) per
// coordinate.
//
// The paper also constrains ||theta||_2 <= C_theta. Coordinate descent
// solves the unconstrained problem; when its solution lies outside the
// ball it is scaled back onto it (radial projection), which is the
// constrained minimiser only when the constraint is inactive, the case
// the analysis of 002 works in (C_theta >= ||theta*||). cTheta <= 0 or
// +Inf means no constraint.
//
// Each sweep costs O(n d) (residuals are kept up to date); after a full
// sweep the solver iterates over the non-zero coordinates only until they
// settle, then checks every coordinate again (the active-set strategy).
// It stops when a full sweep moves no coordinate by more than tol (times
// the coordinate's scale); tol <= 0 means 1e-12.
func Lasso(z [][]float64, y []float64, lambda, cTheta, tol float64, theta0 []float64) ([]float64, int, error) {
	n := len(z)
	if n == 0 || len(y) != n {
		return nil, 0, inputf("%d rows and %d responses", n, len(y))
	}
	d := len(z[0])
	if d == 0 {
		return nil, 0, inputf("rows of dimension 0")
	}
	if !(lambda >= 0) || math.IsInf(lambda, 0) {
		return nil, 0, inputf("lambda must be non-negative and finite, got %v", lambda)
	}
	if tol <= 0 {
		tol = 1e-12
	}
	if err := linalg.CheckRows(z, d, "row", "entry"); err != nil {
		return nil, 0, inputf("%w", err)
	}
	for i := range y {
		if y[i]-y[i] != 0 {
			return nil, 0, inputf("response %d is not finite", i)
		}
	}
	theta := make([]float64, d)
	if theta0 != nil {
		if len(theta0) != d {
			return nil, 0, inputf("warm start of dimension %d, want %d", len(theta0), d)
		}
		copy(theta, theta0)
	}
	// Column-major copy and squared column norms / n.
	cols := make([][]float64, d)
	norm := make([]float64, d)
	for j := range d {
		c := make([]float64, n)
		s := 0.0
		for i, row := range z {
			c[i] = row[j]
			s += row[j] * row[j]
		}
		cols[j], norm[j] = c, s/float64(n)
	}
	resid := make([]float64, n)
	for i, row := range z {
		r := y[i]
		for j, t := range theta {
			r -= row[j] * t
		}
		resid[i] = r
	}
	nf := float64(n)
	// update moves coordinate j to its minimiser given the others and
	// returns the size of the move.
	update := func(j int) float64 {
		if norm[j] == 0 {
			if theta[j] != 0 {
				theta[j] = 0
				return math.Inf(1)
			}
			return 0
		}
		c, old := cols[j], theta[j]
		rho := 0.0
		for i, x := range c {
			rho += x * resid[i]
		}
		rho = rho/nf + norm[j]*old
		nw := softThreshold(rho, lambda) / norm[j]
		if delta := nw - old; delta != 0 {
			for i, x := range c {
				resid[i] -= x * delta
			}
			theta[j] = nw
			return math.Abs(delta) * math.Sqrt(norm[j])
		}
		return 0
	}
	sweeps := 0
	for sweeps < 100000 {
		// A full sweep.
		sweeps++
		moved := 0.0
		for j := range d {
			moved = max(moved, update(j))
		}
		if moved <= tol {
			break
		}
		// The active set until it settles.
		for sweeps < 100000 {
			sweeps++
			moved := 0.0
			for j, t := range theta {
				if t != 0 {
					moved = max(moved, update(j))
				}
			}
			if moved <= tol {
				break
			}
		}
	}
	if cTheta > 0 && !math.IsInf(cTheta, 1) {
		s := 0.0
		for _, t := range theta {
			s += t * t
		}
		if s = math.Sqrt(s); s > cTheta {
			for j := range theta {
				theta[j] *= cTheta / s
			}
		}
	}
	return theta, sweeps, nil
}

// softThreshold returns sign(x) max(|x| - l, 0).
func softThreshold(x, l float64) float64 {
	switch {
	case x > l:
		return x - l
	case x < -l:
		return x + l
	}
	return 0
}
