package mab

import (
	"math"

	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/privacy"
)

// NAS is DP-NAS, the eps-DP (alpha, beta)-stopping rule of Sajed and
// Sheffet (2019), Algorithm 2 of the survey of Chari (seed 000, Section
// 4). It reads i.i.d. samples in [-R, R] with unknown mean mu and stops
// with an estimate mu^ such that P(|mu^ - mu| > alpha |mu|) < beta.
//
// After t samples with sum S_t it stops when
//
//	|S_t| >= h_t (1 + 1/alpha) + c_t + B + A_t,   h_t = R sqrt(2t ln(16 t^2/beta)),
//	c_t = s1 ln(4/beta) + s2 ln(8 t^2/beta) + (s3/alpha) ln(4/beta),
//
// where B ~ Lap(s1) is drawn once and A_t ~ Lap(s2) per query (the sparse
// vector technique, mechanism.AboveThreshold, with budget eps/2 and query
// sensitivity 2R: s1 = s2 = 12R/eps), and returns (S_t + L)/t with
// L ~ Lap(s3), s3 = 4R/eps (the Laplace mechanism with budget eps/2 on a
// sum of sensitivity 2R). These are the survey's constants; the scales come
// from package privacy. Samples outside [-R, R] are clipped.
//
// With Geometric set, the rule is queried only at t = 1, 2, 4, 8, ...: the
// exponentially spaced variant the survey describes (l.139), which pays a
// constant factor in samples for far fewer queries.
type NAS struct {
	alpha, beta float64
	bounds      mechanism.Bounds
	geometric   bool
	svt         *mechanism.AboveThreshold
	release     mechanism.Laplace
	t           int64
	sum         float64
	stopped     bool
}

// NewNAS returns the stopping rule for a pure eps-DP budget, accuracy
// alpha > 0, confidence beta in (0,1) and sample bound r > 0.
func NewNAS(b privacy.Budget, alpha, beta, r float64, geometric bool, nz noise.Noise) (*NAS, error) {
	if b.Notion != privacy.Pure {
		return nil, inputf("DP-NAS needs a pure eps-DP budget, got %s", b)
	}
	if err := b.Validate(); err != nil {
		return nil, err
	}
	if !(alpha > 0) || math.IsInf(alpha, 0) {
		return nil, inputf("alpha must be positive and finite, got %v", alpha)
	}
	if !(beta > 0 && beta < 1) {
		return nil, inputf("beta must lie in (0,1), got %v", beta)
	}
	bounds, err := mechanism.NewBounds(-r, r)
	if err != nil {
		return nil, inputf("DP-NAS's reward bound r must be positive and finite (rewards in [-r, r]), got %v: %w", r, err)
	}
	half, _ := privacy.NewPure(b.Eps / 2)
	svt, err := mechanism.NewAboveThreshold(half, bounds.Width(), nz)
	if err != nil {
		return nil, err
	}
	rel, err := mechanism.NewLaplace(half, bounds.Width(), nz)
	if err != nil {
		return nil, err
	}
	return &NAS{alpha: alpha, beta: beta, bounds: bounds, geometric: geometric, svt: svt, release: rel}, nil
}

// Scales returns s1, s2 and s3: the threshold, query and release noise scales.
func (n *NAS) Scales() (s1, s2, s3 float64) {
	return n.svt.ThresholdScale(), n.svt.QueryScale(), n.release.Scale()
}

// Add reads one sample. When the rule stops it returns true and the
// private estimate of the mean; reading after the stop is an error.
func (n *NAS) Add(x float64) (bool, float64, error) {
	if n.stopped {
		return false, 0, inputf("DP-NAS has stopped")
	}
	c, err := n.bounds.Clip(x)
	if err != nil {
		return false, 0, err
	}
	n.t++
	n.sum += c
	if n.geometric && n.t&(n.t-1) != 0 {
		return false, 0, nil
	}
	t := float64(n.t)
	rr := n.bounds.Hi
	h := rr * math.Sqrt(2*t*math.Log(16*t*t/n.beta))
	s1, s2, s3 := n.Scales()
	ct := s1*math.Log(4/n.beta) + s2*math.Log(8*t*t/n.beta) + s3/n.alpha*math.Log(4/n.beta)
	above, err := n.svt.Above(math.Abs(n.sum), h*(1+1/n.alpha)+ct)
	if err != nil || !above {
		return false, 0, err
	}
	n.stopped = true
	s, err := n.release.Release(n.sum)
	return true, s / t, err
}

// Samples returns the number of samples read.
func (n *NAS) Samples() int64 { return n.t }
