package main

import (
	"strings"
	"testing"
)

// TestAuditReleasesFlag: --releases audits an algorithm's noisy releases
// (dp-pe's noise / 10 variant, which its decisions cannot show, fails,
// as expected: exit 0); it needs --algo, is refused with --all and for
// private-lasso, whose noisy values are not all releases (exit 2).
func TestAuditReleasesFlag(t *testing.T) {
	code, out, stderr := call("audit", "--algo", "dp-pe", "--releases", "--break", "scale", "--runs", "2000")
	if code != 0 || !strings.Contains(out, "dp-pe rho=0.1 [releases] [broken: scale]") || !strings.Contains(out, "FAIL") {
		t.Errorf("dp-pe's releases, noise / 10: exit %d, %s%s", code, out, stderr)
	}
	for _, args := range [][]string{
		{"audit", "--releases"},
		{"audit", "--all", "--releases"},
		{"audit", "--component", "noisy-max", "--releases"},
		{"audit", "--algo", "private-lasso", "--eps", "1", "--releases"},
	} {
		if code, _, stderr := call(args...); code != 2 || !strings.Contains(stderr, "releases") {
			t.Errorf("%v: exit %d, %s", args, code, stderr)
		}
	}
}
