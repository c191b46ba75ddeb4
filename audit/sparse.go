package audit

import (
	"math"

	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/privacy"
	"github.com/dpbandit/dpbandit/sparse"
)

// The sparse policies' own audits have no power (their noise drowns one
// differing reward at any budget), so their mechanisms are audited one
// by one, each on the neighbouring inputs where it is most exposed.

// SparseVectorTrial is the Trial of the sparse vector technique
// (mechanism.NewSparseVector, 002 Algorithm 2's pass) at a pure eps
// budget with a cutoff of 2: 42 queries of sensitivity 1 against the
// threshold 0.5, 40 zeros then (1, 1) on input 0 and 40 ones then (0, 0)
// on input 1. The output is the number of negative answers before the
// second positive (43 if there is none). The pair watches both noises: without the threshold's,
// the 40 answers are independent and a long run of negatives is much
// likelier on input 0; without the queries', the same threshold draw
// cannot put the 40 first queries below it on input 1 and the last two
// above it (every query moved the same way would be absorbed by the
// threshold's noise, and the queries' noise would go unseen).
func SparseVectorTrial(b privacy.Budget, seed uint64, wrap func(noise.Noise) noise.Noise) Trial {
	const n = 42
	return func(which int, run uint64) (uint64, error) {
		sv, err := mechanism.NewSparseVector(b, 1, 2, trialNoise(seed, which, run, wrap))
		if err != nil {
			return 0, err
		}
		hits, neg := 0, uint64(0)
		for i := range n {
			q := float64(which)
			if i >= n-2 {
				q = float64(1 - which)
			}
			above, err := sv.Above(q, 0.5)
			if err != nil {
				return 0, err
			}
			if !above {
				neg++
			} else if hits++; hits == 2 {
				return neg, nil
			}
		}
		return n + 1, nil // fewer than two positives
	}
}

// NoisyMaxTrial is the Trial of one round of the peeling screen's
// report-noisy-max (sparse.PrivateScreen with k = 1) at a pure eps budget,
// on two steps of reward 1 (R = 1, so Delta = 2R/n = 1): the first step's
// context is (a, a), a = 1/sqrt 2, the second's (a, -a) on input 0 and
// (-a, a) on input 1, so that the marginal correlations are (a, 0) and
// (0, a): both move by a, in opposite directions, as far as contexts in
// the unit ball allow (the loss can reach a eps, 0.71 eps, of the eps the
// noise is calibrated for). The output is the coordinate taken.
func NoisyMaxTrial(eps float64, seed uint64, wrap func(noise.Noise) noise.Noise) Trial {
	a := 1 / math.Sqrt2
	return func(which int, run uint64) (uint64, error) {
		x := [][]float64{{a, a}, {a, -a}}
		if which == 1 {
			x[1] = []float64{-a, a}
		}
		s, err := sparse.PrivateScreen(x, []float64{1, 1}, 1, eps, 1, trialNoise(seed, which, run, wrap))
		if err != nil {
			return 0, err
		}
		return uint64(s[0]), nil
	}
}

// WishartTrial is the Trial of one Wishart node (mechanism.WishartTree
// over one step, calibrated by w for vectors of norm 1 in R^2, released
// on both coordinates): the step's vector is e_0 on input 0 and e_1 on
// input 1, the pair whose privacy loss has the largest first-order term
// (mechanism.Wishart). The output is the exact privacy loss of the
// release, L = ln p_0(M)/p_1(M) = (K-3)/2 ln(|W_0|/|W_1|) - tr(W_0 -
// W_1)/(2 Sigma2) with W_i = M - z_i z_i^T, in bins of 0.05 over [-10, 10]
// (400 categories), and one category for each infinite value (a release
// impossible under one input): the most powerful statistic there is.
// The audit's broken variant calibrates w with Sigma2 divided by 10.
func WishartTrial(w mechanism.Wishart, seed uint64) (Trial, error) {
	if w.U < 2 {
		return nil, errorf("a Wishart node released on 2 coordinates needs U >= 2, got %d", w.U)
	}
	return func(which int, run uint64) (uint64, error) {
		z := [2][]float64{{1, 0}, {0, 1}}
		tree, err := mechanism.NewWishartTree(w, 2, 1, func(int64) []float64 { return z[which] }, trialNoise(seed, which, run, nil))
		if err != nil {
			return 0, err
		}
		if err := tree.SetSupport([]int{0, 1}); err != nil {
			return 0, err
		}
		if err := tree.Add(); err != nil {
			return 0, err
		}
		m := tree.Release()
		// W_0 = M - e_0 e_0^T and W_1 = M - e_1 e_1^T, 2 x 2.
		det0 := (m[0]-1)*m[3] - m[1]*m[2]
		det1 := m[0]*(m[3]-1) - m[1]*m[2]
		switch {
		case !(det1 > 0 && m[0] > 0):
			return 401, nil // impossible under input 1: L = +Inf
		case !(det0 > 0 && m[3] > 0):
			return 0, nil // impossible under input 0: L = -Inf
		}
		l := float64(w.K-3) / 2 * math.Log(det0/det1) // tr(W_0 - W_1) = 0 here
		return uint64(min(max(math.Floor(l/0.05)+201, 1), 400)), nil
	}, nil
}
