package service

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/dpbandit/dpbandit/internal/contract"
	"github.com/dpbandit/dpbandit/service/api"
	"github.com/dpbandit/dpbandit/service/internal/storetest"
)

// routeLabel reads a route's pattern from the request-latency metric,
// which api labels with every route's pattern as it registers it.
var routeLabel = regexp.MustCompile(`(?m)^dpbandit_http_request_seconds_count\{route="([^"]+)"\}`)

// TestEveryRouteIsDocumented: every route the service serves is an
// operation of its OpenAPI document (service/api/openapi.json), and
// every operation of the document is a route. The served routes are the
// patterns the request metrics carry from the start, which every route
// registers (api's route, measured and personalizerRoutes). A route added
// without its documentation fails here, and its requests fail every HTTP
// test that sends them (contract.Handler).
func TestEveryRouteIsDocumented(t *testing.T) {
	t.Parallel()
	h := start(t, storetest.SQLite(t), Config{})
	code, body := h.do("GET", "/metrics", "", nil)
	if code != 200 {
		t.Fatalf("GET /metrics: %d: %s", code, body)
	}
	served := map[string]bool{}
	for _, m := range routeLabel.FindAllSubmatch(body, -1) {
		served[string(m[1])] = true
	}
	spec, err := contract.Load()
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, p := range spec.Patterns() {
		documented[p] = true
	}
	for p := range served {
		if !documented[p] {
			t.Errorf("route %q is served but not in the OpenAPI document (service/api/openapi.json, then cp it to docs/)", p)
		}
	}
	for p := range documented {
		if !served[p] {
			t.Errorf("the document's %q is not a route the service serves", p)
		}
	}
	if len(served) < 15 {
		t.Errorf("only %d routes read from the metrics: %v", len(served), served)
	}
}

// TestOpenAPIServed: GET /openapi.json answers the document to anyone,
// without a token, where every other route but the health checks needs
// one: it describes the routes and holds no tenant's data.
func TestOpenAPIServed(t *testing.T) {
	t.Parallel()
	h := start(t, storetest.SQLite(t), Config{Tokens: tenantTokens})
	resp, body := request(t, h, "GET", "/openapi.json", nil, "")
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" || !bytes.Equal(body, api.OpenAPI()) {
		t.Errorf("GET /openapi.json without a token: %d %q, %d bytes, want the %d of api.OpenAPI()", resp.StatusCode, resp.Header.Get("Content-Type"), len(body), len(api.OpenAPI()))
	}
	if resp, _ := request(t, h, "GET", "/v1/experiments", nil, ""); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /v1/experiments without a token: %d, want 401", resp.StatusCode)
	}
}

// TestContractCatchesDrift: the check reads the service's own answers,
// not only made-up ones: against a document whose Decision lacks the
// field learns, the service's real decision fails it, and against the
// service's document the same request passes.
func TestContractCatchesDrift(t *testing.T) {
	t.Parallel()
	h := start(t, storetest.SQLite(t), Config{})
	h.create(storetest.BernoulliSpec("e", 2, 1))
	var doc map[string]any
	if err := json.Unmarshal(api.OpenAPI(), &doc); err != nil {
		t.Fatal(err)
	}
	decision := doc["components"].(map[string]any)["schemas"].(map[string]any)["Decision"].(map[string]any)
	delete(decision["properties"].(map[string]any), "learns")
	decision["required"] = []string{"event_id", "arm", "probability", "policy_version"}
	raw, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	drifted, err := contract.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	current, err := contract.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		spec *contract.Spec
		want int // breaches reported
	}{{"drifted", drifted, 1}, {"current", current, 0}} {
		rec := &contract.Breaches{TB: t}
		req := httptest.NewRequest("POST", "/v1/experiments/e/decisions", strings.NewReader(`{"event_id":"`+c.name+`","unit_id":"u"}`))
		req.Host = "127.0.0.1" // loopback: no token file needed
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		c.spec.Handler(rec, h.srv.Handler()).ServeHTTP(w, req)
		if got := rec.List(); w.Code != http.StatusOK || len(got) != c.want {
			t.Errorf("against the %s document: %d %s, breaches %q, want %d", c.name, w.Code, w.Body, got, c.want)
		}
	}
}
