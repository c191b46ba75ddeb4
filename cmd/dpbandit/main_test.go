package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func call(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestBadInputExits2WithOneLineNamingField(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "bad.yaml")
	os.WriteFile(cfg, []byte("env: bernoulli:0.5,0.4\nalgos: [ucb1]\nhorizonn: 10\n"), 0o644)
	base := []string{"run", "--env", "bernoulli:0.5,0.4", "--algo", "ucb1", "--out", dir}
	cases := []struct {
		args  []string
		field string
	}{
		{append(base, "--horizon", "-5"), "horizon"},
		{append(base, "--runs", "0"), "runs"},
		{append(base, "--algo", "nope"), "algo"},
		{append(base, "--rho", "abc"), "rho"},
		{append(base, "--rho", "-1", "--algo", "adac-ucb"), "rho"},
		{append(base, "--eps", "0.5", "--delta", "3", "--algo", "adac-ucb"), "delta"},
		{append(base, "--mode", "turbo"), "mode"},
		{[]string{"run", "--env", "bernoulli:0.5,1.5", "--algo", "ucb1"}, "env"},
		{[]string{"run", "--config", cfg}, "horizonn"},
		{[]string{"run", "--horizon", "x"}, "horizon"},
		{[]string{"run", "--bogus"}, "bogus"},
		{[]string{"reproduce", "--scale", "huge"}, "scale"},
		{[]string{"reproduce", "--preset", "nope", "--out", dir}, "preset"},
		{[]string{"frobnicate"}, "frobnicate"},
		{[]string{"bounds", "--rho", "-1"}, "rho"},
		{[]string{"bounds", "--eps", "x"}, "eps"},
		{[]string{"bounds", "--rho", "1", "--horizon", "1"}, "horizon"},
		{[]string{"bounds"}, "rho"},
		{[]string{"verify", "/nonexistent.json"}, "nonexistent"},
		{[]string{"verify", "--eps", "-1"}, "eps"},
		{[]string{"verify", "--alpha", "0.5"}, "alpha"},
		{[]string{"audit"}, "algo"},
		{[]string{"audit", "--algo", "ucb1"}, "algo"},
		{[]string{"audit", "--algo", "adac-ucb", "--rho", "-1"}, "budget"},
		{[]string{"audit", "--algo", "adac-ucb", "--runs", "2"}, "runs"},
		{[]string{"audit", "--algo", "adac-ucb", "--break", "x", "--runs", "10"}, "break"},
	}
	for _, c := range cases {
		code, _, stderr := call(c.args...)
		last := strings.TrimSpace(stderr)
		if i := strings.LastIndex(last, "\n"); i >= 0 && strings.HasPrefix(last[i+1:], "dpbandit:") {
			last = last[i+1:] // the flag package prints usage before the error line
		}
		if code != 2 || !strings.Contains(last, c.field) || strings.Contains(last, "\n") {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and one line naming %q", c.args, code, stderr, c.field)
		}
	}
}

func TestRunAndList(t *testing.T) {
	dir := t.TempDir()
	code, out, stderr := call("run", "--algo", "adac-ucb:beta=4", "--algo", "ucb-doubling:beta=4",
		"--env", "bernoulli:0.75,0.625,0.5,0.375,0.25", "--horizon", "20000", "--runs", "20",
		"--rho", "0.1,1", "--seed", "7", "--out", dir, "--quiet")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(out, "adac-ucb:beta=4 rho=0.1") || !strings.Contains(out, dir) {
		t.Errorf("stdout: %s", out)
	}
	for _, f := range []string{"summary.json", "regret.csv", "regret.svg", "regret.png"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	code, out, _ = call("list")
	if code != 0 || !strings.Contains(out, "adac-ucb") || !strings.Contains(out, "finite-armed") {
		t.Errorf("list: %d %s", code, out)
	}
	if code, out, _ := call("help"); code != 0 || !strings.Contains(out, "reproduce") {
		t.Errorf("help: %d %s", code, out)
	}
	code, out, stderr = call("bounds", "--rho", "0.5", "--eps", "1")
	if code != 0 || !strings.Contains(out, "Thm 10") || strings.Count(out, "7736.7") != 2 {
		t.Errorf("bounds: exit %d, %s%s", code, out, stderr)
	}
}

func TestVerifyAndAudit(t *testing.T) {
	code, out, stderr := call("verify")
	if code != 0 || !strings.Contains(out, "view         yes") || !strings.Contains(out, "table        no") || !strings.Contains(out, "0.9840") {
		t.Errorf("verify: exit %d\n%s%s", code, out, stderr)
	}
	code, out, _ = call("verify", "--eps", "0.95", "--delta", "0.17", "--json")
	var v map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &v) != nil {
		t.Fatalf("verify --json: %d %s", code, out)
	}
	def := func(k string) map[string]any { m, _ := v[k].(map[string]any); return m }
	for _, k := range []string{"view", "table", "interactive"} {
		if _, ok := def(k)["delta_at_eps"]; !ok {
			t.Errorf("verify --json lacks %s.delta_at_eps", k)
		}
		if _, ok := def(k)["min_eps_at_delta"]; !ok {
			t.Errorf("verify --json lacks %s.min_eps_at_delta", k)
		}
	}
	if def("view")["satisfied"] != true || def("table")["satisfied"] != false {
		t.Errorf("verdicts %v", v)
	}
	code, out, stderr = call("audit", "--algo", "adac-ucb", "--rho", "0.1", "--delta", "1e-3", "--runs", "20000", "--json")
	var a map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &a) != nil {
		t.Fatalf("audit --json: %d %s %s", code, out, stderr)
	}
	for _, k := range []string{"eps_lo", "eps_claimed", "delta", "runs", "confidence"} {
		if _, ok := a[k]; !ok {
			t.Errorf("audit --json lacks %q", k)
		}
	}
}

func TestConfigFileWithFlagOverride(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.yaml")
	os.WriteFile(cfg, []byte("env: bernoulli:0.6,0.4\nalgos: [ucb1, adac-ucb]\nhorizon: 5000\nruns: 5\nrho: [1]\n"), 0o644)
	code, out, stderr := call("run", "--config", cfg, "--runs", "3", "--out", dir, "--quiet")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "summary.json"))
	if !strings.Contains(string(b), `"runs": 3`) || !strings.Contains(out, "adac-ucb rho=1") {
		t.Errorf("flag did not override config: %s", b)
	}
}

func TestInterruptExits130(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errb bytes.Buffer
	code := run(ctx, []string{"run", "--env", "bernoulli:0.5,0.4", "--algo", "ucb1", "--runs", "4", "--out", t.TempDir()}, &out, &errb)
	if code != 130 || !strings.Contains(errb.String(), "interrupted") {
		t.Errorf("cancelled run: exit %d, %s", code, errb.String())
	}
}
