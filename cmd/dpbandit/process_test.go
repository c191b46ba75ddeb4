package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// buildBinary returns the command built once for the package's tests of
// a real process (signals, concurrent runs); TestMain removes it.
func buildBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	built.once.Do(func() {
		dir, err := os.MkdirTemp("", "dpbandit-test-")
		if err != nil {
			built.err = err
			return
		}
		built.dir, built.path = dir, filepath.Join(dir, "dpbandit")
		if out, err := exec.Command("go", "build", "-o", built.path, ".").CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.path
}

// built is the binary buildBinary builds once.
var built struct {
	once      sync.Once
	dir, path string
	err       error
}

// TestMain runs the tests and removes the binary they built.
func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// slowPlots is a run whose runs end fast and whose plots take seconds
// (40 budgets at 3000 checkpoints), into out.
func slowPlots(out string) []string {
	rho := make([]string, 40)
	for i := range rho {
		rho[i] = strconv.FormatFloat(0.01*float64(i+1), 'g', -1, 64)
	}
	return []string{"run", "--env", "bernoulli:0.5,0.4", "--algo", "adac-ucb", "--rho", strings.Join(rho, ","),
		"--runs", "4", "--horizon", "10000", "--checkpoints", "3000", "--quiet", "--out", out}
}

// waitFor polls until ok holds or the process p has exited (false).
func waitFor(p *exec.Cmd, exited <-chan struct{}, ok func() bool) bool {
	for !ok() {
		select {
		case <-exited:
			return false
		case <-time.After(5 * time.Millisecond):
		}
	}
	return true
}

// start starts bin with args, returning the command, its output buffers
// and a channel closed when it exits.
func start(t *testing.T, bin string, args ...string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer, chan struct{}) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-exited })
	return cmd, &out, &errb, exited
}

// tempResult returns the path of a file in the temporary folder a run
// into out writes, once there is one.
func tempResult(out, name string) func() bool {
	return func() bool {
		m, _ := filepath.Glob(filepath.Join(filepath.Dir(out), "."+filepath.Base(out)+".tmp-*", name))
		return len(m) > 0
	}
}

// TestInterruptWhileWritingKeepsTheRuns: a SIGINT once every run is done
// (summary.json is being written) writes the results, says which plots
// were skipped, exits 130 and leaves no temporary folder.
func TestInterruptWhileWritingKeepsTheRuns(t *testing.T) {
	t.Parallel() // it waits on its process
	bin := buildBinary(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "res")
	cmd, stdout, stderr, exited := start(t, bin, slowPlots(out)...)
	if !waitFor(cmd, exited, tempResult(out, "summary.json")) {
		t.Fatalf("exited before writing: %s%s", stdout, stderr)
	}
	cmd.Process.Signal(syscall.SIGINT)
	<-exited
	code := cmd.ProcessState.ExitCode()
	for _, f := range []string{"summary.json", "regret.csv"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("interrupted while writing (exit %d): %v\n%s%s", code, err, stdout, stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "regret.png")); err != nil && !strings.Contains(stdout.String(), "plots skipped") {
		t.Errorf("no regret.png and no word of it: %s", stdout)
	}
	if code != exitInterrupted || !strings.Contains(stdout.String(), "4 of 4 runs") {
		t.Errorf("exit %d, stdout %s, stderr %s", code, stdout, stderr)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("left beside the result: %v", entries)
	}
}

// TestConcurrentRunsToOneOut: a second run into the --out that a first is
// computing into fails at once (exit 2, naming the first), without
// computing; the first one's result is complete.
func TestConcurrentRunsToOneOut(t *testing.T) {
	t.Parallel() // it waits on its process
	bin := buildBinary(t)
	out := filepath.Join(t.TempDir(), "res")
	first, stdout, stderr, exited := start(t, bin, slowPlots(out)...)
	if !waitFor(first, exited, tempResult(out, ".")) {
		t.Fatalf("exited before writing: %s%s", stdout, stderr)
	}
	second := exec.Command(bin, slowPlots(out)...)
	var out2, err2 bytes.Buffer
	second.Stdout, second.Stderr = &out2, &err2
	second.Run()
	if code := second.ProcessState.ExitCode(); code != exitUsage || !strings.Contains(err2.String(), "another dpbandit") || out2.Len() > 0 {
		t.Errorf("second run: exit %d, stdout %q, stderr %q", code, out2.String(), err2.String())
	}
	<-exited
	if code := first.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("first run: exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(out, "regret.png")); err != nil {
		t.Error(err)
	}
}

// TestInterruptedRunNeverClaimsUnwrittenFiles: a run interrupted while
// its --out has meanwhile received a file of someone else's cannot put
// its result there; it says nothing was written (it claimed "the table
// and files cover those runs" and "results in ..."), and exits 1.
func TestInterruptedRunNeverClaimsUnwrittenFiles(t *testing.T) {
	t.Parallel() // it waits on its process
	bin := buildBinary(t)
	// The interrupt must come once a run has finished; on a busy machine
	// it may come before (the output folder exists before the first run
	// ends, and the run then rightly says no run had finished): tried
	// again, at most 5 times.
	for attempt := 1; ; attempt++ {
		out := filepath.Join(t.TempDir(), "res")
		cmd, stdout, stderr, exited := start(t, bin, "run", "--env", "bernoulli:0.5,0.4", "--algo", "ucb1",
			"--runs", "200000", "--horizon", "100", "--checkpoints", "10", "--quiet", "--out", out)
		if !waitFor(cmd, exited, tempResult(out, ".")) {
			t.Fatalf("exited before writing: %s%s", stdout, stderr)
		}
		if err := os.MkdirAll(out, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(out, "notes.txt"), []byte("mine"), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd.Process.Signal(syscall.SIGINT)
		<-exited
		code, so := cmd.ProcessState.ExitCode(), stdout.String()
		if strings.Contains(stderr.String(), "no run had finished") && attempt < 5 {
			continue
		}
		if code != exitFailure || strings.Contains(so, "results in") || strings.Contains(so, "files") || !strings.Contains(so, "nothing was written") || !strings.Contains(stderr.String(), "not a dpbandit result") {
			t.Errorf("exit %d, stdout %s, stderr %s", code, so, stderr)
		}
		if entries, _ := os.ReadDir(out); len(entries) != 1 {
			t.Errorf("the folder holds %v", entries)
		}
		return
	}
}
