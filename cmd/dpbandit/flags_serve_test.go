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
