package mechanism

import (
	"fmt"

	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/privacy"
)

// AboveThreshold is the sparse vector technique for one positive answer
// (Dwork and Roth 2014, Algorithm 1; the budget split of Lyu, Su and Li,
// "Understanding the Sparse Vector Technique", 2017, Algorithm 1 with
// c = 1): the threshold is perturbed once by Lap(Delta/eps1) and every
// query by Lap(2 Delta/eps2), with eps1 = eps/3 and eps2 = 2 eps/3, so
// that both scales are 3 Delta/eps. Reporting the index of the first query
// whose noisy answer reaches the noisy threshold is then eps-DP however
// many queries are asked, for queries of sensitivity Delta.
type AboveThreshold struct {
	offset     float64 // the threshold noise, drawn once
	queryScale float64
	threshold  float64
	delta      float64 // query sensitivity
	nz         noise.Noise
	fired      bool
}

// NewAboveThreshold returns the mechanism for a pure eps-DP budget and
// queries of sensitivity delta, drawing the threshold noise now.
func NewAboveThreshold(b privacy.Budget, delta float64, nz noise.Noise) (*AboveThreshold, error) {
	if b.Notion != privacy.Pure {
		return nil, fmt.Errorf("mechanism: the sparse vector technique needs a pure eps-DP budget, got %s", b)
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
	qs, _ := privacy.LaplaceScale(b2, 2*delta)
	off, err := nz.AddLaplace(0, ts, delta)
	if err != nil {
		return nil, err
	}
	return &AboveThreshold{offset: off, queryScale: qs, threshold: ts, delta: delta, nz: nz}, nil
}

// ThresholdScale and QueryScale return the scales of the threshold and
// query noise.
func (a *AboveThreshold) ThresholdScale() float64 { return a.threshold }

// QueryScale returns the scale of the noise added to each query.
func (a *AboveThreshold) QueryScale() float64 { return a.queryScale }

// Above reports whether q + Lap(QueryScale) >= threshold + the threshold
// noise. After the first true answer the budget is spent and further
// queries are errors.
func (a *AboveThreshold) Above(q, threshold float64) (bool, error) {
	if a.fired {
		return false, fmt.Errorf("mechanism: AboveThreshold already answered; its budget is spent")
	}
	if !finite(q) || !finite(threshold) {
		return false, fmt.Errorf("mechanism: query %v or threshold %v is not finite", q, threshold)
	}
	nq, err := a.nz.AddLaplace(q, a.queryScale, a.delta)
	if err != nil {
		return false, err
	}
	a.fired = nq >= threshold+a.offset
	return a.fired, nil
}
