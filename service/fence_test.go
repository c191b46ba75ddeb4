package service

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dpbandit/dpbandit/service/api"
	"github.com/dpbandit/dpbandit/service/internal/storetest"
	"github.com/dpbandit/dpbandit/service/outcome"
	"github.com/dpbandit/dpbandit/service/store"
)

// rawDB opens a plain connection pool on a store's database.
func rawDB(t *testing.T, dsn string) (*sql.DB, func(string) string) {
	t.Helper()
	return storetest.DB(t, dsn), func(q string) string { return storetest.Rebind(dsn, q) }
}

// eventStatus reads an event's stored status.
func eventStatus(t *testing.T, db *sql.DB, q func(string) string, exp, ev string) string {
	t.Helper()
	var status string
	if err := db.QueryRow(q(`SELECT status FROM events WHERE exp = ? AND event_id = ?`), exp, ev).Scan(&status); err != nil {
		t.Fatal(err)
	}
	return status
}

// TestFencedCommitChangesNothing: once another service has taken the
// store (the owner epoch moved on), the old one's commits fail and change
// nothing; it stops taking writes; the new owner is consistent.
func TestFencedCommitChangesNothing(t *testing.T) {
	eachStore(t, Config{UnitBudget: 5e8}, func(t *testing.T, h *harness) {
		h.create(storetest.BernoulliSpec("e", 2, 0.5))
		h.decide("e", "1", "dave")
		db, q := rawDB(t, h.dsn)
		// A takeover, as a new owner's start does it.
		if _, err := db.Exec(`UPDATE owner SET epoch = epoch + 1 WHERE id = 1`); err != nil {
			t.Fatal(err)
		}
		h.call("POST", "/v1/experiments/e/rewards", map[string]any{"event_id": "1", "reward": 1}, 503, nil)
		if !errors.Is(h.srv.Err(), store.ErrFenced) {
			t.Fatalf("the old owner's error: %v, want ErrFenced", h.srv.Err())
		}
		if s := eventStatus(t, db, q, "default/e", "1"); s != store.Pending {
			t.Fatalf("a fenced commit changed the event: %s", s)
		}
		var ledger int
		db.QueryRow(`SELECT COUNT(*) FROM ledger`).Scan(&ledger)
		if d := storetest.Debited(t, db, q, "default/e", "dave"); d != 0 || ledger != 0 {
			t.Fatalf("a fenced commit debited the ledger (%d nano-rho, %d rows)", d, ledger)
		}
		h.call("POST", "/v1/experiments", storetest.BernoulliSpec("f", 2, 0.5), 503, nil)
		h.restart()
		db.Exec(`UPDATE owner SET epoch = epoch + 1 WHERE id = 1`)
		h.call("POST", "/v1/experiments", storetest.BernoulliSpec("f", 2, 0.5), 503, nil) // a fenced create stops writes too
		if !errors.Is(h.srv.Err(), store.ErrFenced) {
			t.Fatalf("after a fenced create: %v, want ErrFenced", h.srv.Err())
		}
		if code, _ := h.do("GET", "/healthz", "", nil); code != 503 {
			t.Fatalf("healthz %d after fencing, want 503", code)
		}
		h.restart()
		if st := h.state("e"); st.Pending != 1 || st.Learned != 0 {
			t.Fatalf("the new owner: %+v", st.Counts)
		}
		if res := h.reward("e", "1", 1); !res.Learned {
			t.Fatalf("the retried reward: %+v", res)
		}
		led := h.ledger("dave")
		if led.TotalNanoRho != 5e8 {
			t.Fatalf("ledger %+v, want 5e8 nano-rho", led)
		}
		h.restart()
		if st := h.state("e"); st.Learned != 1 {
			t.Fatalf("after the next restart: %+v", st.Counts)
		}
	})
}

// TestStaleCommitAfterKill is the race of a killed service's last commit
// with its restarted successor, made deterministic: a second connection
// holds the event's row lock, so the killed service's pipelined commit
// waits in PostgreSQL while the new service starts and loads; released,
// the stale commit must fail and change nothing.
func TestStaleCommitAfterKill(t *testing.T) {
	t.Parallel()
	dsn := storetest.Postgres(t)
	a := serve(t, "--db", dsn, "--unit-budget", "0.5")
	c := &http.Client{Timeout: 30 * time.Second}
	if code, b := post(c, a.base+"/v1/experiments", storetest.BernoulliSpec("e", 2, 0.5)); code != 201 {
		t.Fatalf("create: %d %s", code, b)
	}
	if code, b := post(c, a.base+"/v1/experiments/e/decisions", map[string]string{"event_id": "1", "unit_id": "dave"}); code != 200 {
		t.Fatalf("decide: %d %s", code, b)
	}
	db, q := rawDB(t, dsn)
	ctx := context.Background()
	holder, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback()
	if _, err := holder.Exec(`SELECT 1 FROM events WHERE exp = 'default/e' AND event_id = '1' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	go post(c, a.base+"/v1/experiments/e/rewards", map[string]any{"event_id": "1", "reward": 1})
	waitFor(t, "the killed service's commit to wait for the row lock", func() bool {
		var n int
		db.QueryRow(`SELECT COUNT(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'UPDATE events%'`).Scan(&n)
		return n == 1
	})
	a.kill()
	b := serve(t, "--db", dsn, "--unit-budget", "0.5")
	defer func() { b.kill() }()
	if err := holder.Rollback(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the stale commit to end", func() bool {
		var n int
		db.QueryRow(`SELECT COUNT(*) FROM pg_stat_activity WHERE datname = current_database() AND state = 'active' AND query LIKE 'UPDATE events%'`).Scan(&n)
		return n == 0
	})
	if s := eventStatus(t, db, q, "default/e", "1"); s != store.Pending {
		t.Fatalf("the killed service's stale commit landed: the event is %s", s)
	}
	var st outcome.State
	if err := get(c, b.base+"/v1/experiments/e", &st); err != nil || st.Pending != 1 {
		t.Fatalf("the new service: %+v %v", st.Counts, err)
	}
	// The client's retry is learned once; the ledger stays within the cap.
	for range 2 {
		code, body := post(c, b.base+"/v1/experiments/e/rewards", map[string]any{"event_id": "1", "reward": 1})
		if code != 200 || !strings.Contains(string(body), `"learned":true`) {
			t.Fatalf("the retried reward: %d %s", code, body)
		}
	}
	var led api.LedgerView
	if err := get(c, b.base+"/v1/units/dave/ledger", &led); err != nil || led.TotalNanoRho != 5e8 {
		t.Fatalf("ledger %+v %v, want 5e8 nano-rho (the cap)", led, err)
	}
	b.kill()
	b = serve(t, "--db", dsn, "--unit-budget", "0.5")
	if err := get(c, b.base+"/v1/experiments/e", &st); err != nil || st.Learned != 1 {
		t.Fatalf("the next restart: %+v %v", st.Counts, err)
	}
}

// TestSecondServiceWaits: a second service on a store a live one holds
// waits, saying why, and does not listen; it takes over when the first
// dies, and serves the first one's state. The second may name the
// SQLite file by a symbolic link (it started at once beside the first,
// which the fence then stopped; found by a stranger's review).
func TestSecondServiceWaits(t *testing.T) {
	t.Parallel()
	sqlite := func(t testing.TB) string { return filepath.Join(t.TempDir(), "state.db") }
	for _, s := range []struct {
		name  string
		dsn   func(testing.TB) string
		alias func(testing.TB, string) string // the second's name of the store
	}{
		{"sqlite", sqlite, nil},
		{"sqlite-symlink", sqlite, func(t testing.TB, dsn string) string {
			link := filepath.Join(t.TempDir(), "link.db")
			if err := os.Symlink(dsn, link); err != nil {
				t.Fatal(err)
			}
			return link
		}},
		{"postgres", storetest.Postgres, nil},
	} {
		t.Run(s.name, func(t *testing.T) {
			dsn := s.dsn(t)
			a := serve(t, "--db", dsn)
			c := &http.Client{Timeout: 10 * time.Second}
			post(c, a.base+"/v1/experiments", storetest.BernoulliSpec("e", 2, 1))
			post(c, a.base+"/v1/experiments/e/decisions", map[string]string{"event_id": "1", "unit_id": "u"})
			second := dsn
			if s.alias != nil {
				second = s.alias(t, dsn)
			}
			b := startServe(t, "--db", second)
			defer b.kill()
			waitFor(t, "the second service to say it waits", func() bool { return strings.Contains(b.out.String(), "waiting for the store") })
			if b.listening(500 * time.Millisecond) {
				t.Fatal("the second service listens while the first holds the store")
			}
			if !strings.Contains(b.out.String(), fmt.Sprintf("pid %d", a.cmd.Process.Pid)) {
				t.Fatalf("the second service does not say who holds the store: %s", b.out)
			}
			a.kill()
			if !b.listening(30 * time.Second) {
				t.Fatalf("the second service did not take over: %s", b.out)
			}
			var st outcome.State
			if err := get(c, b.base+"/v1/experiments/e", &st); err != nil || st.Decisions != 1 {
				t.Fatalf("after the takeover: %+v %v", st.Counts, err)
			}
			if code, body := post(c, b.base+"/v1/experiments/e/rewards", map[string]any{"event_id": "1", "reward": 1}); code != 200 {
				t.Fatalf("reward after the takeover: %d %s", code, body)
			}
		})
	}
}

// waitFor polls cond every 20 ms for up to 20 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

// TestStateShowsOnlyStoredReleases: a state request answers only once
// the releases it shows are stored. Here a second connection holds the
// event's row lock, so the commit of the reward that ends AdaC-UCB's
// first episode (and releases its mean) waits in PostgreSQL; the state
// must wait too, or a crash then would lose a release a client had seen,
// and the restart would draw it afresh.
func TestStateShowsOnlyStoredReleases(t *testing.T) {
	t.Parallel()
	dsn := storetest.Postgres(t)
	h := start(t, dsn, Config{})
	h.create(storetest.BernoulliSpec("e", 2, 1))
	h.decide("e", "1", "u")
	db, _ := rawDB(t, dsn)
	holder, err := db.BeginTx(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback()
	if _, err := holder.Exec(`SELECT 1 FROM events WHERE exp = 'default/e' AND event_id = '1' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	rewarded := make(chan struct{})
	go func() {
		defer close(rewarded)
		req, _ := http.NewRequest("POST", h.http.URL+"/v1/experiments/e/rewards", strings.NewReader(`{"event_id":"1","reward":1}`))
		req.Header.Set("Content-Type", "application/json")
		if resp, err := h.http.Client().Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	waitFor(t, "the reward's commit to wait for the row lock", func() bool {
		var n int
		db.QueryRow(`SELECT COUNT(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'UPDATE events%'`).Scan(&n)
		return n == 1
	})
	got := make(chan outcome.State, 1)
	go func() {
		var st outcome.State
		req, _ := http.NewRequest("GET", h.http.URL+"/v1/experiments/e", nil)
		if resp, err := h.http.Client().Do(req); err == nil {
			json.NewDecoder(resp.Body).Decode(&st)
			resp.Body.Close()
		}
		got <- st
	}()
	select {
	case st := <-got:
		t.Fatalf("the state answered while its release was not stored: %d releases %v", st.Releases, st.Recent)
	case <-time.After(300 * time.Millisecond):
	}
	holder.Rollback()
	<-rewarded
	st := <-got
	var stored int
	db.QueryRow(`SELECT COUNT(*) FROM releases WHERE exp = 'default/e'`).Scan(&stored)
	if st.Releases != 1 || stored != 1 {
		t.Fatalf("after the commit: the state shows %d releases, the store holds %d", st.Releases, stored)
	}
}
