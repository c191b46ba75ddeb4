package service

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/ope"
	"github.com/dpbandit/dpbandit/service/evaluation"
	"github.com/dpbandit/dpbandit/service/internal/storetest"
)

// Personalizer's Evaluations operations, called as a client written from
// the specification calls them (package evaluation's own tests check the
// numbers: service/evaluation/evaluation_test.go).

// evalSchemas are testdata/personalizer-evaluations-definitions.json's
// definitions, by version base.
func evalSchemas(t testing.TB) map[string]pzSchemas {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "personalizer-evaluations-definitions.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	out := map[string]pzSchemas{}
	for base, key := range map[string]string{pzV10: "v1.0", pzV11: "v1.1-preview.3"} {
		var d struct {
			Definitions pzSchemas `json:"definitions"`
		}
		if err := json.Unmarshal(doc[key], &d); err != nil {
			t.Fatal(err)
		}
		out[base] = d.Definitions
	}
	return out
}

// validEvaluation fails unless b is the specification's Evaluation of
// the version at base but for the one key it does not have, "dpbandit"
// (dpbandit's own results), and returns it decoded.
func validEvaluation(t testing.TB, sc map[string]pzSchemas, base string, b []byte) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s", b)
	}
	if _, ok := v["dpbandit"].(map[string]any); !ok {
		t.Fatalf("no dpbandit results: %s", b)
	}
	delete(v, "dpbandit")
	if err := sc[base].validate("Evaluation", must(json.Marshal(v))); err != nil {
		t.Fatalf("%s: %v: %s", base, err, b)
	}
	for _, k := range []string{"startTime", "endTime", "creationTime"} {
		if s, ok := v[k].(string); ok {
			if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
				t.Fatalf("%s %q: %v", k, s, err)
			}
		}
	}
	return v
}

// pzEvalError fails unless an answer is the version's ErrorResponse of
// that status and code.
func pzEvalError(t testing.TB, sc map[string]pzSchemas, base, what string, code int, b []byte, wantCode int, wantName string) {
	t.Helper()
	wantError(t, what, code, b, wantCode, wantName)
	if err := sc[base].validate("ErrorResponse", b); err != nil {
		t.Errorf("%s: %v", what, err)
	}
}

// specEvaluation is the specification's example (examples/Evaluations_Create.json)
// with a target this service evaluates in arguments, over every event
// decided so far.
func specEvaluation(args string) string {
	return fmt.Sprintf(`{"enableOfflineExperimentation": true, "name": "myFirstEvaluation",
	  "startTime": "2018-12-19T00:00:00Z", "endTime": %q,
	  "policies": [{"name": "Custom Learning settings 1", "arguments": %q}]}`, time.Now().Add(time.Hour).UTC().Format(time.RFC3339), args)
}

// createEvaluation creates an evaluation of the target args (specEvaluation)
// through c at version's path and returns its id and the answer; any
// answer but 201 with an id fails t.
func createEvaluation(t *testing.T, c pzClient, version, args string) (string, []byte) {
	t.Helper()
	code, _, b := c.call("POST", version, "/evaluations", specEvaluation(args))
	var ev struct {
		ID string `json:"id"`
	}
	if code != 201 || json.Unmarshal(b, &ev) != nil || ev.ID == "" {
		t.Fatalf("create: %d %s", code, b)
	}
	return ev.ID, b
}

// TestPersonalizerEvaluations: an evaluation is created (201, its
// Location), answered completed with every target's summary in the
// specification's shape (each version's schema) and dpbandit's own
// releases; reads answer it as created, to the byte, twice and after a
// restart; the list holds it; a deletion removes it (404
// EvaluationNotFound); bad bodies are 400 InvalidEvaluationContract naming
// the field, in the ErrorResponse shape, and spend nothing.
func TestPersonalizerEvaluations(t *testing.T) {
	t.Parallel()
	sc := evalSchemas(t)
	storetest.ForStores(t, func(t *testing.T, dsn string) {
		h := start(t, dsn, Config{KeepLog: true})
		c := createPZ(t, h)
		pzRound(c, "e", 30)
		code, _, b0 := c.call("POST", pzV10, "/evaluations", specEvaluation("--cb_explore_adf --epsilon 0.2 --dsjson --cb_type ips -l 0.5 --l1 1E-07 --power_t 0.5"))
		pzEvalError(t, sc, pzV10, "Vowpal Wabbit's arguments", code, b0, 400, "InvalidEvaluationContract")
		if !strings.Contains(string(b0), "policies") {
			t.Errorf("the message does not name the field: %s", b0)
		}
		req := specEvaluation("current")
		code, header, b := c.exchange("POST", pzV10, "/evaluations", req)
		hdr := header.Get("Location")
		if code != 201 {
			t.Fatalf("create: %d %s", code, b)
		}
		created := validEvaluation(t, sc, pzV10, b)
		id := created["id"].(string)
		if hdr != pzV10+"/evaluations/"+id || created["status"] != "completed" || created["jobId"] != id {
			t.Fatalf("Location %q, evaluation %s", hdr, b)
		}
		results := created["policyResults"].([]any)
		if len(results) != 4 {
			t.Fatalf("%d policy results: %s", len(results), b)
		}
		for i, r := range results {
			total := r.(map[string]any)["totalSummary"].(map[string]any)
			if total["ipsEstimatorDenominator"] != 30.0 || total["aggregateTimeWindow"] == "" {
				t.Fatalf("result %d: %v", i, total)
			}
		}
		own := struct {
			Policies []struct {
				Releases []struct {
					Estimator string  `json:"estimator"`
					Value     float64 `json:"value"`
				} `json:"releases"`
			} `json:"policies"`
		}{}
		var wrap struct {
			Dpbandit json.RawMessage `json:"dpbandit"`
		}
		if json.Unmarshal(b, &wrap) != nil || json.Unmarshal(wrap.Dpbandit, &own) != nil || len(own.Policies) != 4 || len(own.Policies[3].Releases) != 3 {
			t.Fatalf("dpbandit's results: %s", wrap.Dpbandit)
		}
		ips := own.Policies[0].Releases[0].Value
		if got := results[0].(map[string]any)["totalSummary"].(map[string]any)["ipsEstimatorNumerator"].(float64); got != ips*30 {
			t.Fatalf("ipsEstimatorNumerator %v, the released IPS %v times 30", got, ips)
		}
		read := func(what, base string) []byte {
			t.Helper()
			code, _, got := c.call("GET", base, "/evaluations/"+id, nil)
			if code != 200 {
				t.Fatalf("%s: %d %s", what, code, got)
			}
			validEvaluation(t, sc, base, got)
			return got
		}
		first := read("first read", pzV10)
		if string(read("second read", pzV10)) != string(first) {
			t.Fatal("two reads differ")
		}
		if v, _ := json.Marshal(created); string(must(json.Marshal(validEvaluation(t, sc, pzV10, first)))) != string(v) {
			t.Fatalf("the read differs from the creation:\n%s\n%s", first, v)
		}
		v11 := validEvaluation(t, sc, pzV11, read("v1.1-preview.3", pzV11))
		sources := ""
		for _, r := range v11["policyResults"].([]any) {
			sources += r.(map[string]any)["policySource"].(string) + " "
		}
		if sources != "Online Baseline Random Custom " || v11["evaluationType"] != "Manual" {
			t.Fatalf("v1.1-preview.3: sources %q, %v", sources, v11)
		}
		pzRound(c, "more", 5) // the log grows; the evaluation does not change
		h.restart()
		c.endpoint = h.http.URL
		if string(read("after a restart", pzV10)) != string(first) {
			t.Fatal("the evaluation changed at a restart")
		}
		for _, base := range []string{pzV10, pzV11} {
			code, _, lb := c.call("GET", base, "/evaluations", nil)
			var list []json.RawMessage
			if code != 200 || json.Unmarshal(lb, &list) != nil || len(list) != 1 {
				t.Fatalf("list: %d %s", code, lb)
			}
			validEvaluation(t, sc, base, list[0])
		}
		// Bad bodies: 400, the field named, nothing spent.
		for _, bad := range []struct{ field, body string }{
			{"name", strings.Replace(req, `"name": "myFirstEvaluation",`, ``, 1)},
			{"startTime", strings.Replace(req, `"2018-12-19T00:00:00Z"`, `"19/12/2018"`, 1)},
			{"endTime", strings.Replace(req, `"2018-12-19T00:00:00Z"`, `"2999-01-01T00:00:00Z"`, 1)},
			{"policies", `{"name": "x", "startTime": "2018-12-19T00:00:00Z", "endTime": "2019-01-19T00:00:00Z"}`},
			{"body", strings.Replace(req, `"name"`, `"nom"`, 1)},
			{"body", `{"name": "x",`},
			{"body", `[]`},
		} {
			code, _, b := c.call("POST", pzV11, "/evaluations", bad.body)
			pzEvalError(t, sc, pzV11, bad.field, code, b, 400, "InvalidEvaluationContract")
			if !strings.Contains(string(b), bad.field) {
				t.Errorf("%s: the message does not name the field: %s", bad.field, b)
			}
		}
		code, _, b = c.call("POST", pzV11, "/evaluations", `{"name": "x", "startTime": "2018-12-19T00:00:00Z", "endTime": "2019-01-19T00:00:00Z", "policies": []}`)
		pzEvalError(t, sc, pzV11, "a range without events", code, b, 400, "NoLogsExistInDateRange")
		code, _, b = c.call("POST", pzV10, "/evaluations", `{"name": "x", "startTime": "2018-12-19T00:00:00Z", "endTime": "2019-01-19T00:00:00Z", "policies": []}`)
		pzEvalError(t, sc, pzV10, "a range without events (v1.0)", code, b, 400, "InvalidEvaluationContract")
		if code, _, lb := c.call("GET", pzV11, "/evaluations", nil); code != 200 || strings.Count(string(lb), `"jobId"`) != 1 {
			t.Fatalf("refusals stored evaluations: %s", lb)
		}
		// Deletion.
		if code, _, b := c.call("DELETE", pzV10, "/evaluations/"+id, nil); code != 204 || len(b) != 0 {
			t.Fatalf("delete: %d %s", code, b)
		}
		code, _, b = c.call("GET", pzV10, "/evaluations/"+id, nil)
		pzEvalError(t, sc, pzV10, "a deleted evaluation", code, b, 404, "EvaluationNotFound")
		code, _, b = c.call("DELETE", pzV11, "/evaluations/nope", nil)
		pzEvalError(t, sc, pzV11, "an unknown evaluation", code, b, 404, "EvaluationNotFound")
		if code, _, lb := c.call("GET", pzV10, "/evaluations", nil); code != 200 || string(lb) != "[]\n" {
			t.Fatalf("list after the deletion: %d %q", code, lb)
		}
	})
}

// TestPersonalizerEvaluationsBudget: every evaluation spends the
// experiment's rho from its evaluation ledger, deleted ones included;
// past evaluation.MaxPerExperiment the creation is 409 OperationNotAllowed and
// nothing is drawn or stored; without --keep-log there is no log to read
// (409).
func TestPersonalizerEvaluationsBudget(t *testing.T) {
	t.Parallel()
	sc := evalSchemas(t)
	h := start(t, storetest.SQLite(t), Config{KeepLog: true})
	c := createPZ(t, h)
	pzRound(c, "e", 10)
	var last string
	for i := range 10 {
		code, _, b := c.call("POST", pzV11, "/evaluations", specEvaluation("uniform"))
		if code != 201 {
			t.Fatalf("evaluation %d: %d %s", i, code, b)
		}
		last = validEvaluation(t, sc, pzV11, b)["id"].(string)
	}
	if code, _, b := c.call("DELETE", pzV11, "/evaluations/"+last, nil); code != 204 {
		t.Fatalf("delete: %d %s", code, b)
	}
	code, _, b := c.call("POST", pzV11, "/evaluations", specEvaluation("uniform"))
	pzEvalError(t, sc, pzV11, "past the cap", code, b, 409, "OperationNotAllowed")
	if code, _, lb := c.call("GET", pzV11, "/evaluations", nil); code != 200 || strings.Count(string(lb), `"jobId"`) != 9 {
		t.Fatalf("list: %s", lb)
	}
	h2 := start(t, storetest.SQLite(t), Config{})
	c2 := createPZ(t, h2)
	pzRound(c2, "e", 3)
	code, _, b = c2.call("POST", pzV11, "/evaluations", specEvaluation("uniform"))
	pzEvalError(t, sc, pzV11, "without --keep-log", code, b, 409, "OperationNotAllowed")
}

// TestPersonalizerEvaluationKeys: a tenant's key never reaches another
// tenant's evaluations: B's key neither reads, lists nor deletes A's
// evaluation of A's experiment "pz", though B's own experiment is
// named "pz" too.
func TestPersonalizerEvaluationKeys(t *testing.T) {
	t.Parallel()
	h := start(t, storetest.SQLite(t), Config{Tokens: twoTenantKeys(t), KeepLog: true})
	for _, tok := range []string{"aaaaaaaaaaaaaaaa-admin", "bbbbbbbbbbbbbbbb-admin"} {
		h.token = tok
		h.create(pzSpec("pz"))
	}
	a := pzClient{t, h.http.URL, "key-of-A-pz-xxxxxxxxx", h.http.Client()}
	b := pzClient{t, h.http.URL, "key-of-B-pz-xxxxxxxxx", h.http.Client()}
	pzRound(a, "a", 10)
	pzRound(b, "b", 10)
	id, _ := createEvaluation(t, a, pzV10, "baseline")
	code, _, body := b.call("GET", pzV10, "/evaluations/"+id, nil)
	wantError(t, "B reads A's evaluation", code, body, 404, "EvaluationNotFound")
	code, _, body = b.call("DELETE", pzV10, "/evaluations/"+id, nil)
	wantError(t, "B deletes A's evaluation", code, body, 404, "EvaluationNotFound")
	if code, _, body = b.call("GET", pzV10, "/evaluations", nil); code != 200 || string(body) != "[]\n" {
		t.Fatalf("B's list: %d %s", code, body)
	}
	if code, _, body = a.call("GET", pzV10, "/evaluations/"+id, nil); code != 200 {
		t.Fatalf("A's read after B's attempts: %d %s", code, body)
	}
}

// TestPersonalizerEvaluationReplicas: two replicas on one PostgreSQL; an
// evaluation created through either is read through the other as
// created, to the byte, and, once the replica serving the experiment is
// killed, from the replica that takes it over from the store: the
// release is stored, never drawn again.
func TestPersonalizerEvaluationReplicas(t *testing.T) {
	t.Parallel() // mostly waiting for the lease to expire
	k, c0, c1 := pzCluster(t)
	pzRound(c0, "a", 10)
	id, created := createEvaluation(t, c1, pzV10, "baseline")
	if code, _, b := c0.call("GET", pzV10, "/evaluations/"+id, nil); code != 200 || string(b) != string(created) {
		t.Fatalf("through the other replica: %d %s\ncreated %s", code, b, created)
	}
	checkReplicaEvalDebits(t, k, 10)
	b := killHolder(t, k, pzV10, "/evaluations/"+id)
	if string(b) != string(created) {
		t.Fatalf("after the takeover: %s\ncreated %s", b, created)
	}
}

// checkReplicaEvalDebits fails unless each of the n units a-0, ... of
// pz (rho 1, its events its units) is debited 1 rho by the evaluation,
// in its ledger row "pz#evaluations" and in its spend row, which the
// replicas' --unit-budget reserves (ledger.Ledger.Reserve): the spend
// row is the ledger's total.
func checkReplicaEvalDebits(t *testing.T, k *cluster, n int) {
	t.Helper()
	db := storetest.DB(t, k.dsn)
	for i := range n {
		u := fmt.Sprint("a-", i)
		var evals, total, spend int64
		err := db.QueryRow(`SELECT COALESCE(SUM(nano) FILTER (WHERE exp = 'default/pz#evaluations'), 0), COALESCE(SUM(nano), 0),
			(SELECT nano FROM unit_spend WHERE unit_id = $1) FROM ledger WHERE unit_id = $1`, u).Scan(&evals, &total, &spend)
		if err != nil || evals != 1e9 || spend != total {
			t.Fatalf("unit %s: its evaluations' row %d, ledger %d, spend row %d (%v): want 1e9 and the spend row the ledger's", u, evals, total, spend, err)
		}
	}
}

// TestEvalSchemasFail: the evaluations' schemas refuse what the
// specification does not allow, through totalSummary's allOf too, so
// that the spec checks above can fail.
func TestEvalSchemasFail(t *testing.T) {
	sc := evalSchemas(t)
	summary := `{"timeStamp":"2019-01-19T00:00:00Z","ipsEstimatorNumerator":1,"ipsEstimatorDenominator":2,"snipsEstimatorDenominator":2,"aggregateTimeWindow":"PT0S","nonZeroProbability":2,"confidenceInterval":0.1%s}`
	ev := func(status, extra string) string {
		s := fmt.Sprintf(summary, extra)
		return fmt.Sprintf(`{"id":"a","name":"b","startTime":"2018-12-19T00:00:00Z","endTime":"2019-01-19T00:00:00Z","jobId":"a","status":%q,
		  "policyResults":[{"name":"p","arguments":"uniform","summary":[%s],"totalSummary":%s}],"featureImportance":[]}`, status, s, s)
	}
	if err := sc[pzV10].validate("Evaluation", []byte(ev("completed", ""))); err != nil {
		t.Fatalf("a valid evaluation: %v", err)
	}
	for what, c := range map[string]struct{ base, body string }{
		"an unknown status":            {pzV10, ev("done", "")},
		"v1.1's averageReward in v1.0": {pzV10, ev("completed", `,"averageReward":0.5`)},
		"a field of neither":           {pzV11, ev("completed", `,"sum":1`)},
		"v1.1's status in v1.0":        {pzV10, ev("timeout", "")},
		"a number as a string (v1.1)":  {pzV11, strings.Replace(ev("completed", ""), `"ipsEstimatorDenominator":2`, `"ipsEstimatorDenominator":"2"`, 2)},
	} {
		if err := sc[c.base].validate("Evaluation", []byte(c.body)); err == nil {
			t.Errorf("%s: accepted", what)
		}
	}
	if err := sc[pzV11].validate("Evaluation", []byte(ev("timeout", `,"averageReward":0.5`))); err != nil {
		t.Fatalf("a valid v1.1-preview.3 evaluation: %v", err)
	}
}

// TestPersonalizerEvaluationLog: GET .../log?format=evaluation is the log
// an evaluation reads, as `dpbandit evaluate` reads it: ope.EvaluateAll
// of the online (logging) and baseline (arm:0) targets on it, with the
// evaluation's options (--arms 50 --clip 20 --lo 0 --hi 1
// --max-events-per-unit 1), counts the evaluation's events and gives
// its effective sample sizes (released exactly) to 1e-12 and its
// estimates within 6 noise scales of each IPS release (a Gaussian beyond
// 6 sigma: probability 2e-9).
func TestPersonalizerEvaluationLog(t *testing.T) {
	t.Parallel()
	h := start(t, storetest.SQLite(t), Config{KeepLog: true})
	c := createPZ(t, h)
	pzRound(c, "e", 60)
	_, b := createEvaluation(t, c, pzV11, "baseline")
	var ev struct {
		Dpbandit evaluation.Evaluation `json:"dpbandit"`
	}
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatal(err)
	}
	q := "?format=evaluation&start=2018-12-19T00:00:00Z&end=" + ev.Dpbandit.End.Format(time.RFC3339Nano)
	code, lb := h.do("GET", "/v1/experiments/pz/log"+q, "", nil)
	if code != 200 {
		t.Fatalf("log: %d %s", code, lb)
	}
	var pols []ope.Policy
	for _, s := range []string{"logging", "arm:0"} {
		p, err := ope.ParsePolicy(s)
		if err != nil {
			t.Fatal(err)
		}
		pols = append(pols, p)
	}
	open := func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(lb)), nil }
	res, err := ope.EvaluateAll(open, pols, ope.Options{Arms: 50, Clip: 20, Rewards: &mechanism.Bounds{Lo: 0, Hi: 1}, MaxEventsPerUnit: 1})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		got := ev.Dpbandit.Policies[i]
		ips := got.Releases[0]
		if r.Events != ev.Dpbandit.Events || r.Events != 60 || math.Abs(r.ESS-got.ESS) > 1e-12*r.ESS ||
			math.Abs(ips.Value-r.Estimate[1].Value) > 6*ips.Scale {
			t.Fatalf("%s: dpbandit evaluate %+v (ESS %v), the evaluation's %+v", got.Arguments, r.Estimate, r.ESS, got)
		}
	}
	for _, bad := range []string{"?format=csv", "?format=evaluation&start=yesterday"} {
		if code, b := h.do("GET", "/v1/experiments/pz/log"+bad, "", nil); code != 400 {
			t.Errorf("%s: %d %s", bad, code, b)
		}
	}
}
