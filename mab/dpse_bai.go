package mab

import (
	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/privacy"
)

// DPSEIdentifier is DP-SE run as a best-arm identification with fixed
// confidence (a bandit.Identifier), the private baseline of Azize et al.
// (NeurIPS 2023): the rule fires when one arm is left, which is the best
// with probability at least 1 - delta (seed 000, Lemma 4.1's event, with
// beta = delta), and tau is the pulls made by the end of that epoch. It
// is the DP-SE of NewDPSE, with each epoch's mean divided by the epoch's
// own count (the authors' code divides by the arm's cumulative count,
// which slows elimination: docs/algorithms.md).
type DPSEIdentifier struct{ *DPSE }

// NewDPSEIdentifier returns DP-SE with confidence delta as a best-arm
// identification.
func NewDPSEIdentifier(s bandit.Setting, b privacy.Budget, delta float64) (*DPSEIdentifier, error) {
	p, err := NewDPSE(s, b, delta)
	if err != nil {
		return nil, err
	}
	return &DPSEIdentifier{p}, nil
}

// Decision returns the last arm left and the pulls made when it was left
// alone (bandit.Identifier).
func (p *DPSEIdentifier) Decision() (arm int, tau int64, ok bool) {
	if len(p.active) != 1 {
		return 0, 0, false
	}
	return p.active[0], p.tau, true
}
