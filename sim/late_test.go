package sim

import (
	"context"
	"reflect"
	"testing"

	"github.com/dpbandit/dpbandit/contextual"
	"github.com/dpbandit/dpbandit/env"
	"github.com/dpbandit/dpbandit/privacy"
)

// adacOnGauss is AdaC-OFUL (rho = 1, C = 1) on contextual-gauss:k=10,d=3
// for steps.
func adacOnGauss(t *testing.T, steps Steps) (ContextualConfig, []ContextualEntry) {
	t.Helper()
	c, err := env.ParseContextual("contextual-gauss:k=10,d=3", 1)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := privacy.NewZCDP(1)
	e := []ContextualEntry{{Name: "adac-oful", New: func(s contextual.Setting) (contextual.Policy, error) {
		return contextual.New(s, contextual.Config{Lambda: 0.1, Delta: 0.001, S: 1, C: 1, Budget: b})
	}}}
	return ContextualConfig{Env: c, Steps: steps}, e
}

// TestContextualLateRule: ",late=1" selects for contextual bandits the
// service's rule since rules 5 (contextual.NewDelayedLate): with rewards
// at once it is the plain run; with a geometric delay and 5% of rewards
// missing, the missing ones are settled at their window's end without
// error (and the run differs from the default rule's, which settles
// them once overdue). The default stays the old rule
// (TestReproduceQuick's pinned digests).
func TestContextualLateRule(t *testing.T) {
	d, err := ParseDelay("geom:20,miss=0.05,default=0,window=300,late=1")
	if err != nil || !d.Late || d.String() != "geom:20,miss=0.05,default=0,window=300,late=1" {
		t.Fatalf("%+v %v: %q", d, err, d.String())
	}
	for _, bad := range []string{"0,late=2", "0,late=1,late=1", "0,late=x"} {
		if _, err := ParseDelay(bad); err == nil {
			t.Errorf("ParseDelay(%q) accepted", bad)
		}
	}
	cfg, e := adacOnGauss(t, Steps{Horizon: 3000, Runs: 2, Seed: 2})
	plain, err := RunContextual(context.Background(), cfg, e)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Checkpoints, cfg.Delay = nil, Delay{Late: true}
	zero, err := RunContextual(context.Background(), cfg, e)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(plain.Records, zero.Records) {
		t.Fatal("the late rule with rewards at once must reproduce the plain run")
	}
	cfg.Checkpoints, cfg.Delay = nil, Delay{Mean: 20, Miss: 0.05, Window: 300}
	old, err := RunContextual(context.Background(), cfg, e)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Checkpoints, cfg.Delay.Late = nil, true
	late, err := RunContextual(context.Background(), cfg, e)
	if err != nil {
		t.Fatal(err)
	}
	if reflect.DeepEqual(old.Records, late.Records) {
		t.Error("the late rule runs as the default one")
	}
}
