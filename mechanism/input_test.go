package mechanism_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/contextual"
	"github.com/dpbandit/dpbandit/mab"
	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/olo"
	"github.com/dpbandit/dpbandit/privacy"
)

// TestInputErrorsAreTyped: the mistakes a program makes with the
// library's policies (found by a stranger's trial) are errors that
// errors.Is matches to ErrInput, not plain strings: bad settings and
// parameters, NaN rewards, feedback for another plan, Update before Next
// or Choose, actions of another dimension or outside the unit ball; a
// budget or sensitivity that package privacy refuses is its
// *privacy.ParamError.
func TestInputErrorsAreTyped(t *testing.T) {
	z, _ := privacy.NewZCDP(1)
	unit := mechanism.Unit
	set := func(k int) bandit.Setting {
		return bandit.Setting{Arms: k, Horizon: 100, Bounds: unit, Rand: noise.Stream(1), Noise: noise.NewFast(1)}
	}
	errOf := func(_ any, err error) error { return err }
	ada, err := mab.NewAdaCUCB(set(3), z, 1)
	if err != nil {
		t.Fatal(err)
	}
	ucb, _ := mab.NewUCB1(set(3))
	box := mechanism.Bounds{Lo: -1, Hi: 1}
	oful, err := contextual.New(contextual.Setting{Dim: 2, Horizon: 100, Bounds: box, Noise: noise.NewFast(1)}, contextual.Config{Budget: z, C: 1, Lambda: 1, Delta: 0.05, S: 1})
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]error{
		"1 arm":                 errOf(mab.NewUCB1(set(1))),
		"beta 0":                errOf(mab.NewAdaCUCB(set(3), z, 0)),
		"beta NaN":              errOf(mab.NewAdaCUCB(set(3), z, math.NaN())),
		"beta Inf":              errOf(mab.NewDPSE(set(3), z, math.Inf(1))),
		"bounds inverted":       errOf(mab.NewUCB1(bandit.Setting{Arms: 3, Horizon: 10, Bounds: mechanism.Bounds{Lo: 1, Hi: 0}})),
		"nil noise":             errOf(mab.NewAdaCUCB(bandit.Setting{Arms: 3, Horizon: 10, Bounds: unit}, z, 1)),
		"NaN reward":            ada.Update(bandit.Feedback{Arm: ada.Next().Arm, Count: 1, Sum: math.NaN()}),
		"count 0":               ucb.Update(bandit.Feedback{Arm: ucb.Next().Arm, Count: 0}),
		"another arm":           ada.Update(bandit.Feedback{Arm: (ada.Next().Arm + 1) % 3, Count: 1, Sum: 1}),
		"arm 3 of 3":            ucb.Update(bandit.Feedback{Arm: 3, Count: 1, Sum: 1}),
		"Update before Choose":  oful.Update(1),
		"dimension 3 of 2":      errOf(oful.Choose([][]float64{{0.1, 0.1, 0.1}})),
		"outside the unit ball": errOf(oful.Choose([][]float64{{1, 1}})),
		"no horizon":            errOf(contextual.New(contextual.Setting{Dim: 2, Bounds: box, Noise: noise.NewFast(1)}, contextual.Config{Budget: z, C: 1, Lambda: 1, Delta: 0.05, S: 1})),
		"0 experts":             errOf(olo.NewFTRLExperts(olo.Setting{N: 0, T: 10, Noise: noise.NewFast(1)}, z)),
		"Gaussian, nil noise":   errOf(mechanism.NewGaussian(z, 1, nil)),
	}
	for name, err := range cases {
		if !errors.Is(err, mechanism.ErrInput) {
			t.Errorf("%s: %v (%T) does not wrap ErrInput", name, err, err)
		}
	}
	// Each names what was refused.
	pure, _ := privacy.NewPure(1)
	fresh, _ := mab.NewAdaCUCB(set(3), z, 1)
	_, split := privacy.Split(z, 0)
	for want, err := range map[string]error{
		"reward bound r must be positive": errOf(mab.NewNAS(pure, 0.1, 0.1, 0, false, noise.NewFast(1))),
		"call Next first":                 fresh.Update(bandit.Feedback{Arm: 0, Count: 1, Sum: 1}),
		"at least 1 part, got 0":          split,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v, want %q", err, want)
		}
	}
	_, e1 := mab.NewAdaCUCB(set(3), privacy.Budget{Notion: privacy.ZCDP, Rho: -1}, 1)
	_, e2 := mechanism.NewGaussian(z, math.NaN(), noise.NewFast(1))
	for i, err := range []error{e1, e2} {
		if !errors.As(err, new(*privacy.ParamError)) {
			t.Errorf("calibration %d: %v (%T), want a *privacy.ParamError", i, err, err)
		}
	}
}
