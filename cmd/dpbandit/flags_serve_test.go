package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
)

// loadtest's and serve's flag errors are exit 2, one line naming the
// flag, before any network call (no request reaches the service) and
// before the store is opened (no database file is created).
func TestServeAndLoadtestFlagErrors(t *testing.T) {
	var requests atomic.Int64
	web := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { requests.Add(1) }))
	defer web.Close()
	dir := t.TempDir()
	db := filepath.Join(dir, "s.db")
	lt := func(args ...string) []string {
		return append([]string{"loadtest", "--url", web.URL, "--quiet"}, args...)
	}
	for _, c := range []struct {
		args  []string
		field string
	}{
		{lt("--decisions", "-1"), "decisions: "},
		{lt("--duration", "0"), "duration: "},
		{lt("--duration", "-1s"), "duration: "},
		{lt("--units", "-1"), "units: "},
		{lt("--rho", "NaN"), "rho: "},
		{lt("--rho", "0"), "rho: "},
		{lt("--rho", "-1"), "rho: "},
		{lt("--rho", "Inf"), "rho: "},
		{lt("--concurrency", "0"), "concurrency: "},
		{[]string{"serve", "--addr", "127.0.0.1:99999", "--db", db}, "addr: "},
		{[]string{"serve", "--addr", "127.0.0.1:-1", "--db", db}, "addr: "},
		{[]string{"serve", "--addr", "127.0.0.1", "--db", db}, "addr: "},
	} {
		code, stdout, stderr := call(c.args...)
		last := strings.TrimSpace(stderr)
		if code != 2 || !strings.Contains(last, c.field) || strings.Contains(last, "\n") || strings.Contains(last, "loadgen: ") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and one line naming %q", c.args, code, stdout, stderr, c.field)
		}
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("%d requests reached the service", n)
	}
	if _, err := os.Stat(db); err == nil {
		t.Error("a refused serve created its database")
	}
}

// serve --db that cannot be a SQLite file is refused before the store
// opens: exit 2, one line naming the path, and nothing created (no
// "..lock" in the current folder for an empty path).
func TestServeRefusesBadDB(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ db, want string }{
		{dir, dir},
		{"", "db: "},
		{filepath.Join(dir, "missing", "s.db"), filepath.Join(dir, "missing")},
		{fifo, fifo},
		{"/dev/zero", "/dev/zero"},
		{filepath.Join(dir, "s.db?mode=ro"), "?"},
	} {
		code, _, stderr := call("serve", "--addr", "127.0.0.1:0", "--db", c.db)
		last := strings.TrimSpace(stderr)
		if code != 2 || !strings.Contains(last, c.want) || !strings.HasPrefix(last, "dpbandit: db: ") || strings.Contains(last, "\n") {
			t.Errorf("--db %q: exit %d, %q; want exit 2, one line naming %q", c.db, code, stderr, c.want)
		}
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.Name() != "fifo" {
			t.Errorf("a refused serve left %s", e.Name())
		}
	}
}

// A token file readable or writable by group or others is refused, as
// ssh refuses such a key: exit 2, one line naming the file and saying
// how to fix it (chmod 600); at 0600 it is accepted (the next check,
// --tick, is the one that refuses).
func TestServeRefusesOpenTokenFile(t *testing.T) {
	dir := t.TempDir()
	tokens := writeIn(t, dir, "tokens", "0123456789abcdef0123 acme admin\n")
	db := filepath.Join(dir, "s.db")
	for _, mode := range []os.FileMode{0o644, 0o640, 0o604, 0o620, 0o602} {
		if err := os.Chmod(tokens, mode); err != nil {
			t.Fatal(err)
		}
		// --tick 0 stops a serve that took the file before it listens.
		code, _, stderr := call("serve", "--addr", "127.0.0.1:0", "--db", db, "--token-file", tokens, "--tick", "0")
		last := strings.TrimSpace(stderr)
		if code != 2 || !strings.Contains(last, "token-file: ") || !strings.Contains(last, "chmod 600 "+tokens) || strings.Contains(last, "\n") {
			t.Errorf("mode %o: exit %d, %q; want exit 2 saying chmod 600 %s", mode, code, stderr, tokens)
		}
	}
	os.Chmod(tokens, 0o600)
	if code, _, stderr := call("serve", "--addr", "127.0.0.1:0", "--db", db, "--token-file", tokens, "--tick", "0"); code != 2 || !strings.Contains(stderr, "tick") {
		t.Errorf("mode 600: exit %d, %q; want the token file accepted", code, stderr)
	}
	if _, err := os.Stat(db); err == nil {
		t.Error("a refused serve created its database")
	}
}

// A token file owned by another user than the service's (nor root) is
// refused whatever its mode: someone else could change the tokens.
func TestTokenFileOfAnotherUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give a file away")
	}
	path := writeIn(t, t.TempDir(), "tokens", "0123456789abcdef0123 acme admin\n")
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(path, 12345, 12345); err != nil {
		t.Skip("cannot chown here:", err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := privateFile(f); err == nil || !strings.Contains(err.Error(), "user 12345") {
		t.Errorf("a file of user 12345: %v, want a refusal naming the owner", err)
	}
}
