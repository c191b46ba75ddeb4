package service

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/dpbandit/dpbandit/service/internal/strictjson"
	"github.com/dpbandit/dpbandit/service/outcome"

	"github.com/dpbandit/dpbandit/service/api"
	"github.com/dpbandit/dpbandit/service/define"
	"github.com/dpbandit/dpbandit/service/internal/storetest"
	"github.com/dpbandit/dpbandit/service/store"
)

// badIDs are ids every store must refuse alike, at the boundary.
var badIDs = map[string]string{
	"NUL":          "a\x00b",
	"control":      "a\x1bb",
	"invalid UTF8": "a\xff\xfeb",
	"10 kB":        strings.Repeat("x", 10000),
}

// TestIDsAreCheckedAtTheBoundary: NUL, control characters, invalid
// UTF-8 and long ids are a 400 on both stores, and the service goes on
// taking everyone's writes (PostgreSQL's text refuses NUL: before, one
// such id stopped every write of every tenant).
func TestIDsAreCheckedAtTheBoundary(t *testing.T) {
	eachStore(t, Config{}, func(t *testing.T, h *harness) {
		h.create(storetest.BernoulliSpec("e", 2, 1))
		h.decide("e", "ok", "u")
		for name, id := range badIDs {
			bodies := map[string]string{
				"event_id": fmt.Sprintf(`{"event_id":%s,"unit_id":"u"}`, rawString(id)),
				"unit_id":  fmt.Sprintf(`{"event_id":"x","unit_id":%s}`, rawString(id)),
			}
			for field, body := range bodies {
				if code, b := h.do("POST", "/v1/experiments/e/decisions", "application/json", []byte(body)); code != 400 {
					t.Errorf("%s %s in a decision: %d %s", name, field, code, b)
				}
			}
			body := fmt.Sprintf(`{"event_id":%s,"reward":1}`, rawString(id))
			if code, b := h.do("POST", "/v1/experiments/e/rewards", "application/json", []byte(body)); code != 400 {
				t.Errorf("%s event_id in a reward: %d %s", name, code, b)
			}
			if code, b := h.do("GET", "/v1/units/"+url.PathEscape(id)+"/ledger", "", nil); code != 400 {
				t.Errorf("%s unit in the ledger's path: %d %s", name, code, b)
			}
		}
		// The same ids escaped in JSON (\u0000) decode to the same strings.
		if code, b := h.do("POST", "/v1/experiments/e/decisions", "application/json", []byte(`{"event_id":"a\u0000b","unit_id":"u"}`)); code != 400 {
			t.Errorf("an escaped NUL: %d %s", code, b)
		}
		if res := h.reward("e", "ok", 1); !res.Learned {
			t.Fatalf("after the bad ids: %+v", res)
		}
		h.decide("e", "next", "u2")
		for _, path := range []string{"/healthz", "/readyz"} {
			if code, _ := h.do("GET", path, "", nil); code != 200 {
				t.Fatalf("%s %d", path, code)
			}
		}
	})
}

// rawString writes s as a JSON string without escaping its bytes (invalid
// UTF-8 and control characters stay raw, as a careless client sends them).
func rawString(s string) string {
	if strings.ContainsAny(s, `"\`) {
		panic("rawString: quote or backslash")
	}
	return `"` + s + `"`
}

// tenantTokens are two tenants' admins and an operator.
var tenantTokens = map[string]api.Token{
	"aaaaaaaaaaaaaaaaadmin": {Tenant: "A", Role: api.RoleAdmin},
	"bbbbbbbbbbbbbbbbadmin": {Tenant: "B", Role: api.RoleAdmin},
	"ooooooooooooooooperat": {Tenant: api.AllTenants, Role: api.RoleOperator},
}

// TestTenantIsolation: a unit id belongs to its tenant; nothing tenant A
// does changes tenant B's answers, and B sees nothing of A through
// ledgers, caps, metrics, the dashboard or errors.
func TestTenantIsolation(t *testing.T) {
	eachStore(t, Config{Tokens: tenantTokens, UnitBudget: 1e9}, func(t *testing.T, h *harness) {
		h.token = "aaaaaaaaaaaaaaaaadmin"
		for _, e := range []string{"shop", "mail"} {
			h.create(storetest.BernoulliSpec(e, 2, 0.5))
			h.decide(e, "1", "dave")
			if res := h.reward(e, "1", 1); !res.Learned {
				t.Fatalf("A's dave in %s: %+v", e, res)
			}
		}
		h.token = "bbbbbbbbbbbbbbbbadmin"
		spec := storetest.BernoulliSpec("shop", 2, 0.1)
		spec["max_rewards_per_unit"] = 2
		h.create(spec)
		for round := range 2 {
			h.decide("shop", fmt.Sprint(round), "dave")
			if res := h.reward("shop", fmt.Sprint(round), 1); !res.Learned {
				t.Fatalf("B's dave, round %d: %+v (A's dave spent A's cap, not B's)", round, res)
			}
			led := h.ledger("dave")
			if want := int64((round + 1) * (round + 1) * 1e8); len(led.Experiments) != 1 || led.Experiments[0].Experiment != "shop" || led.TotalNanoRho != want {
				t.Fatalf("B's ledger of dave: %+v", led)
			}
			other := h.ledger("nobody")
			if len(other.Experiments) != 0 {
				t.Fatalf("B sees a ledger for a unit it never had: %+v", other)
			}
			metrics := string(h.call("GET", "/metrics", nil, 200, nil))
			if strings.Contains(metrics, `"A/`) || strings.Contains(metrics, "go_goroutines") || strings.Contains(metrics, "dpbandit_http_requests_total") {
				t.Fatalf("B's admin sees other tenants' or process metrics:\n%s", metrics)
			}
			if !strings.Contains(metrics, `dpbandit_decisions_total{experiment="B/shop"}`) {
				t.Fatalf("B's admin does not see its own series:\n%s", metrics)
			}
			_, dash := h.do("GET", "/", "", nil)
			if bytes.Contains(dash, []byte("mail")) {
				t.Fatal("B's dashboard shows A's experiment")
			}
			h.call("GET", "/v1/experiments/mail", nil, 404, nil)
			h.restart() // the ledgers and the cap are per tenant after a restart too
		}
		h.token = "aaaaaaaaaaaaaaaaadmin"
		h.create(storetest.BernoulliSpec("third", 2, 0.5))
		h.decide("third", "1", "dave")
		if res := h.reward("third", "1", 1); res.Reason != "unit_budget" {
			t.Fatalf("A's dave past the cap: %+v", res)
		}
		led := h.ledger("dave")
		if led.TotalNanoRho != 1e9 || len(led.Experiments) != 2 {
			t.Fatalf("A's ledger of dave: %+v", led)
		}
		h.token = "ooooooooooooooooperat"
		metrics := string(h.call("GET", "/metrics", nil, 200, nil))
		for _, want := range []string{`experiment="A/shop"`, `experiment="B/shop"`, "go_goroutines"} {
			if !strings.Contains(metrics, want) {
				t.Fatalf("the operator does not see %s", want)
			}
		}
		h.call("GET", "/v1/experiments", nil, 403, nil)
		h.call("POST", "/v1/experiments/shop/decisions", map[string]string{"event_id": "9", "unit_id": "u"}, 403, nil)
	})
}

// TestOversizedBatchAppliesNothing: a batch over the limit is refused
// whole, before any of its lines is applied.
func TestOversizedBatchAppliesNothing(t *testing.T) {
	eachStore(t, Config{}, func(t *testing.T, h *harness) {
		h.create(storetest.BernoulliSpec("e", 2, 1))
		var body bytes.Buffer
		for i := range 10 {
			h.decide("e", fmt.Sprint(i), fmt.Sprint(i))
			fmt.Fprintf(&body, "{\"event_id\":\"%d\",\"reward\":1}\n", i)
		}
		body.WriteString(strings.Repeat(" ", 9<<20) + "\n")
		if code, b := h.do("POST", "/v1/experiments/e/rewards", "application/x-ndjson", body.Bytes()); code != 413 {
			t.Fatalf("a 9 MB batch: %d %s", code, b)
		}
		if st := h.state("e"); st.Rewards != 0 || st.Learned != 0 {
			t.Fatalf("a refused batch was applied: %+v", st.Counts)
		}
	})
}

// request sends a request with the given headers to h and returns the
// response (its body read into the returned bytes).
func request(t *testing.T, h *harness, method, path string, header map[string]string, body string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, h.http.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	c := *h.http.Client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	return resp, b.Bytes()
}

// TestBrowsersCannotDriveTheService: without a token file, a web page
// in a browser on the same machine can neither change nor read anything
// (cross-origin POSTs, text/plain bodies, DNS rebinding); with tokens,
// the dashboard logs in once and then uses an HttpOnly, SameSite=Strict
// cookie, and the address never carries the token.
func TestBrowsersCannotDriveTheService(t *testing.T) {
	t.Parallel()
	h := start(t, storetest.SQLite(t), Config{})
	spec := `{"id":"x","algorithm":"adac-ucb","arms":2,"reward_range":[0,1],"privacy":{"rho":1}}`
	for name, hdr := range map[string]map[string]string{
		"text/plain from another origin": {"Content-Type": "text/plain", "Origin": "http://attacker.example"},
		"JSON from another origin":       {"Content-Type": "application/json", "Origin": "http://attacker.example"},
		"cross-site fetch":               {"Content-Type": "application/json", "Sec-Fetch-Site": "cross-site"},
		"text/plain without an origin":   {"Content-Type": "text/plain"},
		"a rebound DNS name":             {"Content-Type": "application/json", "Host": "attacker.example"},
	} {
		resp, b := request(t, h, "POST", "/v1/experiments", hdr, spec)
		if resp.StatusCode != 403 && resp.StatusCode != 415 {
			t.Errorf("%s: %d %s", name, resp.StatusCode, b)
		}
		if !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
			t.Errorf("%s: the refusal is not JSON: %s", name, b)
		}
	}
	if resp, b := request(t, h, "GET", "/v1/experiments", map[string]string{"Host": "attacker.example:8080"}, ""); resp.StatusCode != 403 {
		t.Errorf("a read through a rebound DNS name: %d %s", resp.StatusCode, b)
	}
	var list []outcome.State
	h.call("GET", "/v1/experiments", nil, 200, &list)
	if len(list) != 0 {
		t.Fatalf("a refused request created %d experiment(s)", len(list))
	}

	k := start(t, storetest.SQLite(t), Config{Tokens: tenantTokens})
	const admin = "aaaaaaaaaaaaaaaaadmin"
	if resp, b := request(t, k, "GET", "/?token="+admin, nil, ""); resp.StatusCode != 401 || bytes.Contains(b, []byte("Tenant <b>A")) {
		t.Fatalf("the dashboard took ?token=: %d", resp.StatusCode)
	}
	form := map[string]string{"Content-Type": "application/x-www-form-urlencoded"}
	if resp, _ := request(t, k, "POST", "/login", form, "token=ooooooooooooooooperat"); resp.StatusCode != 401 {
		t.Fatalf("an operator token logged in to a tenant's dashboard: %d", resp.StatusCode)
	}
	cross := map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Origin": "http://attacker.example"}
	if resp, _ := request(t, k, "POST", "/login", cross, "token="+admin); resp.StatusCode != 403 {
		t.Fatalf("a cross-origin login: %d", resp.StatusCode)
	}
	resp, _ := request(t, k, "POST", "/login", form, "token="+admin)
	var session *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == api.SessionCookie {
			session = c
		}
	}
	if resp.StatusCode != 303 || session == nil || !session.HttpOnly || session.SameSite != http.SameSiteStrictMode || strings.Contains(session.Value, admin) {
		t.Fatalf("login: %d, cookie %+v", resp.StatusCode, session)
	}
	cookie := map[string]string{"Cookie": api.SessionCookie + "=" + session.Value}
	if resp, b := request(t, k, "GET", "/", cookie, ""); resp.StatusCode != 200 || !bytes.Contains(b, []byte("Tenant <b>A")) {
		t.Fatalf("the dashboard with the session: %d %s", resp.StatusCode, b)
	}
	if resp, _ := request(t, k, "GET", "/v1/experiments", cookie, ""); resp.StatusCode != 401 {
		t.Fatalf("the API took the dashboard's cookie: %d", resp.StatusCode)
	}
	forged := map[string]string{"Cookie": api.SessionCookie + "=" + session.Value[:len(session.Value)-2] + "AA"}
	if resp, _ := request(t, k, "GET", "/", forged, ""); resp.StatusCode != 401 {
		t.Fatalf("a forged cookie: %d", resp.StatusCode)
	}
}

// TestStrictRequests: exact, case-sensitive field names, no duplicate
// keys (in a context too), no unknown field, no trailing data, valid
// UTF-8; 405 with Allow, 201 with Location.
func TestStrictRequests(t *testing.T) {
	t.Parallel()
	h := start(t, storetest.SQLite(t), Config{})
	code, b := h.do("POST", "/v1/experiments", "application/json",
		[]byte(`{"id":"e","algorithm":"adac-ucb","arms":2,"reward_range":[0,1],"privacy":{"rho":1}}`))
	if code != 201 {
		t.Fatalf("create: %d %s", code, b)
	}
	resp, _ := request(t, h, "POST", "/v1/experiments", map[string]string{"Content-Type": "application/json"},
		`{"id":"f","algorithm":"adac-ucb","arms":2,"reward_range":[0,1],"privacy":{"rho":1}}`)
	if resp.StatusCode != 201 || resp.Header.Get("Location") != "/v1/experiments/f" {
		t.Fatalf("create: %d, Location %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	for _, body := range []string{
		`{"EVENT_ID":"a","unit_id":"u"}`,
		`{"event_id":"a","Unit_Id":"u"}`,
		`{"event_id":"a","event_id":"b","unit_id":"u"}`,
		`{"event_id":"a","unit_id":"u","extra":1}`,
		`{"event_id":"a","unit_id":"u"} {}`,
		`{"event_id":"a","unit_id":"u"}]`,
		`{"event_id":"a","unit_id":"u","context":{"x":1,"x":2}}`,
		"{\"event_id\":\"a\xff\",\"unit_id\":\"u\"}",
	} {
		if code, b := h.do("POST", "/v1/experiments/e/decisions", "application/json", []byte(body)); code != 400 {
			t.Errorf("%s: %d %s", body, code, b)
		}
	}
	for _, body := range []string{
		`{"id":"g","algorithm":"adac-ucb","arms":2,"reward_range":[0,1],"Privacy":{"rho":1}}`,
		`{"id":"g","algorithm":"adac-ucb","arms":2,"reward_range":[0,1],"privacy":{"rho":1,"rho":100}}`,
	} {
		if code, b := h.do("POST", "/v1/experiments", "application/json", []byte(body)); code != 400 {
			t.Errorf("%s: %d %s", body, code, b)
		}
	}
	if code, b := h.do("POST", "/v1/experiments/e/rewards", "application/json", []byte(`{"event_id":"a","Reward":1}`)); code != 400 {
		t.Errorf("Reward: %d %s", code, b)
	}
	for _, c := range []struct{ method, path, allow string }{
		{"DELETE", "/v1/experiments/e", "GET"},
		{"PUT", "/v1/experiments", "GET, POST"},
		{"GET", "/v1/experiments/e/decisions", "POST"},
	} {
		resp, b := request(t, h, c.method, c.path, nil, "")
		var e struct{ Error string }
		if resp.StatusCode != 405 || resp.Header.Get("Allow") != c.allow || json.Unmarshal(b, &e) != nil || e.Error == "" {
			t.Errorf("%s %s: %d, Allow %q, %s", c.method, c.path, resp.StatusCode, resp.Header.Get("Allow"), b)
		}
	}
	if code, _ := h.do("GET", "/v1/nothing", "", nil); code != 404 {
		t.Errorf("an unknown path: %d", code)
	}
}

// TestExactDebits: a budget written with at most nine decimals is
// charged exactly, and its mechanisms are calibrated to at most the
// charge; other budgets are charged rounded up, caps rounded down.
func TestExactDebits(t *testing.T) {
	t.Parallel()
	capNano, err := define.CapNano(0.2)
	if err != nil || capNano != 2e8 {
		t.Fatalf("define.CapNano(0.2) = %d, %v", capNano, err)
	}
	h := start(t, storetest.SQLite(t), Config{UnitBudget: capNano})
	// An experiment whose one reward costs more than the cap could never
	// learn: it is refused when created.
	var refused map[string]any
	h.call("POST", "/v1/experiments", storetest.BernoulliSpec("big", 2, 0.3), 400, &refused)
	for i, e := range []string{"a", "b", "c"} {
		h.create(storetest.BernoulliSpec(e, 2, 0.1))
		h.decide(e, "1", "dave")
		res := h.reward(e, "1", 1)
		if want := i < 2; res.Learned != want {
			t.Fatalf("dave's reward %d at rho 0.1 under a cap of 0.2: %+v", i+1, res)
		}
	}
	if n := h.state("a").NanoRho; n != 1e8 {
		t.Fatalf("rho 0.1 costs %d nano-rho", n)
	}
	// A positive cap below the ledger's unit would round to 0, which
	// means no cap: it is refused (a stranger's trial found that a cap
	// of 9e-10 let a unit's ledger reach rho = 10).
	for _, rho := range []float64{1e-12, 9e-10, 5e-324} {
		if m, err := define.CapNano(rho); err == nil {
			t.Errorf("cap rho %v: %d nano-rho, no error", rho, m)
		}
	}
	if m, err := define.CapNano(0); m != 0 || err != nil {
		t.Errorf("no cap: %d, %v", m, err)
	}
}

// TestDeepJSONIsRefused: nesting beyond strictjson.MaxDepth is a 400, read without
// recursion, for a single request and for a batch line (a body of
// millions of '[' once overflowed the stack and killed the process).
func TestDeepJSONIsRefused(t *testing.T) {
	t.Parallel()
	h := start(t, storetest.SQLite(t), Config{})
	h.create(storetest.BernoulliSpec("e", 2, 1))
	deep := `{"event_id":"x","unit_id":"u","context":` + strings.Repeat("[", 900000) + `}`
	if code, b := h.do("POST", "/v1/experiments/e/decisions", "application/json", []byte(deep)); code != 400 {
		t.Fatalf("a deep context: %d %s", code, b)
	}
	if code, b := h.do("POST", "/v1/experiments/e/rewards", "application/x-ndjson", []byte(strings.Repeat("[", 8<<20-10))); code != 200 || !bytes.Contains(b, []byte(`"code":400`)) {
		t.Fatalf("a deep batch line: %d %.200s", code, b)
	}
	ok := `{"event_id":"y","unit_id":"u","context":` + strings.Repeat("[", strictjson.MaxDepth-1) + strings.Repeat("]", strictjson.MaxDepth-1) + `}`
	if code, b := h.do("POST", "/v1/experiments/e/decisions", "application/json", []byte(ok)); code != 200 {
		t.Fatalf("a context nested %d deep: %d %s", strictjson.MaxDepth-1, code, b)
	}
}

// TestTenantIsolationUnderCollation: on a PostgreSQL database with a
// language-aware collation, where 'A/x' sorts between 'a/' and 'a0',
// tenants whose names differ in case still see only their own ledgers.
func TestTenantIsolationUnderCollation(t *testing.T) {
	t.Parallel()
	dsn := storetest.PostgresWith(t, `LOCALE_PROVIDER icu ICU_LOCALE 'en-US' LOCALE 'C.utf8' TEMPLATE template0`)
	toks := map[string]api.Token{"lowerlowerlowerlower": {Tenant: "acme", Role: api.RoleAdmin}, "upperupperupperupper": {Tenant: "Acme", Role: api.RoleAdmin}}
	h := start(t, dsn, Config{Tokens: toks})
	h.token = "upperupperupperupper"
	h.create(storetest.BernoulliSpec("secret", 2, 0.25))
	h.decide("secret", "1", "alice")
	h.reward("secret", "1", 1)
	h.token = "lowerlowerlowerlower"
	led := h.ledger("alice")
	if len(led.Experiments) != 0 || led.TotalNanoRho != 0 {
		t.Fatalf("tenant acme sees Acme's ledger: %+v", led)
	}
}

// TestRewardRangeTooNarrow: a range whose noise would underflow is
// refused at creation (it once stopped every tenant's writes).
func TestRewardRangeTooNarrow(t *testing.T) {
	t.Parallel()
	h := start(t, storetest.SQLite(t), Config{})
	for _, r := range [][2]float64{{0, 5e-324}, {1, 1 + 1e-200}, {-1e200, 1e200}} {
		spec := storetest.BernoulliSpec("e", 2, 1)
		spec["reward_range"] = r
		h.call("POST", "/v1/experiments", spec, 400, nil)
	}
}

// TestBrokenExperimentStopsAlone: an experiment whose policy fails (here
// one stored by an older version with a range this one refuses) answers
// 503 alone; the others, and the service's health, go on.
func TestBrokenExperimentStopsAlone(t *testing.T) {
	eachStore(t, Config{}, func(t *testing.T, h *harness) {
		h.create(storetest.BernoulliSpec("good", 2, 1))
		tiny := 5e-324
		def := define.Definition{Spec: define.Spec{ID: "tiny", Algorithm: "adac-ucb", Arms: 2, RewardRange: [2]float64{0, tiny},
			Privacy: define.Privacy{Rho: &[]float64{0.5}[0]}, MaxRewardsPerUnit: 1, RewardWindowSeconds: 3600}, Tenant: "default", NanoRho: 5e8}
		if err := h.store.CreateExperiment(context.Background(), mustRow(t, def)); err != nil {
			t.Fatal(err)
		}
		h.restart()
		broke := false
		for i := 0; i < 40 && !broke; i++ {
			ev := fmt.Sprint(i)
			code, b := h.do("POST", "/v1/experiments/tiny/decisions", "application/json", []byte(`{"event_id":"`+ev+`","unit_id":"u`+ev+`"}`))
			if code == 200 {
				code, b = h.do("POST", "/v1/experiments/tiny/rewards", "application/json", []byte(`{"event_id":"`+ev+`","reward":5e-324}`))
			}
			if code >= 500 && code != 503 {
				t.Fatalf("the broken experiment: %d %s", code, b)
			}
			broke = broke || code == 503
		}
		if !broke {
			t.Fatal("the broken experiment never stopped")
		}
		h.decide("good", "1", "u")
		h.reward("good", "1", 1)
		if code, b := h.do("GET", "/healthz", "", nil); code != 200 {
			t.Fatalf("healthz after one experiment broke: %d %s", code, b)
		}
	})
}

// TestTruncatedBatchIs400: a batch whose body ends early is the client's
// error, not the server's.
func TestTruncatedBatchIs400(t *testing.T) {
	t.Parallel()
	h := start(t, storetest.SQLite(t), Config{})
	h.create(storetest.BernoulliSpec("e", 2, 1))
	conn, err := net.Dial("tcp", strings.TrimPrefix(h.http.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := "{\"event_id\":\"a\",\"reward\":1}\n"
	fmt.Fprintf(conn, "POST /v1/experiments/e/rewards HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-ndjson\r\nContent-Length: 100\r\n\r\n%s", body)
	conn.(*net.TCPConn).CloseWrite()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 400 {
		t.Fatalf("a truncated batch: %d", resp.StatusCode)
	}
}

// TestLostOwnershipIsNoticed: a service whose store was taken over stops
// reporting itself healthy at its next tick, before any write.
func TestLostOwnershipIsNoticed(t *testing.T) {
	eachStore(t, Config{}, func(t *testing.T, h *harness) {
		db, _ := rawDB(t, h.dsn)
		if _, err := db.Exec(`UPDATE owner SET epoch = epoch + 1 WHERE id = 1`); err != nil {
			t.Fatal(err)
		}
		h.srv.Expire() // one tick
		if code, _ := h.do("GET", "/healthz", "", nil); code != 503 || !errors.Is(h.srv.Err(), store.ErrFenced) {
			t.Fatalf("healthz %d, error %v after a takeover", code, h.srv.Err())
		}
	})
}

// TestIDsAndBudgetsAtTheirLimits: ids the JSON decoder would have
// altered (lone surrogates become U+FFFD) are refused, and a ledger that
// could overflow is refused at creation.
func TestIDsAndBudgetsAtTheirLimits(t *testing.T) {
	t.Parallel()
	h := start(t, storetest.SQLite(t), Config{})
	h.create(storetest.BernoulliSpec("e", 2, 1))
	for _, body := range []string{`{"event_id":"a\ud800","unit_id":"u"}`, `{"event_id":"a","unit_id":"\ufffd"}`} {
		if code, b := h.do("POST", "/v1/experiments/e/decisions", "application/json", []byte(body)); code != 400 {
			t.Errorf("%s: %d %s", body, code, b)
		}
	}
	spec := storetest.BernoulliSpec("big", 2, 1e6)
	spec["max_rewards_per_unit"] = 1000000
	h.call("POST", "/v1/experiments", spec, 400, nil)
}

// TestContextsKeptOnlyWhenUsed: a context sent to a finite-armed
// experiment is used by no policy; without --keep-log there is no log to
// keep it for, so it is not stored (a stranger's trial found 2,884
// stored). With --keep-log it is, and a retry of the event with another
// context is refused, as one with another unit is.
func TestContextsKeptOnlyWhenUsed(t *testing.T) {
	t.Parallel()
	for _, keep := range []bool{false, true} {
		h := start(t, storetest.SQLite(t), Config{KeepLog: keep})
		h.create(storetest.BernoulliSpec("e", 2, 1))
		body := map[string]any{"event_id": "1", "unit_id": "u", "context": []float64{0.25, 0.5}}
		h.call("POST", "/v1/experiments/e/decisions", body, 200, nil)
		var stored string
		if err := storetest.DB(t, h.dsn).QueryRow(`SELECT COALESCE(context, '') FROM events WHERE exp = 'default/e'`).Scan(&stored); err != nil {
			t.Fatal(err)
		}
		if want := map[bool]string{false: "", true: "[0.25,0.5]"}[keep]; stored != want {
			t.Errorf("keep-log %v: stored context %q, want %q", keep, stored, want)
		}
		// The same context written otherwise is the same request.
		if code, b := h.do("POST", "/v1/experiments/e/decisions", "application/json", []byte(`{"event_id":"1","unit_id":"u","context":[2.5e-1, 0.50]}`)); code != 200 {
			t.Errorf("keep-log %v: a retry with the same context written otherwise: %d %s", keep, code, b)
		}
		body["context"] = []float64{0.5, 0.25}
		raw, _ := json.Marshal(body)
		if code, b := h.do("POST", "/v1/experiments/e/decisions", "application/json", raw); code != map[bool]int{false: 200, true: 409}[keep] {
			t.Errorf("keep-log %v: a retry with another context: %d %s", keep, code, b)
		}
	}
}
