package service

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/dpbandit/dpbandit/service/internal/storetest"
	"github.com/dpbandit/dpbandit/service/outcome"
	"github.com/dpbandit/dpbandit/service/store"
)

// crash stops the harness's service as a crash would: the writes in
// flight are committed, nothing is saved or folded at the stop.
func (h *harness) crash() {
	h.http.Close()
	h.srv.stopBG()
	h.srv.bg.Wait()
	h.srv.w.Close()
	h.store.Close()
	h.srv = nil
}

// unfolded returns the events not in the event-id index and the ledger's
// shortfall against the events' debits, in nano-rho, of experiment exp.
func unfolded(t *testing.T, db *sql.DB, q func(string) string, exp string) (events, short int64) {
	t.Helper()
	if err := db.QueryRow(q(`SELECT COUNT(*) FROM events WHERE exp = ? AND indexed = 0`), exp).Scan(&events); err != nil {
		t.Fatal(err)
	}
	err := db.QueryRow(q(`SELECT (SELECT COALESCE(SUM(debit), 0) FROM events WHERE exp = ?) - (SELECT COALESCE(SUM(nano), 0) FROM ledger WHERE exp = ?)`), exp, exp).Scan(&short)
	if err != nil {
		t.Fatal(err)
	}
	return events, short
}

// limitSpec is bernoulliSpec with rho 0.5 and a unit's limit of max
// rewards.
func limitSpec(id string, max int) map[string]any {
	sp := storetest.BernoulliSpec(id, 2, 0.5)
	sp["max_rewards_per_unit"] = max
	return sp
}

// playUnits decides and rewards n events of experiment id, prefix and
// i, for units u0..u(units-1) in turn.
func playUnits(h *harness, id, prefix string, n, units int) {
	for i := range n {
		ev := fmt.Sprintf("%s%d", prefix, i)
		h.decide(id, ev, fmt.Sprintf("u%d", i%units))
		h.reward(id, ev, float64(i%2))
	}
}

// TestLedgerShowsEveryDebit: on SQLite the ledger is written in folds
// (engine/fold.go), and what the API shows of it is whole at once: a unit's
// ledger and the dashboard's count of units, right after the rewards.
func TestLedgerShowsEveryDebit(t *testing.T) {
	t.Parallel()
	storetest.ForStores(t, func(t *testing.T, dsn string) {
		h := start(t, dsn, Config{KeepLog: true}) // (no snapshot, so no fold, when released rewards are deleted)
		h.create(limitSpec("e", 10))
		playUnits(h, "e", "a", 6, 3) // two learned rewards a unit
		led := h.ledger("u1")
		if len(led.Experiments) != 1 || led.Experiments[0].Rewards != 2 || led.TotalNanoRho != 4*5e8 {
			t.Fatalf("u1's ledger after two learned rewards of 0.5 rho each: %+v, want 2 rewards, 2 rho (k^2 rho)", led)
		}
		x, _ := h.srv.Get("default", "e")
		if units, _, err := h.srv.UnitStats(context.Background(), x); err != nil || units != 3 {
			t.Fatalf("the dashboard counts %d units (%v), want 3", units, err)
		}
	})
}

// startUnfolded starts a service on SQLite whose folds wait: one settled
// event kept and no snapshot (none periodic, and with the log kept, none
// when released rewards are deleted), so that only the folds keep the
// others in memory, and nothing folds before a crash; units capped at 3
// rho. It creates experiment e (limitSpec, 10 rewards a unit) and
// decides and rewards (1) its event ev for unit, returning the decision.
func startUnfolded(t *testing.T, ev, unit string) (*harness, outcome.Decision) {
	t.Helper()
	h := start(t, storetest.SQLite(t), Config{KeepEvents: 1, SnapshotEvery: 1 << 30, KeepLog: true, UnitBudget: 3e9})
	h.create(limitSpec("e", 10))
	first := h.decide("e", ev, unit)
	h.reward("e", ev, 1)
	return h, first
}

// TestFoldAfterCrash: a crash loses what was not folded yet from memory,
// not from the store. The restart folds it before it serves: every event
// is found by its id again (a retry answers as before, an id reused for
// another unit is refused), every debit is in the ledger, and a unit's
// cap counts what it spent before the crash.
func TestFoldAfterCrash(t *testing.T) {
	t.Parallel()
	h, first := startUnfolded(t, "a0", "u0")
	playUnits(h, "e", "b", 40, 4) // each unit at 2 rho after two rewards (0.5 + 1.5); a third (2.5) would pass the cap of 3
	db, q := rawDB(t, h.dsn)
	if n, short := unfolded(t, db, q, "default/e"); n != 41 || short != 4*2e9 {
		t.Fatalf("before any fold: %d events not indexed, the ledger %d nano-rho short; want all 41 and 8e9 (written in folds only)", n, short)
	}
	if d := h.decide("e", "a0", "u0"); d != first {
		t.Fatalf("a retry before the fold answers %+v, first %+v", d, first)
	}
	h.crash()
	h.open()
	checkWhole(t, h, db, q, "a0", "u0", first, "u1")
	if code, b := h.do("POST", "/v1/experiments/e/decisions", "application/json", []byte(`{"event_id":"b5","unit_id":"u2"}`)); code != 409 {
		t.Fatalf("an event id reused for another unit after the restart: %d %s", code, b)
	}
}

// checkWhole checks experiment e of a restarted service: every event
// indexed, the ledger whole, a retry of event ev (of unit) answered as
// first, and a reward of unit full, at its cap, not learned.
func checkWhole(t *testing.T, h *harness, db *sql.DB, q func(string) string, ev, unit string, first outcome.Decision, full string) {
	t.Helper()
	if n, short := unfolded(t, db, q, "default/e"); n != 0 || short != 0 {
		t.Fatalf("after the restart: %d events not indexed, the ledger %d nano-rho short", n, short)
	}
	if d := h.decide("e", ev, unit); d != first {
		t.Fatalf("a retry after the restart answers %+v, first %+v", d, first)
	}
	h.decide("e", "past-cap", full)
	if res := h.reward("e", "past-cap", 1); res.Learned {
		t.Fatalf("%s's reward past its cap was learned after the restart", full)
	}
}

// TestSnapshotAheadOfFold: a snapshot later than its experiment's fold
// cursor (which a store written by this service cannot hold: every
// snapshot folds) is not used, as the history replayed from it would not
// hold everything to fold: the whole history is replayed and folded.
func TestSnapshotAheadOfFold(t *testing.T) {
	t.Parallel()
	dsn := storetest.SQLite(t)
	h := start(t, dsn, Config{SnapshotEvery: 1 << 30, KeepLog: true})
	h.create(storetest.BernoulliSpec("e", 2, 0.5))
	playUnits(h, "e", "a", 30, 30)
	h.restart() // a snapshot at operation 60, folded to 60
	db, q := rawDB(t, dsn)
	// As if the fold of operations 11 to 60 had not been written with
	// the snapshot.
	for _, st := range []string{
		`UPDATE events SET indexed = 0 WHERE exp = 'default/e' AND seq > 10`,
		`DELETE FROM ledger WHERE exp = 'default/e' AND unit_id IN (SELECT unit_id FROM events WHERE exp = 'default/e' AND rseq > 10)`,
		`UPDATE experiments SET folded = 10`,
	} {
		if _, err := db.Exec(st); err != nil {
			t.Fatal(err)
		}
	}
	h.restart()
	x, _ := h.srv.Get("default", "e")
	if ops, replayed, _ := x.Loaded(); replayed != ops {
		t.Fatalf("loaded from the snapshot of operation %d, ahead of the fold at 10", ops-replayed)
	}
	if n, short := unfolded(t, db, q, "default/e"); n != 0 || short != 0 {
		t.Fatalf("after the restart: %d events not indexed, the ledger %d nano-rho short", n, short)
	}
}

// TestFoldOfAnExperimentThatFailsToLoad: an experiment whose replay
// fails is served 503, and what it spent is still folded into the ledger
// (its units' caps count it in the tenant's other experiments).
func TestFoldOfAnExperimentThatFailsToLoad(t *testing.T) {
	t.Parallel()
	dsn := storetest.SQLite(t)
	h := start(t, dsn, Config{SnapshotEvery: 1 << 30, KeepLog: true, UnitBudget: 2e9})
	h.create(limitSpec("e", 10))
	h.create(storetest.BernoulliSpec("f", 2, 0.5))
	playUnits(h, "e", "a", 2, 1) // u0: 0.5 + 1.5 rho, at its cap
	h.crash()
	db, q := rawDB(t, dsn)
	if _, err := db.Exec(`UPDATE events SET arm = 1 - arm WHERE exp = 'default/e' AND seq = 1`); err != nil {
		t.Fatal(err)
	}
	h.open()
	if code, b := h.do("POST", "/v1/experiments/e/decisions", "application/json", []byte(`{"event_id":"b","unit_id":"u1"}`)); code != 503 {
		t.Fatalf("a decision of the diverged experiment: %d %s, want 503", code, b)
	}
	if n, short := unfolded(t, db, q, "default/e"); n != 0 || short != 0 {
		t.Fatalf("after the restart: %d events not indexed, the ledger %d nano-rho short", n, short)
	}
	h.decide("f", "x", "u0")
	if res := h.reward("f", "x", 1); res.Learned {
		t.Fatal("u0's reward past its cap was learned in f")
	}
}

// TestLedgerWaitsForAFoldInFlight: a fold already submitted (by a tick,
// a change every foldEvery operations, a snapshot) but not committed
// yet holds debits the ledger lacks: a read of the ledger waits for it
// too (found by a review: the read answered no rewards after one
// acknowledged as learned).
func TestLedgerWaitsForAFoldInFlight(t *testing.T) {
	t.Parallel()
	gate := &gatedStore{}
	h := startWrapped(t, storetest.SQLite(t), Config{KeepLog: true}, func(st store.Store) store.Store { gate.Store = st; return gate })
	h.create(limitSpec("e", 10))
	h.decide("e", "a", "u1")
	h.reward("e", "a", 1)
	gate.Lock() // the commits wait, as behind a slow fsync
	x, _ := h.srv.Get("default", "e")
	x.FoldNow() // a tick's fold, submitted
	time.AfterFunc(200*time.Millisecond, gate.Unlock)
	led := h.ledger("u1")
	if led.TotalNanoRho != 5e8 {
		t.Fatalf("u1's ledger after its learned reward, with its fold in flight: %+v, want 5e8 nano-rho", led)
	}
}

// TestArchivedExperimentIsNotExpired: the archive folds the experiment
// for good (it is never loaded again), so nothing may change it after:
// a tick that listed it before the archive settles none of its events
// (found by a review: their default rewards were learned and debited
// after the archive's fold, and a crash then left the debits out of the
// ledger for good, and the unit past its cap).
func TestArchivedExperimentIsNotExpired(t *testing.T) {
	t.Parallel()
	dsn := storetest.SQLite(t)
	clk := storetest.NewClock(time.Unix(1_800_000_000, 0))
	h := start(t, dsn, Config{KeepLog: true, UnitBudget: 5e8, Now: clk.Now})
	sp := limitSpec("e", 10)
	sp["reward_window_seconds"], sp["default_reward"] = 10, 0
	h.create(sp)
	h.create(limitSpec("f", 10))
	h.decide("e", "a", "u0")
	x, _ := h.srv.Get("default", "e")
	h.call("POST", "/v1/experiments/e/archive", nil, 200, nil)
	clk.Add(time.Minute)
	if settled := x.Expire(clk.Now()); len(settled) != 0 {
		t.Fatalf("the tick settled %d events of the archived experiment", len(settled))
	}
	h.crash()
	h.open()
	db, q := rawDB(t, dsn)
	if n, short := unfolded(t, db, q, "default/e"); n != 0 || short != 0 {
		t.Fatalf("the archived experiment after a crash: %d events not indexed, the ledger %d nano-rho short", n, short)
	}
}

// TestEarlierVersionBetweenStarts: a version before folds, started on
// the store after this one stopped cleanly, indexes and debits as it
// writes, and moves no fold cursor; this one, started again, must not
// fold its writes a second time (found by a review: each of its debits
// counted twice, and a unit's rewards past its limit). An earlier
// version is recognised by its event-id index, which it builds at its
// start and this one drops.
func TestEarlierVersionBetweenStarts(t *testing.T) {
	t.Parallel()
	dsn := storetest.SQLite(t)
	h := start(t, dsn, Config{KeepLog: true})
	h.create(limitSpec("e", 10))
	playUnits(h, "e", "a", 4, 2) // u0: 0.5 + 1.5 rho
	h.decide("e", "p", "u0")     // operation 9, pending
	h.close()                    // a clean stop: everything folded
	// The earlier version: its index, then p's learned reward (u0's
	// third: 2.5 rho), written as it went.
	db, q := rawDB(t, dsn)
	for _, st := range []string{
		`CREATE UNIQUE INDEX events_id_exp ON events (event_id, exp)`,
		`UPDATE events SET status = 'learned', reward = 1, rseq = 10, at = 1, debit = 2500000000 WHERE exp = 'default/e' AND event_id = 'p'`,
		`UPDATE ledger SET rewards = rewards + 1, nano = nano + 2500000000 WHERE unit_id = 'u0' AND exp = 'default/e'`,
	} {
		if _, err := db.Exec(st); err != nil {
			t.Fatal(err)
		}
	}
	h.open()
	if n, short := unfolded(t, db, q, "default/e"); n != 0 || short != 0 {
		t.Fatalf("after an earlier version's writes: %d events not indexed, the ledger %d nano-rho short (negative: counted twice)", n, short)
	}
}

// TestEarlierVersionAfterCrash: a version before folds started after a
// crash of this one (against the docs' advice) does not fold the tail
// the crash left; this one, started again, finds its index and repairs
// the store: every event indexed, every ledger row at least its events'
// debits (found by a review: the tail was lost for good, an event id was
// decided twice, and a unit passed its cap).
func TestEarlierVersionAfterCrash(t *testing.T) {
	t.Parallel()
	h, first := startUnfolded(t, "b1", "u1")
	playUnits(h, "e", "c", 8, 4) // every unit at 2 rho (0.5 + 1.5; u1's third, 2.5 more, refused)
	h.crash()
	db, q := rawDB(t, h.dsn)
	if n, short := unfolded(t, db, q, "default/e"); n != 9 || short != 4*2e9 {
		t.Fatalf("before the crash: %d events not indexed, the ledger %d nano-rho short; want 9 and 8e9", n, short)
	}
	// The earlier version's start: its index, over every event.
	if _, err := db.Exec(`CREATE UNIQUE INDEX events_id_exp ON events (event_id, exp)`); err != nil {
		t.Fatal(err)
	}
	h.open()
	checkWhole(t, h, db, q, "b1", "u1", first, "u2")
}

// TestPostgresFoldsAsItGoes: on PostgreSQL every change folds its own
// writes: nothing is left unindexed or out of the ledger between folds,
// and each experiment's cursor says it is folded through all it wrote
// (a version with folds on PostgreSQL reads it: one at 0 would replay
// and fold the whole history again).
func TestPostgresFoldsAsItGoes(t *testing.T) {
	t.Parallel()
	dsn := storetest.Postgres(t)
	h := start(t, dsn, Config{KeepLog: true})
	h.create(limitSpec("e", 10))
	playUnits(h, "e", "a", 20, 4)
	db, q := rawDB(t, dsn)
	if n, short := unfolded(t, db, q, "default/e"); n != 0 || short != 0 {
		t.Fatalf("%d events not indexed, the ledger %d nano-rho short", n, short)
	}
	var folded int64
	if err := db.QueryRow(`SELECT folded FROM experiments`).Scan(&folded); err != nil || folded != math.MaxInt64 {
		t.Fatalf("the cursor is %d (%v), want folded through everything", folded, err)
	}
}

// gatedStore is a store whose commits wait while it is locked.
type gatedStore struct {
	store.Store
	sync.Mutex
}

func (g *gatedStore) Commit(ctx context.Context, batch []*store.Change) error {
	g.Lock()
	g.Unlock()
	return g.Store.Commit(ctx, batch)
}
