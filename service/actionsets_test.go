package service

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dpbandit/dpbandit/service/internal/storetest"
)

// Rank requests whose actions repeat: a store keeps each distinct action
// list once (the action_sets table), and each rank's event its context
// with a reference to it (store.Shared).

// pzActions is an action list of n articles; variant makes another list.
func pzActions(n, variant int) []pzAction {
	acts := make([]pzAction, n)
	for k := range acts {
		f := map[string]any{"title": fmt.Sprintf("article %d-%d", variant, k), "topic": fmt.Sprint("t", k%3)}
		for j := range 12 {
			f[fmt.Sprint("f", j)] = float64((k*31+j*17+variant*7)%1000) / 1000
		}
		acts[k] = pzAction{ID: fmt.Sprint("a", k), Features: []map[string]any{{"article": f}}}
	}
	return acts
}

// pzRankText is rank i's request as a client sends it: one of two action
// lists, some actions excluded, some activations deferred, and the text
// at times indented (the service stores it compacted).
func pzRankText(t testing.TB, i int) []byte {
	req := pzRankRequest{ContextFeatures: []map[string]any{{"visitor": map[string]any{"segment": fmt.Sprint("s", i%4)}}, {"time": map[string]any{"hour": i % 24}}},
		Actions: pzActions(6, i%2), EventID: fmt.Sprint("ev", i), DeferActivation: i%7 == 0}
	if i%5 == 0 {
		req.ExcludedActions = []string{"a1"}
	}
	b, err := json.Marshal(req)
	if i%3 == 0 {
		b, err = json.MarshalIndent(req, "", "  ")
	}
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// pzLog reads an experiment's log: each line's event id and context.
func pzLog(t testing.TB, h *harness, id string) map[string]string {
	t.Helper()
	return logAt(t, h.http.Client(), h.http.URL+"/v1/experiments/"+id+"/log")
}

// logAt reads the log at url: each line's event id and context.
func logAt(t testing.TB, hc *http.Client, url string) map[string]string {
	t.Helper()
	resp, err := hc.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("log: %d", resp.StatusCode)
	}
	out := map[string]string{}
	for dec := json.NewDecoder(resp.Body); dec.More(); {
		var rec struct {
			EventID string          `json:"event_id"`
			Context json.RawMessage `json:"context"`
		}
		if err := dec.Decode(&rec); err != nil {
			t.Fatal(err)
		}
		out[rec.EventID] = string(rec.Context)
	}
	return out
}

// compacted is a request as the service stores it.
func compacted(t testing.TB, b []byte) string {
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// TestRankActionsStoredOnce: on SQLite, ranks over two action lists
// store the lists once each (two rows of action_sets), and only the
// first rank of each list in each of its texts (a list is known by its
// text as sent), before it repeated, stores its context whole
// (PostgreSQL stores them all whole, for the replicas of earlier
// versions: sqldb.Writes); the log gives every
// context back whole, as it was sent (compacted), before and after a
// restart, and the experiment replays to the same model and state and
// goes on deciding.
func TestRankActionsStoredOnce(t *testing.T) {
	t.Parallel()
	storetest.ForStores(t, func(t *testing.T, dsn string) {
		h := start(t, dsn, Config{KeepLog: true})
		c := createPZ(t, h)
		want := map[string]string{}
		for i := range 40 {
			raw := pzRankText(t, i)
			c.rank(string(raw))
			if i%7 == 0 && i%14 == 0 {
				if code, _ := c.post("/events/"+fmt.Sprint("ev", i)+"/activate", nil); code != http.StatusNoContent {
					t.Fatalf("activate ev%d: %d", i, code)
				}
			}
			if i%4 != 3 {
				c.reward(fmt.Sprint("ev", i), float64(i%2))
			}
			want[fmt.Sprint("ev", i)] = compacted(t, raw)
		}
		db, q := rawDB(t, dsn)
		var sets, whole int
		if err := db.QueryRow(`SELECT COUNT(*) FROM action_sets`).Scan(&sets); err != nil {
			t.Fatal(err)
		}
		actions := len(must(json.Marshal(pzActions(6, 0))))
		if err := db.QueryRow(q(`SELECT COUNT(*) FROM events WHERE LENGTH(context) >= ?`), actions).Scan(&whole); err != nil {
			t.Fatal(err)
		}
		if pg := storetest.IsPostgres(dsn); pg && (sets != 0 || whole != 40) || !pg && (sets != 2 || whole != 4) {
			t.Fatalf("%d action lists stored, %d contexts stored whole; want 2 and 4 (the first rank of each list in each of its two texts, compact and indented) on SQLite, 0 and 40 on PostgreSQL", sets, whole)
		}
		check := func(when string) {
			t.Helper()
			got := pzLog(t, h, "pz")
			for ev, ctxt := range got {
				if ctxt != want[ev] {
					t.Fatalf("%s: %s's context\n%s\nwant\n%s", when, ev, ctxt, want[ev])
				}
			}
			if len(got) == 0 {
				t.Fatalf("%s: an empty log", when)
			}
		}
		check("before a restart")
		model := func() string {
			_, _, b := c.call("GET", "/personalizer/v1.0", "/model", nil)
			return string(b)
		}
		state := func() string {
			_, b := h.do("GET", "/v1/experiments/pz", "", nil)
			return string(b)
		}
		m0, s0 := model(), state()
		h.restart()
		c.endpoint, c.hc = h.http.URL, h.http.Client()
		check("after a restart")
		if m1, s1 := model(), state(); m1 != m0 || s1 != s0 || h.state("pz").Failed != "" {
			t.Fatalf("after a restart: model %s\nstate %s\nwant %s\n%s", m1, s1, m0, s0)
		}
		checkRanking(t, pzRankRequest{Actions: pzActions(6, 1)}, c.rank(string(pzRankText(t, 41))))
	})
}

// TestStoreOfPersonalizerBeforeActionSets opens a SQLite store written by
// 2f2d4dc, whose events hold each rank's whole request
// (testdata/store-pz-2f2d4dc.db, made by store-pz-2f2d4dc.py: 80 ranks over
// two action lists, with excluded actions, deferred and activated
// events, rewards, then SIGKILL): it replays as 2f2d4dc replayed it, the
// log, the model and the state equal to the bit to what 2f2d4dc served
// from it (the .log.jsonl, .model.json and .state.json beside it). Ranks
// taken after it, stored by reference, replay with the old ones.
func TestStoreOfPersonalizerBeforeActionSets(t *testing.T) {
	t.Parallel()
	at, err := time.Parse(time.RFC3339, "2026-11-27T14:05:00Z") // the fixture's time: its windows still open
	if err != nil {
		t.Fatal(err)
	}
	clock := storetest.NewClock(at)
	h := start(t, storeOf(t, "store-pz-2f2d4dc.db"), Config{KeepLog: true, Now: clock.Now})
	c := pzClient{t, h.http.URL, "pz", h.http.Client()}
	fixture := func(ext string) string {
		b, err := os.ReadFile(filepath.Join("testdata", "store-pz-2f2d4dc"+ext))
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
	served := func() (log, model, state string) {
		_, b := h.do("GET", "/v1/experiments/pz/log", "", nil)
		_, _, m := c.call("GET", "/personalizer/v1.0", "/model", nil)
		_, s := h.do("GET", "/v1/experiments/pz", "", nil)
		return strings.TrimSpace(string(b)), strings.TrimSpace(string(m)), strings.TrimSpace(string(s))
	}
	log, model, state := served()
	if log != fixture(".log.jsonl") || model != fixture(".model.json") || state != fixture(".state.json") {
		t.Fatalf("the store of 2f2d4dc replays otherwise:\nmodel %s\nwant  %s\nstate %s\nwant  %s\nlogs equal: %v",
			model, fixture(".model.json"), state, fixture(".state.json"), log == fixture(".log.jsonl"))
	}
	want := map[string]string{}
	for i := 80; i < 100; i++ {
		raw := pzRankText(t, i)
		c.rank(string(raw))
		c.reward(fmt.Sprint("ev", i), 1)
		want[fmt.Sprint("ev", i)] = compacted(t, raw)
	}
	_, m0, s0 := served()
	h.restart()
	c.endpoint, c.hc = h.http.URL, h.http.Client()
	got := pzLog(t, h, "pz")
	for ev, ctxt := range want {
		if got[ev] != ctxt {
			t.Fatalf("%s's context after a restart: %s, want %s", ev, got[ev], ctxt)
		}
	}
	if _, m1, s1 := served(); m1 != m0 || s1 != s0 {
		t.Fatalf("after a restart: model %s\nstate %s\nwant %s\n%s", m1, s1, m0, s0)
	}
}

// TestRanksByReferenceSurviveKill: the real binary, killed with SIGKILL
// after acknowledging ranks and rewards whose action lists it stores by
// reference, serves every acknowledged context whole after its restart.
func TestRanksByReferenceSurviveKill(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "state.db")
	p := serve(t, "--db", db, "--keep-log")
	hc := &http.Client{Timeout: 30 * time.Second}
	if code, b := post(hc, p.base+"/v1/experiments", pzSpec("pz")); code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, b)
	}
	c := pzClient{t, p.base, "pz", hc}
	want := map[string]string{}
	for i := range 30 {
		raw := pzRankText(t, i)
		c.rank(string(raw))
		c.reward(fmt.Sprint("ev", i), 1)
		want[fmt.Sprint("ev", i)] = compacted(t, raw)
	}
	p.kill()
	p = serve(t, "--db", db, "--keep-log")
	defer p.kill()
	got := logAt(t, hc, p.base+"/v1/experiments/pz/log")
	for ev, ctxt := range want {
		if got[ev] != ctxt {
			t.Fatalf("%s's context after SIGKILL: %s, want %s", ev, got[ev], ctxt)
		}
	}
	var st struct {
		Failed    string `json:"failed"`
		Decisions int    `json:"decisions"`
	}
	if err := get(hc, p.base+"/v1/experiments/pz", &st); err != nil || st.Failed != "" || st.Decisions != 30 {
		t.Fatalf("after SIGKILL: %+v, %v", st, err)
	}
}
