package catalog

import (
	"errors"
	"strings"
	"testing"

	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/mab"
	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/privacy"
)

// TestMisspeltParameterIsRefused: an entry that reads a parameter its
// algorithm does not declare (here "bta" for "beta") fails to build with
// an error naming it, where a map read gave 0 and built AdaC-UCB with
// beta = 0 (issue 51).
func TestMisspeltParameterIsRefused(t *testing.T) {
	a := Algorithm{Name: "typo", Kind: Finite, Params: params{"beta": doublingBeta},
		Policy: func(p Args, b privacy.Budget, s bandit.Setting) (bandit.Policy, error) {
			return mab.NewAdaCUCB(s, b, p.F("bta"))
		}}
	s := Spec{Algorithm: a, Values: map[string]float64{"beta": 1}}
	st := bandit.Setting{Arms: 2, Bounds: mechanism.Unit, Rand: noise.Stream(1), Noise: noise.NewFast(1)}
	_, err := s.NewPolicy(privacy.None(), st)
	if !errors.Is(err, ErrUndeclared) || !strings.Contains(err.Error(), `"bta"`) {
		t.Fatalf("an undeclared parameter read: %v, want ErrUndeclared naming it", err)
	}
}

// TestEveryEntryBuilds: every catalogue entry, at its defaults, builds
// without reading an undeclared parameter (the entries' bounds, audit
// tables and broken variants are exercised by experiment's tests).
func TestEveryEntryBuilds(t *testing.T) {
	for _, a := range All() {
		s, err := Parse(a.Name)
		if err != nil {
			t.Fatal(err)
		}
		b := privacy.None()
		if a.Private {
			b, _ = privacy.NewZCDP(1)
			if a.Approx || a.Local {
				continue // built at their own budgets by experiment's matrix
			}
		}
		st := bandit.Setting{Arms: 3, Horizon: 100, Bounds: mechanism.Unit, Rand: noise.Stream(1), Noise: noise.NewFast(1),
			Actions: [][]float64{{1, 0}, {0, 1}, {0.6, 0.6}}}
		var errs []error
		if a.Policy != nil {
			_, err = s.NewPolicy(b, st)
			errs = append(errs, err)
		}
		for _, err := range errs {
			if errors.Is(err, ErrUndeclared) {
				t.Errorf("%s: %v", a.Name, err)
			}
		}
	}
}
