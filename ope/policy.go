package ope

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/dpbandit/dpbandit/internal/regfile"
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
	if k < 0 || int(k) >= len(p) {
		return fmt.Errorf("the target plays action %d, the log has actions 0 to %d", k, len(p)-1)
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

// Linear is a target policy given by a linear model: each action's
// score is s_a = <theta_a, (x, 1)> for a feature-vector context x (or
// none: s_a = theta_a[0]), with one row theta_a of Weights per action,
// or s_a = <theta, x_a> for a decision-set context, with Weights a
// single row theta. The policy plays the best score (ties split evenly),
// or with Softmax = T > 0 the distribution proportional to exp(s_a / T);
// with Eps > 0 it then mixes in the uniform distribution: pi = (1 - Eps)
// pi + Eps / K.
type Linear struct {
	Weights [][]float64
	Softmax float64
	Eps     float64
	// Model is the SHA-256 of the file the weights were read from (hex),
	// which a release's key names: the same file name with other weights
	// is another target.
	Model string
}

// Probs computes the model's distribution for the event's context.
func (l Linear) Probs(e *Event, p []float64) error {
	k := len(p)
	for a := range p {
		var theta, x []float64
		switch {
		case e.Actions != nil:
			if len(l.Weights) != 1 {
				return fmt.Errorf("the model has %d rows; a log of decision sets takes one (theta)", len(l.Weights))
			}
			theta, x = l.Weights[0], e.Actions[a]
		default:
			if len(l.Weights) != k {
				return fmt.Errorf("the model has %d rows, the log %d actions (one row theta_a per action)", len(l.Weights), k)
			}
			theta, x = l.Weights[a], e.X
		}
		want := len(x)
		if e.Actions == nil {
			want++ // the intercept
		}
		if len(theta) != want {
			return fmt.Errorf("the model's rows have %d weights, the context needs %d", len(theta), want)
		}
		s := 0.0
		for i, v := range x {
			s += theta[i] * v
		}
		if e.Actions == nil {
			s += theta[len(x)]
		}
		if math.IsInf(s, 0) || math.IsNaN(s) {
			return fmt.Errorf("the model's score of action %d is %v", a, s)
		}
		p[a] = s
	}
	best := p[0]
	for _, s := range p {
		best = max(best, s)
	}
	total := 0.0
	for a, s := range p {
		switch {
		case l.Softmax > 0:
			p[a] = math.Exp((s - best) / l.Softmax)
		case s == best:
			p[a] = 1
		default:
			p[a] = 0
		}
		total += p[a]
	}
	for a := range p {
		p[a] = (1-l.Eps)*p[a]/total + l.Eps/float64(k)
	}
	return nil
}

// ParsePolicy parses a target policy: "uniform", "arm:K" (always action
// K), "logging", or "linear:FILE[,softmax=T][,eps=E]" (Linear, its
// Weights a JSON array of rows in FILE).
func ParsePolicy(s string) (Policy, error) {
	switch {
	case strings.HasPrefix(s, "linear:"):
		return parseLinear(s)
	case strings.HasPrefix(s, "dist:"):
		d, err := NewDist(strings.TrimPrefix(s, "dist:"))
		if err != nil {
			return nil, fileError(s, err)
		}
		return d, nil
	case s == "uniform":
		return Uniform{}, nil
	case s == "logging":
		return Logging{}, nil
	case strings.HasPrefix(s, "arm:"):
		k, err := strconv.Atoi(strings.TrimPrefix(s, "arm:"))
		if err != nil || k < 0 {
			return nil, policyError("%q: arm:K needs an action number K >= 0", s)
		}
		return Always(k), nil
	}
	return nil, policyError("unknown target policy %q (uniform, arm:K, logging, linear:FILE, dist:FILE; or an algorithm, by replay)", s)
}

// parseLinear reads linear:FILE[,softmax=T][,eps=E].
func parseLinear(s string) (Policy, error) {
	path, opts, _ := strings.Cut(strings.TrimPrefix(s, "linear:"), ",")
	var l Linear
	for _, kv := range strings.Split(opts, ",") {
		if kv == "" {
			continue
		}
		k, v, _ := strings.Cut(kv, "=")
		x, err := strconv.ParseFloat(v, 64)
		switch {
		case k == "softmax" && err == nil && x > 0 && !math.IsInf(x, 0):
			l.Softmax = x
		case k == "eps" && err == nil && x >= 0 && x <= 1:
			l.Eps = x
		default:
			return nil, policyError("%q: %q must be softmax=T (T > 0) or eps=E (E in [0, 1])", s, kv)
		}
	}
	b, err := regfile.ReadAll(path, MaxFile)
	if err != nil {
		return nil, fileError(s, err)
	}
	sum := sha256.Sum256(b)
	l.Model = hex.EncodeToString(sum[:])
	if err := json.Unmarshal(b, &l.Weights); err != nil {
		return nil, policyError("%s: the model must be a JSON array of rows of weights: %v", path, err)
	}
	if len(l.Weights) == 0 {
		return nil, policyError("%s: the model has no rows", path)
	}
	for i, row := range l.Weights {
		if len(row) != len(l.Weights[0]) {
			return nil, policyError("%s: row %d has %d weights, row 1 %d", path, i+1, len(row), len(l.Weights[0]))
		}
	}
	return l, nil
}

// policyError is an *OptionError on the target policy.
func policyError(format string, a ...any) error {
	return &OptionError{Field: "policy", Reason: fmt.Sprintf(format, a...)}
}

// fileError is the *OptionError of reading the file of the target spec,
// err its cause.
func fileError(spec string, err error) error {
	reason := err.Error()
	var pe *os.PathError
	if !errors.Is(err, ErrNotRegular) && errors.As(err, &pe) {
		reason = pe.Err.Error()
	}
	return &OptionError{Field: "policy", Reason: fmt.Sprintf("%q: %s", spec, reason), Err: err}
}
