package experiment

import (
	"context"
	"errors"
	"testing"

	"github.com/dpbandit/dpbandit/catalog"
)

// TestAuditReleases: the private algorithms whose decisions drown the
// differing datum (the tree learners, EXP2 and SCRiBLE behind their
// small learning rates, DP-PE behind its margin) are audited with power
// through their releases: each passes, and its variant with the noise
// divided by 10 fails, at 4000 trials per input (the variants' eps_lo
// was 2.2 to 5.8 against claims of 0.45 and 1.76, the sound ones' at
// most 0.61). Their decisions' audits could not fail.
func TestAuditReleases(t *testing.T) {
	c := DefaultAudit()
	c.Runs, c.Releases = 4000, true
	for _, algo := range []string{"dp-ftrl-experts", "dp-ftrl-ball", "dp-ftrl-cube", "dp-ftpl", "dp-exp2", "dp-scrible", "dp-pe"} {
		for _, brk := range []string{"", "scale"} {
			cc := c
			cc.Algo, cc.Break = algo, brk
			r, err := Audit(context.Background(), cc)
			if err != nil {
				t.Fatalf("%s %s: %v", algo, brk, err)
			}
			t.Logf("%s: eps_lo %.3f, claim %.3f, %s", r.Label, r.EpsLo, r.EpsClaimed, r.Verdict())
			if r.Passed != (brk == "") || !r.Expected || r.View != "releases" {
				t.Errorf("%s: eps_lo %v against %v: %s", r.Label, r.EpsLo, r.EpsClaimed, r.Verdict())
			}
		}
	}
}

// TestAuditReleasesRefused: the sparse policies' noisy values are not all
// releases (a sparse vector pass's answers), so their releases are not
// audited: a FieldError naming the flag, not a sound policy failing.
func TestAuditReleasesRefused(t *testing.T) {
	c := DefaultAudit()
	c.Runs, c.Releases, c.Algo = 100, true, "private-lasso"
	var fe *FieldError
	if _, err := Audit(context.Background(), c); !errors.As(err, &fe) || fe.Field != "releases" {
		t.Errorf("private-lasso's releases: %v", err)
	}
	for _, a := range catalog.All() {
		if a.Private && a.WeakAudit != "" && !ReleaseAudited(a) && a.Kind != catalog.Sparse {
			t.Errorf("%s: its decisions' audit has no power and its releases are not audited", a.Name)
		}
	}
}

// TestAuditRunsAt: an (eps, delta)-only algorithm is audited at the
// budget its preset runs it at (private-lasso: eps = 1, delta = 10^-5,
// the sparse preset's smallest), not at the (1.76, 10^-3) that the
// audit's rho = 0.1 implies, which no experiment gives it.
func TestAuditRunsAt(t *testing.T) {
	for _, a := range catalog.All() {
		eps, delta, ok := runsAt(a)
		switch {
		case a.Approx && !ok:
			t.Errorf("%s takes (eps, delta) budgets only, and no preset runs it", a.Name)
		case !a.Approx && ok:
			t.Errorf("%s: runsAt gives (%v, %v) to an algorithm that takes every budget", a.Name, eps, delta)
		}
	}
	a, _ := catalog.Lookup("private-lasso")
	if eps, delta, _ := runsAt(a); eps != 1 || delta != 1e-5 {
		t.Errorf("private-lasso runs at (%v, %v), want (1, 1e-5)", eps, delta)
	}
}
