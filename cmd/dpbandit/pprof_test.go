package main

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dpbandit/dpbandit/internal/syncbuf"
)

// serveFor runs dpbandit serve with args until the test ends and returns
// its printed output once it listens.
func serveFor(t *testing.T, args ...string) *syncbuf.Buffer {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out := &syncbuf.Buffer{}
	done := make(chan error, 1)
	go func() { done <- serveCmd(ctx, args, out, io.Discard) }()
	t.Cleanup(func() { cancel(); <-done })
	for !strings.Contains(out.String(), "listening on http://") {
		select {
		case err := <-done:
			t.Fatalf("serve stopped: %v (%s)", err, out)
		case <-time.After(5 * time.Millisecond):
		}
	}
	return out
}

// get returns the status of a GET of url.
func get(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

var (
	listening = regexp.MustCompile(`listening on (http://[^ ]+)`)
	profiles  = regexp.MustCompile(`profiles \(pprof, loopback only\) on (http://[^ ]+)/debug/pprof/`)
)

// The profiles are off by default (the API's address has no
// /debug/pprof/ and nothing else listens for them), and on with --pprof,
// on their own loopback listener only.
func TestPprofOffByDefaultOnWithFlag(t *testing.T) {
	dir := t.TempDir()
	out := serveFor(t, "--addr", "127.0.0.1:0", "--db", filepath.Join(dir, "a.db"))
	api := listening.FindStringSubmatch(out.String())[1]
	if code := get(t, api+"/debug/pprof/"); code != 404 {
		t.Errorf("without --pprof: /debug/pprof/ answered %d on the API's address, want 404", code)
	}
	if profiles.MatchString(out.String()) {
		t.Errorf("without --pprof the service serves profiles: %s", out)
	}

	out = serveFor(t, "--addr", "127.0.0.1:0", "--db", filepath.Join(dir, "b.db"), "--pprof", "127.0.0.1:0")
	m := profiles.FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("with --pprof: no profiles' address in %q", out)
	}
	if code := get(t, m[1]+"/debug/pprof/cmdline"); code != 200 {
		t.Errorf("with --pprof: /debug/pprof/cmdline answered %d, want 200", code)
	}
	if code := get(t, listening.FindStringSubmatch(out.String())[1]+"/debug/pprof/"); code != 404 {
		t.Errorf("with --pprof: the API's address answered /debug/pprof/ with %d, want 404", code)
	}
	// A request for another host (DNS rebinding) is refused.
	req, _ := http.NewRequest("GET", m[1]+"/debug/pprof/cmdline", nil)
	req.Host = "evil.example:80"
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 403 {
		t.Errorf("a request for host evil.example answered %d, want 403", resp.StatusCode)
	}
}

// --pprof takes a loopback address only, checked with the other flags
// (exit 2, before the store opens).
func TestPprofRefusesOtherAddresses(t *testing.T) {
	db := filepath.Join(t.TempDir(), "s.db")
	for _, addr := range []string{"0.0.0.0:6060", "10.1.2.3:6060", "example.com:6060", "127.0.0.1", "127.0.0.1:99999"} {
		code, _, stderr := call("serve", "--addr", "127.0.0.1:0", "--db", db, "--pprof", addr)
		if code != 2 || !strings.Contains(stderr, "--pprof") {
			t.Errorf("--pprof %s: exit %d, %q; want exit 2 naming --pprof", addr, code, stderr)
		}
	}
}
