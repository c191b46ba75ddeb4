package ope

import (
	"fmt"
	"strconv"
	"strings"
)

// Policy is a fixed (non-adaptive) target policy: its distribution over
// the K actions for an event's context.
type Policy interface {
	// Probs writes pi(a | context) for every action a into p (len K).
	Probs(e *Event, p []float64) error
}

// Uniform plays every action with probability 1/K.
type Uniform struct{}

// Probs fills p with 1/K.
func (Uniform) Probs(_ *Event, p []float64) error {
	for a := range p {
		p[a] = 1 / float64(len(p))
	}
	return nil
}

// Always plays one action.
type Always int

// Probs puts all the mass on the action.
func (k Always) Probs(_ *Event, p []float64) error {
	if int(k) >= len(p) {
		return fmt.Errorf("the target plays action %d, the log has %d actions", k, len(p))
	}
	clear(p)
	p[k] = 1
	return nil
}

// Logging is the logging policy itself, from each event's action_prob:
// evaluating it checks a log, since its IPS weights are all 1.
type Logging struct{}

// Probs copies the event's action_prob.
func (Logging) Probs(e *Event, p []float64) error {
	if e.Probs == nil {
		return fmt.Errorf("the logging policy's distribution is not logged (no action_prob)")
	}
	copy(p, e.Probs)
	return nil
}

// ParsePolicy parses a target policy: "uniform", "arm:K" (always action
// K) or "logging".
func ParsePolicy(s string) (Policy, error) {
	switch {
	case s == "uniform":
		return Uniform{}, nil
	case s == "logging":
		return Logging{}, nil
	case strings.HasPrefix(s, "arm:"):
		k, err := strconv.Atoi(strings.TrimPrefix(s, "arm:"))
		if err != nil || k < 0 {
			return nil, fmt.Errorf("ope: %q: arm:K needs an action number K >= 0", s)
		}
		return Always(k), nil
	}
	return nil, fmt.Errorf("ope: unknown target policy %q (uniform, arm:K, logging; or an algorithm, by replay)", s)
}
