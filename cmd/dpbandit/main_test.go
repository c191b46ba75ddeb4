package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/dpbandit/dpbandit/env"
	"github.com/dpbandit/dpbandit/experiment"
)

func call(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

// TestBadInputExits2WithOneLineNamingField: hostile and mistaken input
// gets one line on stderr naming the problem (the fragment), exit 2, and
// no output files, before any computation.
func TestBadInputExits2WithOneLineNamingField(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "bad.yaml")
	os.WriteFile(cfg, []byte("env: bernoulli:0.5,0.4\nalgos: [ucb1]\nhorizonn: 10\n"), 0o644)
	envTwice := filepath.Join(dir, "env-twice.yaml")
	os.WriteFile(envTwice, []byte("env: bernoulli:0.5,0.4\nenv: bernoulli:0.6,0.4\nalgos: [ucb1]\n"), 0o644)
	two := filepath.Join(dir, "two.yaml")
	os.WriteFile(two, []byte("env: bernoulli:0.5,0.4\nalgos: [ucb1]\n---\nruns: 3\n"), 0o644)
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o644)
	ragged := filepath.Join(dir, "ragged.csv")
	os.WriteFile(ragged, []byte("a,b,y\n1,2,x\n3,y\n"), 0o644)
	nan := filepath.Join(dir, "nan.csv")
	os.WriteFile(nan, []byte("a,b,y\n1,2,x\n3,NaN,y\n"), 0o644)
	yaml := func(name, text string) string {
		path := filepath.Join(dir, name)
		os.WriteFile(path, []byte("env: bernoulli:0.5,0.4\nalgos: [ucb1]\n"+text), 0o644)
		return path
	}
	alias := yaml("alias.yaml", "horizon: 100\nruns: *h\n")
	quoted := yaml("quoted.yaml", "horizon: \"100\"\n")
	mem := yaml("mem.yaml", "max_memory: 0\n")
	bigMem := yaml("big-mem.yaml", "runs: 1000000\ncheckpoints: 10000\nmax_memory: 100\n")
	badAlgo := filepath.Join(dir, "bad-algo.yaml")
	os.WriteFile(badAlgo, []byte("env: bernoulli:0.5,0.4\nalgos: [nope]\n"), 0o644)
	shardDir := filepath.Join(dir, "zero-shard")
	os.MkdirAll(shardDir, 0o755)
	os.Symlink("/dev/zero", filepath.Join(shardDir, "partial.json"))
	base := []string{"run", "--env", "bernoulli:0.5,0.4", "--algo", "ucb1", "--out", dir}
	run0 := func(args ...string) []string {
		return append([]string{"run", "--out", filepath.Join(dir, "none")}, args...)
	}
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
		{[]string{"run", "--config", envTwice}, "env: given twice"},
		{run0("--env", "bernoulli:0.5,0.4", "--algo", "adac-ucb", "--rho", "0.1,0.1"), "rho: 0.1 is listed twice"},
		{[]string{"reproduce", "--preset", "fig4-left,fig4-left", "--out", filepath.Join(dir, "rp")}, "preset: fig4-left is listed twice"},
		{run0("--env", "bernoulli:0.5,0.4", "--algo", "ucb1", "--shards", "3"), "shards"},
		{run0("--env", "bernoulli:0.5,0.4", "--algo", "adac-ucb", "--rho", "1", "--delay", "10,default=5"), "delay"},
		{run0("--env", "gaussian:0.5,0.4:sigma=1:sigma=2", "--algo", "ucb1"), "given twice"},
		{run0("--env", "experts-iid:n=5,n=6", "--algo", "hedge"), "given twice"},
		{[]string{"serve", "--addr", "127.0.0.1:0", "--db", filepath.Join(dir, "s.db"), "--tick", "0"}, "tick"},
		{[]string{"serve", "--addr", "127.0.0.1:0", "--db", filepath.Join(dir, "s.db"), "--tick", "-1s"}, "tick"},
		{[]string{"serve", "--addr", "127.0.0.1:0", "--db", filepath.Join(dir, "s.db"), "--lease-ttl", "10s"}, "lease-ttl"},
		{[]string{"serve", "--addr", "127.0.0.1:0", "--db", filepath.Join(dir, "s.db"), "--unit-budget", "9e-10"}, "unit-budget"},
		{[]string{"bounds", "--eps", "x"}, "eps"},
		{[]string{"bounds", "--rho", "1", "--horizon", "1"}, "horizon"},
		{[]string{"bounds"}, "rho"},
		{[]string{"verify", "/nonexistent.json"}, "nonexistent"},
		{[]string{"verify", "--eps", "-1"}, "eps: must be"},
		{[]string{"verify", "--alpha", "0.5"}, "alpha: must be"},
		{[]string{"verify", "--delta", "2"}, "delta: must lie"},
		{[]string{"audit"}, "algo"},
		{[]string{"audit", "--algo", "ucb1"}, "algo"},
		{[]string{"audit", "--algo", "adac-ucb", "--rho", "-1"}, "rho: must be positive"},
		{[]string{"audit", "--algo", "adac-ucb", "--runs", "2"}, "runs"},
		{[]string{"audit", "--algo", "adac-ucb", "--break", "x", "--runs", "10"}, "break"},
		{[]string{"audit", "--algo", "adac-ucb", "--runs", "1e9"}, `runs: needs a whole number, got "1e9"`},
		{[]string{"audit", "--algo", "adac-ucb", "--seed", "-1"}, `seed: needs a whole number from 0 to 2^64 - 1, got "-1"`},
		{run0("--config", alias), "config: line 4: the alias *h names no anchor"},
		{run0("--config", quoted), `horizon: needs a whole number, got the quoted string "100": write it without quotes`},
		{run0("--config", mem), "max_memory: must be a positive number"},
		{run0("--config", bigMem), "max_memory: the experiment needs about"},
		{run0("--config", mem, "--max-memory", "0"), "max-memory: must be a positive number"},
		{run0("--config", bigMem, "--max-memory", "100"), "max-memory: the experiment needs about"},
		{run0("--env", "bernoulli:0.5,0.4", "--algo", "ucb1", "--max-memory", "x"), `max-memory: needs a whole number, got "x"`},
		{run0("--config", badAlgo), "algos: unknown algorithm"},
		{run0("--config", mem, "--config", badAlgo), "config: given twice"},
		{run0("--env", "bernoulli:0.5,0.4", "--algo", "ucb1", "--name", strings.Repeat("n", 100000)), "name: 100000 characters long; at most 200"},
		{[]string{"bounds", "--env", "csv:FILE", "--rho", "1"}, "env: the bounds are for finite-armed environments (bernoulli, gaussian), not csv"},
		{[]string{"bounds", "--rho", "1", "--horizon", "9223372036854775807"}, "horizon: must lie in [2, 2^50]"},
		{[]string{"merge", file, "--out", filepath.Join(dir, "m")}, file + ": not a directory"},
		{[]string{"merge", shardDir, "--out", filepath.Join(dir, "m")}, "partial.json is a device, not a regular file"},
		{[]string{"audit", "--algo", "adac-ucb", "--runs", "100000000"}, "10^7"},
		{[]string{"audit", "--all", "--out", file}, "out"},
		{[]string{"audit", "--all", "--algo", "adac-ucb"}, "algo: --all audits every"},
		{[]string{"audit", "--all", "--component", "noisy-max"}, "component: --all audits every"},
		{[]string{"audit", "--all", "--break", "scale"}, "break: --all audits every"},
		{[]string{"audit", "--algo", "adac-ucb", "--out", dir}, "out: applies only with --all"},
		{[]string{"audit", "--algo", "adac-ucb", "--edge-runs", "100"}, "edge-runs: applies only with --all"},
		{run0("--env", "contextual-gauss:k=10,d=3", "--algo", "oful", "--mode", "iid"), "mode: applies to finite-armed and linear bandits"},
		{run0("--env", "experts-iid:n=5", "--algo", "hedge", "--mode", "step"), "mode: applies to finite-armed and linear bandits"},
		{run0("--env", "bernoulli:0.5,0.4", "--algo", "ucb1", "--algo", "kl-ucb", "--reference", "ucb1"), "reference: no algorithm of the experiment is private"},
		{[]string{"audit", "--component", "nope"}, "component: unknown component"},
		{[]string{"audit", "--component", "noisy-max", "--algo", "adac-ucb"}, "not both"},
		{[]string{"audit", "--component", "wishart-node", "--break", "redraw"}, "break"},
		{run0("--env", "bernoulli:0.5,0.4", "--algo", "ucb1", "--out", ""), "out: is empty"},
		{run0("--env", "bernoulli:0.5,0.4", "--algo", "ucb1", "--out", "/proc/x"), "cannot create /proc/x"},
		{run0("--env", "bernoulli:0.5,0.4", "--algo", "ucb1", "--out", filepath.Join(file, "sub")), "not a directory"},
		{[]string{"reproduce", "--out", file}, "out"},
		{run0("--env", "bernoulli:0.5,0.4", "--algo", "ucb1", "--horizon", "1e6"), `horizon: needs a whole number, got "1e6"`},
		{[]string{"audit", "--algo", "adac-ucb", "--rho", "0"}, "rho: must be positive"},
		{[]string{"audit", "--algo", "adac-ucb", "--workers", "-3"}, "workers: must be non-negative"},
		{run0("--env", "linear-sphere:k=10,k=5", "--algo", "gope"), `key "k" is given twice`},
		{run0("--config", "/dev/zero"), "/dev/zero is a device, not a regular file"},
		{[]string{"reproduce", "--preset", "", "--out", dir}, "preset: needs a comma list"},
		{[]string{"reproduce", "--preset", "fig5,,fig4-left", "--out", dir}, "preset: needs a comma list"},
		{run0("--env", "bernoulli:0.5,0.4", "--algo", "ucb1", "--horizon", "9223372036854775808"), "horizon"},
		{run0("--env", "bernoulli:0.5,0.4", "--algo", "ucb1", "--algo", "adac-ucb", "--rho", "1", "--reference", "kl-ucb"), "reference: kl-ucb is not among"},
		{run0("--env", "bernoulli:0.5,0.4", "--algo", "ucb1", "--rho", "1"), "no algorithm of the experiment is private"},
		{run0("--env", "bernoulli:0.5,0.4", "--algo", "adac-ucb:beta=1:beta=2", "--rho", "1"), "given twice"},
		{run0("--env", "bernoulli:0.5,0.4", "--algo", "adac-ucb:beta=0", "--rho", "1"), "beta must lie in (0, 100]"},
		{run0("--env", "contextual-gauss:k=10,d=3", "--algo", "adac-oful:c=0", "--rho", "1"), "c must lie in (0, 1e+06]"},
		{run0("--config", two), "second"},
		{run0("--env", "nope:1", "--algo", "ucb1"), "sparse-gauss, dataset, csv, experts-iid"},
		{run0("--env", "csv:/nonexistent.csv,lo=0,hi=1", "--algo", "oful"), "/nonexistent.csv: no such file"},
		{run0("--env", "csv:"+ragged+",lo=0,hi=1", "--algo", "oful"), "ragged.csv:3: ragged row"},
		{run0("--env", "csv:"+nan+",lo=0,hi=1", "--algo", "oful"), `nan.csv:3: column b: "NaN" is not a finite number`},
		{run0("--env", "csv:"+file+",lo=0,hi=1", "--algo", "oful"), "empty file"},
		{run0("--env", "csv:"+ragged, "--algo", "oful"), "lo=L,hi=H"},
		{run0("--env", "dataset:iris,label=x", "--algo", "oful"), "unknown key"},
		{run0("--env", "dataset:iris", "--algo", "ucb1"), "ucb1"},
		// These panicked in the memory estimate, before the family check.
		{run0("--env", "dataset:iris", "--algo", "robust-ae", "--eps", "1"), "robust-ae is an algorithm for robust batched linear bandits under local DP; it does not run on dataset environments"},
		{run0("--env", "bernoulli:0.5,0.4", "--algo", "batched-ae", "--eps", "1"), "batched-ae is an algorithm for"},
		{run0("--env", "bernoulli:0.5,0.4", "--algo", "private-lasso", "--eps", "1", "--delta", "1e-6"), "it does not run on bernoulli"},
		{run0("--env", "gaussian:0.1,0.2:lo=-1e308:hi=1e308", "--algo", "ucb1"), "too wide"},
		{run0("--env", "linear-sphere:k=100000,d=100000", "--algo", "gope"), "GiB"},
		{run0("--env", "linear-sphere:k=2,d=100000", "--algo", "gope"), "max-memory"},
		{run0("--env", "contextual-gauss:k=1000,d=1000", "--algo", "oful", "--max-memory", "10"), "max-memory"},
		{run0("--env", "bernoulli:0.5,0.4", "--algo", "ucb1", "--runs", "1000000", "--checkpoints", "10000"), "MiB of results and plots: 1 entries x 1000000 runs x 4991 checkpoints"},
		{[]string{"bounds", "--env", "gaussian:0.1,0.2:lo=-1"}, "[-1, 1]"},
		{[]string{"list", "extra"}, "list takes no arguments"},
		{run0("--env", "bernoulli:0.5,0.4", "--algo", "ucb1", "--shard", "3/3"), "shard: needs 0 <= I < N"},
		{run0("--env", "bernoulli:0.5,0.4", "--algo", "ucb1", "--shard", "env"), "JOB_COMPLETION_INDEX"},
		{[]string{"merge", "--out", filepath.Join(dir, "m")}, "directories of the shards"},
		{[]string{"merge", dir, "--out", filepath.Join(dir, "m")}, "partial.json"},
	}
	for _, c := range cases {
		code, _, stderr := call(c.args...)
		last := strings.TrimSpace(stderr)
		if code != 2 || !strings.Contains(last, c.field) || strings.Contains(last, "\n") || strings.Contains(last, "{") {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and one line naming %q", c.args, code, stderr, c.field)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "none")); err == nil {
		t.Error("a refused run created its output directory")
	}
}

// TestHelpAndExitCodes: -h of every command prints help with exit 0
// (verify's names FILE); an audit whose verdict is unexpected exits 3.
func TestHelpAndExitCodes(t *testing.T) {
	for _, cmd := range []string{"run", "reproduce", "list", "bounds", "verify", "audit"} {
		code, out, _ := call(cmd, "-h")
		if code != 0 || !strings.Contains(out, "usage: dpbandit "+cmd) {
			t.Errorf("%s -h: exit %d, %q", cmd, code, out)
		}
	}
	if _, out, _ := call("verify", "-h"); !strings.Contains(out, "FILE") || strings.Contains(out, "(default: Proposition") {
		t.Errorf("verify -h: %s", out)
	}
	// bounds has no default budget: its help says one is needed, and its
	// table says which bound is of the instance and which minimax.
	if _, out, _ := call("bounds", "-h"); !strings.Contains(out, "--rho or --eps is required") {
		t.Errorf("bounds -h: %s", out)
	}
	if _, out, _ := call("bounds", "--rho", "1"); !strings.Contains(out, "Thm 17 minimax lower") || !strings.Contains(out, "Thm 10 instance upper") || !strings.Contains(out, "Thm 11 minimax upper") {
		t.Errorf("bounds' columns: %s", out)
	}
	// The redraw variant with too few trials escapes the audit: that
	// verdict is not the expected one.
	code, out, stderr := call("audit", "--algo", "adac-ucb", "--break", "redraw", "--runs", "200")
	if code != 3 || !strings.Contains(stderr, "unexpected verdict") || !strings.Contains(stderr, "more --runs") {
		t.Errorf("unexpected audit verdict: exit %d\n%s%s", code, out, stderr)
	}
	// The same with --json (it exited 0; found by an auditor's trial),
	// and the JSON says the verdict is unexpected.
	code, out, stderr = call("audit", "--algo", "adac-ucb", "--break", "redraw", "--runs", "200", "--json")
	var r struct{ Passed, Expected bool }
	if code != 3 || json.Unmarshal([]byte(out), &r) != nil || !r.Passed || r.Expected {
		t.Errorf("unexpected audit verdict, --json: exit %d\n%s%s", code, out, stderr)
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
	// The shipped data sets are named in list and in the README (they
	// were in neither: issue #50).
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range env.Shipped() {
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(d.Name) + `\s+` + strconv.Itoa(d.Rows) + `\s`).MatchString(out) {
			t.Errorf("list does not show the data set %s and its %d rows", d.Name, d.Rows)
		}
		if !strings.Contains(string(readme), "`"+d.Name+"`") {
			t.Errorf("README.md does not name the shipped data set `%s`", d.Name)
		}
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
	res := filepath.Join(dir, "res")
	code, out, stderr := call("run", "--config", cfg, "--runs", "3", "--out", res, "--quiet")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	b, _ := os.ReadFile(filepath.Join(res, "summary.json"))
	if !strings.Contains(string(b), `"runs": 3`) || !strings.Contains(out, "adac-ucb rho=1") {
		t.Errorf("flag did not override config: %s", b)
	}
}

// TestHorizonOne: every documented value works, T = 1 included (its
// log-log bounds plot has no positive regret and is left out).
func TestHorizonOne(t *testing.T) {
	dir := t.TempDir()
	code, out, stderr := call("run", "--algo", "adac-ucb", "--algo", "ucb-doubling", "--env", "bernoulli:0.6,0.4",
		"--rho", "1", "--horizon", "1", "--runs", "3", "--out", dir, "--quiet")
	if code != 0 || !strings.Contains(out, "results in") {
		t.Fatalf("T=1: exit %d\n%s%s", code, out, stderr)
	}
	for _, f := range []string{"summary.json", "regret.csv", "regret.png"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// TestShardAndMerge: `run --shard I/3` three times into one --out and
// `merge` of that directory give the unsharded summary.json (bar
// wall_seconds); a missing shard exits 2.
func TestShardAndMerge(t *testing.T) {
	dir := t.TempDir()
	args := []string{"run", "--algo", "adac-ucb", "--algo", "ucb-doubling", "--env", "bernoulli:0.7,0.5",
		"--rho", "1", "--horizon", "10000", "--runs", "7", "--quiet"}
	shared := filepath.Join(dir, "shards")
	for i := range 3 {
		if code, out, stderr := call(append(args, "--out", shared, "--shard", strconv.Itoa(i)+"/3")...); code != 0 || !strings.Contains(out, "SHARD") {
			t.Fatalf("shard %d: exit %d\n%s%s", i, code, out, stderr)
		}
	}
	if code, _, stderr := call(append(args, "--out", filepath.Join(dir, "full"))...); code != 0 {
		t.Fatal(stderr)
	}
	if code, out, stderr := call("merge", shared, "--out", filepath.Join(dir, "m")); code != 0 || !strings.Contains(out, "merged 3 shards") || !strings.Contains(out, "regret at T=") {
		t.Fatalf("merge: exit %d, %s%s", code, out, stderr)
	}
	strip := func(p string) string {
		b, _ := os.ReadFile(p)
		var keep []string
		for _, l := range strings.Split(string(b), "\n") {
			if !strings.Contains(l, "wall_seconds") {
				keep = append(keep, l)
			}
		}
		return strings.Join(keep, "\n")
	}
	if a, b := strip(filepath.Join(dir, "full", "summary.json")), strip(filepath.Join(dir, "m", "summary.json")); a == "" || a != b {
		t.Errorf("merged summary differs:\n%s\n%s", a, b)
	}
	if code, _, stderr := call("merge", filepath.Join(shared, "shard-0-of-3"), filepath.Join(shared, "shard-2-of-3"), "--out", filepath.Join(dir, "m2")); code != 2 || !strings.Contains(stderr, "missing shard 1/3") {
		t.Errorf("missing shard: exit %d, %s", code, stderr)
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

// TestSameValidationFromFlagsAndYAML: a value is checked the same way,
// with the same one-line message, whether it comes from a flag or from a
// config file; a list key takes a single value in both.
func TestSameValidationFromFlagsAndYAML(t *testing.T) {
	dir := t.TempDir()
	base := "env: bernoulli:0.5,0.4\nalgos: [ucb1]\n"
	for _, c := range []struct{ key, value string }{
		{"horizon", "100.5"}, {"runs", "1e3"}, {"seed", "-1"}, {"workers", "two"}, {"rho", "abc"}, {"quiet", "maybe"},
	} {
		cfg := filepath.Join(dir, c.key+".yaml")
		os.WriteFile(cfg, []byte(base+c.key+": "+c.value+"\n"), 0o644)
		codeY, _, errY := call("run", "--config", cfg, "--out", filepath.Join(dir, "none"))
		codeF, _, errF := call("run", "--env", "bernoulli:0.5,0.4", "--algo", "ucb1", "--"+c.key+"="+c.value, "--out", filepath.Join(dir, "none"))
		if codeY != 2 || codeF != 2 || errY != errF || !strings.HasPrefix(errY, "dpbandit: "+c.key+": ") {
			t.Errorf("%s = %s: YAML exit %d %q, flag exit %d %q", c.key, c.value, codeY, errY, codeF, errF)
		}
	}
	cfg := filepath.Join(dir, "scalars.yaml")
	os.WriteFile(cfg, []byte("env: bernoulli:0.5,0.4\nalgos: adac-ucb\nrho: 0.5\nhorizon: 100\nruns: 2\nquiet: true\n"), 0o644)
	if code, out, errb := call("run", "--config", cfg, "--out", filepath.Join(dir, "ok")); code != 0 || !strings.Contains(out, "adac-ucb rho=0.5") {
		t.Fatalf("single values for list keys: exit %d %s %s", code, out, errb)
	}
	// A list with spaces is read item by item: the spaced known presets
	// pass, and the unknown one is named without its space (checked
	// before anything runs; TestInterruptedReproductionKeepsFinishedPresets
	// runs presets).
	if code, _, errb := call("reproduce", "--preset", "fig4-left, fig4-middle, nope", "--out", filepath.Join(dir, "r"), "--quiet"); code != 2 || !strings.HasPrefix(errb, `dpbandit: preset: unknown preset "nope" `) {
		t.Fatalf("a preset list with a space: exit %d %s", code, errb)
	}
	if code, out, _ := call("--version"); code != 0 || !strings.HasPrefix(out, "dpbandit ") {
		t.Fatalf("--version: exit %d %q", code, out)
	}
}

// TestMergeRefusesTamperedShards: a shard whose data were edited is
// refused (its data hash), and so is one edited with the hash redone,
// when its regrets are impossible (above T times the largest gap) or its
// entries are not the configuration's.
func TestMergeRefusesTamperedShards(t *testing.T) {
	dir := t.TempDir()
	shared := filepath.Join(dir, "shards")
	for i := range 2 {
		if code, _, stderr := call("run", "--algo", "ucb1", "--env", "bernoulli:0.7,0.5", "--horizon", "1000", "--runs", "4",
			"--quiet", "--out", shared, "--shard", strconv.Itoa(i)+"/2"); code != 0 {
			t.Fatal(stderr)
		}
	}
	part := filepath.Join(shared, "shard-0-of-2", "partial.json")
	b, _ := os.ReadFile(part)
	var p map[string]any
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	rec := p["entries"].([]any)[0].(map[string]any)["records"].([]any)[0].(map[string]any)
	reg := rec["regret"].([]any)
	for i := range reg {
		reg[i] = reg[i].(float64) * 1000
	}
	tampered, _ := json.Marshal(p)
	os.WriteFile(part, tampered, 0o644)
	if code, _, stderr := call("merge", shared, "--out", filepath.Join(dir, "m")); code != 2 || !strings.Contains(stderr, "data do not match their hash") {
		t.Fatalf("edited data: exit %d, %s", code, stderr)
	}
	// The same edit with the hash redone: the regrets are impossible.
	var pt experiment.Partial
	json.Unmarshal(tampered, &pt)
	pt.DataHash = pt.Hash()
	again, _ := json.Marshal(pt)
	os.WriteFile(part, again, 0o644)
	if code, _, stderr := call("merge", shared, "--out", filepath.Join(dir, "m")); code != 2 || !strings.Contains(stderr, "impossible") {
		t.Fatalf("edited data, hash redone: exit %d, %s", code, stderr)
	}
	// The second shard's label changed, the hash redone: the entries do
	// not agree.
	os.WriteFile(part, b, 0o644)
	second := filepath.Join(shared, "shard-1-of-2", "partial.json")
	b2, _ := os.ReadFile(second)
	pt = experiment.Partial{}
	json.Unmarshal(b2, &pt)
	pt.Entries[0].Label = "ucb2"
	pt.DataHash = pt.Hash()
	again, _ = json.Marshal(pt)
	os.WriteFile(second, again, 0o644)
	if code, _, stderr := call("merge", shared, "--out", filepath.Join(dir, "m")); code != 2 || !strings.Contains(stderr, `entry 0 is "ucb2"`) {
		t.Fatalf("edited label, hash redone: exit %d, %s", code, stderr)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("a refused merge left files beside the shards: %v", entries)
	}
}

// TestOutputFolders: a result is written whole into place; an earlier
// result is replaced only with --force, and then no file of it remains
// (a stale plot); a folder of other files is never replaced.
func TestOutputFolders(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "a", "b")
	priv := []string{"run", "--env", "bernoulli:0.6,0.4", "--algo", "adac-ucb", "--algo", "ucb-doubling", "--rho", "0.1,1",
		"--horizon", "1000", "--runs", "2", "--quiet", "--out", out}
	if code, _, stderr := call(priv...); code != 0 {
		t.Fatal(stderr)
	}
	if _, err := os.Stat(filepath.Join(out, "pop.png")); err != nil {
		t.Fatal("the private run wrote no pop.png")
	}
	plain := []string{"run", "--env", "bernoulli:0.6,0.4", "--algo", "ucb1", "--horizon", "1000", "--runs", "2", "--quiet", "--out", out}
	if code, _, stderr := call(plain...); code != 2 || !strings.Contains(stderr, "--force") {
		t.Fatalf("a second run into a result: exit %d, %s", code, stderr)
	}
	if code, _, stderr := call(append(plain, "--force")...); code != 0 {
		t.Fatal(stderr)
	}
	if _, err := os.Stat(filepath.Join(out, "pop.png")); err == nil {
		t.Error("a stale pop.png of the earlier result is left")
	}
	if entries, _ := os.ReadDir(filepath.Join(dir, "a")); len(entries) != 1 {
		t.Errorf("temporary folders left beside the result: %v", entries)
	}
	mine := filepath.Join(dir, "mine")
	os.MkdirAll(mine, 0o755)
	os.WriteFile(filepath.Join(mine, "notes.txt"), []byte("keep"), 0o644)
	os.WriteFile(filepath.Join(mine, "index.html"), []byte("<html>"), 0o644) // looks like a result
	if code, _, stderr := call("run", "--env", "bernoulli:0.6,0.4", "--algo", "ucb1", "--runs", "2", "--quiet", "--out", mine, "--force"); code != 2 || !strings.Contains(stderr, "not a dpbandit result") {
		t.Fatalf("--force over a folder of other files: exit %d, %s", code, stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(mine, "notes.txt")); string(b) != "keep" {
		t.Fatal("a folder of other files was touched")
	}
	os.WriteFile(filepath.Join(out, "notes.txt"), []byte("mine"), 0o644) // a result someone added to
	if code, _, stderr := call(append(plain, "--force")...); code != 2 || !strings.Contains(stderr, "notes.txt") {
		t.Fatalf("--force over a result with a file added: exit %d, %s", code, stderr)
	}
	link := filepath.Join(dir, "link")
	os.Symlink(mine, link)
	if code, _, stderr := call("run", "--env", "bernoulli:0.6,0.4", "--algo", "ucb1", "--runs", "2", "--quiet", "--out", link); code != 2 || !strings.Contains(stderr, "symbolic link") {
		t.Fatalf("--out a symlink: exit %d, %s", code, stderr)
	}
	if code, _, stderr := call("run", "--env", "bernoulli:0.6,0.4", "--algo", "ucb1", "--runs", "2", "--quiet", "--out", "."); code != 2 || !strings.Contains(stderr, "current folder") {
		t.Fatalf("--out .: exit %d, %s", code, stderr)
	}
	if code, _, _ := call("run", "--env", "bernoulli:0.6,0.4", "--algo", "nope", "--out", filepath.Join(dir, "x", "y")); code != 2 {
		t.Fatal("a bad algorithm accepted")
	}
	if _, err := os.Stat(filepath.Join(dir, "x")); err == nil {
		t.Error("a refused run left a folder")
	}
}

// TestAuditMessages: an (eps, delta) algorithm given --eps is audited at
// the claim's delta; a broken variant that passes an audit without power
// says why; an interrupted audit says that nothing was written.
func TestAuditMessages(t *testing.T) {
	if code, out, stderr := call("audit", "--algo", "private-lasso", "--eps", "1", "--delta", "1e-3", "--runs", "20"); code != 0 || !strings.Contains(out, "eps=1,delta=0.001") || !strings.Contains(out, "pass (no power)") {
		t.Errorf("private-lasso at --eps 1 (a pass of an audit without power says so): exit %d, %s%s", code, out, stderr)
	}
	if code, _, stderr := call("audit", "--algo", "dp-pe", "--break", "scale", "--runs", "20"); code != 3 || !strings.Contains(stderr, "no power for dp-pe") {
		t.Errorf("dp-pe broken: exit %d, %s", code, stderr)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errb bytes.Buffer
	if code := run(ctx, []string{"audit", "--algo", "adac-ucb", "--runs", "20"}, &out, &errb); code != 130 || !strings.Contains(errb.String(), "nothing was written") {
		t.Errorf("interrupted audit: exit %d, %s", code, errb.String())
	}
}

// TestLoadingAnswers: while the experiments load, the service answers
// /healthz 200 (alive) and everything else, /readyz included, 503 with a
// JSON error and Retry-After.
func TestLoadingAnswers(t *testing.T) {
	for path, want := range map[string]int{"/healthz": 200, "/readyz": 503, "/v1/experiments": 503} {
		rec := httptest.NewRecorder()
		loading{}.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		var body map[string]any
		if rec.Code != want || json.Unmarshal(rec.Body.Bytes(), &body) != nil || (want == 503 && rec.Header().Get("Retry-After") == "") {
			t.Errorf("%s: %d %q, want %d", path, rec.Code, rec.Body, want)
		}
	}
}

// TestDiffIntervalIsStudents: the paired difference's "± 95%" uses
// Student's t with runs - 1 degrees of freedom, as the regret's
// interval does (at 3 runs 4.30 standard errors, not 1.96).
func TestDiffIntervalIsStudents(t *testing.T) {
	dir := t.TempDir()
	code, stdout, stderr := call("run", "--algo", "adac-ucb", "--algo", "ucb-doubling", "--rho", "0.01", "--env", "bernoulli:0.7,0.5,0.3",
		"--horizon", "10000", "--runs", "3", "--quiet", "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "summary.json"))
	var s struct {
		Results []struct {
			DiffMean *float64 `json:"diff_mean"`
			DiffSE   *float64 `json:"diff_se"`
		}
	}
	if err := json.Unmarshal(b, &s); err != nil || s.Results[0].DiffSE == nil {
		t.Fatalf("summary: %v %s", err, b)
	}
	const t2 = 4.302652729911275 // the 97.5% quantile of Student's t with 2 degrees of freedom
	want := fmt.Sprintf("%.4g ± %.2g", *s.Results[0].DiffMean, t2**s.Results[0].DiffSE)
	if !strings.Contains(stdout, want) {
		t.Errorf("the table has no %q:\n%s", want, stdout)
	}
}

// TestPairingNotes: a private entry paired by default with a
// counterpart of other parameters, or with another algorithm, says so
// under the table (its difference is not the price of privacy alone);
// --reference names an entry however it is spelled.
func TestPairingNotes(t *testing.T) {
	base := []string{"run", "--env", "bernoulli:0.7,0.5,0.3", "--horizon", "2000", "--runs", "4", "--quiet", "--rho", "1"}
	for _, c := range []struct {
		algos []string
		want  string
	}{
		{[]string{"--algo", "adac-ucb:beta=2", "--algo", "ucb-doubling"}, "other parameters"},
		{[]string{"--algo", "adac-ucb", "--algo", "ucb1"}, "not its counterpart"},
		{[]string{"--algo", "adac-ucb", "--algo", "ucb-doubling:beta=1"}, ""},
	} {
		code, stdout, stderr := call(append(append(slices.Clone(base), "--out", t.TempDir()), c.algos...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", c.algos, code, stderr)
		}
		if got := strings.Contains(stdout, "paired with"); got != (c.want != "") || !strings.Contains(stdout, c.want) {
			t.Errorf("%v: want a note %q:\n%s", c.algos, c.want, stdout)
		}
	}
	code, _, stderr := call(append(append(slices.Clone(base), "--out", t.TempDir(), "--reference", "ucb-doubling"), "--algo", "adac-ucb", "--algo", "ucb-doubling:beta=1")...)
	if code != 0 {
		t.Errorf("--reference ucb-doubling with ucb-doubling:beta=1: exit %d: %s", code, stderr)
	}
}

// TestMaxMemoryIsTheRuntimeLimit: while a run computes, --max-memory is
// the Go runtime's soft memory limit (the estimate counts live data, the
// collector would otherwise let the heap reach twice that), and the
// previous limit is back after it, also after a run.
func TestMaxMemoryIsTheRuntimeLimit(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	restore := limitMemory(333)
	if during := debug.SetMemoryLimit(-1); during != 333<<20 {
		t.Errorf("limit %d, want 333 MiB", during)
	}
	restore()
	// A limit past int64's range is no limit, not a wrapped-around one
	// (17592186044417 MiB set 1 MiB; found by a reviewer).
	restore = limitMemory(17592186044417)
	if during := debug.SetMemoryLimit(-1); during != math.MaxInt64 {
		t.Errorf("limit %d for 2^44 + 1 MiB, want none", during)
	}
	restore()
	code, _, stderr := call("run", "--env", "bernoulli:0.5,0.4", "--algo", "ucb1", "--horizon", "1000", "--runs", "2",
		"--max-memory", "333", "--out", t.TempDir(), "--force", "--quiet")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if after := debug.SetMemoryLimit(-1); after != before {
		t.Errorf("limit after the run %d, want %d back", after, before)
	}
}

// TestCommandsListedAndHelped: every command of the table answers -h with
// its usage (exit 0), and is named by `dpbandit help` and by the message
// for an unknown command (exit 2), so that the table, the help and the
// message cannot drift apart.
func TestCommandsListedAndHelped(t *testing.T) {
	code, _, unknown := call("nonsense")
	if code != exitUsage {
		t.Fatalf("an unknown command: exit %d, want %d", code, exitUsage)
	}
	_, help, _ := call("help")
	for _, c := range commands() {
		if !strings.Contains(unknown, " "+c.name+",") && !strings.Contains(unknown, " "+c.name+";") {
			t.Errorf("the message for an unknown command does not name %s: %s", c.name, unknown)
		}
		if !strings.Contains(help, "  dpbandit "+c.name+" ") && !strings.Contains(help, "  dpbandit "+c.name+"\n") {
			t.Errorf("dpbandit help does not name %s", c.name)
		}
		if code, out, _ := call(c.name, "-h"); code != exitOK || len(strings.Fields(out)) < 3 || strings.Fields(out)[2] != c.name {
			t.Errorf("%s -h: exit %d, %q", c.name, code, out)
		}
	}
	for _, m := range regexp.MustCompile(`(?m)^  dpbandit ([a-z]+)`).FindAllStringSubmatch(help, -1) {
		if !slices.ContainsFunc(commands(), func(c command) bool { return c.name == m[1] }) {
			t.Errorf("dpbandit help names %s, which is no command", m[1])
		}
	}
}
