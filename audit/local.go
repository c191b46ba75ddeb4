package audit

import (
	"math"

	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/noise"
)

// LocalTrial returns the Trial of a local randomiser (seed 004's client
// models): build(n, nz) builds the client for a batch of n rewards in
// bounds, drawing from nz; table 0 is n rewards at bounds.Lo, table 1 the
// same with the first at bounds.Hi (neighbours differing in one reward,
// as far apart as the range allows). The output is the client's report
// in bins of its noise scale, 400 bins around 0 (finer bins make the
// event chosen on the first half of the trials too rare to prove much on
// the second). The report is all a local-DP policy's learner sees of the
// rewards, so auditing it audits the policy.
func LocalTrial(build func(n int64, nz noise.Noise) (mechanism.Local, error), n int64, bounds mechanism.Bounds,
	seed uint64, wrap func(noise.Noise) noise.Noise) (Trial, error) {
	if n < 1 {
		return nil, errorf("a client holds at least one reward, got %d", n)
	}
	if err := bounds.Validate(); err != nil {
		return nil, err
	}
	return func(which int, run uint64) (uint64, error) {
		l, err := build(n, trialNoise(seed, which, run, wrap))
		if err != nil {
			return 0, err
		}
		rewards := make([]float64, n)
		for i := range rewards {
			rewards[i] = bounds.Lo
		}
		if which == 1 {
			rewards[0] = bounds.Hi
		}
		out, err := l.Report(rewards...)
		if err != nil {
			return 0, err
		}
		return uint64(min(max(math.Floor(out/l.Scale())+200, 0), 400)), nil
	}, nil
}
