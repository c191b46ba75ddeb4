package mechanism

import (
	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/privacy"
)

// SparseVector is the sparse vector technique with a cutoff of c positive
// answers (Lyu, Su and Li, "Understanding the Sparse Vector Technique for
// Differential Privacy", 2017, Algorithm 1): the threshold is perturbed
// once by Lap(Delta/eps1) and every query by Lap(2 c Delta/eps2), with
// eps1 = eps/3 and eps2 = 2 eps/3; it answers whether each noisy query
// reaches the noisy threshold, and stops after c positive answers. The
// whole sequence of answers is eps-DP however many queries are asked, for
// queries of sensitivity Delta (Lyu et al., Theorem 2). With c = 1 it is
// AboveThreshold (Dwork and Roth 2014, Algorithm 1), both scales being
// 3 Delta/eps; with c hits the query scale is 3 c Delta/eps. DP-NAS (seed
// 000) uses c = 1; SparseEstimation (seed 002, Algorithm 2) stops after
// s_0 + sqrt(s-bar) hits.
type SparseVector struct {
	offset     float64 // the threshold noise, drawn once
	queryScale float64
	threshold  float64
	delta      float64 // query sensitivity
	nz         noise.Noise
	left       int // positive answers still allowed
}

// AboveThreshold is the sparse vector technique with a single positive
// answer.
type AboveThreshold = SparseVector

// NewAboveThreshold returns the sparse vector technique with c = 1 for a
// pure eps-DP budget and queries of sensitivity delta.
func NewAboveThreshold(b privacy.Budget, delta float64, nz noise.Noise) (*AboveThreshold, error) {
	return NewSparseVector(b, delta, 1, nz)
}

// NewSparseVector returns the mechanism for a pure eps-DP budget, queries
// of sensitivity delta and a cutoff of c >= 1 positive answers, drawing
// the threshold noise now.
func NewSparseVector(b privacy.Budget, delta float64, c int, nz noise.Noise) (*SparseVector, error) {
	if err := checkNoise(nz); err != nil {
		return nil, err
	}
	if b.Notion != privacy.Pure {
		return nil, inputf("the sparse vector technique needs a pure eps-DP budget, got %s", b)
	}
	if c < 1 {
		return nil, inputf("the sparse vector technique needs a cutoff c >= 1, got %d", c)
	}
	b1, err := privacy.NewPure(b.Eps / 3)
	if err != nil {
		return nil, err
	}
	b2, _ := privacy.NewPure(2 * b.Eps / 3)
	ts, err := privacy.LaplaceScale(b1, delta)
	if err != nil {
		return nil, err
	}
	qs, _ := privacy.LaplaceScale(b2, 2*float64(c)*delta)
	off, err := nz.AddLaplace(0, ts, delta)
	if err != nil {
		return nil, err
	}
	return &SparseVector{offset: off, queryScale: qs, threshold: ts, delta: delta, nz: nz, left: c}, nil
}

// ThresholdScale returns the scale of the threshold noise.
func (a *SparseVector) ThresholdScale() float64 { return a.threshold }

// QueryScale returns the scale of the noise added to each query.
func (a *SparseVector) QueryScale() float64 { return a.queryScale }

// Left returns how many positive answers remain before the cutoff.
func (a *SparseVector) Left() int { return a.left }

// Above reports whether q + Lap(QueryScale) >= threshold + the threshold
// noise. After the c-th positive answer the budget is spent and further
// queries are errors.
func (a *SparseVector) Above(q, threshold float64) (bool, error) {
	if a.left == 0 {
		return false, inputf("the sparse vector technique reached its cutoff; its budget is spent")
	}
	if !finite(q) || !finite(threshold) {
		return false, inputf("query %v or threshold %v is not finite", q, threshold)
	}
	nq, err := a.nz.AddLaplace(q, a.queryScale, a.delta)
	if err != nil {
		return false, err
	}
	above := nq >= threshold+a.offset
	if above {
		a.left--
	}
	return above, nil
}
