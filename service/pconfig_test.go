package service

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dpbandit/dpbandit/service/outcome"
	"github.com/dpbandit/dpbandit/service/personalizer"

	"github.com/dpbandit/dpbandit/service/define"
	"github.com/dpbandit/dpbandit/service/internal/storetest"
	"github.com/dpbandit/dpbandit/service/rank"
)

// The Personalizer management operations (configurations, model, logs),
// called as a client written from the specification calls them.

const (
	pzV10 = "/personalizer/v1.0"
	pzV11 = "/personalizer/v1.1-preview.3"
)

// call sends method to base+path with body (raw JSON or a value; nil:
// none) and returns the status, the content type and the answer.
func (c pzClient) call(method, base, path string, body any) (int, string, []byte) {
	c.t.Helper()
	code, h, out := c.exchange(method, base, path, body)
	return code, h.Get("Content-Type"), out
}

// exchange is call, returning the answer's headers.
func (c pzClient) exchange(method, base, path string, body any) (int, http.Header, []byte) {
	c.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		rd = strings.NewReader(string(must(json.Marshal(b))))
	}
	req, err := http.NewRequest(method, c.endpoint+base+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set(personalizer.SubscriptionKeyHeader, c.key)
	resp, err := c.hc.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, out
}

// get decodes a 200 answer of a GET into out.
func (c pzClient) get(base, path string, out any) {
	c.t.Helper()
	code, _, b := c.call("GET", base, path, nil)
	if code != 200 || json.Unmarshal(b, out) != nil {
		c.t.Fatalf("GET %s%s: %d %s", base, path, code, b)
	}
}

// serviceConfig is the specification's ServiceConfiguration (v1.1-preview.3's, a superset of v1.0's).
type serviceConfig struct {
	RewardWaitTime            string  `json:"rewardWaitTime"`
	DefaultReward             float64 `json:"defaultReward"`
	RewardAggregation         string  `json:"rewardAggregation"`
	ExplorationPercentage     float64 `json:"explorationPercentage"`
	ModelExportFrequency      string  `json:"modelExportFrequency"`
	LogMirrorEnabled          *bool   `json:"logMirrorEnabled,omitempty"`
	LogMirrorSasURI           string  `json:"logMirrorSasUri,omitempty"`
	LogRetentionDays          int     `json:"logRetentionDays"`
	LastConfigurationEditDate string  `json:"lastConfigurationEditDate,omitempty"`
	LearningMode              string  `json:"learningMode,omitempty"`
	IsAutoOptimizationEnabled *bool   `json:"isAutoOptimizationEnabled,omitempty"`
	AutoOptimizationFrequency string  `json:"autoOptimizationFrequency,omitempty"`
	AutoOptimizationStartDate string  `json:"autoOptimizationStartDate,omitempty"`
}

type policyContract struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// pzRound ranks n events (ids prefix-i) with two eligible actions of
// three and rewards each the first action's click, returning the
// answers.
func pzRound(c pzClient, prefix string, n int) []pzRankResponse {
	var out []pzRankResponse
	for i := range n {
		res := c.rank(pzRankRequest{
			ContextFeatures: []map[string]any{{"weather": []string{"sun", "rain"}[i%2]}},
			Actions:         []pzAction{{ID: "a", Features: []map[string]any{{"t": "a"}}}, {ID: "b", Features: []map[string]any{{"t": "b"}}}, {ID: "c"}},
			ExcludedActions: []string{"c"},
			EventID:         fmt.Sprintf("%s-%d", prefix, i)})
		r := 0.0
		if res.RewardActionID == "a" {
			r = 1
		}
		c.reward(res.EventID, r)
		out = append(out, res)
	}
	return out
}

// sameState fails unless two states agree on what a restart must keep.
func sameState(t testing.TB, what string, a, b outcome.State) {
	t.Helper()
	if fmt.Sprint(a.Counts, a.Releases, a.Recent, a.Pulls, string(must(json.Marshal(a.Settings)))) != fmt.Sprint(b.Counts, b.Releases, b.Recent, b.Pulls, string(must(json.Marshal(b.Settings)))) {
		t.Fatalf("%s changed the state:\n%+v\n%+v", what, a, b)
	}
}

// logLine is a line of an experiment's log, as far as the tests read it.
type logLine struct {
	Action int       `json:"action"`
	PScore float64   `json:"pscore"`
	Prob   []float64 `json:"action_prob"`
}

// logLines returns an experiment's log.
func logLines(t testing.TB, h *harness, id string) []logLine {
	t.Helper()
	_, lb := h.do("GET", "/v1/experiments/"+id+"/log", "", nil)
	var out []logLine
	for _, line := range strings.Split(strings.TrimSpace(string(lb)), "\n") {
		var e logLine
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, e)
	}
	return out
}

// restartSame stops the service as a crash would (no snapshot saved:
// the operations since the last are replayed) and starts it, then stops
// it cleanly (a snapshot saved) and starts it, points c at it, and fails
// unless the experiment "pz" is as it was each time.
func restartSame(t testing.TB, h *harness, c *pzClient) {
	t.Helper()
	st := h.state("pz")
	h.crash()
	h.open()
	sameState(t, "a crash", st, h.state("pz"))
	h.restart()
	c.endpoint = h.http.URL
	sameState(t, "a restart", st, h.state("pz"))
}

// TestPersonalizerServiceConfiguration: configurations/service answers
// the experiment's settings in the specification's shape (v1.0's
// TimeSpans "00:10:00", v1.1-preview.3's ISO 8601 durations "PT10M");
// a PUT changes them, durably (a restart replays the decisions made
// before it under the old exploration and those after under the new);
// what would weaken privacy or cannot be honoured is 400 naming the field
// and changes nothing.
func TestPersonalizerServiceConfiguration(t *testing.T) {
	t.Parallel() // light: a few dozen requests
	storetest.ForStores(t, func(t *testing.T, dsn string) {
		h := start(t, dsn, Config{SnapshotEvery: 7, KeepLog: true})
		c := createPZ(t, h)
		var got serviceConfig
		c.get(pzV10, "/configurations/service", &got)
		if got.RewardWaitTime != "00:10:00" || got.DefaultReward != 0 || got.RewardAggregation != "earliest" || got.ExplorationPercentage != 0.2 ||
			got.ModelExportFrequency != "00:05:00" || got.LogRetentionDays != -1 || got.LearningMode != "" {
			t.Fatalf("v1.0 configuration %+v", got)
		}
		c.get(pzV11, "/configurations/service", &got)
		if got.RewardWaitTime != "PT10M" || got.ModelExportFrequency != "PT5M" || got.LearningMode != "Online" {
			t.Fatalf("v1.1 configuration %+v", got)
		}
		before := pzRound(c, "before", 10)
		// The specification's example update, as far as it can be honoured.
		update := `{"rewardWaitTime":"PT4H","defaultReward":0.5,"rewardAggregation":"earliest","explorationPercentage":0.3,
		  "modelExportFrequency":"PT5M","logMirrorEnabled":false,"logRetentionDays":-1,"lastConfigurationEditDate":"2019-01-19T00:00:00Z",
		  "learningMode":"Online","isAutoOptimizationEnabled":false}`
		code, _, b := c.call("PUT", pzV11, "/configurations/service", update)
		if code != 200 || json.Unmarshal(b, &got) != nil || got.RewardWaitTime != "PT4H" || got.DefaultReward != 0.5 || got.ExplorationPercentage != 0.3 {
			t.Fatalf("update: %d %s", code, b)
		}
		mid := h.state("pz")
		for _, bad := range []struct{ field, body string }{
			{"explorationPercentage", strings.Replace(update, `"explorationPercentage":0.3`, `"explorationPercentage":0`, 1)},
			{"explorationPercentage", strings.Replace(update, `"explorationPercentage":0.3`, `"explorationPercentage":1.5`, 1)},
			{"defaultReward", strings.Replace(update, `"defaultReward":0.5`, `"defaultReward":-0.5`, 1)},
			{"rewardAggregation", strings.Replace(update, `"earliest"`, `"average"`, 1)},
			{"rewardWaitTime", strings.Replace(update, `"PT4H"`, `"4 hours"`, 1)},
			{"logMirrorEnabled", strings.Replace(update, `"logMirrorEnabled":false`, `"logMirrorEnabled":true,"logMirrorSasUri":"https://x"`, 1)},
			{"isAutoOptimizationEnabled", strings.Replace(update, `"isAutoOptimizationEnabled":false`, `"isAutoOptimizationEnabled":true`, 1)},
			{"learningMode", strings.Replace(update, `"Online"`, `"Offline"`, 1)},
			{"learningMode", strings.Replace(strings.Replace(update, `"Online"`, `"Apprentice"`, 1), `"defaultReward":0.5`, `"defaultReward":0.25`, 1)},
			{"rewardWaitTime", `{"defaultReward":0,"rewardAggregation":"earliest","explorationPercentage":0.2,"modelExportFrequency":"PT5M","logRetentionDays":-1}`},
			{"logRetentionDays", strings.Replace(update, `"logRetentionDays":-1`, `"logRetentionDays":-2`, 1)},
		} {
			code, _, b := c.call("PUT", pzV11, "/configurations/service", bad.body)
			wantError(t, bad.field, code, b, 400, "BadRequest")
			if !strings.Contains(string(b), bad.field) {
				t.Errorf("%s: the message does not name the field: %s", bad.field, b)
			}
		}
		sameState(t, "refused updates", mid, h.state("pz"))
		// The new exploration is the logging policy's from now on.
		after := pzRound(c, "after", 10)
		want := map[float64]bool{1 - define.ExploreProb(0.3) + define.ExploreProb(0.3)/2: true, define.ExploreProb(0.3) / 2: true}
		for _, r := range after {
			if !want[r.Ranking[0].Probability] {
				t.Fatalf("after the update, probability %v, want one of %v", r.Ranking[0].Probability, want)
			}
		}
		if p := before[0].Ranking[0].Probability; p != 1-define.ExploreProb(0.2)+define.ExploreProb(0.2)/2 && p != define.ExploreProb(0.2)/2 {
			t.Fatalf("before the update, probability %v", p)
		}
		// The log's distributions are those of the exploration each event
		// was decided under.
		for i, e := range logLines(t, h, "pz") {
			if e.Action >= len(e.Prob) || e.Prob[e.Action] != e.PScore {
				t.Fatalf("log line %d: %+v", i, e)
			}
		}
		restartSame(t, h, &c)
		var again serviceConfig
		c.get(pzV11, "/configurations/service", &again)
		if string(must(json.Marshal(again))) != string(must(json.Marshal(got))) {
			t.Fatalf("after a restart %+v, before %+v", again, got)
		}
		// A retried rank of before the update is answered as it was.
		if r := pzRound(c, "before", 1)[0]; fmt.Sprint(r) != fmt.Sprint(before[0]) {
			t.Fatalf("retry after the update: %+v, first %+v", r, before[0])
		}
	})
}

// TestPersonalizerServiceConfigurationV10: the v1.0 specification's
// example update (examples/ServiceConfiguration_Update.json), log
// mirroring off, is answered in v1.0's TimeSpans; its retention of 7
// days is taken without --keep-log (every reward is deleted at its
// release) and with it (the tick enforces it: TestPersonalizerLogRetention).
func TestPersonalizerServiceConfigurationV10(t *testing.T) {
	t.Parallel()
	update := `{"rewardWaitTime":"00:10:00","defaultReward":0,"rewardAggregation":"earliest","explorationPercentage":0.2,
	  "modelExportFrequency":"00:05:00","logMirrorEnabled":false,"logRetentionDays":7}`
	for _, keep := range []bool{false, true} {
		h := start(t, storetest.SQLite(t), Config{KeepLog: keep})
		c := createPZ(t, h)
		code, _, b := c.call("PUT", pzV10, "/configurations/service", update)
		var got serviceConfig
		if code != 200 || json.Unmarshal(b, &got) != nil || got.RewardWaitTime != "00:10:00" || got.ModelExportFrequency != "00:05:00" || got.LogRetentionDays != 7 || got.LearningMode != "" {
			t.Fatalf("v1.0 update: %d %s", code, b)
		}
	}
}

// TestPersonalizerPolicy: configurations/policy shows the learner as a
// catalogue spec; a PUT of another private contextual learner starts the
// learner over (durably), a non-private or non-contextual one is 400
// naming arguments; DELETE returns to the default; the ledger keeps
// every debit made before.
func TestPersonalizerPolicy(t *testing.T) {
	t.Parallel() // light: a few dozen requests
	storetest.ForStores(t, func(t *testing.T, dsn string) {
		h := start(t, dsn, Config{SnapshotEvery: 5})
		c := createPZ(t, h)
		var p policyContract
		c.get(pzV10, "/configurations/policy", &p)
		if p != (policyContract{"adac-oful-scaled", "adac-oful-scaled:lambda=30:beta=0.3"}) {
			t.Fatalf("policy %+v", p)
		}
		pzRound(c, "one", 8)
		// Pending at the change: its reward is acknowledged, not learned.
		pending := c.rank(pzRankRequest{Actions: []pzAction{{ID: "a"}, {ID: "b"}}, EventID: "pending"})
		ledger := h.call("GET", "/v1/units/one-3/ledger", nil, 200, nil)
		before := h.state("pz")
		for _, bad := range []string{"oful", "rs-oful:c=1", "adac-ucb", "nothing", "adac-oful:lambda=-1"} {
			code, _, b := c.call("PUT", pzV10, "/configurations/policy", policyContract{"x", bad})
			wantError(t, bad, code, b, 400, "BadRequest")
			if !strings.Contains(string(b), "arguments") {
				t.Errorf("%s: the message does not name arguments: %s", bad, b)
			}
		}
		code, _, b := c.call("PUT", pzV10, "/configurations/policy", policyContract{"mine", "adac-oful:lambda=10"})
		if code != 200 || json.Unmarshal(b, &p) != nil || p != (policyContract{"mine", "adac-oful:lambda=10"}) {
			t.Fatalf("put: %d %s", code, b)
		}
		c.reward(pending.EventID, 1)
		st := h.state("pz")
		if st.Ignored != before.Ignored+1 || st.Learned != before.Learned {
			t.Fatalf("after the change: %+v", st.Counts)
		}
		if again := h.call("GET", "/v1/units/one-3/ledger", nil, 200, nil); string(again) != string(ledger) {
			t.Fatalf("the ledger changed: %s, was %s", again, ledger)
		}
		pzRound(c, "two", 8)
		restartSame(t, h, &c)
		c.get(pzV10, "/configurations/policy", &p)
		if p != (policyContract{"mine", "adac-oful:lambda=10"}) {
			t.Fatalf("after a restart: %+v", p)
		}
		code, _, b = c.call("DELETE", pzV11, "/configurations/policy", nil)
		if code != 200 || json.Unmarshal(b, &p) != nil || p.Arguments != "adac-oful-scaled:lambda=30:beta=0.3" {
			t.Fatalf("delete: %d %s", code, b)
		}
		pzRound(c, "three", 3)
		restartSame(t, h, &c)
	})
}

// modelProperties is the specification's ModelProperties.
type modelProperties struct {
	CreationTime     time.Time `json:"creationTime"`
	LastModifiedTime time.Time `json:"lastModifiedTime"`
}

// TestPersonalizerModel: model GET exports the released estimate only
// (the learner's theta~, 2^hash_bits numbers); DELETE starts the learner
// over (204): model/properties' creationTime moves, the ledger keeps its
// debits, the events pending are not learned; durably.
func TestPersonalizerModel(t *testing.T) {
	t.Parallel() // light: a few dozen requests
	storetest.ForStores(t, func(t *testing.T, dsn string) {
		h := start(t, dsn, Config{})
		c := createPZ(t, h)
		var props modelProperties
		c.get(pzV10, "/model/properties", &props)
		created := props.CreationTime
		if created.IsZero() || props.LastModifiedTime.Before(created) {
			t.Fatalf("properties %+v", props)
		}
		pzRound(c, "one", 40)
		code, ctype, b := c.call("GET", pzV10, "/model", nil)
		var m rank.Model
		if code != 200 || ctype != "application/octet-stream" || json.Unmarshal(b, &m) != nil || len(m.Theta) != 32 || m.Algorithm != "adac-oful-scaled:lambda=30:beta=0.3" || m.Episodes == 0 {
			t.Fatalf("model: %d %s %s", code, ctype, b)
		}
		for _, raw := range []string{`"one-`, `"weather`, `"sun`} {
			if strings.Contains(string(b), raw) {
				t.Fatalf("the model holds %s: %s", raw, b)
			}
		}
		pending := c.rank(pzRankRequest{Actions: []pzAction{{ID: "a"}, {ID: "b"}}, EventID: "pending"})
		waits := c.rank(pzRankRequest{Actions: []pzAction{{ID: "a"}, {ID: "b"}}, EventID: "waits"})
		ledger := h.call("GET", "/v1/units/one-7/ledger", nil, 200, nil)
		before := h.state("pz")
		if code, _, b := c.call("DELETE", pzV10, "/model", nil); code != 204 || len(b) != 0 {
			t.Fatalf("reset: %d %s", code, b)
		}
		// An event pending at the reset and one decided after it, both
		// waiting across restarts (a crash: replayed through the reset),
		// then rewarded: the first is not learned, the second is.
		after := c.rank(pzRankRequest{Actions: []pzAction{{ID: "a"}, {ID: "b"}}, EventID: "after"})
		restartSame(t, h, &c)
		c.reward(waits.EventID, 1)
		c.reward(after.EventID, 1)
		st := h.state("pz")
		explored := st.Explored - before.Explored // (its reward is not learned either)
		if st.Ignored != before.Ignored+1+explored || st.Learned != before.Learned+1-explored {
			t.Fatalf("across restarts: %+v, before %+v", st.Counts, before.Counts)
		}
		before = h.state("pz")
		c.reward(pending.EventID, 1)
		st = h.state("pz")
		if st.Learned != before.Learned || st.Ignored != before.Ignored+1 {
			t.Fatalf("after the reset %+v, before %+v", st.Counts, before.Counts)
		}
		if again := h.call("GET", "/v1/units/one-7/ledger", nil, 200, nil); string(again) != string(ledger) {
			t.Fatalf("the ledger changed: %s, was %s", again, ledger)
		}
		c.get(pzV11, "/model/properties", &props)
		if !props.CreationTime.After(created) {
			t.Fatalf("creationTime %v, was %v", props.CreationTime, created)
		}
		var fresh rank.Model
		c.get(pzV10, "/model", &fresh)
		if fresh.Episodes > 1 || slices.ContainsFunc(fresh.Theta, func(v float64) bool { return v != 0 }) {
			t.Fatalf("the model after a reset: %+v", fresh)
		}
		pzRound(c, "two", 12)
		st = h.state("pz")
		c.get(pzV10, "/model", &m)
		h.restart()
		c.endpoint = h.http.URL
		sameState(t, "a restart", st, h.state("pz"))
		var again rank.Model
		c.get(pzV10, "/model", &again)
		if fmt.Sprint(again) != fmt.Sprint(m) {
			t.Fatalf("the model after a restart %+v, before %+v", again, m)
		}
	})
}

// TestPersonalizerLogs: logs DELETE (204) deletes the stored rewards
// that a release covers, and keeps the decisions (a retried rank is
// answered alike), the ledger and the learner; logs/properties' dateRange
// starts at the deletion.
func TestPersonalizerLogs(t *testing.T) {
	t.Parallel() // light: a few dozen requests
	storetest.ForStores(t, func(t *testing.T, dsn string) {
		h := start(t, dsn, Config{KeepLog: true})
		c := createPZ(t, h)
		var props struct {
			DateRange struct{ From, To time.Time } `json:"dateRange"`
		}
		c.get(pzV10, "/logs/properties", &props)
		from := props.DateRange.From
		if from.IsZero() || props.DateRange.To.Before(from) {
			t.Fatalf("properties %+v", props)
		}
		first := pzRound(c, "one", 40)
		lines := func() int { // the rewards the log holds
			_, b := h.do("GET", "/v1/experiments/pz/log", "", nil)
			return strings.Count(string(b), "\n") - strings.Count(string(b), `"reward":null`)
		}
		n := lines()
		ledger := h.call("GET", "/v1/units/one-5/ledger", nil, 200, nil)
		st := h.state("pz")
		if code, _, b := c.call("DELETE", pzV10, "/logs", nil); code != 204 || len(b) != 0 {
			t.Fatalf("delete: %d %s", code, b)
		}
		if after := lines(); after >= n {
			t.Fatalf("the log holds %d rewards after its deletion, %d before", after, n)
		}
		if again := h.call("GET", "/v1/units/one-5/ledger", nil, 200, nil); string(again) != string(ledger) {
			t.Fatalf("the ledger changed: %s, was %s", again, ledger)
		}
		if r := pzRound(c, "one", 1)[0]; fmt.Sprint(r) != fmt.Sprint(first[0]) {
			t.Fatalf("a retried rank: %+v, first %+v", r, first[0])
		}
		c.get(pzV11, "/logs/properties", &props)
		if !props.DateRange.From.After(from) {
			t.Fatalf("dateRange %+v, created %v", props.DateRange, from)
		}
		if got := h.state("pz"); fmt.Sprint(got.Counts, got.Releases) != fmt.Sprint(st.Counts, st.Releases) {
			t.Fatalf("the deletion changed the learner: %+v, was %+v", got.Counts, st.Counts)
		}
		pzRound(c, "two", 10)
		restartSame(t, h, &c)
	})
}

// TestPersonalizerAdminSDK: Microsoft's REST client of the
// v1.1-preview.3 API (@azure-rest/ai-personalizer 1.0.0-beta.1) ranks
// the specification's multi-slot example, rewards and activates it, and
// runs every management operation and the evaluations against the
// service (testdata/personalizer_admin_sdk.js), when node is present and
// DPBANDIT_PERSONALIZER_SDK names a folder of node modules where it is
// installed.
func TestPersonalizerAdminSDK(t *testing.T) {
	t.Parallel()
	h := start(t, storetest.SQLite(t), Config{KeepLog: true}) // (the evaluations read the log)
	h.create(pzSpec("pz"))
	pzRound(pzClient{t, h.http.URL, "pz", h.http.Client()}, "e", 20)
	nodeScript(t, "personalizer_admin_sdk.js", h.http.URL, "pz")
}

// TestPersonalizerOtherRoutes: every other Personalizer path is answered
// in the ErrorResponse shape: 404 ResourceNotFound with a key (the model
// import, a path below an evaluation's, among them), 401 without; a route's
// path by another method is 405 (TestPersonalizerRefusalsInItsShape).
func TestPersonalizerOtherRoutes(t *testing.T) {
	t.Parallel()
	h := start(t, storetest.SQLite(t), Config{})
	c := createPZ(t, h)
	for _, r := range []struct{ method, base, path string }{
		{"GET", pzV10, "/evaluations/e1/results"},
		{"PUT", pzV11, "/model"},
		{"PUT", pzV10, "/model"},
		{"GET", "/personalizer/v2", "/anything"},
	} {
		code, _, b := c.call(r.method, r.base, r.path, nil)
		wantError(t, r.method+" "+r.path, code, b, 404, "ResourceNotFound")
	}
	code, _, b := (pzClient{t, h.http.URL, "", h.http.Client()}).call("GET", pzV10, "/evaluations", nil)
	wantError(t, "no key", code, b, 401, "Unauthorized")
}

// TestPersonalizerConfigKeys: a tenant's key changes its own
// experiment's settings only, never another tenant's experiment of the
// same id.
func TestPersonalizerConfigKeys(t *testing.T) {
	t.Parallel()
	toks := twoTenantKeys(t)
	h := start(t, storetest.SQLite(t), Config{Tokens: toks})
	for _, tok := range []string{"aaaaaaaaaaaaaaaa-admin", "bbbbbbbbbbbbbbbb-admin"} {
		h.token = tok
		h.create(pzSpec("pz"))
	}
	a := pzClient{t, h.http.URL, "key-of-A-pz-xxxxxxxxx", h.http.Client()}
	b := pzClient{t, h.http.URL, "key-of-B-pz-xxxxxxxxx", h.http.Client()}
	if code, _, body := a.call("PUT", pzV10, "/configurations/policy", policyContract{"a", "adac-oful:lambda=5"}); code != 200 {
		t.Fatalf("put: %d %s", code, body)
	}
	if code, _, body := a.call("DELETE", pzV10, "/model", nil); code != 204 {
		t.Fatalf("reset: %d %s", code, body)
	}
	var p policyContract
	b.get(pzV10, "/configurations/policy", &p)
	if p.Arguments != "adac-oful-scaled:lambda=30:beta=0.3" {
		t.Fatalf("B's policy is %+v after A's change", p)
	}
	var st outcome.State
	h.token = "bbbbbbbbbbbbbbbb-admin"
	h.call("GET", "/v1/experiments/pz", nil, 200, &st)
	if len(st.Settings) != 0 {
		t.Fatalf("B's experiment has settings %+v", st.Settings)
	}
}
