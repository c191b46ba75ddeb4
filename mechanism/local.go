package mechanism

import (
	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/privacy"
)

// Local is a local randomiser of seed 004 (Section 3): it runs on the
// client, before anything reaches the learner, so the guarantee holds
// against an untrusted server (local DP), unlike the central mechanisms
// of this package, which trust the server with the raw data.
//
// Threat model: the server, and anyone who sees what clients send, is
// the adversary; each client's report is eps-DP with respect to that
// client's reward(s) (eps-LDP); the server never sees a raw reward.
type Local struct {
	lap    Laplace
	bounds Bounds
	exact  bool
}

// NewLocalReward returns client model M1 (004, Section 3.1): each client
// reports its one reward, clipped to the declared range, plus
// Lap(w/eps), w the range's width (the sensitivity of one reward).
func NewLocalReward(b privacy.Budget, bounds Bounds, nz noise.Noise) (Local, error) {
	return newLocal(b, bounds, 1, nz)
}

// NewLocalBatchMean returns client model M2 (004, Section 3.2, Lemma
// 3.5): the client that holds the n rewards of one action in a batch
// reports their mean, each reward clipped, plus Lap(w/(n eps)), the
// Laplace mechanism for the mean's sensitivity w/n: eps-LDP with respect
// to each reward.
func NewLocalBatchMean(b privacy.Budget, bounds Bounds, n int64, nz noise.Noise) (Local, error) {
	return newLocal(b, bounds, n, nz)
}

func newLocal(b privacy.Budget, bounds Bounds, n int64, nz noise.Noise) (Local, error) {
	if err := checkNoise(nz); err != nil {
		return Local{}, err
	}
	if err := bounds.Validate(); err != nil {
		return Local{}, err
	}
	if n < 1 {
		return Local{}, inputf("a batch needs at least one reward, got %d", n)
	}
	if !b.IsPrivate() {
		return Local{}, inputf("a local randomiser needs a privacy budget")
	}
	lap, err := NewLaplace(b, bounds.MeanSensitivity(n), nz)
	return Local{lap, bounds, ExactFor(nz)}, err
}

// Scale returns the scale of the Laplace noise of one report.
func (l Local) Scale() float64 { return l.lap.Scale() }

// Report returns the client's report on its rewards: their mean (each
// reward clipped to the range; NaN and infinities are errors) plus the
// noise. M1 clients pass one reward. On a noise source that takes exact
// statistics the clipped rewards are summed, and their mean released,
// exactly (Sums, ReleaseSums).
func (l Local) Report(rewards ...float64) (float64, error) {
	n := int64(len(rewards))
	if n == 0 {
		return 0, inputf("a report needs rewards")
	}
	if got, want := l.lap.l1, l.bounds.MeanSensitivity(n); got != want {
		return 0, inputf("the randomiser is calibrated for batches of sensitivity %v, got %d rewards", got, n)
	}
	s := NewSums(1, l.exact)
	for _, r := range rewards {
		c, err := l.bounds.Clip(r)
		if err != nil {
			return 0, err
		}
		s.Add(0, c)
	}
	out, err := l.lap.ReleaseSums(s, n)
	if err != nil {
		return 0, err
	}
	return out[0], nil
}
