// Package theory evaluates the regret bounds of the source papers as
// functions of an instance, a horizon and a privacy budget, so that
// experiments can draw them next to measured regret.
package theory

import (
	"fmt"
	"math"
)

// AdaCUCB returns the problem-dependent regret upper bound of AdaC-UCB,
// Theorem 10 of Azize and Basu (seed 001, Appendix C-D), for rewards in
// [0,1], rho-zCDP and beta > 3:
//
//	sum over a with gap > 0 of  8 beta/gap_a log T + 8 sqrt(beta/rho) sqrt(log T) + 2 beta/(beta - 3).
func AdaCUCB(gaps []float64, T int64, rho, beta float64) (float64, error) {
	if !(beta > 3) {
		return 0, fmt.Errorf("theory: Theorem 10 needs beta > 3, got %v", beta)
	}
	if !(rho > 0) || math.IsInf(rho, 0) {
		return 0, fmt.Errorf("theory: rho must be positive and finite, got %v", rho)
	}
	if T < 2 {
		return 0, fmt.Errorf("theory: horizon must be at least 2, got %d", T)
	}
	l := math.Log(float64(T))
	s := 0.0
	for _, g := range gaps {
		if g > 0 {
			s += 8*beta/g*l + 8*math.Sqrt(beta/rho)*math.Sqrt(l) + 2*beta/(beta-3)
		}
	}
	return s, nil
}
