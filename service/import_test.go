package service

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/dpbandit/dpbandit/service/api"
	"github.com/dpbandit/dpbandit/service/internal/storetest"
	"github.com/dpbandit/dpbandit/service/outcome"
)

// logRecord is a JSON line of a log as the service exports it.
func logRecord(id, unit string, arm int, reward, pscore float64) string {
	m := map[string]any{"event_id": id, "action": arm, "reward": reward, "pscore": pscore}
	if unit != "" {
		m["unit_id"] = unit
	}
	b, _ := json.Marshal(m)
	return string(b) + "\n"
}

// uniformLog is a log of n events of a uniform logging policy over the
// arms of means, with Bernoulli rewards (seeded), ids prefix0, ...
// and no unit (each event its own).
func uniformLog(means []float64, n int, seed uint64, prefix string) string {
	r := rand.New(rand.NewPCG(seed, 1))
	var b strings.Builder
	for i := range n {
		a := r.IntN(len(means))
		x := 0.0
		if r.Float64() < means[a] {
			x = 1
		}
		b.WriteString(logRecord(fmt.Sprintf("%s%d", prefix, i), "", a, x, 1/float64(len(means))))
	}
	return b.String()
}

// importLog posts a log to an experiment's import and decodes the answer;
// it fails the test unless the status is want.
func (h *harness) importLog(id, query, ctype, log string, want int) api.ImportAnswer {
	h.t.Helper()
	code, b := h.do("POST", "/v1/experiments/"+id+"/import"+query, ctype, []byte(log))
	if code != want {
		h.t.Fatalf("import into %s: status %d, want %d: %s", id, code, want, b)
	}
	var ans api.ImportAnswer
	if err := json.Unmarshal(b, &ans); err != nil {
		h.t.Fatalf("import answer: %v: %s", err, b)
	}
	return ans
}

// TestImportDebitsTheLedgerAndTheCapBinds: an imported log's rewards are
// debited from their units as live ones are (k rewards of a unit cost
// k^2 times the first's), and the cap binds on a unit that appears in
// the log and then live. Alice's three logged events lead the log's
// stacks of arms 0 and 1, which the policy reads first (package importer):
// at rho 0.5 they cost 5e8, 1.5e9 and 2.5e9 nano-rho, 4.5e9 in all, the
// cap; her next reward, live, would cost 3.5e9 more and is refused
// (unit_budget), before and after a restart.
func TestImportDebitsTheLedgerAndTheCapBinds(t *testing.T) {
	eachStore(t, Config{UnitBudget: 4.5e9, Entropy: rand.NewChaCha8([32]byte{3})}, func(t *testing.T, h *harness) {
		spec := storetest.BernoulliSpec("warm", 2, 0.5)
		spec["max_rewards_per_unit"] = 5
		h.create(spec)
		log := logRecord("a0", "alice", 0, 1, 0.5) + logRecord("a1", "alice", 1, 0, 0.5) + logRecord("a2", "alice", 0, 1, 0.5) +
			uniformLog([]float64{0.7, 0.3}, 80, 1, "e")
		ans := h.importLog("warm", "", "application/x-ndjson", log, 200)
		t.Logf("import: %+v", ans.Result)
		if ans.Learned < 3 || ans.NanoRho != 4.5e9+5e8*(ans.Learned-3) || ans.UnitsDebited != int(ans.Learned-2) || ans.CapNanoRho != 4.5e9 {
			t.Fatalf("import answer %+v: want alice's 3 rewards (4.5e9 nano-rho) and 5e8 for each other learned one, one unit each", ans.Result)
		}
		if st := ans.State; st.Imported == nil || *st.Imported != ans.Totals || st.Learned != ans.Learned {
			t.Fatalf("state after the import: %+v, imported %+v; want the import's totals %+v", st.Counts, st.Imported, ans.Totals)
		}
		led := h.ledger("alice")
		if led.TotalNanoRho != 4.5e9 || len(led.Experiments) != 1 || led.Experiments[0].Rewards != 3 {
			t.Fatalf("alice's ledger after the import: %+v, want 3 rewards for 4.5e9 nano-rho", led)
		}
		h.decide("warm", "live-alice", "alice")
		if res := h.reward("warm", "live-alice", 1); res.Learned || res.Reason != "unit_budget" {
			t.Fatalf("alice's live reward after her logged ones: %+v, want refused by the cap (unit_budget)", res)
		}
		before := h.state("warm").Imported
		h.restart()
		if st := h.state("warm"); st.Imported == nil || *st.Imported != *before {
			t.Fatalf("imported totals after a restart %+v, before %+v", st.Imported, before)
		}
		h.decide("warm", "live-alice-2", "alice")
		if res := h.reward("warm", "live-alice-2", 1); res.Reason != "unit_budget" {
			t.Fatalf("after a restart, alice's live reward: %+v, want unit_budget", res)
		}
	})
}

// TestImportIsIdempotent: importing the same log again changes nothing
// (its marker, or each event's id, is known), and its answer counts the
// log's records as they are: the events the first import used as already
// imported, the id of a live decision and a repeated id as such, and the
// events the first import did not reach as unused (it called every record
// already imported: 300 of 302 here, where the first import used a part,
// events no import had used among them); an event id a live decision used
// is skipped and reported, never overwritten; the imported totals survive
// a restart.
func TestImportIsIdempotent(t *testing.T) {
	eachStore(t, Config{Entropy: rand.NewChaCha8([32]byte{4})}, func(t *testing.T, h *harness) {
		h.create(storetest.BernoulliSpec("idem", 3, 0.5))
		h.decide("idem", "live1", "bob")
		log := logRecord("live1", "bob", 0, 1, 1.0/3) + uniformLog([]float64{0.2, 0.5, 0.8}, 300, 2, "x") + logRecord("x7", "", 1, 0, 1.0/3)
		first := h.importLog("idem", "", "application/x-ndjson", log, 200)
		if first.LiveIDs != 1 || first.Duplicates != 1 || len(first.Skipped) != 2 || first.Skipped[0].EventID != "live1" || first.Skipped[0].Line != 1 || first.Skipped[1].Line != 302 {
			t.Fatalf("first import: %+v, want live1 (line 1) skipped as a live id and x7 (line 302) as a duplicate", first.Result)
		}
		if first.Events == 0 || first.Unused == 0 || first.Logged != 302 {
			t.Fatalf("first import: %+v, want some events used and some unused", first.Result)
		}
		st1 := h.state("idem")
		second := h.importLog("idem", "", "application/x-ndjson", log, 200)
		st2 := h.state("idem")
		if second.Operations != 0 || second.Events != 0 || second.AlreadyImported == 0 {
			t.Fatalf("second import of the same log: %+v, want nothing done", second.Result)
		}
		if int64(second.AlreadyImported) != first.Events || second.Unused != first.Unused || second.LiveIDs != first.LiveIDs || second.Duplicates != first.Duplicates {
			t.Fatalf("the same log again: already imported %d, unused %d, live ids %d, duplicates %d; want %d, %d, %d, %d (the first import's events, unused, live ids, duplicates)",
				second.AlreadyImported, second.Unused, second.LiveIDs, second.Duplicates, first.Events, first.Unused, first.LiveIDs, first.Duplicates)
		}
		if st1.Decisions != st2.Decisions || st1.Learned != st2.Learned || st1.Releases != st2.Releases || *st1.Imported != *st2.Imported {
			t.Fatalf("the second import changed the state: %+v then %+v", st1.Counts, st2.Counts)
		}
		// A log of the used events alone: each is known by its id.
		var used strings.Builder
		for _, l := range strings.SplitAfter(log, "\n")[1:3] {
			used.WriteString(l)
		}
		if third := h.importLog("idem", "", "application/x-ndjson", used.String(), 200); third.Operations != 0 || third.AlreadyImported+third.Unused != 2 {
			t.Fatalf("import of 2 events of the log: %+v, want nothing done", third.Result)
		}
		h.restart()
		if st := h.state("idem"); *st.Imported != *st1.Imported || st.Decisions != st1.Decisions {
			t.Fatalf("after a restart: %+v imported %+v, before %+v", st.Counts, st.Imported, st1.Imported)
		}
		if again := h.importLog("idem", "", "application/x-ndjson", log, 200); again.Operations != 0 {
			t.Fatalf("after a restart, the same log again: %+v", again.Result)
		}
	})
}

// TestImportRefusesBadRecords: records with unusable propensities (0,
// over 1, missing), a reward that is not a number or an action outside
// the arms refuse the import whole (422), naming each line, and nothing
// changes; with skip_invalid=true they are left out and counted, and the
// rest is imported. A reward outside the reward range refuses the import.
func TestImportRefusesBadRecords(t *testing.T) {
	eachStore(t, Config{}, func(t *testing.T, h *harness) {
		h.create(storetest.BernoulliSpec("bad", 2, 0.5))
		log := logRecord("g1", "", 0, 1, 0.5) + logRecord("g2", "", 1, 0, 0.5) +
			logRecord("b3", "", 0, 1, 0) + // line 3: pscore 0
			`{"event_id":"b4","action":1,"reward":"NaN","pscore":0.5}` + "\n" + // line 4: not a number
			logRecord("b5", "", 1, 1, 1.5) + // line 5: pscore over 1
			logRecord("b6", "", 7, 1, 0.5) + // line 6: action outside the 2 arms
			`{"event_id":"b7","action":1,"reward":1}` + "\n" + // line 7: no pscore
			uniformLog([]float64{0.5, 0.5}, 40, 3, "g")
		ans := h.importLog("bad", "", "application/x-ndjson", log, 422)
		var lines []int
		for _, r := range ans.RefusedRecords {
			lines = append(lines, r.Line)
		}
		if ans.Refused != 5 || fmt.Sprint(lines) != "[3 4 5 6 7]" {
			t.Fatalf("refused %d records at lines %v, want 5 at [3 4 5 6 7]: %+v", ans.Refused, lines, ans.RefusedRecords)
		}
		if st := h.state("bad"); st.Decisions != 0 || st.Imported != nil {
			t.Fatalf("a refused import changed the experiment: %+v", st.Counts)
		}
		ans = h.importLog("bad", "?skip_invalid=true", "application/x-ndjson", log, 200)
		if ans.Refused != 5 || ans.Events == 0 || ans.State == nil || ans.State.Imported == nil {
			t.Fatalf("with skip_invalid: %+v, want 5 refused and the rest imported", ans)
		}
		h.create(storetest.BernoulliSpec("range", 2, 0.5))
		h.importLog("range", "", "application/x-ndjson", logRecord("r1", "", 0, 1, 0.5)+logRecord("r2", "", 1, 2, 0.5), 422)
		if st := h.state("range"); st.Decisions != 0 {
			t.Fatalf("an import with a reward outside the range changed the experiment: %+v", st.Counts)
		}
		// A log over the limit of an import (65 536 rewarded events) is
		// refused whole (413), before the store is touched (once: on
		// SQLite).
		if !storetest.IsPostgres(h.dsn) {
			h.importLog("range", "", "application/x-ndjson", uniformLog([]float64{0.5, 0.5}, 1<<16+1, 4, "big"), 413)
			if st := h.state("range"); st.Decisions != 0 {
				t.Fatalf("an import over the limit changed the experiment: %+v", st.Counts)
			}
		}
		// A Personalizer experiment takes no JSON-lines log (400: dsjson only,
		// pzimport_test.go), and changes nothing.
		h.call("POST", "/v1/experiments", map[string]any{"id": "pz", "surface": "personalizer", "privacy": map[string]float64{"rho": 1}}, 201, nil)
		h.importLog("pz", "", "application/x-ndjson", logRecord("p1", "", 0, 1, 0.5), 400)
		// CSV, as the Open Bandit Pipeline writes it, refused with its line too.
		csv := "action,reward,pscore,event_id\n0,1,0.5,c1\n1,0,-0.5,c2\n"
		if ans := h.importLog("range", "", "text/csv", csv, 422); ans.Refused != 1 || ans.RefusedRecords[0].Line != 3 {
			t.Fatalf("csv: %+v", ans)
		}
	})
}

// TestImportReplaysAContextualLog: a contextual experiment (adac-oful,
// 4 actions in R^2) imports a log of a uniform logging policy by the
// replay method: every logged event is decided on its decision set and
// rewarded when the policy chose the logged action. The policy's choice
// is independent of the uniformly drawn logged action, so the matches
// are Binomial(n, 1/4): the test checks the learned count within 3.29
// standard deviations of n/4 (two-sided, level 1e-3). The replayed
// decisions, with their contexts, replay after a restart; the same log
// again changes nothing.
func TestImportReplaysAContextualLog(t *testing.T) {
	eachStore(t, Config{}, func(t *testing.T, h *harness) {
		h.create(map[string]any{"id": "ctx", "algorithm": "adac-oful", "arms": 4, "dim": 2, "horizon": 4000,
			"reward_range": []float64{-1, 1}, "privacy": map[string]float64{"rho": 10}})
		r := rand.New(rand.NewPCG(10, 10))
		theta := []float64{0.8, -0.6}
		const n = 800
		var log strings.Builder
		for i := range n {
			set, _ := storetest.Directions(r, theta)
			a := r.IntN(4)
			mean := theta[0]*set[a][0] + theta[1]*set[a][1]
			b, _ := json.Marshal(map[string]any{"event_id": fmt.Sprint("c", i), "action": a, "pscore": 0.25, "context": set,
				"reward": math.Max(-1, math.Min(1, mean+0.1*r.NormFloat64()))})
			log.Write(append(b, '\n'))
		}
		log.WriteString(`{"event_id":"flat","action":0,"reward":0,"pscore":0.25,"context":[0.5,0.5]}` + "\n") // line 801: a vector, not a decision set
		ans := h.importLog("ctx", "?skip_invalid=true", "application/x-ndjson", log.String(), 200)
		if ans.Refused != 1 || ans.RefusedRecords[0].Line != n+1 {
			t.Fatalf("refused %+v, want line %d (no decision set)", ans.RefusedRecords, n+1)
		}
		tol := 3.29 * math.Sqrt(n*0.25*0.75)
		t.Logf("replay: %d learned, %d not matched of %d (n/4 = %d, tolerance %.1f); pscores %v", ans.Learned, ans.NotMatched, n, n/4, tol, ans.PScores)
		if ans.Learned+ans.NotMatched != n || math.Abs(float64(ans.Learned)-n/4) > tol || ans.PScores != [2]float64{0.25, 0.25} {
			t.Fatalf("replay: %+v, want %d events, about n/4 = %d learned (within %.1f)", ans.Result, n, n/4, tol)
		}
		h.restartKeeps("ctx", func(s outcome.State) []any { return []any{s.Counts, s.Releases, s.Recent, *s.Imported} })
		if again := h.importLog("ctx", "?skip_invalid=true", "application/x-ndjson", log.String(), 200); again.Operations != 0 || again.AlreadyImported != n {
			t.Fatalf("the same log again: %+v", again.Result)
		}
	})
}

// TestImportOutlastsTheServerTimeouts: an import takes its own deadlines
// (10 minutes) in place of the server's (dpbandit serve's one-minute
// write timeout, which a large log or a slow store outlasts). On a
// server whose write timeout is 1 ms, far less than any import's commit,
// the import is still answered.
func TestImportOutlastsTheServerTimeouts(t *testing.T) {
	t.Parallel()
	h := start(t, storetest.SQLite(t), Config{})
	h.create(storetest.BernoulliSpec("slow", 2, 0.5))
	ts := httptest.NewUnstartedServer(h.srv.Handler())
	ts.Config.WriteTimeout = time.Millisecond
	ts.Start()
	defer ts.Close()
	resp, err := ts.Client().Post(ts.URL+"/v1/experiments/slow/import", "application/x-ndjson", strings.NewReader(uniformLog([]float64{0.6, 0.4}, 2000, 5, "s")))
	if err != nil {
		t.Fatalf("the import was cut by the server's write timeout: %v", err)
	}
	defer resp.Body.Close()
	var ans api.ImportAnswer
	if err := json.NewDecoder(resp.Body).Decode(&ans); err != nil || resp.StatusCode != 200 || ans.Events == 0 {
		t.Fatalf("import: %d %+v %v", resp.StatusCode, ans.Result, err)
	}
}
