package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dpbandit/dpbandit/service/define"
	"github.com/dpbandit/dpbandit/service/internal/storetest"
	"github.com/dpbandit/dpbandit/service/store"
)

// TestReplicasNeedPostgres: a SQLite store has one writer; asking it for
// replicas is an error that says so.
func TestReplicasNeedPostgres(t *testing.T) {
	t.Parallel()
	st, err := Open(context.Background(), filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, ok := st.(store.Replicated); ok {
		t.Fatal("the SQLite store offers replicas (store.Replicated)")
	}
	_, err = New(context.Background(), Config{Store: st, Replica: &store.Replica{ID: "a", Addr: "http://127.0.0.1:1"}})
	if !errors.Is(err, store.ErrReplicasNeedPostgres) {
		t.Fatalf("New as a replica on SQLite: %v, want ErrReplicasNeedPostgres", err)
	}
}

// bernoulliSpecTyped is storetest.BernoulliSpec as a Spec.
func bernoulliSpecTyped(id string) define.Spec {
	rho := 0.5
	return define.Spec{ID: id, Algorithm: "adac-ucb", Arms: 2, RewardRange: [2]float64{0, 1}, Privacy: define.Privacy{Rho: &rho}}
}

// TestCapAfterUncappedReplicas: a replica without a cap keeps the units'
// spend rows in step with the ledger it writes, so that replicas started
// later with a cap count what it debited. The unit's spend row was left
// at what the capped replicas had reserved (found by a stranger's
// review): at 1 rho after an uncapped replica's reward took the ledger to
// 2, two rewards reserved at once under a cap of 3 both passed (the
// ledger, 2 + 1, and the row, 1 + 1 then 2 + 1, each within the cap),
// and the unit's ledger reached 4 rho.
func TestCapAfterUncappedReplicas(t *testing.T) {
	t.Parallel()
	dsn := storetest.Postgres(t)
	const capNano = 3e9
	phase := func(cap int64, id string) {
		h := start(t, dsn, Config{UnitBudget: cap, Replica: &store.Replica{ID: fmt.Sprint("r", cap, id), Addr: "http://127.0.0.1:1"}, LeaseTTL: calmLease})
		defer h.close()
		// rho = 1 and one reward per unit: a learned reward of unit u
		// debits 1 rho.
		h.create(map[string]any{"id": id, "algorithm": "adac-ucb", "arms": 2, "reward_range": []float64{0, 1},
			"privacy": map[string]any{"rho": 1}, "max_rewards_per_unit": 1})
		h.decide(id, "ev", "u")
		if r := h.reward(id, "ev", 1).Reason; r != "" {
			t.Fatalf("%s: the reward is %q", id, r)
		}
	}
	phase(capNano, "e1")
	phase(0, "e2") // a replica without a cap
	rs := deadReplica(t, dsn, "c", "http://127.0.0.1:1/c", calmLease).(store.Replicated)
	db := storetest.DB(t, dsn)
	var spend, ledger int64
	db.QueryRow(`SELECT nano FROM unit_spend WHERE tenant = 'default' AND unit_id = 'u'`).Scan(&spend)
	db.QueryRow(`SELECT SUM(nano) FROM ledger WHERE unit_id = 'u'`).Scan(&ledger)
	if spend != ledger || ledger != 2e9 {
		t.Errorf("after two learned rewards, the unit's spend row holds %d nano-rho and its ledger %d, want both 2e9", spend, ledger)
	}
	// Two rewards reserved at once (neither in the ledger yet): room
	// for one.
	granted := 0
	for range 2 {
		ok, err := rs.Reserve(context.Background(), store.UnitKey{Tenant: "default", Unit: "u"}, 1e9, capNano)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			granted++
		}
	}
	if granted != 1 {
		t.Errorf("%d of two 1-rho reservations granted with 2 rho spent under a cap of 3, want 1", granted)
	}
}

// TestReplicasAgreeOnTheCap: every replica must enforce one
// --unit-budget. A replica without one beside capped replicas took a
// unit to 30.6 rho against a cap of 1, silently (found by a stranger's
// review). The first replica records its cap in the store; one that
// starts with another while replicas with the recorded one are live is
// refused, naming both; once none is live, the next replica records its
// own (the deliberate change: stop every replica, start them with the
// new cap).
func TestReplicasAgreeOnTheCap(t *testing.T) {
	t.Parallel()
	dsn := storetest.Postgres(t)
	ctx := context.Background()
	// replica starts replica id with cap budget: the server, or New's error.
	replica := func(id string, budget int64) (*Server, error) {
		st, err := Open(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		srv, err := New(ctx, Config{Store: st, UnitBudget: budget, Replica: &store.Replica{ID: id, Addr: "http://127.0.0.1:1/" + id}, LeaseTTL: calmLease})
		if err != nil {
			st.Close()
			return nil, err
		}
		t.Cleanup(func() { st.Close() })
		return srv, nil
	}
	mustStart := func(id string, budget int64) *Server {
		srv, err := replica(id, budget)
		if err != nil {
			t.Fatalf("replica %s with cap %d nano-rho: %v", id, budget, err)
		}
		return srv
	}
	refused := func(id string, budget, recorded int64, live ...string) {
		t.Helper()
		srv, err := replica(id, budget)
		if srv != nil {
			srv.Close()
		}
		var me *store.UnitBudgetMismatchError
		if !errors.As(err, &me) || me.Replica != budget || me.Recorded != recorded || !slices.Equal(me.Live, live) {
			t.Fatalf("replica %s with cap %d beside %v (cap %d): %v, want a store.UnitBudgetMismatchError naming both", id, budget, live, recorded, err)
		}
		t.Logf("refused: %v", err)
	}
	a := mustStart("a", 1e9)
	refused("b", 0, 1e9, "a")   // no cap beside a cap of 1 rho
	refused("b", 2e9, 1e9, "a") // another cap
	c := mustStart("c", 1e9)
	refused("d", 0, 1e9, "a", "c")
	// Every replica stopped: the next one's cap is the replicas' cap.
	a.Close()
	c.Close()
	mustStart("d", 0)
	refused("e", 1e9, 0, "d")
}

// deadReplica registers replica id on dsn, at addr, with lease time ttl,
// as a raw store that never renews: a replica killed after its start.
func deadReplica(t *testing.T, dsn, id, addr string, ttl time.Duration) store.Store {
	t.Helper()
	st, err := Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.(store.Replicated).Join(context.Background(), store.Replica{ID: id, Addr: addr}, ttl, 0, nil); err != nil {
		t.Fatal(err)
	}
	return st
}

// TestForwardToHungReplica: a request forwarded to a replica that
// accepts the connection and never answers (paused, or its machine
// cut off) is answered 503 with Retry-After well within a lease time,
// so that the client's retry reaches the replica that takes the lease
// over. It waited max(lease, 2 s) (found by a stranger's review: a
// forwarded request hung 5.3 s on a dead replica's address, and the
// experiment answered again 8.86 s after the kill with a 5-s lease);
// it waits forwardWait(lease), min(1 s, lease/5). No timed assertion:
// forwardWait is checked as a function, and the request, under an hour's
// lease, must be answered before a client's minute runs out (a wait
// bounded by the lease, as it was, would not answer within the hour).
func TestForwardToHungReplica(t *testing.T) {
	t.Parallel()
	for ttl, want := range map[time.Duration]time.Duration{3 * time.Second: 600 * time.Millisecond, time.Hour: time.Second} {
		if got := forwardWait(ttl); got != want {
			t.Fatalf("forwardWait(%v) = %v, want %v", ttl, got, want)
		}
	}
	dsn := storetest.Postgres(t)
	const ttl = time.Hour
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c) // held open, never answered
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	h := start(t, dsn, Config{Replica: &store.Replica{ID: "a", Addr: "http://127.0.0.1:1/a"}, LeaseTTL: ttl})
	z := deadReplica(t, dsn, "z", "http://"+ln.Addr().String(), ttl)
	if err := z.CreateExperiment(context.Background(), mustRow(t, define.Definition{Spec: bernoulliSpecTyped("e"), Tenant: "default", Status: store.Active, Rules: define.CurrentRules})); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	client := h.http.Client()
	client.Timeout = time.Minute
	resp, err := client.Post(h.http.URL+"/v1/experiments/e/decisions", "application/json", strings.NewReader(`{"event_id":"1","unit_id":"u"}`))
	if err != nil {
		t.Fatalf("a request forwarded to a replica that does not answer, under a lease of %v: %v", ttl, err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("a request forwarded to a replica that does not answer: %d %s (Retry-After %q), want 503 with Retry-After", resp.StatusCode, b, resp.Header.Get("Retry-After"))
	}
	t.Logf("answered 503 after %v (lease %v): %s", time.Since(t0).Round(time.Millisecond), ttl, b)
}

// TestOnePollTakesEveryExpiredLease: the experiments of a replica that
// died are taken by a live replica within a poll of their leases'
// expiry. The poll runs every takeoverEvery(lease), a tenth of the
// lease; it ran every third of the lease, at the renewal (found by a
// stranger's review: 11 of 19 failovers took longer than the 5-s lease).
// The bound is checked in two parts, neither a timed assertion (an
// earlier version measured each lease's lateness on the wall clock and
// failed on a busy CI machine, 805 ms against 600 ms): one poll started
// after the leases expired takes every one of them, however many, and
// the background loop polls at takeoverEvery. Replica a's own lease is
// an hour, so that its background loop stays out of the way (its first
// poll comes after six minutes) and the poll the test makes is the one
// that takes them.
func TestOnePollTakesEveryExpiredLease(t *testing.T) {
	t.Parallel()
	dsn := storetest.Postgres(t)
	const deadTTL, n = 200 * time.Millisecond, 20
	z := deadReplica(t, dsn, "z", "http://127.0.0.1:1/z", deadTTL)
	h := start(t, dsn, Config{Replica: &store.Replica{ID: "a", Addr: "http://127.0.0.1:1/a"}, LeaseTTL: time.Hour})
	db, _ := rawDB(t, dsn)
	ctx := context.Background()
	for i := range n {
		def := define.Definition{Spec: bernoulliSpecTyped(fmt.Sprint("e", i)), Tenant: "default", Status: store.Active, Rules: define.CurrentRules}
		if err := z.CreateExperiment(ctx, mustRow(t, def)); err != nil {
			t.Fatal(err)
		}
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		var live int
		if err := db.QueryRow(`SELECT count(*) FROM leases WHERE expires > clock_timestamp()`).Scan(&live); err != nil {
			t.Fatal(err)
		}
		if live == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of z's leases of %v still held a minute later", live, deadTTL)
		}
	}
	h.srv.rep.takeOver(ctx)
	held := map[string]int{}
	rows, err := db.Query(`SELECT holder FROM leases`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var holder string
		if err := rows.Scan(&holder); err != nil {
			t.Fatal(err)
		}
		held[holder]++
	}
	if held["a"] != n {
		t.Fatalf("one poll after %d leases expired took %d of them (holders %v)", n, held["a"], held)
	}
	if got := len(h.srv.List("")); got != n {
		t.Fatalf("the replica serves %d of the %d experiments it took", got, n)
	}
}

// TestBackgroundTakeover: with nobody calling takeOver, the live
// replica's background loop takes a dead replica's expired lease (a
// liveness check with a minute's slack; how soon is the poll interval,
// takeoverEvery, a tenth of the lease, and TestOnePollTakesEveryExpiredLease).
func TestBackgroundTakeover(t *testing.T) {
	t.Parallel()
	if got, want := takeoverEvery(10*time.Second), time.Second; got != want {
		t.Fatalf("takeoverEvery(10s) = %v, want %v", got, want)
	}
	dsn := storetest.Postgres(t)
	z := deadReplica(t, dsn, "z", "http://127.0.0.1:1/z", 200*time.Millisecond)
	h := start(t, dsn, Config{Replica: &store.Replica{ID: "a", Addr: "http://127.0.0.1:1/a"}, LeaseTTL: 3 * time.Second})
	def := define.Definition{Spec: bernoulliSpecTyped("e"), Tenant: "default", Status: store.Active, Rules: define.CurrentRules}
	if err := z.CreateExperiment(context.Background(), mustRow(t, def)); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); len(h.srv.List("")) == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the expired lease was not taken over within a minute")
		}
	}
}

// mustRow is a definition's row in the store.
func mustRow(t testing.TB, d define.Definition) store.Experiment {
	t.Helper()
	r, err := d.Row()
	if err != nil {
		t.Fatal(err)
	}
	return r
}
