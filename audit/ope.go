package audit

import (
	"bytes"
	"io"
	"math"

	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/ope"
	"github.com/dpbandit/dpbandit/privacy"
)

// OPETrial is the Trial of a private off-policy estimate (ope.Private of
// estimator est, under b) of the target "always action 0" on two logs
// of 1000 events over 2 actions with rewards in [0, 1] and weights
// capped at 5, which differ in their first event: on input 0 it is
// action 0 logged with pscore 1/5 (weight 5) and reward 1; on input 1
// it is, for ips, the same with reward 0 (the pair that moves IPS by its
// whole sensitivity), and for snips and dr, action 1 (weight 0) with
// reward 0 (which moves both of SNIPS's statistics by their whole
// sensitivities, and DR's estimate by 5/11 of its sensitivity; DR's
// reward model moves too). The other 999 events are action 0 with
// pscore 1 and reward 0, so that DR's model of action 0 is near 0 and
// their DR terms are 0 whatever the model. The output is the released
// statistic (SNIPS: the sum of its two statistics, the direction in
// which they move) in bins of an eighth of the calibrated noise scale
// around input 0's statistic without noise (403 categories): a post-processing of the release, so any
// bound it proves holds for the release.
func OPETrial(est string, b privacy.Budget, seed uint64, wrap func(noise.Noise) noise.Noise) (Trial, error) {
	const n, clip = 1000, 5.0
	unit := mechanism.Unit
	o := ope.Options{Arms: 2, Clip: clip, Rewards: &unit}
	var res [2]*ope.Result
	for which := range res {
		var log bytes.Buffer
		first := `{"action":0,"reward":1,"pscore":0.2}`
		switch {
		case which == 1 && est == "ips":
			first = `{"action":0,"reward":0,"pscore":0.2}`
		case which == 1:
			first = `{"action":1,"reward":0,"pscore":0.2}`
		}
		log.WriteString(first + "\n")
		for range n - 1 {
			log.WriteString(`{"action":0,"reward":0,"pscore":1}` + "\n")
		}
		data := log.Bytes()
		r, err := ope.Evaluate(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }, ope.Always(0), o)
		if err != nil {
			return nil, err
		}
		res[which] = r
	}
	stat := func(rel ope.Release) float64 {
		if est == "snips" {
			return rel.Released[0] + rel.Released[1]
		}
		return rel.Value
	}
	// The bins are centred on input 0's statistic without noise.
	rel, err := ope.Private(res[0], est, b, Noiseless{})
	if err != nil {
		return nil, errorf("%w", err)
	}
	centre := stat(rel)
	return func(which int, run uint64) (uint64, error) {
		rel, err := ope.Private(res[which], est, b, trialNoise(seed, which, run, wrap))
		if err != nil {
			return 0, err
		}
		return uint64(min(max(math.Floor((stat(rel)-centre)/(rel.Scale/8))+201, 0), 402)), nil
	}, nil
}
