// Package policy builds an experiment's policy from its definition: the
// catalogue's algorithm (package catalog) with the experiment's budget,
// horizon and reward range, behind the delayed-feedback rule its
// definition's rules version names (bandit.Delayed's slots, bandit.Pooled's
// pools, or contextual.Delayed), as one Decider the engine drives.
//
// The policy draws its noise and its random words from a Source: in the
// service, the engine's tape, which records them live and returns them in
// replay, so that Build on the same definition and the same tape rebuilds
// the same policy. The package holds no state and takes no lock: the
// engine calls a Decider under its experiment's lock.
package policy

import (
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/catalog"
	"github.com/dpbandit/dpbandit/contextual"
	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/service/define"
)

// Source is where a policy draws its noise (noise.Noise, and noise.Exact
// when the source has it: the policies look for it on the value given)
// and its random words (rand.Source): the engine's tape.
type Source interface {
	noise.Noise
	rand.Source
}

// Decider is an experiment's policy behind its delayed-feedback rule:
// bandit.Delayed, bandit.Pooled, or contextual.Delayed for contextual
// algorithms. The value Build returns also has the rule's optional
// interfaces (bandit.Snapshotter; bandit.Forgetter under the pooled
// rule), for bandit.Save and bandit.Restore.
type Decider interface {
	// Decide takes a decision; actions is the decision set of a
	// contextual experiment (nil otherwise).
	Decide(actions [][]float64) (bandit.Ticket, error)
	Reward(t bandit.Ticket, r float64) error
	Drop(t bandit.Ticket) error
	Pending() int64
	Plan() (bandit.Plan, int64)
	// Overdue returns the pending slots whose rewards are overdue
	// (bandit.Waits), to be resolved at once.
	Overdue() []bandit.Ticket
	// Seen counts a reward that is not learned among the delays.
	Seen(t bandit.Ticket)
	// Default gives an overdue slot the default reward.
	Default(t bandit.Ticket, r float64) error
	// Policy returns the wrapped policy, for its optional interfaces.
	Policy() any
}

// banditDecider adapts bandit.Delayed to Decider.
type banditDecider struct{ *bandit.Delayed }

func (p banditDecider) Decide([][]float64) (bandit.Ticket, error) { return p.Delayed.Decide(), nil }
func (p banditDecider) Policy() any                               { return p.Delayed.Policy() }

// pooledDecider adapts bandit.Pooled to Decider.
type pooledDecider struct{ *bandit.Pooled }

func (p pooledDecider) Decide([][]float64) (bandit.Ticket, error) { return p.Pooled.Decide() }
func (p pooledDecider) Policy() any                               { return p.Pooled.Policy() }

// contextualDecider adapts contextual.Delayed to Decider.
type contextualDecider struct{ *contextual.Delayed }

func (c contextualDecider) Policy() any { return c.Delayed.Policy() }

// PoolsOf returns the pools of a Decider under the pooled rule
// (define.RulesPooled: bandit.Pooled, which tracks what its releases
// cover), and whether it is under that rule.
func PoolsOf(d Decider) (*bandit.Pooled, bool) {
	p, ok := d.(pooledDecider)
	return p.Pooled, ok
}

// ReplaysPatience reports whether d's patience (bandit.Waits) changes
// what it decides or learns, so that it may count only the arrivals a
// replay of the stored operations repeats: bandit.Pooled's (it chooses
// the arms of decisions) and contextual.Delayed's under the late rule
// (it withdraws choices from V). A reward that comes after its event
// was settled is then not counted (Decider.Seen), for it is not stored.
func ReplaysPatience(d Decider) bool {
	c, ok := d.(contextualDecider)
	_, pooled := PoolsOf(d)
	return pooled || ok && c.Late()
}

// ErrNotConcurrent is wrapped by the refusal of a contextual algorithm
// that cannot decide while a reward is pending (it is not a
// contextual.Concurrent): the service's rewards come late.
var ErrNotConcurrent = errors.New("cannot decide while a reward is pending")

// Error is Build's refusal of an experiment's algorithm: Algorithm is
// the definition's algorithm spec, Err why (catalog.ErrUnknown or
// catalog.ErrSpec for a spec the catalogue does not parse;
// ErrNotConcurrent). Its text is Err's.
type Error struct {
	Algorithm string
	Err       error
}

func (e *Error) Error() string { return e.Err.Error() }

// Unwrap returns why the algorithm was refused.
func (e *Error) Unwrap() error { return e.Err }

// Build returns an experiment's policy, built from its definition (its
// algorithm, budget, arms or dimension, horizon, reward range and rules
// version) on src, behind the rule of its rules version: a history from
// before pooled rewards (define.RulesPooled) keeps bandit.Delayed's slots,
// one from before concurrent contextual decisions (define.RulesConcurrent)
// contextual.NewDelayedOne's single decision, one from before late
// contextual rewards (define.RulesLate) contextual.NewDelayed's overdue
// settlements; a new one has contextual.NewDelayedLate. An algorithm the catalogue
// does not parse, or a contextual one that cannot decide while a reward
// is pending, is refused with an *Error.
func Build(def define.Definition, src Source) (Decider, error) {
	a, err := catalog.Parse(def.Algorithm)
	if err != nil {
		return nil, &Error{Algorithm: def.Algorithm, Err: err}
	}
	b, err := def.Budget()
	if err != nil {
		return nil, err
	}
	bounds := mechanism.Bounds{Lo: def.RewardRange[0], Hi: def.RewardRange[1]}
	if a.Kind == catalog.Contextual {
		p, err := a.NewContextual(b, contextual.Setting{Dim: def.Dim, Horizon: def.Horizon, Bounds: bounds, Noise: src})
		if err != nil {
			return nil, err
		}
		return delayedContextual(def, a.Name, p)
	}
	p, err := a.NewPolicy(b, bandit.Setting{
		Arms: def.Arms, Horizon: def.Horizon, Bounds: bounds, Rand: rand.New(src), Noise: src, Actions: def.Actions,
	})
	if err != nil {
		return nil, err
	}
	if def.Rules < define.RulesPooled {
		return banditDecider{bandit.NewDelayed(p)}, nil // a history from before pooled rewards
	}
	pd := bandit.NewPooled(p)
	pd.TrackCovered() // data minimisation deletes what releases cover (the engine's covered)
	return pooledDecider{pd}, nil
}

// delayedContextual puts p, the contextual policy of algorithm name,
// behind contextual.Delayed, or refuses it if it cannot decide while a
// reward is pending.
func delayedContextual(def define.Definition, name string, p contextual.Policy) (Decider, error) {
	d, ok := p.(contextual.Concurrent)
	if !ok {
		return nil, &Error{Algorithm: def.Algorithm, Err: fmt.Errorf("%s %w", name, ErrNotConcurrent)}
	}
	if def.Rules < define.RulesConcurrent {
		return contextualDecider{contextual.NewDelayedOne(d)}, nil // a history from before concurrent decisions
	}
	if def.Rules < define.RulesLate {
		return contextualDecider{contextual.NewDelayed(d)}, nil // a history from before late contextual rewards
	}
	return contextualDecider{contextual.NewDelayedLate(d)}, nil
}

// Unreleased returns how many learned rewards no release of d covers
// yet, and whether d forgets released ones (bandit.Forgetter): the
// decider's count when it keeps rewards of its own (bandit.Pooled's
// pools), else its policy's; (0, false) when neither forgets.
func Unreleased(d Decider) (int64, bool) {
	f, ok := d.(bandit.Forgetter)
	if !ok {
		f, ok = d.Policy().(bandit.Forgetter)
	}
	if !ok {
		return 0, false
	}
	return f.Unreleased()
}
