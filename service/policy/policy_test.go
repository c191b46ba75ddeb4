package policy

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/catalog"
	"github.com/dpbandit/dpbandit/contextual"
	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/service/define"
)

// source is a seeded Source: lattice noise and random words from one
// ChaCha8 stream.
type source struct {
	noise.Secure
	words *rand.ChaCha8
}

func (s source) Uint64() uint64 { return s.words.Uint64() }

func newSource() source {
	c := rand.NewChaCha8([32]byte{1})
	return source{Secure: noise.Secure{Rand: c}, words: c}
}

// spec returns the spec of an experiment of algorithm alg (arms, dim
// and actions as its kind needs) at privacy p.
func spec(alg string, kind catalog.Kind, p define.Privacy) define.Spec {
	sp := define.Spec{ID: "x", Algorithm: alg, RewardRange: [2]float64{0, 1}, Privacy: p, Horizon: 1000}
	switch kind {
	case catalog.Contextual:
		sp.Arms, sp.Dim = 3, 2
	case catalog.Linear:
		sp.Actions = [][]float64{{1, 0}, {0, 1}, {0.6, 0.8}}
	default:
		sp.Arms = 3
	}
	return sp
}

// definition returns the definition of a new experiment of algorithm alg
// at rho = 1 (spec), under rules.
func definition(t *testing.T, alg string, rules int) define.Definition {
	t.Helper()
	a, err := catalog.Lookup(alg)
	if err != nil {
		t.Fatal(err)
	}
	rho := 1.0
	def, err := define.New("t", spec(alg, a.Kind, define.Privacy{Rho: &rho}), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	def.Rules = rules
	return def
}

// Every algorithm of the catalogue that the service accepts builds a
// policy with snapshots, so that no experiment's restart replays its
// whole history; the ones it refuses are the non-private, the locally
// private and the other kinds.
func TestEveryServedAlgorithmHasSnapshots(t *testing.T) {
	rho, eps := 1.0, 1.0
	served := 0
	for _, a := range catalog.All() {
		for _, p := range []define.Privacy{{Rho: &rho}, {Eps: &eps}} {
			def, err := define.New("t", spec(a.Name, a.Kind, p), 0, 0)
			if err != nil {
				continue
			}
			d, err := Build(def, newSource())
			if err != nil { // refused by create too (a Gaussian algorithm at pure eps)
				continue
			}
			served++
			if _, err := bandit.Save(d.Policy()); err != nil {
				t.Errorf("%s (%v): %v", a.Name, p, err)
			}
		}
	}
	if served < 7 {
		t.Fatalf("%d algorithm and budget pairs served, want at least the 7 algorithms of docs/service.md", served)
	}
}

// TestBuildEachFamily: every family of algorithm builds behind the rule
// of its definition's rules version, takes a decision, learns its reward,
// and can be saved (bandit.Save on the Decider, as the engine's snapshots
// do): finite-armed and linear experiments under the pooled rule from
// define.RulesPooled on (Pooled reports it), under bandit.Delayed's slots
// before; contextual ones behind contextual.Delayed, one decision at a
// time before define.RulesConcurrent, with late rewards from
// define.RulesLate on.
func TestBuildEachFamily(t *testing.T) {
	actions := [][]float64{{1, 0}, {0, 1}, {0.6, 0.8}}
	for _, c := range []struct {
		alg        string
		rules      int
		pooled     bool
		contextual bool
		// one: the contextual rule before concurrent decisions
		// (contextual.NewDelayedOne), whose plans are numbered from 0
		// before the first decision (contextual.NewDelayed's from 1)
		one bool
		// late: the rule of late contextual rewards (define.RulesLate),
		// whose patience replays (ReplaysPatience)
		late bool
	}{
		{"adap-ucb", define.CurrentRules, true, false, false, false},
		{"adap-ucb", define.RulesPooled - 1, false, false, false, false},
		{"dp-pe", define.CurrentRules, true, false, false, false},
		{"dp-pe", define.RulesPooled - 1, false, false, false, false},
		{"adac-oful", define.CurrentRules, false, true, false, true},
		{"adac-oful", define.RulesLate - 1, false, true, false, false},
		{"adac-oful", define.RulesConcurrent - 1, false, true, true, false},
	} {
		def := definition(t, c.alg, c.rules)
		d, err := Build(def, newSource())
		if err != nil {
			t.Fatalf("%s (rules %d): %v", c.alg, c.rules, err)
		}
		if _, pooled := PoolsOf(d); pooled != c.pooled {
			t.Errorf("%s (rules %d): pooled %v, want %v", c.alg, c.rules, pooled, c.pooled)
		}
		if late := ReplaysPatience(d) && !c.pooled; late != c.late {
			t.Errorf("%s (rules %d): the late rule %v, want %v", c.alg, c.rules, late, c.late)
		}
		if _, ok := d.Policy().(contextual.Concurrent); ok != c.contextual {
			t.Errorf("%s (rules %d): policy %T, contextual.Concurrent %v, want %v", c.alg, c.rules, d.Policy(), ok, c.contextual)
		}
		var set [][]float64
		if c.contextual {
			set = actions
			if _, v := d.Plan(); (v == 0) != c.one {
				t.Errorf("%s (rules %d): first plan %d, want the single-decision rule %v", c.alg, c.rules, v, c.one)
			}
		}
		tk, err := d.Decide(set)
		if err != nil {
			t.Fatalf("%s (rules %d): decide: %v", c.alg, c.rules, err)
		}
		if tk.Arm < 0 || tk.Arm >= 3 {
			t.Fatalf("%s (rules %d): arm %d of 3", c.alg, c.rules, tk.Arm)
		}
		if err := d.Reward(tk, 0.5); err != nil {
			t.Fatalf("%s (rules %d): reward: %v", c.alg, c.rules, err)
		}
		if _, err := bandit.Save(d); err != nil {
			t.Errorf("%s (rules %d): %v", c.alg, c.rules, err)
		}
	}
}

// notConcurrent is a contextual policy that cannot decide while a reward
// is pending (no contextual.Concurrent).
type notConcurrent struct{ contextual.Policy }

// TestBuildRefusesNonConcurrentContextual: a contextual algorithm that
// cannot decide while a reward is pending is refused, with an *Error
// naming the definition's algorithm and wrapping ErrNotConcurrent. Its
// text is the one the service answered before the package (a setting's
// message quotes it).
func TestBuildRefusesNonConcurrentContextual(t *testing.T) {
	def := definition(t, "adac-oful", define.CurrentRules)
	d, err := delayedContextual(def, "adac-oful", notConcurrent{})
	if d != nil || !errors.Is(err, ErrNotConcurrent) {
		t.Fatalf("got %v, %v; want ErrNotConcurrent", d, err)
	}
	var e *Error
	if !errors.As(err, &e) || e.Algorithm != "adac-oful" {
		t.Fatalf("got %#v, want an *Error of adac-oful", err)
	}
	if want := "adac-oful cannot decide while a reward is pending"; err.Error() != want {
		t.Errorf("text %q, want %q", err.Error(), want)
	}
}

// TestBuildRefusesBadAlgorithm: an algorithm the catalogue does not know,
// or a spec it does not parse, is refused with an *Error naming it and
// wrapping the catalogue's reason.
func TestBuildRefusesBadAlgorithm(t *testing.T) {
	for _, c := range []struct {
		alg  string
		want error
	}{
		{"no-such-algorithm", catalog.ErrUnknown},
		{"adap-ucb:no-such-parameter=1", catalog.ErrSpec},
		{"adap-ucb:nokey", catalog.ErrSpec},
	} {
		def := definition(t, "adap-ucb", define.CurrentRules)
		def.Algorithm = c.alg
		d, err := Build(def, newSource())
		if d != nil || !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, %v; want %v", c.alg, d, err, c.want)
			continue
		}
		var e *Error
		if !errors.As(err, &e) || e.Algorithm != c.alg {
			t.Errorf("%s: got %#v, want an *Error naming it", c.alg, err)
		}
	}
}

// forgetter is a Decider (or a policy) that forgets, with n unreleased
// rewards.
type forgetter struct {
	Decider
	n   int64
	pol any
}

func (f forgetter) Unreleased() (int64, bool) { return f.n, true }
func (f forgetter) Policy() any               { return f.pol }

// plain is a Decider that does not forget, over pol.
type plain struct {
	Decider
	pol any
}

func (p plain) Policy() any { return p.pol }

// TestUnreleased: the decider's count when it forgets itself (its pools
// hold rewards its policy has not seen), else its policy's; nothing,
// and no forgetting, when neither forgets.
func TestUnreleased(t *testing.T) {
	for _, c := range []struct {
		d       Decider
		n       int64
		forgets bool
	}{
		{forgetter{n: 5, pol: forgetter{n: 2}}, 5, true},
		{plain{pol: forgetter{n: 2}}, 2, true},
		{plain{pol: struct{}{}}, 0, false},
	} {
		if n, ok := Unreleased(c.d); n != c.n || ok != c.forgets {
			t.Errorf("%T over %T: %d, %v; want %d, %v", c.d, c.d.Policy(), n, ok, c.n, c.forgets)
		}
	}
}
