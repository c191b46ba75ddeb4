package service

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/dpbandit/dpbandit/service/api"
	"github.com/dpbandit/dpbandit/service/engine"
	"github.com/dpbandit/dpbandit/service/internal/storetest"
	"github.com/dpbandit/dpbandit/service/store"
)

// postLog posts a log to an import; status 0 on a transport error (the
// process was killed).
func postLog(c *http.Client, url, log string) (int, api.ImportAnswer) {
	var ans api.ImportAnswer
	resp, err := c.Post(url, "application/x-ndjson", bytes.NewReader([]byte(log)))
	if err != nil {
		return 0, ans
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, ans
	}
	json.Unmarshal(b, &ans)
	return resp.StatusCode, ans
}

// TestImportSurvivesKill9: a real `dpbandit serve` is killed with SIGKILL
// while it imports a log of 5000 events (20 000 with the build tag
// heavy; on SQLite on disk and on
// PostgreSQL), at a random moment between the request's start and 1.2
// times the time a whole import took in that process. After the restart
// the experiment holds all of the import or nothing of it: with nothing,
// no event is stored and importing the log again does the whole import;
// with everything, importing it again changes nothing (its marker, the
// last decision, is stored, and every event id), and the stored events'
// debits sum to the imported totals', which the ledger holds. A partial
// import would hold events without the marker, and the second import
// would add operations to a non-empty experiment. (Without the build
// tag heavy: 3 kills per store instead of 10.) The count of each outcome
// is logged: which one a kill gives depends on the machine's timing.
func TestImportSurvivesKill9(t *testing.T) {
	t.Parallel()
	kills, events := 3, 5000
	if heavy {
		kills, events = 10, 20000
	}
	for _, s := range []struct {
		name string
		dsn  func(testing.TB) string
	}{{"sqlite", func(t testing.TB) string { return filepath.Join(t.TempDir(), "state.db") }}, {"postgres", storetest.Postgres}} {
		t.Run(s.name, func(t *testing.T) { t.Parallel(); importKills(t, s.dsn(t), kills, events) })
	}
}

func importKills(t *testing.T, dsn string, kills, events int) {
	c := &http.Client{Timeout: 120 * time.Second}
	log := uniformLog([]float64{0.6, 0.4}, events, 8, "k")
	r := rand.New(rand.NewPCG(9, 9))
	p := serve(t, "--db", dsn)
	create := func(id string) {
		if code, b := post(c, p.base+"/v1/experiments", storetest.BernoulliSpec(id, 2, 0.5)); code != 201 {
			t.Fatalf("create %s: %d %s", id, code, b)
		}
	}
	// A whole import, timed, to spread the kills over one.
	create("timed")
	t0 := time.Now()
	if code, ans := postLog(c, p.base+"/v1/experiments/timed/import", log); code != 200 || ans.Events == 0 {
		t.Fatalf("import: %d %+v", code, ans)
	}
	took := time.Since(t0)
	outcomes := map[string]int{}
	for round := range kills {
		id := fmt.Sprintf("k%d", round)
		create(id)
		done := make(chan int, 1)
		go func() { code, _ := postLog(c, p.base+"/v1/experiments/"+id+"/import", log); done <- code }()
		time.Sleep(time.Duration(r.Int64N(int64(took) * 12 / 10)))
		p.kill()
		answered := <-done
		p = serve(t, "--db", dsn)
		var st engine.State
		if err := get(c, p.base+"/v1/experiments/"+id, &st); err != nil {
			t.Fatal(err)
		}
		code, again := postLog(c, p.base+"/v1/experiments/"+id+"/import", log)
		if code != 200 {
			t.Fatalf("round %d: the import after the restart: %d", round, code)
		}
		switch {
		case st.Decisions == 0 && st.Imported == nil:
			outcomes["nothing"]++
			if answered == 200 {
				t.Fatalf("round %d: the import was acknowledged, and nothing of it is stored", round)
			}
			if again.Operations == 0 {
				t.Fatalf("round %d: an empty experiment took nothing from the log: %+v", round, again.ImportResult)
			}
		case st.Imported != nil && st.Decisions == st.Imported.Events+st.Imported.NoLoggedReward:
			outcomes["everything"]++
			if again.Operations != 0 {
				t.Fatalf("round %d: %d decisions stored, and the same import again added %d operations: the first was half-applied", round, st.Decisions, again.Operations)
			}
			checkImportedDebits(t, c, p.base, dsn, id, st.Imported)
		default:
			t.Fatalf("round %d: a half-applied import: %+v, imported %+v", round, st.Counts, st.Imported)
		}
	}
	p.kill()
	t.Logf("a whole import of %d events took %v; %d kills left: %v", events, took, kills, outcomes)
}

// checkImportedDebits checks that the debits stored on an experiment's
// events sum to its imported totals', and that the ledger holds the last
// debited unit's (the log's units are each event's own: one reward).
func checkImportedDebits(t *testing.T, c *http.Client, base, dsn, id string, imp *engine.ImportTotals) {
	t.Helper()
	st, err := Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	h, err := st.History(context.Background(), "default/"+id, store.Mark{})
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	var unit string
	for _, e := range h.Events {
		sum += e.Debit
		if e.Debit > 0 {
			unit = e.Unit
		}
	}
	if sum != imp.NanoRho || sum == 0 {
		t.Fatalf("%s: the stored events debit %d nano-rho, the imported totals say %d", id, sum, imp.NanoRho)
	}
	var led api.LedgerView
	if err := get(c, base+"/v1/units/"+unit+"/ledger", &led); err != nil {
		t.Fatal(err)
	}
	for _, row := range led.Experiments {
		if row.Experiment == id && row.Rewards == 1 && row.NanoRho == 5e8 {
			return
		}
	}
	t.Fatalf("%s: unit %s's ledger %+v, want its one reward's 5e8 nano-rho in %s", id, unit, led, id)
}
