package sparse

import (
	"math"

	"github.com/dpbandit/dpbandit/noise"
)

// PrivateScreen is a private support estimate calibrated far tighter than
// SparseEstimation's: it peels the k coordinates of largest noisy
// marginal correlation
//
//	c_j = (1/n) sum_s x_sj r_s
//
// one at a time: k rounds of report-noisy-max, each adding fresh
// Lap(b) noise to |c_j| for every coordinate not yet taken and keeping
// the argmax, b = 2 k Delta/eps with Delta = 2R/n. Only the k indices are
// released (in the order taken).
//
// Privacy. Rows x_s have ||x_s|| <= 1, so |x_sj| <= 1, and rewards
// |r_s| <= R: replacing one step (x_s, r_s) moves every c_j, hence every
// |c_j|, by at most Delta = 2R/n. Report-noisy-max with Lap(2 Delta/eps')
// on queries of sensitivity Delta is eps'-DP (Dwork and Roth 2014,
// Section 3.3, for queries that may move in opposite directions); k
// rounds at eps' = eps/k compose to eps-DP (pure, basic composition).
//
// Why it is tighter. SparseEstimation's queries are LASSO coordinates,
// whose sensitivity is the whole range C_theta (the LASSO solution is not
// stable in one datum); c_j's sensitivity falls as 1/n. With the
// sparse-gauss contexts (isotropic, rescaled to norm 1) E c_j is about
// theta*_j / d, and the noise is about 4 k R/(n eps): the support shows
// once n eps >> 4 k R d/|theta*_j|.
//
// Marginal screening is consistent when the contexts' coordinates are
// uncorrelated (sparse-gauss with corr = 0) and the support's
// coefficients are not cancelled by correlations; with correlated
// coordinates it may take a correlated neighbour of a support coordinate.
// It is not 002's estimator: it is the documented tighter calibration
// that the policy offers (PrivateConfig.Peel).
func PrivateScreen(x [][]float64, r []float64, k int, eps, R float64, nz noise.Noise) ([]int, error) {
	n := len(x)
	if n == 0 || len(r) != n {
		return nil, inputf("%d rows and %d rewards", n, len(r))
	}
	d := len(x[0])
	if k < 1 || k > d {
		return nil, inputf("the screen keeps 1 to d = %d coordinates, got %d", d, k)
	}
	if !(eps > 0) || math.IsInf(eps, 0) || !(R > 0) || math.IsInf(R, 0) {
		return nil, inputf("the screen needs eps > 0 and R > 0, got %v and %v", eps, R)
	}
	if err := noise.Check(nz); err != nil {
		return nil, inputf("the screen: %w", err)
	}
	c := make([]float64, d)
	for s, row := range x {
		if len(row) != d {
			return nil, inputf("row %d has dimension %d, want %d", s, len(row), d)
		}
		if math.Abs(r[s]) > R {
			return nil, inputf("reward %v outside [-%v, %v]", r[s], R, R)
		}
		for j, v := range row {
			c[j] += v * r[s]
		}
	}
	for j := range c {
		c[j] = math.Abs(c[j] / float64(n))
		if math.IsNaN(c[j]) || math.IsInf(c[j], 0) {
			return nil, inputf("a non-finite context")
		}
	}
	delta := 2 * R / float64(n)
	b := 2 * float64(k) * delta / eps
	taken := make([]bool, d)
	out := make([]int, 0, k)
	for range k {
		best, top := -1, math.Inf(-1)
		for j := range c {
			if taken[j] {
				continue
			}
			v, err := nz.AddLaplace(c[j], b, delta)
			if err != nil {
				return nil, err
			}
			if v > top {
				best, top = j, v
			}
		}
		taken[best] = true
		out = append(out, best)
	}
	return out, nil
}
