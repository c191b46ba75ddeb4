package mab

import (
	"context"
	"testing"

	"github.com/dpbandit/dpbandit/audit"
	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/privacy"
)

// TestSWUCBAuditReleases: the empirical audit of the private sliding
// window's releases (the counter's prefix sums, on the audit's hard
// neighbouring tables, 10 arms, 64 steps, window 32, rho = 0.1, 10 000
// runs per table) finds
// no eps above the claim, (0.1 + 2 sqrt(0.1 ln 1000), 10^-3); the same
// policy with its noise divided by 10 is caught (eps_lo above the claim).
func TestSWUCBAuditReleases(t *testing.T) {
	b, _ := privacy.NewZCDP(0.1)
	claim, err := privacy.ZCDPToApprox(0.1, 1e-3)
	if err != nil {
		t.Fatal(err)
	}
	drive, err := audit.BanditDrive(func(s bandit.Setting) (bandit.Policy, error) {
		return NewSWUCB(s, b, 32, 0.6, mechanism.CounterSmooth)
	}, audit.Hard(10, 64), 1)
	if err != nil {
		t.Fatal(err)
	}
	o := audit.Options{Runs: 10000, Delta: 1e-3, Confidence: 0.95, Workers: 2, Ordered: true}
	for _, c := range []struct {
		name   string
		wrap   func(noise.Noise) noise.Noise
		caught bool
	}{{"honest", nil, false}, {"noise / 10", func(n noise.Noise) noise.Noise { return audit.Scaled{Noise: n, Factor: 0.1} }, true}} {
		trial, err := audit.ReleaseTrial(drive, false, 7, c.wrap)
		if err != nil {
			t.Fatal(err)
		}
		res, err := audit.Empirical(context.Background(), trial, o)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: eps_lo %.3f, claimed %.3f", c.name, res.EpsLo, claim)
		if got := res.EpsLo > claim; got != c.caught {
			t.Errorf("%s: eps_lo %.3f against the claim %.3f", c.name, res.EpsLo, claim)
		}
	}
}
