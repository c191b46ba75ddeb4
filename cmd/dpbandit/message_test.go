package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// libraryPackages returns the names of the module's top-level packages
// (the folders beside cmd holding Go files), read from the tree so that
// a new package is covered without a list to keep.
func libraryPackages(t *testing.T) []string {
	t.Helper()
	dirs, err := os.ReadDir("../..")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range dirs {
		if !d.IsDir() || d.Name() == "cmd" {
			continue
		}
		if gos, _ := filepath.Glob(filepath.Join("../..", d.Name(), "*.go")); len(gos) > 0 {
			names = append(names, d.Name())
		}
	}
	return names
}

// TestMessagesNameFieldWithoutPackages: a bad policy name, a misspelt
// algorithm parameter and bad budgets are each one line "dpbandit:
// FIELD: message", exit 2, and no library package's name ("sparse: ",
// "privacy: ") stands anywhere in the message: the library's errors carry
// their message without it, nothing is stripped from text.
func TestMessagesNameFieldWithoutPackages(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "log.jsonl")
	os.WriteFile(log, []byte(`{"action":0,"reward":1,"pscore":0.5}`+"\n"+`{"action":1,"reward":0,"pscore":0.5}`+"\n"), 0o644)
	run := func(args ...string) []string {
		return append([]string{"run", "--horizon", "10", "--runs", "1", "--out", filepath.Join(dir, "out")}, args...)
	}
	var pkgs []string
	for _, p := range libraryPackages(t) {
		pkgs = append(pkgs, regexp.QuoteMeta(p))
	}
	prefix := regexp.MustCompile(`\b(` + strings.Join(pkgs, "|") + `): `)
	for _, c := range []struct {
		args  []string
		field string
	}{
		{[]string{"evaluate", log, "--policy", "nope"}, "policy"},
		{run("--env", "bernoulli:0.5,0.4", "--algo", "ucb1:bta=4"), "algo"},
		{run("--env", "bernoulli:0.5,0.4", "--algo", "adac-ucb", "--rho", "-1"), "rho"},
		{run("--env", "bernoulli:0.5,0.4", "--algo", "dp-se", "--eps", "1e-320"), "algo"},
		{run("--env", "sparse-gauss", "--algo", "private-lasso", "--rho", "1"), "algo"},
		{run("--env", "bernoulli:0.5,1.5", "--algo", "ucb1"), "env"},
	} {
		code, _, stderr := call(c.args...)
		line := strings.TrimSpace(stderr)
		msg, ok := strings.CutPrefix(line, "dpbandit: "+c.field+": ")
		if code != 2 || !ok || strings.Contains(line, "\n") {
			t.Errorf("%v: exit %d, %q; want exit 2 and one line naming %s", c.args, code, line, c.field)
			continue
		}
		if p := prefix.FindString(msg); p != "" {
			t.Errorf("%v: %q names the package %q", c.args, line, p)
		}
	}
}
