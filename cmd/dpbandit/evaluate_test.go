package main

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/dpbandit/dpbandit/ope"
)

// dpbandit evaluate on a uniformly logged log of three arms: the
// estimates of "always arm 0" (true value 0.5) cover it, replayed OFUL
// learns past the best fixed arm, and a private release is drawn once:
// the second invocation prints the recorded value.
func TestEvaluateCommand(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "log.jsonl")
	r := rand.New(rand.NewPCG(1, 2))
	var b strings.Builder
	for range 6000 {
		x := 2*r.Float64() - 1
		a := r.IntN(3)
		mu := []float64{0.5 + 0.3*x, 0.5 - 0.3*x, 0.4}[a]
		rew := 0
		if r.Float64() < mu {
			rew = 1
		}
		fmt.Fprintf(&b, `{"context":[%v],"action":%d,"reward":%d,"pscore":%v,"action_prob":[%v,%v,%v]}`+"\n", x, a, rew, 1/3., 1/3., 1/3., 1/3.)
	}
	os.WriteFile(log, []byte(b.String()), 0o644)
	var out [2]evaluation
	for i := range out {
		code, stdout, stderr := call("evaluate", log, "--policy", "arm:0", "--algo", "oful", "--rho", "1", "--clip", "5", "--arms", "3", "--json")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		if err := json.Unmarshal([]byte(stdout), &out[i]); err != nil {
			t.Fatal(err)
		}
	}
	// Under a budget only the releases are shown; the exact estimates
	// come without one.
	if out[0].Targets[0].Result != nil {
		t.Fatalf("exact estimates shown under a budget: %+v", out[0].Targets[0].Result)
	}
	code, stdout, stderr := call("evaluate", log, "--policy", "arm:0", "--clip", "5", "--json")
	var exact evaluation
	if code != 0 || json.Unmarshal([]byte(stdout), &exact) != nil {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	tg := exact.Targets[0]
	for _, e := range tg.Estimate {
		if e.Name != "dm" && (e.Lo > 0.5 || e.Hi < 0.5) {
			t.Errorf("%s interval [%v, %v] misses 0.5", e.Name, e.Lo, e.Hi)
		}
	}
	if rp := out[0].Replays[0]; rp.Value.Lo < 0.5 {
		t.Errorf("replayed OFUL: %+v, want above the best arm's 0.5", rp.Value)
	}
	p0, p1 := out[0].Targets[0].Private, out[1].Targets[0].Private
	if p0 == nil || p1 == nil || p0.Value != p1.Value || out[0].Targets[0].Reused || !out[1].Targets[0].Reused {
		t.Fatalf("private releases %+v then %+v", p0, p1)
	}
	// SNIPS and DR are releases of their own (not IPS's, not reused),
	// each drawn once; DM has none.
	for _, est := range []string{"snips", "dr"} {
		var ev [2]evaluation
		for i := range ev {
			code, stdout, stderr := call("evaluate", log, "--policy", "arm:0", "--rho", "1", "--clip", "5", "--arms", "3", "--private", est, "--json")
			if code != 0 {
				t.Fatalf("--private %s: exit %d: %s", est, code, stderr)
			}
			if err := json.Unmarshal([]byte(stdout), &ev[i]); err != nil {
				t.Fatal(err)
			}
		}
		p, q := ev[0].Targets[0].Private, ev[1].Targets[0].Private
		if p.Estimator != est || ev[0].Targets[0].Reused || !ev[1].Targets[0].Reused || p.Value != q.Value || p.Key == p0.Key {
			t.Fatalf("--private %s: %+v then %+v", est, p, q)
		}
		if (est == "dr") != (p.Model != nil) {
			t.Fatalf("--private %s: model %+v", est, p.Model)
		}
	}
	if code, _, stderr := call("evaluate", log, "--rho", "1", "--clip", "5"); code != 2 || !strings.Contains(stderr, "arms") {
		t.Fatalf("private without --arms: exit %d, %q", code, stderr)
	}
	if code, _, stderr := call("evaluate", log, "--rho", "1", "--clip", "5", "--arms", "3", "--private", "dm"); code != 2 || !strings.Contains(stderr, "private") {
		t.Fatalf("--private dm: exit %d, %q", code, stderr)
	}
	// A linear target's release is keyed by its model's content: the
	// same file name with other weights is a new release.
	mpath := filepath.Join(dir, "model.json")
	var linear [3]*ope.Release
	for i, body := range []string{`[[1, 0], [0, 0], [0, 0]]`, `[[1, 0], [0, 0], [0, 0]]`, `[[0, 0], [1, 0], [0, 0]]`} {
		os.WriteFile(mpath, []byte(body), 0o644)
		code, stdout, stderr := call("evaluate", log, "--policy", "linear:"+mpath, "--rho", "1", "--clip", "5", "--arms", "3", "--json")
		var ev evaluation
		if code != 0 || json.Unmarshal([]byte(stdout), &ev) != nil {
			t.Fatalf("linear target: exit %d: %s", code, stderr)
		}
		linear[i] = ev.Targets[0].Private
	}
	if linear[0].Value != linear[1].Value || linear[1].Key == linear[2].Key || linear[1].Value == linear[2].Value {
		t.Fatalf("linear releases: %+v %+v %+v", linear[0], linear[1], linear[2])
	}
	// A target given per record (dist:FILE) estimates as the same
	// policy given by name, and its release is keyed by the file's
	// contents.
	dist := filepath.Join(dir, "dist.jsonl")
	os.WriteFile(dist, []byte(strings.Repeat("[1, 0, 0]\n", 6000)), 0o644)
	code, stdout, stderr = call("evaluate", log, "--policy", "dist:"+dist, "--policy", "arm:0", "--arms", "3", "--json")
	var ev evaluation
	if code != 0 || json.Unmarshal([]byte(stdout), &ev) != nil {
		t.Fatalf("dist target: exit %d: %s", code, stderr)
	}
	if d, a := ev.Targets[0], ev.Targets[1]; fmt.Sprint(d.Estimate) != fmt.Sprint(a.Estimate) {
		t.Fatalf("dist target %+v, arm:0 %+v", d.Estimate, a.Estimate)
	}
	code, stdout, stderr = call("evaluate", log, "--policy", "dist:"+dist, "--rho", "1", "--clip", "5", "--arms", "3", "--json")
	if code != 0 || json.Unmarshal([]byte(stdout), &ev) != nil || !strings.Contains(ev.Targets[0].Private.Key, "dist=sha256:") {
		t.Fatalf("dist target's release: exit %d: %s %s", code, stdout, stderr)
	}
	// A ledger's total: two releases at rho = 1 fit 2.5, a third is
	// refused (exit 1, nothing printed as released), and the total,
	// recorded, binds the next invocation without --total.
	capped := filepath.Join(dir, "capped.json")
	for i, pol := range []string{"arm:0", "uniform"} {
		code, stdout, stderr := call("evaluate", log, "--policy", pol, "--rho", "1", "--clip", "5", "--arms", "3", "--ledger", capped, "--total", "2.5", "--json")
		var ev evaluation
		if code != 0 || json.Unmarshal([]byte(stdout), &ev) != nil {
			t.Fatalf("capped release %d: exit %d: %s", i, code, stderr)
		}
		if l := ev.Ledger; l == nil || l.Spent != float64(i+1) || l.Total == nil || *l.Total != 2.5 || l.Releases != i+1 {
			t.Fatalf("capped release %d: ledger %+v", i, l)
		}
	}
	for _, args := range [][]string{{"--total", "2.5"}, {}} {
		code, stdout, stderr := call(append([]string{"evaluate", log, "--policy", "arm:1", "--rho", "1", "--clip", "5", "--arms", "3", "--ledger", capped}, args...)...)
		if code != 1 || stdout != "" || !strings.Contains(stderr, "total rho=2.5") {
			t.Fatalf("past the total %v: exit %d, %q, %q", args, code, stdout, stderr)
		}
	}
	// The releases of one invocation are all made or none: two targets
	// past what is left leave the ledger as it was.
	before, _ := os.ReadFile(capped)
	code, stdout, stderr = call("evaluate", log, "--policy", "logging", "--policy", "arm:2", "--rho", "0.3", "--clip", "5", "--arms", "3", "--ledger", capped)
	if after, _ := os.ReadFile(capped); code != 1 || stdout != "" || string(after) != string(before) {
		t.Fatalf("two releases past the total: exit %d, %q, %q; ledger changed: %v", code, stdout, stderr, string(after) != string(before))
	}
	for _, args := range [][]string{{"--total", "-1", "--rho", "1"}, {"--total", "1"}} {
		if code, _, stderr := call(append([]string{"evaluate", log, "--clip", "5", "--arms", "3", "--ledger", capped}, args...)...); code != 2 || !strings.Contains(stderr, "total") {
			t.Fatalf("--total %v: exit %d, %q", args, code, stderr)
		}
	}
	// Bad logs exit 2 with the line.
	bad := filepath.Join(dir, "bad.csv")
	os.WriteFile(bad, []byte("action,reward,pscore\n0,1,0.5\n1,1,0\n"), 0o644)
	if code, _, stderr := call("evaluate", bad, "--arms", "2"); code != 2 || !strings.Contains(stderr, "line 3: pscore 0") {
		t.Fatalf("bad log: exit %d, %q", code, stderr)
	}
	// No flag seeds the release's noise.
	if code, _, stderr := call("evaluate", log, "--rho", "1", "--clip", "5", "--noise", "fast"); code != 2 || !strings.Contains(stderr, "noise") {
		t.Fatalf("seeded noise: exit %d, %q", code, stderr)
	}
	if code, _, stderr := call("evaluate", log, "--rho", "1"); code != 2 || !strings.Contains(stderr, "clip") {
		t.Fatalf("private without a cap: exit %d, %q", code, stderr)
	}
}

// TestEvaluateEdges (found by trying the command as a stranger): a
// release of uniform play at K = 3 is not reused at K = 4, whose value
// differs; a weight cap that is negative or not finite is refused with
// or without a budget; replaying an algorithm privately needs no cap; a
// target the log never plays prints (and encodes in JSON) with an
// effective sample size of 0 and its undefined numbers as "-" (null); and
// the text under a budget holds the release, not the exact estimates.
func TestEvaluateEdges(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "log.csv")
	r := rand.New(rand.NewPCG(3, 4))
	var b strings.Builder
	b.WriteString("action,reward,pscore\n")
	for range 3000 {
		a := r.IntN(3)
		rew := 0
		if r.Float64() < []float64{0.2, 0.5, 0.7}[a] {
			rew = 1
		}
		fmt.Fprintf(&b, "%d,%d,%v\n", a, rew, 1/3.)
	}
	os.WriteFile(log, []byte(b.String()), 0o644)
	var rel [2]evaluation
	for i, k := range []string{"3", "4"} {
		code, stdout, stderr := call("evaluate", log, "--policy", "uniform", "--arms", k, "--clip", "5", "--rho", "1", "--json")
		if code != 0 || json.Unmarshal([]byte(stdout), &rel[i]) != nil {
			t.Fatalf("K = %s: exit %d: %s", k, code, stderr)
		}
	}
	if p, q := rel[0].Targets[0], rel[1].Targets[0]; q.Reused || p.Private.Key == q.Private.Key {
		t.Fatalf("uniform's release at K = 4 reused K = 3's: %+v, %+v", p.Private, q.Private)
	}
	for _, args := range [][]string{{"--clip", "-1"}, {"--clip", "NaN"}, {"--clip", "Inf"}, {"--clip", "NaN", "--rho", "1", "--arms", "3"}} {
		if code, _, stderr := call(append([]string{"evaluate", log, "--arms", "3"}, args...)...); code != 2 || !strings.Contains(stderr, "clip") {
			t.Errorf("%v: exit %d, %q; want 2 naming clip", args, code, stderr)
		}
	}
	if code, stdout, stderr := call("evaluate", log, "--algo", "adac-ucb", "--rho", "1", "--arms", "3"); code != 0 || !strings.Contains(stdout, "replay adac-ucb") {
		t.Errorf("private replay without --clip: exit %d, %q, %q", code, stdout, stderr)
	}
	code, stdout, stderr := call("evaluate", log, "--policy", "arm:3", "--policy", "arm:0", "--arms", "4", "--json")
	var ev evaluation
	if code != 0 || json.Unmarshal([]byte(stdout), &ev) != nil || len(ev.Targets) != 2 {
		t.Fatalf("a target never played, --json: exit %d, %q, %q", code, stdout, stderr)
	}
	if u := ev.Targets[0]; u.ESS != 0 || !math.IsNaN(u.Estimate[2].Value) {
		t.Errorf("never played: ESS %v, SNIPS %v; want 0 and NaN (null)", u.ESS, u.Estimate[2].Value)
	}
	code, stdout, _ = call("evaluate", log, "--policy", "arm:3", "--arms", "4")
	snips := ""
	for _, l := range strings.Split(stdout, "\n") {
		if f := strings.Fields(l); len(f) > 1 && f[0] == "snips" {
			snips = f[1]
		}
	}
	if code != 0 || !strings.Contains(stdout, "never takes an action") || snips != "-" {
		t.Errorf("never played, text: exit %d\n%s", code, stdout)
	}
	// A deterministic logging policy (pscore 1) covers no other action.
	det := filepath.Join(dir, "det.csv")
	os.WriteFile(det, []byte("action,reward,pscore\n0,1,1\n0,0,1\n0,1,1\n"), 0o644)
	code, stdout, _ = call("evaluate", det, "--policy", "uniform", "--arms", "2")
	if code != 0 || !strings.Contains(stdout, "50% of its probability on actions the logging policy never takes") {
		t.Errorf("a deterministic log: exit %d\n%s", code, stdout)
	}
	code, stdout, _ = call("evaluate", log, "--policy", "arm:2", "--arms", "3", "--clip", "5", "--rho", "1")
	if code != 0 || !strings.Contains(stdout, "private IPS") || strings.Contains(stdout, "effective sample size") || strings.Contains(stdout, "snips") {
		t.Errorf("under a budget, text: exit %d\n%s", code, stdout)
	}
}

// writeIn writes body to the file name in dir and returns its path.
func writeIn(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// uniformLog writes a log of n uniformly logged events over three
// actions (CSV) and returns its path.
func uniformLog(t *testing.T, n int) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("action,reward,pscore\n")
	for i := range n {
		fmt.Fprintf(&b, "%d,%d,%v\n", i%3, i%2, 1/3.)
	}
	return writeIn(t, t.TempDir(), "log.csv", b.String())
}

// Budgets and flags evaluate would otherwise ignore or fail on after
// reading the log: each is one line naming its flag, exit 2, and no
// ledger (nor its lock) is created. The budget is built as run builds it
// (rho 0, eps 0, delta without eps are refused).
func TestEvaluateRefusesFlags(t *testing.T) {
	log := uniformLog(t, 30)
	for _, c := range []struct {
		args  []string
		field string
	}{
		{[]string{"--rho", "0", "--arms", "3"}, "rho: must be positive"},
		{[]string{"--eps", "0", "--arms", "3"}, "eps: must be positive"},
		{[]string{"--delta", "0.1", "--arms", "3"}, "eps: "},
		{[]string{"--rho", "0.1", "--delta", "1e-6", "--arms", "3", "--clip", "5"}, "eps: "},
		{[]string{"--rho", "0.1", "--eps", "1", "--arms", "3", "--clip", "5"}, "one budget"},
		{[]string{"--private", "snips", "--arms", "3"}, "private: "},
		{[]string{"--ledger", "x.json", "--arms", "3"}, "ledger: "},
		{[]string{"--rho", "0.1", "--clip", "5", "--arms", "3", "--total", "-1"}, "total: "},
		{[]string{"--rho", "0.1", "--clip", "5", "--arms", "3", "--total", "Inf"}, "total: "},
		{[]string{"--arms", "-3"}, "arms: "},
		{[]string{"--policy", "nope"}, "policy: unknown target policy"},
		{[]string{"--max-memory", "0"}, "max-memory: "},
		{[]string{"--rho", "1e308", "--clip", "5", "--arms", "3"}, "rho: "},
		{[]string{"--rho", "1e-320", "--clip", "5", "--arms", "3"}, "rho: "},
		{[]string{"--eps", "1e-320", "--clip", "5", "--arms", "3"}, "eps: "},
		{[]string{"--eps", "1e-320", "--delta", "1e-6", "--clip", "5", "--arms", "3"}, "eps: "},
		{[]string{"--hi", "1e308", "--rho", "1", "--clip", "5", "--arms", "3"}, "clip: "},
		{[]string{"--rho", "1", "--clip", "5", "--arms", "3", "--ledger", "/nonexistent/l.json"}, "ledger: /nonexistent/l.json"},
		{[]string{"--format", "xml"}, "format: unknown format"},
		{[]string{"--format", "jsonl", "--hash-bits", "4"}, "hash-bits: "},
		{[]string{"--format", "dsjson", "--hash-bits", "30"}, "hash-bits: "},
		{[]string{"--max-events-per-unit", "-1"}, "max-events-per-unit: "},
	} {
		code, stdout, stderr := call(append([]string{"evaluate", log}, c.args...)...)
		last := strings.TrimSpace(stderr)
		if code != 2 || stdout != "" || !strings.Contains(last, c.field) || strings.Contains(last, "\n") || strings.Contains(last, "ope: ") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and one line naming %q", c.args, code, stdout, stderr, c.field)
		}
		for _, f := range []string{log + ".releases.json", log + ".releases.json.lock"} {
			if _, err := os.Stat(f); err == nil {
				t.Errorf("%v: created %s", c.args, f)
				os.Remove(f)
			}
		}
	}
}

// A total of 0 allows no release: the run releases nothing and the
// ledger records no spend; a ledger file whose total is negative is
// refused with exit 2, naming the file.
func TestEvaluateZeroTotal(t *testing.T) {
	log := uniformLog(t, 30)
	ledger := log + ".releases.json"
	code, stdout, stderr := call("evaluate", log, "--rho", "0.1", "--clip", "5", "--arms", "3", "--total", "0")
	if code == 0 || strings.Contains(stdout, "private") || !strings.Contains(stderr, "total") {
		t.Errorf("--total 0: exit %d, %q, %q; want a refusal", code, stdout, stderr)
	}
	if st, err := (ope.Ledger{Path: ledger}).Read(); err != nil || st.Releases != 0 || st.Spent != 0 {
		t.Errorf("--total 0: ledger %+v, %v; want nothing spent", st, err)
	}
	os.WriteFile(ledger, []byte(`{"total_rho": -1, "releases": []}`), 0o600)
	code, _, stderr = call("evaluate", log, "--rho", "0.1", "--clip", "5", "--arms", "3")
	if code != 2 || !strings.Contains(stderr, ledger) || strings.Count(stderr, "\n") != 1 {
		t.Errorf("a ledger of total -1: exit %d, %q; want 2 naming the file", code, stderr)
	}
}

// evaluate's numbers: pscores whose weights overflow are refused (exit
// 2, one line naming the line, no NaN in any output), with --json too;
// a cap below 1 is refused; a one-event log shows no standard error for
// any estimator, and says why; a dist: file longer than the log is
// refused naming both lengths; a JSON record naming a key twice is
// refused naming the line and the key; replaying an algorithm that is
// neither finite-armed nor contextual says what it is.
func TestEvaluateNumbers(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string { return writeIn(t, dir, name, body) }
	for _, ps := range []string{"5e-324", "1e-300"} {
		log := write("tiny.csv", "action,reward,pscore\n0,1,0.5\n1,0,"+ps+"\n0,1,0.5\n")
		for _, extra := range [][]string{nil, {"--json"}} {
			code, stdout, stderr := call(append([]string{"evaluate", log, "--arms", "2"}, extra...)...)
			if code != 2 || stdout != "" || !strings.Contains(stderr, "line 3") || strings.Count(stderr, "\n") != 1 || strings.Contains(stderr, "NaN") {
				t.Errorf("pscore %s %v: exit %d, %q, %q; want exit 2 naming line 3", ps, extra, code, stdout, stderr)
			}
		}
	}
	log := uniformLog(t, 30)
	for _, c := range []string{"1e-320", "0.5"} {
		if code, _, stderr := call("evaluate", log, "--arms", "3", "--clip", c); code != 2 || !strings.Contains(stderr, "clip: ") {
			t.Errorf("--clip %s: exit %d, %q; want 2 naming clip", c, code, stderr)
		}
	}
	one := write("one.csv", "action,reward,pscore\n0,1,0.5\n")
	code, stdout, stderr := call("evaluate", one, "--arms", "2")
	for _, l := range strings.Split(stdout, "\n") {
		if f := strings.Fields(l); len(f) > 2 && f[0] != "estimator" && (f[0] == "ips" || f[0] == "snips" || f[0] == "dr") && f[2] != "-" {
			t.Errorf("one event: %q shows a standard error", l)
		}
	}
	if code != 0 || !strings.Contains(stdout, "one event") {
		t.Errorf("one event: exit %d, %q, %q; want the reason for the missing standard errors", code, stdout, stderr)
	}
	rows := write("rows", strings.Repeat("[0.4, 0.3, 0.3]\n", 31))
	if code, _, stderr := call("evaluate", log, "--arms", "3", "--policy", "dist:"+rows); code != 2 || !strings.Contains(stderr, "31 rows") || !strings.Contains(stderr, "30 records") || strings.Contains(stderr, "ope: ") {
		t.Errorf("a dist: file of 31 rows for 30 records: exit %d, %q", code, stderr)
	}
	dup := write("dup.jsonl", `{"action":0,"reward":1,"pscore":0.5}`+"\n"+`{"action":0,"reward":1,"pscore":0.5,"reward":0}`+"\n")
	if code, _, stderr := call("evaluate", dup, "--arms", "2"); code != 2 || !strings.Contains(stderr, "line 2") || !strings.Contains(stderr, `"reward"`) {
		t.Errorf("a duplicate key: exit %d, %q", code, stderr)
	}
	plain := write("plain.csv", "action,reward,pscore\n0,1,0.5\n1,0,0.5\n")
	for _, a := range []string{"hedge", "gope", "robust-ae"} {
		code, _, stderr := call("evaluate", plain, "--arms", "2", "--algo", a)
		if code != 2 || strings.Contains(stderr, "needs contexts") || !strings.Contains(stderr, "algo: "+a+" is for") {
			t.Errorf("--algo %s: exit %d, %q; want 2 saying what %s is for", a, code, stderr, a)
		}
	}
}

// Reads with a bound: a log, a dist: target, a linear model or a ledger
// that is not a regular file (a device such as /dev/zero, a FIFO without
// a writer) is refused at once (exit 2, one line naming it), never read
// without end nor waited on; a context whose reward model would exceed
// --max-memory is refused naming the flag, not allocated.
func TestEvaluateReadsAreBounded(t *testing.T) {
	log := uniformLog(t, 30)
	pipe := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(pipe, 0o600); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	for _, bad := range []string{"/dev/zero", pipe} {
		for _, args := range [][]string{
			{bad, "--arms", "3"},
			{log, "--arms", "3", "--policy", "dist:" + bad},
			{log, "--arms", "3", "--policy", "linear:" + bad},
			{log, "--arms", "3", "--rho", "1", "--clip", "5", "--ledger", bad},
		} {
			code, stdout, stderr := call(append([]string{"evaluate"}, args...)...)
			if code != 2 || stdout != "" || !strings.Contains(stderr, bad+" is a ") || strings.Count(stderr, "\n") != 1 || strings.Contains(stderr, "ope: ") {
				t.Errorf("%v: exit %d, %q, %q; want exit 2 naming %s", args, code, stdout, stderr, bad)
			}
		}
	}
	wide := writeIn(t, t.TempDir(), "wide.jsonl", `{"action":0,"reward":1,"pscore":0.5,"context":[`+strings.Repeat("0,", 2000)+`0]}`+"\n")
	code, _, stderr := call("evaluate", wide, "--arms", "2", "--max-memory", "10")
	if code != 2 || !strings.Contains(stderr, "max-memory: ") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("a 2001-dimensional context in 10 MiB: exit %d, %q", code, stderr)
	}
	for _, extra := range [][]string{nil, {"--algo", "adac-ucb"}} {
		code, _, stderr := call(append([]string{"evaluate", log, "--arms", "2000000000"}, extra...)...)
		if code != 2 || !strings.Contains(stderr, "max-memory: ") || strings.Count(stderr, "\n") != 1 {
			t.Errorf("2e9 actions %v: exit %d, %q", extra, code, stderr)
		}
	}
}

// TestEvaluateDSJSON: a dsjson log is detected and evaluated, its
// decisions without a cost counted and printed; named as csv it is
// refused at line 1; a bad record stops the command with the line and
// the field (exit 2).
func TestEvaluateDSJSON(t *testing.T) {
	log := filepath.Join("..", "..", "ope", "testdata", "dsjson", "single.dsjson")
	code, stdout, stderr := call("evaluate", log, "--policy", "uniform")
	if code != 0 || !strings.Contains(stdout, "4 actions") || !regexp.MustCompile(`\((\d+) without, skipped\)`).MatchString(stdout) || strings.Contains(stdout, "(0 without") {
		t.Errorf("dsjson: exit %d, %q, %q", code, stdout, stderr)
	}
	if code, _, stderr := call("evaluate", log, "--format", "csv"); code != 2 || !strings.Contains(stderr, "line 1") {
		t.Errorf("dsjson named csv: exit %d, %q", code, stderr)
	}
	bad := filepath.Join(t.TempDir(), "bad.dsjson")
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitN(string(b), "\n", 4)
	lines[2] = regexp.MustCompile(`"_label_probability":[0-9.e-]+`).ReplaceAllString(lines[2], `"_label_probability":0`)
	if err := os.WriteFile(bad, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = call("evaluate", bad)
	if code != 2 || !strings.Contains(stderr, "line 3: _label_probability: 0 must lie in (0, 1]") {
		t.Errorf("a probability of 0 at line 3: exit %d, %q", code, stderr)
	}
}

// TestEvaluateMaxEventsPerUnit: units of 5 events each, bounded at 2:
// three of each unit's events are dropped and the count printed; a
// release is calibrated to 2 events (twice the sensitivity of the same
// release without the bound) and its key names the bound.
func TestEvaluateMaxEventsPerUnit(t *testing.T) {
	var b strings.Builder
	for i := range 100 {
		fmt.Fprintf(&b, `{"unit_id":"u%d","action":%d,"reward":%d,"pscore":0.5}`+"\n", i%20, i%2, i%3%2)
	}
	log := writeIn(t, t.TempDir(), "log.jsonl", b.String())
	code, stdout, stderr := call("evaluate", log, "--arms", "2", "--max-events-per-unit", "2")
	if code != 0 || !strings.Contains(stdout, "60 events dropped") || !strings.Contains(stdout, "40 events with a reward") {
		t.Fatalf("exit %d, %q, %q", code, stdout, stderr)
	}
	sens := func(args ...string) (float64, string) {
		t.Helper()
		code, stdout, stderr := call(append([]string{"evaluate", log, "--arms", "2", "--clip", "2", "--rho", "1", "--json"}, args...)...)
		var ev evaluation
		if code != 0 || json.Unmarshal([]byte(stdout), &ev) != nil {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		return ev.Targets[0].Private.Sensitivity, ev.Targets[0].Private.Key
	}
	bounded, key := sens("--max-events-per-unit", "2")
	if !strings.Contains(key, "max-events-per-unit=2") {
		t.Errorf("the key %q does not name the bound", key)
	}
	// The same n events without the bound: a log of the 40 events kept.
	var kept strings.Builder
	for i := range 40 {
		fmt.Fprintf(&kept, `{"unit_id":"u%d","action":%d,"reward":%d,"pscore":0.5}`+"\n", i%20, i%2, i%3%2)
	}
	log = writeIn(t, t.TempDir(), "log.jsonl", kept.String())
	if one, _ := sens(); math.Abs(bounded-2*one) > 1e-15 {
		t.Errorf("sensitivity %v with 2 events a unit, %v for one event: want twice", bounded, one)
	}
}
