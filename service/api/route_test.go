package api

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// noReplicas is a Backend without replicas, for requests that reach no
// experiment.
type noReplicas struct{ Backend }

func (noReplicas) Replica() (string, http.RoundTripper) { return "", nil }
func (noReplicas) Err() error                           { return nil }

// Requests no route takes are answered as before the catch-all route
// that finds them in one match: 404 or 405 with Allow, as JSON, and a
// path the mux cleans is redirected only when its clean form has a
// route of its own.
func TestNoRouteAnswers(t *testing.T) {
	h, err := New(Config{Backend: noReplicas{}, Registry: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		method, path string
		code         int
		header, want string
	}{
		{"GET", "/nope", 404, "", `no route GET /nope`},
		{"POST", "/v1/experiments/x/nope", 404, "", `no route POST /v1/experiments/x/nope`},
		{"DELETE", "/v1/experiments", 405, "GET, POST", `DELETE is not allowed on /v1/experiments`},
		{"GET", "/v1/experiments/x/decisions", 405, "POST", `GET is not allowed`},
		{"GET", "//nope", 404, "", `no route GET //nope`},
		{"GET", "/v1/../nope", 404, "", `no route GET /v1/../nope`},
		{"GET", "/v1//healthz/..", 404, "", `no route`},
		{"GET", "/v1/../healthz", 307, "/healthz", ``},
		{"GET", "/healthz", 200, "", `"ok"`},
	} {
		req := httptest.NewRequest(c.method, "http://127.0.0.1"+c.path, nil)
		req.URL.Path = c.path // as sent, not cleaned
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		got := w.Header().Get("Allow")
		if c.code == 307 {
			got = w.Header().Get("Location")
		}
		if w.Code != c.code || got != c.header || !strings.Contains(w.Body.String(), c.want) {
			t.Errorf("%s %s: %d (%q) %s; want %d (%q) with %q", c.method, c.path, w.Code, got, w.Body, c.code, c.header, c.want)
		}
		if c.code >= 400 && w.Header().Get("Content-Type") != "application/json" {
			t.Errorf("%s %s: Content-Type %q, want JSON", c.method, c.path, w.Header().Get("Content-Type"))
		}
	}
}
