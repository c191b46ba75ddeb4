package experiment

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/dpbandit/dpbandit/audit"
	"github.com/dpbandit/dpbandit/catalog"
	"github.com/dpbandit/dpbandit/privacy"
)

// TestAuditReleases: the private algorithms whose decisions drown the
// differing datum (the tree learners, EXP2 and SCRiBLE behind their
// small learning rates, DP-PE behind its margin) are audited with power
// through their releases: each passes, and its variant with the noise
// divided by 10 fails, at 4000 trials per input (the variants' eps_lo
// was 2.2 to 5.8 against claims of 0.45 and 1.76, the sound ones' at
// most 0.61), at rho = 0.1 and, with Laplace nodes, at eps = 1. Their decisions' audits could not fail.
func TestAuditReleases(t *testing.T) {
	t.Parallel()
	c := DefaultAudit()
	c.Runs, c.Releases = 4000, true
	pure := c
	pure.Budget, _ = privacy.NewPure(1) // Laplace nodes: eps_lo 1.86 for noise / 10 against 1
	// The quick suite audits one algorithm of each mechanism: the tree
	// with Gaussian and with Laplace nodes, FTPL's perturbation, EXP2's
	// and DP-PE's releases, and the smooth counter of dp-sw-ucb (on its
	// 64-step tables: eps_lo 0.38 sound, 6.14 for noise / 10, 2 s);
	// -tags heavy audits them all.
	algos := []string{"dp-ftrl-experts", "dp-ftpl", "dp-exp2", "dp-pe", "eps=1 dp-ftrl-experts", "dp-sw-ucb"}
	if heavy {
		algos = append(algos, "dp-ftrl-ball", "dp-ftrl-cube", "dp-scrible")
	}
	for _, algo := range algos {
		base := c
		if rest, ok := strings.CutPrefix(algo, "eps=1 "); ok {
			base, algo = pure, rest
		}
		for _, brk := range []string{"", "scale"} {
			r := auditOf(t, base, algo, brk)
			if r.Passed != (brk == "") || !r.Expected || r.View != "releases" {
				t.Errorf("%s: eps_lo %v against %v: %s", r.Label, r.EpsLo, r.EpsClaimed, r.Verdict())
			}
		}
	}
}

// auditOf runs the audit c of algorithm algo, broken as brk ("": sound),
// and logs its verdict.
func auditOf(t *testing.T, c AuditConfig, algo, brk string) *AuditResult {
	t.Helper()
	c.Algo, c.Break = algo, brk
	r, err := Audit(context.Background(), c)
	if err != nil {
		t.Fatalf("%s %s: %v", algo, brk, err)
	}
	t.Logf("%s: eps_lo %.3f, claim %.3f, %s", r.Label, r.EpsLo, r.EpsClaimed, r.Verdict())
	return r
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

// TestMarkPower: a sound row of AuditAll that proved nothing is expected
// only when its blindness is documented, when nothing released holds the
// pair, or when another audit of its point has power; else it is
// unexpected (dpbandit audit exits 3), and it always says why.
func TestMarkPower(t *testing.T) {
	sound := func(algo, view string, eps float64) AuditResult {
		return AuditResult{Algorithm: algo, View: view, EpsLo: eps, Passed: true, Expected: true}
	}
	broken := func(algo, view string, passed bool) AuditResult {
		return AuditResult{Algorithm: algo, View: view, Broken: "scale", Passed: passed, Expected: !passed}
	}
	dec := func(p string) auditKey { return auditKey{p, false} }
	rel := func(p string) auditKey { return auditKey{p, true} }
	rs := []AuditResult{
		sound("adac-oful", "decisions", 0), sound("adac-oful", "releases", 0.6), // 0, 1: covered by its releases
		sound("adac-oful", "decisions", 0),                                    // 2: its releases hold nothing (silent)
		sound("adac-oful", "decisions", 0), sound("adac-oful", "releases", 0), // 3, 4: nothing has power
		sound("dp-pe", "decisions", 0),                                                      // 5: documented
		sound("sparse-vector", "component", 0), broken("sparse-vector", "component", false), // 6, 7: its noise/10 fails
		sound("noisy-max", "component", 0), broken("noisy-max", "component", true), // 8, 9: its noise/10 passes
	}
	keys := []auditKey{dec("a"), rel("a"), dec("b"), dec("c"), rel("c"), dec("dp-pe"),
		dec("component sparse-vector"), dec("component sparse-vector"), dec("component noisy-max"), dec("component noisy-max")}
	for i := range rs {
		if rs[i].Broken == "" {
			rs[i].NoPower = sawNothing(AuditConfig{}, audit.Result{EpsLo: rs[i].EpsLo, Runs: 10}, rs[i].View)
		}
	}
	rs[5].NoPower = "documented"
	markPower(rs, keys, map[string]bool{"b": true})
	for i, want := range []bool{true, true, true, false, false, true, true, true, false, false} {
		if rs[i].Expected != want {
			t.Errorf("row %d (%s, %s, eps_lo %v): expected %v, want %v (%s)", i, rs[i].Algorithm, rs[i].View, rs[i].EpsLo, rs[i].Expected, want, rs[i].NoPower)
		}
		if rs[i].Broken == "" && rs[i].EpsLo == 0 && (rs[i].NoPower == "" || rs[i].Verdict() == "pass") {
			t.Errorf("row %d: eps_lo = 0 reads %q", i, rs[i].Verdict())
		}
	}
}
