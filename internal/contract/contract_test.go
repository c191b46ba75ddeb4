package contract

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/dpbandit/dpbandit/service/api"
)

// exchange builds an exchange: a request with a JSON body (none when
// body is ""), and a JSON answer (ctype "" for application/json).
func exchange(method, target, body string, status int, ctype, answer string) Exchange {
	r := httptest.NewRequest(method, target, strings.NewReader(body))
	if body != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	if ctype == "" {
		ctype = "application/json"
	}
	h := http.Header{"Content-Type": {ctype}}
	if status == 201 {
		h.Set("Location", "/v1/experiments/e")
	}
	return Exchange{Request: r, ReqBody: []byte(body), Status: status, Header: h, Body: []byte(answer)}
}

// state is an experiment's state as the service answers it; extra is
// written among its fields.
func state(extra string) string {
	return `{"id":"e","algorithm":"adac-ucb","arms":2,"reward_range":[0,1],"privacy":{"rho":1},"default_reward":null,` + extra +
		`"tenant":"default","nano_rho":1000000000,"created":1,"status":"active","rules":4,"decisions":0,"overflow_decisions":0,` +
		`"explored_decisions":0,"rewards":0,"learned":0,"ignored":0,"defaulted":0,"expired":0,"episodes":0,"policy_version":1,` +
		`"pending":0,"awaiting_rewards":0,"pooled_rewards":0,"unreleased_rewards":0,"pulls":[0,0],"releases":0,"recent_releases":[]}`
}

// TestContractFlagsWrongAnswers: answers that break the document are
// flagged, each as its kind of breach, and the same exchanges made right
// pass; so the contract test of the service's HTTP tests can fail.
func TestContractFlagsWrongAnswers(t *testing.T) {
	s, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	decide := `{"event_id":"1","unit_id":"u"}`
	for _, c := range []struct {
		name string
		ex   Exchange
		want error // nil: it passes
	}{
		{"health", exchange("GET", "/healthz", "", 200, "", `{"status":"ok"}`), nil},
		{"health with a status it does not have", exchange("GET", "/healthz", "", 200, "", `{"status":"fine"}`), ErrResponse},
		{"an undocumented status", exchange("GET", "/healthz", "", 418, "", `{"error":"teapot"}`), ErrResponse},
		{"a decision", exchange("POST", "/v1/experiments/e/decisions", decide, 200, "", `{"event_id":"1","arm":0,"probability":1,"policy_version":1,"learns":true}`), nil},
		{"a decision without its arm", exchange("POST", "/v1/experiments/e/decisions", decide, 200, "", `{"event_id":"1","probability":1,"policy_version":1,"learns":true}`), ErrResponse},
		{"a decision's arm as a string", exchange("POST", "/v1/experiments/e/decisions", decide, 200, "", `{"event_id":"1","arm":"0","probability":1,"policy_version":1,"learns":true}`), ErrResponse},
		{"a state", exchange("GET", "/v1/experiments/e", "", 200, "", state("")), nil},
		{"a state with a field the document lacks", exchange("GET", "/v1/experiments/e", "", 200, "", state(`"reward_sum":3,`)), ErrResponse},
		{"a create", exchange("POST", "/v1/experiments", `{"id":"e","algorithm":"adac-ucb","arms":2,"reward_range":[0,1],"privacy":{"rho":1}}`, 201, "", state("")), nil},
		{"a create without Location", func() Exchange {
			ex := exchange("POST", "/v1/experiments", `{"id":"e","algorithm":"adac-ucb","arms":2,"reward_range":[0,1],"privacy":{"rho":1}}`, 201, "", state(""))
			ex.Header.Del("Location")
			return ex
		}(), ErrResponse},
		{"a refused create", exchange("POST", "/v1/experiments", `{"id":"e","privacy":{"rho":1}}`, 400, "", `{"error":"algorithm: missing"}`), nil},
		{"a create the document refuses, accepted", exchange("POST", "/v1/experiments", `{"id":"e","privacy":{"rho":1}}`, 201, "", state("")), ErrAccepted},
		{"a reward without its value, accepted", exchange("POST", "/v1/experiments/e/rewards", `{"event_id":"1"}`, 200, "", `{"event_id":"1","status":"learned","learned":true}`), ErrAccepted},
		{"an error in another shape", exchange("POST", "/v1/experiments/e/decisions", decide, 404, "", `{"message":"no such experiment"}`), ErrResponse},
		{"a Personalizer error", exchange("POST", "/personalizer/v1.0/rank", `{"actions":[{"id":"a"}]}`, 404, "", `{"error":{"code":"ResourceNotFound","message":"no"}}`), nil},
		{"a Personalizer error in the native shape", exchange("POST", "/personalizer/v1.0/rank", `{"actions":[{"id":"a"}]}`, 404, "", `{"error":"no"}`), ErrResponse},
		{"metrics", exchange("GET", "/metrics", "", 200, "text/plain; version=0.0.4; charset=utf-8", "# HELP x\n"), nil},
		{"metrics as JSON", exchange("GET", "/metrics", "", 200, "", `{}`), ErrResponse},
		{"a batch's lines", batch(`{"line":1,"event_id":"1","status":"learned","learned":true,"code":200}` + "\n" +
			`{"line":2,"event_id":"","status":"","learned":false,"code":400,"error":"bad"}` + "\n"), nil},
		{"a batch's line without its code", batch(`{"line":1,"event_id":"1","status":"learned","learned":true}` + "\n"), ErrResponse},
		{"a batch's line that is not JSON", batch(`{"line":1,"event_id":"1","status":"learned","learned":true,"code":200}` + "\nok\n"), ErrResponse},
		{"a route the service does not have", exchange("GET", "/v1/secrets", "", 404, "", `{"error":"no route GET /v1/secrets"}`), nil},
		{"an undocumented route", exchange("GET", "/v1/secrets", "", 200, "", `{"secret":1}`), ErrUndocumented},
		{"a Personalizer route the service does not have", exchange("GET", "/personalizer/v1.0/logs", "", 404, "", `{"error":{"code":"ResourceNotFound","message":"no route"}}`), nil},
		{"a Personalizer route the service does not have, in the native shape", exchange("GET", "/personalizer/v1.0/logs", "", 404, "", `{"error":"no route"}`), ErrResponse},
		{"a native route the service does not have, in Personalizer's shape", exchange("GET", "/v1/secrets", "", 404, "", `{"error":{"code":"ResourceNotFound","message":"no route"}}`), ErrResponse},
		{"an undocumented method", exchange("DELETE", "/v1/experiments/e", "", 200, "", `{"id":"e","status":"archived"}`), ErrUndocumented},
		{"a method the route does not take, without Allow", exchange("DELETE", "/v1/experiments/e", "", 405, "", `{"error":"DELETE is not allowed"}`), ErrResponse},
		{"a method the route does not take", func() Exchange {
			ex := exchange("DELETE", "/v1/experiments/e", "", 405, "", `{"error":"DELETE is not allowed"}`)
			ex.Header.Set("Allow", "GET")
			return ex
		}(), nil},
	} {
		err := s.Check(c.ex)
		if c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
}

// batch is a batch of rewards (a good line, a line that is not JSON)
// and its answer.
func batch(answer string) Exchange {
	body := `{"event_id":"1","reward":1}` + "\nnot json\n"
	ex := exchange("POST", "/v1/experiments/e/rewards", body, 200, "application/x-ndjson", answer)
	ex.Request.Header.Set("Content-Type", "application/x-ndjson")
	return ex
}

// TestHandlerReportsBreaches: Handler fails its test on an answer the
// document does not describe, and passes a right one through unchanged.
func TestHandlerReportsBreaches(t *testing.T) {
	rec := &Breaches{TB: t}
	h := Handler(rec, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/healthz" {
			w.Write([]byte(`{"status":"ok"}`))
			return
		}
		w.Write([]byte(`{"status":"ok","raw_rewards":[1,0,1]}`))
	}))
	web := httptest.NewServer(h)
	defer web.Close()
	for _, path := range []string{"/healthz", "/readyz"} {
		resp, err := web.Client().Get(web.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("%s: %d", path, resp.StatusCode)
		}
	}
	web.Close() // every handler has returned
	if got := rec.List(); len(got) != 1 || !strings.HasPrefix(got[0], "GET /readyz") {
		t.Errorf("want one breach, of /readyz; got %q", got)
	}
}

// TestCatchAll: a route for every method under a prefix (the document's
// x-catch-all, the Personalizer surface's "/personalizer/") is one of the
// document's patterns, and its answers are checked against its
// responses: a 401 of an unknown path without a key passes, a status it
// does not list or a body in another shape does not.
func TestCatchAll(t *testing.T) {
	s, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(s.Patterns(), "/personalizer/") {
		t.Errorf("the patterns lack the catch-all /personalizer/: %q", s.Patterns())
	}
	for _, c := range []struct {
		name string
		ex   Exchange
		want error // nil: it passes
	}{
		{"an unknown path without a key", exchange("GET", "/personalizer/v1.0/evaluations", "", 401, "", `{"error":{"code":"Unauthorized","message":"no key"}}`), nil},
		{"an unknown path", exchange("POST", "/personalizer/v2/anything", "", 404, "", `{"error":{"code":"ResourceNotFound","message":"no"}}`), nil},
		{"an unknown path answered 200", exchange("GET", "/personalizer/v1.0/evaluations", "", 200, "", `{"error":{"code":"ResourceNotFound","message":"no"}}`), ErrResponse},
		{"an unknown path in the native shape", exchange("GET", "/personalizer/v1.0/evaluations", "", 401, "", `{"error":"no key"}`), ErrResponse},
		{"a documented route still its own", exchange("GET", "/personalizer/v1.0/configurations/policy", "", 200, "", `{"name":"n","arguments":"adac-oful:lambda=30"}`), nil},
	} {
		err := s.Check(c.ex)
		if c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
	for _, bad := range []string{`{"GET /x/":{"responses":{}}}`, `{"/x":{"responses":{}}}`} {
		if _, err := Parse(withCatchAll(t, bad)); err == nil {
			t.Errorf("x-catch-all %s: parsed, want an error (a method-less path ending in /)", bad)
		}
	}
}

// withCatchAll returns the service's document with its x-catch-all
// replaced by raw.
func withCatchAll(t *testing.T, raw string) []byte {
	var doc map[string]any
	if err := json.Unmarshal(api.OpenAPI(), &doc); err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		t.Fatal(err)
	}
	doc["x-catch-all"] = v
	out, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
