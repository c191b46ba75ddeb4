package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpbandit/dpbandit/service"
)

// TestImportCommand: `dpbandit import` sends a log to a running service
// and prints what the import changed; a log with a bad record is refused
// whole, exit status 1, with the record's line printed; --skip-invalid
// imports the rest; importing the log again changes nothing; with
// --part-lines the log goes in parts, each its own import, line numbers
// the file's.
func TestImportCommand(t *testing.T) {
	ctx := context.Background()
	st, err := service.Open(ctx, filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := service.New(ctx, service.Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	web := httptest.NewServer(srv.Handler())
	defer func() { web.Close(); srv.Close(); st.Close() }()
	spec := `{"id":"w","algorithm":"adac-ucb","arms":2,"reward_range":[0,1],"privacy":{"rho":0.5}}`
	if resp, err := http.Post(web.URL+"/v1/experiments", "application/json", strings.NewReader(spec)); err != nil || resp.StatusCode != 201 {
		t.Fatalf("create: %v %v", resp, err)
	}
	var log strings.Builder
	for i := range 60 {
		fmt.Fprintf(&log, `{"event_id":"e%d","action":%d,"reward":%d,"pscore":0.5}`+"\n", i, i%2, (i/2)%2)
	}
	log.WriteString(`{"event_id":"bad","action":0,"reward":1,"pscore":0}` + "\n") // line 61
	path := filepath.Join(t.TempDir(), "log.jsonl")
	if err := os.WriteFile(path, []byte(log.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := func(args ...string) (int, string) {
		var out, errb bytes.Buffer
		code := run(ctx, append([]string{"import", path, "--url", web.URL, "--experiment", "w"}, args...), &out, &errb)
		return code, out.String() + errb.String()
	}
	if code, out := cmd(); code != exitFailure || !strings.Contains(out, "refused: line 61: pscore 0 must lie in (0, 1]") {
		t.Fatalf("a log with a bad record: exit %d, output:\n%s", code, out)
	}
	code, out := cmd("--skip-invalid")
	if code != exitOK || !strings.Contains(out, "learned") || !strings.Contains(out, "units debited") {
		t.Fatalf("--skip-invalid: exit %d, output:\n%s", code, out)
	}
	t.Logf("dpbandit import --skip-invalid:\n%s", out)
	if code, out := cmd("--skip-invalid"); code != exitOK || !strings.Contains(out, "; 0 operations") {
		t.Fatalf("the same log again: exit %d, output:\n%s", code, out)
	}
	if code, out := run(ctx, []string{"import", path}, &bytes.Buffer{}, &bytes.Buffer{}), ""; code != exitUsage {
		t.Fatalf("without --experiment: exit %d %s", code, out)
	}
	// In parts of 25 lines, into a new experiment: three imports, the
	// bad record reported at its line in the file (61, the third part's
	// 11th), and the parts before it imported.
	spec = strings.Replace(spec, `"id":"w"`, `"id":"p"`, 1)
	if resp, err := http.Post(web.URL+"/v1/experiments", "application/json", strings.NewReader(spec)); err != nil || resp.StatusCode != 201 {
		t.Fatalf("create: %v %v", resp, err)
	}
	var out2, errb bytes.Buffer
	code2 := run(ctx, []string{"import", path, "--url", web.URL, "--experiment", "p", "--part-lines", "25"}, &out2, &errb)
	got := out2.String()
	if code2 != exitFailure || strings.Count(got, "part: lines") != 3 || !strings.Contains(got, "part: lines 51 to 61") ||
		!strings.Contains(got, "refused: line 61: pscore 0") || strings.Count(got, "units debited") != 2 {
		t.Fatalf("--part-lines 25: exit %d, output:\n%s%s", code2, got, errb.String())
	}
	if code := run(ctx, []string{"import", path, "--url", web.URL, "--experiment", "p", "--part-lines", "-1"}, &bytes.Buffer{}, &bytes.Buffer{}); code != exitUsage {
		t.Fatalf("--part-lines -1: exit %d", code)
	}
}
