package define

import (
	"errors"
	"testing"
)

// personalizerDef is a Personalizer experiment's definition at rho = 1.
func personalizerDef(t *testing.T) Definition {
	t.Helper()
	rho := 1.0
	d, err := New("t", Spec{ID: "pz", Surface: SurfacePersonalizer, Privacy: Privacy{Rho: &rho}}, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestSettingsRefused: each refusal is a *SettingError naming the
// field; a learner that is not private, not contextual, or costs the
// ledger otherwise is refused; at most maxSettings changes.
func TestSettingsRefused(t *testing.T) {
	d := personalizerDef(t)
	for _, c := range []struct {
		field string
		s     Setting
	}{
		{"arguments", Setting{Algorithm: "oful"}},
		{"arguments", Setting{Algorithm: "adac-ucb"}},
		{"arguments", Setting{Algorithm: "nothing"}},
		{"explorationPercentage", Setting{Exploration: 1.5}},
		{"explorationPercentage", Setting{Mode: ModeApprentice, Exploration: 0.6}},
		{"defaultReward", Setting{DefaultReward: new(-0.5)}},
		{"rewardWaitTime", Setting{RewardWindowSeconds: -1}},
		{"learningMode", Setting{Mode: "Offline"}},
	} {
		_, err := d.With(c.s)
		var se *SettingError
		if !errors.As(err, &se) || se.Field != c.field || !errors.Is(err, ErrSetting) {
			t.Errorf("%+v: %v, want a refusal of %s", c.s, err, c.field)
		}
	}
	for i := range maxSettings {
		var err error
		if d, err = d.With(Setting{From: int64(i + 1), Exploration: 0.3}); err != nil {
			t.Fatalf("change %d: %v", i, err)
		}
	}
	var se *SettingError
	if _, err := d.With(Setting{From: maxSettings + 1}); !errors.As(err, &se) || se.Field != "settings" {
		t.Fatalf("change %d: %v", maxSettings+1, err)
	}
}

// TestEffective: a setting made at operation From applies to the
// operations after it only; a reset moves LastReset; a new learner's
// name is the client's.
func TestEffective(t *testing.T) {
	d := personalizerDef(t)
	d, _ = d.With(Setting{From: 5, At: 50, Exploration: 0.4})
	d, _ = d.With(Setting{From: 9, At: 90, Algorithm: "adac-oful:lambda=10", PolicyName: "mine", Reset: true})
	for _, c := range []struct {
		next  int64
		e     float64
		alg   string
		reset int64
		name  string
	}{{5, 0.2, "adac-oful-scaled:lambda=30:beta=0.3", 0, ""}, {6, 0.4, "adac-oful-scaled:lambda=30:beta=0.3", 0, ""}, {9, 0.4, "adac-oful-scaled:lambda=30:beta=0.3", 0, ""}, {10, 0.4, "adac-oful:lambda=10", 9, "mine"}} {
		eff, cur := d.Effective(c.next)
		if eff.Exploration != c.e || eff.Algorithm != c.alg || cur.LastReset != c.reset || cur.PolicyName != c.name {
			t.Errorf("at %d: exploration %v, %s, reset %d, name %q; want %+v", c.next, eff.Exploration, eff.Algorithm, cur.LastReset, cur.PolicyName, c)
		}
	}
	if d.Exploration != 0.2 || d.Algorithm != "adac-oful-scaled:lambda=30:beta=0.3" {
		t.Fatalf("the spec changed: %+v", d.Spec)
	}
}
