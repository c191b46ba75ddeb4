package loadgen

import (
	"bytes"
	"math/rand/v2"
	"strconv"

	"github.com/dpbandit/dpbandit/env"
)

// traffic is what a load's clients send and what they read back: each
// pair's decision request, the outcome of the choice answered, and the
// reward request that reports it.
type traffic interface {
	// decision appends event ev's decision request for unit to b and
	// returns its path, the body and what the outcome needs to know of
	// the request (the context drawn).
	decision(b []byte, r *rand.Rand, ev, unit string) (path string, body []byte, seen int)
	// outcome reads the decision's answer: the choice's gap to the best
	// choice (its pseudo-regret) and the reward drawn for it; ok is
	// false for an answer without a known choice.
	outcome(resp []byte, r *rand.Rand, seen int) (gap, reward float64, ok bool)
	// reward appends event ev's reward request to b and returns its path
	// and body.
	reward(b []byte, ev string, x float64) (path string, body []byte)
}

// arms is the native API's traffic on Bernoulli arms: a decision is
// {"event_id","unit_id"}, its answer names an "arm", and the reward is
// {"event_id","reward"}.
type arms struct {
	inst               *env.Bernoulli
	gaps               []float64
	decisions, rewards string // the paths
}

func newArms(cfg Config) traffic {
	inst, _ := env.NewBernoulli(cfg.Means) // (Validate checked the means)
	return &arms{inst: inst, gaps: env.Gaps(cfg.Means),
		decisions: "/v1/experiments/" + cfg.Experiment + "/decisions", rewards: "/v1/experiments/" + cfg.Experiment + "/rewards"}
}

func (a *arms) decision(b []byte, _ *rand.Rand, ev, unit string) (string, []byte, int) {
	b = append(strconv.AppendQuote(append(strconv.AppendQuote(append(b, `{"event_id":`...), ev), `,"unit_id":`...), unit), '}')
	return a.decisions, b, 0
}

func (a *arms) outcome(resp []byte, r *rand.Rand, _ int) (float64, float64, bool) {
	arm := numberAfter(resp, `"arm":`)
	if arm < 0 || arm >= len(a.gaps) {
		return 0, 0, false
	}
	return a.gaps[arm], a.inst.Draw(r, arm), true
}

func (a *arms) reward(b []byte, ev string, x float64) (string, []byte) {
	b = append(strconv.AppendFloat(append(strconv.AppendQuote(append(b, `{"event_id":`...), ev), `,"reward":`...), x, 'g', -1, 64), '}')
	return a.rewards, b
}

// numberAfter reads the natural number that follows key in b (-1 if
// there is none).
func numberAfter(b []byte, key string) int {
	_, after, ok := bytes.Cut(b, []byte(key))
	if !ok || len(after) == 0 || after[0] < '0' || after[0] > '9' {
		return -1
	}
	a := 0
	for _, c := range after {
		if c < '0' || c > '9' {
			break
		}
		a = 10*a + int(c-'0')
	}
	return a
}
