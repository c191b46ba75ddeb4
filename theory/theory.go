// Package theory evaluates the regret bounds of the source papers as
// functions of an instance, a horizon and a privacy budget, so that
// experiments can draw them next to measured regret.
package theory

import (
	"math"
)

// AdaCUCB returns the problem-dependent regret upper bound of AdaC-UCB,
// Theorem 10 of Azize and Basu (seed 001, Appendix C-D), for rewards in
// [0,1], rho-zCDP and beta > 3:
//
//	sum over a with gap > 0 of  8 beta/gap_a log T + 8 sqrt(beta/rho) sqrt(log T) + 2 beta/(beta - 3).
func AdaCUCB(gaps []float64, T int64, rho, beta float64) (float64, error) {
	if !(beta > 3) {
		return 0, errorf("Theorem 10 needs beta > 3, got %v", beta)
	}
	if !(rho > 0) || math.IsInf(rho, 0) {
		return 0, errorf("rho must be positive and finite, got %v", rho)
	}
	if T < 2 {
		return 0, errorf("horizon must be at least 2, got %d", T)
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

// AdaCUCBMinimax returns the minimax regret upper bound of AdaC-UCB,
// Theorem 11 of seed 001, with the explicit constants of the last line of
// its proof, for rewards in [0,1], rho-zCDP and beta > 3 (K = len(gaps)):
//
//	4 sqrt(2 beta K T log T) + 8 K sqrt(beta log T / rho) + 3 beta/(beta - 3) sum_a gap_a.
func AdaCUCBMinimax(gaps []float64, T int64, rho, beta float64) (float64, error) {
	if _, err := AdaCUCB(gaps, T, rho, beta); err != nil {
		return 0, err
	}
	k, l := float64(len(gaps)), math.Log(float64(T))
	s := 0.0
	for _, g := range gaps {
		s += g
	}
	return 4*math.Sqrt(2*beta*k*float64(T)*l) + 8*k*math.Sqrt(beta*l/rho) + 3*beta/(beta-3)*s, nil
}

// ConvertedPureDP returns the "converted" bound of Table II of seed 001
// (Theorem 7 of Azize and Basu 2022 for AdaP-UCB, with eps = sqrt(2 rho)):
//
//	sum over a with gap > 0 of  8 beta/gap_a log T + 8 sqrt(beta/rho) log T.
//
// It differs from Theorem 10 by log T in place of sqrt(log T) in the
// privacy term: the price of the Laplace mechanism.
func ConvertedPureDP(gaps []float64, T int64, rho, beta float64) (float64, error) {
	if _, err := AdaCUCB(gaps, T, rho, beta); err != nil {
		return 0, err
	}
	l := math.Log(float64(T))
	s := 0.0
	for _, g := range gaps {
		if g > 0 {
			s += 8*beta/g*l + 8*math.Sqrt(beta/rho)*l
		}
	}
	return s, nil
}

// FiniteArmedLower returns the minimax lower bound of Theorem 17 of seed
// 001 for rho-zCDP policies on K arms, valid for K > 1, T >= K-1 and
// 0 < rho <= 1:
//
//	max( sqrt(T (K-1))/27, sqrt((K-1)/rho)/124 ).
//
// The constant 1/124 is the proof's final e^-1/(16 sqrt 2) >= 1/62, halved
// by 2 max(a, b) >= a + b. With rho = +Inf it returns the non-private
// bound sqrt(T (K-1))/27 (Theorem 15.2 of Lattimore and Szepesvari). Being
// minimax, it bounds the worst instance, not every instance.
func FiniteArmedLower(k int, T int64, rho float64) (float64, error) {
	if k < 2 || T < int64(k-1) {
		return 0, errorf("Theorem 17 needs K > 1 and T >= K-1, got K=%d T=%d", k, T)
	}
	if !(rho > 0) || (rho > 1 && !math.IsInf(rho, 1)) {
		return 0, errorf("Theorem 17 needs 0 < rho <= 1, got %v", rho)
	}
	km := float64(k - 1)
	return math.Max(math.Sqrt(float64(T)*km)/27, math.Sqrt(km/rho)/124), nil
}

// DPSEPulls returns the explicit form of Lemma 4.1 of seed 000: the number
// of pulls of an arm of gap gap > 0 by DP Successive Elimination
// (Algorithm 3) on K arms with confidence beta and eps-DP (eps = +Inf for
// the non-private variant) that holds with probability at least 1 - beta,
// capped at T.
//
// The constants are those of Algorithm 3. On the event that every epoch
// mean is within h_e + c_e of the truth (probability >= 1 - beta by the
// union bounds built into h_e and c_e), R_e makes h_e <= Delta_e/8 and
// c_e <= Delta_e/8, so the best arm survives and an arm of gap > Delta_e =
// 2^-e is eliminated at the end of epoch e. The arm is thus pulled in
// epochs 1..e* with e* the smallest e such that 2^-e < gap, ceil(R_e)
// times in epoch e, with R_e evaluated at |S| = K (R_e grows with |S|):
//
//	sum_{e=1..e*} ceil( max(32 ln(8Ke^2/beta)/Delta_e^2, 8 ln(4Ke^2/beta)/(eps Delta_e)) + 1 ).
func DPSEPulls(gap float64, k int, beta, eps float64, T int64) (float64, error) {
	if !(gap > 0 && gap <= 1) {
		return 0, errorf("gap must lie in (0,1], got %v", gap)
	}
	if k < 2 || !(beta > 0 && beta < 1) || !(eps > 0) {
		return 0, errorf("DP-SE needs K >= 2, beta in (0,1) and eps > 0, got K=%d beta=%v eps=%v", k, beta, eps)
	}
	total := 0.0
	for e := 1; ; e++ {
		d := math.Ldexp(1, -e)
		ef := float64(e)
		r := 32 * math.Log(8*float64(k)*ef*ef/beta) / (d * d)
		if !math.IsInf(eps, 1) {
			r = math.Max(r, 8*math.Log(4*float64(k)*ef*ef/beta)/(eps*d))
		}
		total += math.Ceil(r + 1)
		if d < gap || total >= float64(T) {
			break
		}
	}
	return math.Min(total, float64(T)), nil
}
