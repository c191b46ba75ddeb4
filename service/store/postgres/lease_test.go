package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/dpbandit/dpbandit/service/internal/storetest"
	"github.com/dpbandit/dpbandit/service/store"
	"github.com/jackc/pgx/v5/pgconn"
)

// calmLease is a lease time long enough that a loaded machine renews in
// time.
const calmLease = 2 * time.Second

// row is an experiment's row for the store's own tests: the store keeps
// its definition without reading it.
func row(tenant, id string) store.Experiment {
	return store.Experiment{Key: tenant + "/" + id, Tenant: tenant, Definition: "{}", Status: store.Active}
}

// joined opens the store at dsn as replica id, with lease time ttl.
func joined(t *testing.T, dsn, id string, ttl time.Duration) *Store {
	t.Helper()
	st, err := Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.Join(context.Background(), store.Replica{ID: id, Addr: "http://127.0.0.1:1/" + id}, ttl, 0, nil); err != nil {
		t.Fatal(err)
	}
	return st
}

// TestLeaseRace: replicas racing for the same expired lease: exactly one
// takes it, the others see it as the holder; a live lease is not taken.
func TestLeaseRace(t *testing.T) {
	t.Parallel()
	dsn := storetest.Postgres(t)
	const n, keys = 4, 40
	// r0's leases expire soon; the racers' last an hour, so that a
	// winner's lease cannot expire before the slowest racer's attempt on
	// a loaded machine (with 300 ms for all, a second racer took a lease
	// the first had held past its time: a CI run).
	ttl := 300 * time.Millisecond
	rs := make([]*Store, n)
	for i := range rs {
		life := time.Hour
		if i == 0 {
			life = ttl
		}
		rs[i] = joined(t, dsn, fmt.Sprint("r", i), life)
	}
	ctx := context.Background()
	// Every key first held by r0, then left to expire.
	for k := range keys {
		if h, err := rs[0].Acquire(ctx, fmt.Sprint("t/", k), true); err != nil || h.ID != "r0" {
			t.Fatalf("first acquire: %v %v", h, err)
		}
	}
	// A live lease (made to live an hour: 40 acquires may take longer
	// than the 300 ms lease on a loaded machine) is not taken.
	if h, err := rs[0].Acquire(ctx, "t/live", true); err != nil || h.ID != "r0" {
		t.Fatalf("first acquire: %v %v", h, err)
	}
	if _, err := rs[0].SQL.Exec(`UPDATE leases SET expires = clock_timestamp() + interval '1 hour' WHERE exp = 't/live'`); err != nil {
		t.Fatal(err)
	}
	if h, err := rs[1].Acquire(ctx, "t/live", true); err != nil || h.ID != "r0" || h.Addr != "http://127.0.0.1:1/r0" {
		t.Fatalf("a live lease was taken or misreported: %+v %v", h, err)
	}
	time.Sleep(ttl + 100*time.Millisecond)
	for k := range keys {
		key := fmt.Sprint("t/", k)
		var wg sync.WaitGroup
		won := make([]store.Replica, n)
		start := make(chan struct{})
		for i := 1; i < n; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				h, err := rs[i].Acquire(ctx, key, true)
				if err != nil {
					t.Error(err)
				}
				won[i] = h
			}()
		}
		close(start)
		wg.Wait()
		winners := 0
		for i := 1; i < n; i++ {
			if won[i].ID == fmt.Sprint("r", i) {
				winners++
			}
		}
		if winners != 1 {
			t.Fatalf("%s: %d replicas took the expired lease (%v)", key, winners, won)
		}
		for i := 1; i < n; i++ {
			if won[i].ID != won[1].ID && won[i].ID != fmt.Sprint("r", i) {
				t.Fatalf("%s: replicas disagree on the holder: %v", key, won)
			}
		}
	}
}

// TestLeaseFence: a replica's commit for an experiment whose lease
// another replica took fails with ErrFenced and changes nothing; its
// renewal reports the lease gone.
func TestLeaseFence(t *testing.T) {
	t.Parallel()
	dsn := storetest.Postgres(t)
	ttl := 300 * time.Millisecond
	a, b := joined(t, dsn, "a", ttl), joined(t, dsn, "b", ttl)
	ctx := context.Background()
	def := row("t", "e")
	if err := a.CreateExperiment(ctx, def); err != nil {
		t.Fatal(err)
	}
	insert := func(s *Store, seq int64) error {
		return s.Commit(ctx, []*store.Change{{Exp: "t/e", Insert: &store.Event{Seq: seq, ID: fmt.Sprint("ev", seq), Unit: "u", Status: store.Pending, PScore: 1, PolicyArm: -1}}})
	}
	if err := insert(a, 1); err != nil {
		t.Fatalf("the creator's commit: %v", err)
	}
	if err := insert(b, 2); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("a commit without the lease: %v, want ErrFenced", err)
	}
	if h, _ := b.Acquire(ctx, "t/e", true); h.ID != "a" {
		t.Fatalf("a live lease went to %v", h)
	}
	time.Sleep(ttl + 100*time.Millisecond)
	if h, _ := b.Acquire(ctx, "t/e", true); h.ID != "b" {
		t.Fatalf("the expired lease went to %v, want b", h)
	}
	if err := insert(a, 2); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("the old holder's commit: %v, want ErrFenced", err)
	}
	if held, err := a.Renew(ctx); err != nil || held["t/e"] {
		t.Fatalf("the old holder renews a lease it lost: %v %v", held, err)
	}
	if err := insert(b, 2); err != nil {
		t.Fatalf("the new holder's commit: %v", err)
	}
	var n int
	a.SQL.QueryRow(`SELECT COUNT(*) FROM events WHERE exp = 't/e'`).Scan(&n)
	if n != 2 {
		t.Fatalf("%d events stored, want 2 (one per holder)", n)
	}
	// A release fences too: the releaser cannot commit after it.
	held := b.epochOf("t/e")
	if err := b.Release(ctx, "t/e"); err != nil {
		t.Fatal(err)
	}
	b.setEpoch("t/e", held) // as if it still believed it held the lease
	if err := insert(b, 3); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("a commit after the release: %v, want ErrFenced", err)
	}
}

// TestReserveAcrossReplicas: replicas reserving one unit's spend at once
// never take it over the cap, starting from what the ledger holds.
func TestReserveAcrossReplicas(t *testing.T) {
	t.Parallel()
	dsn := storetest.Postgres(t)
	a, b := joined(t, dsn, "a", time.Second), joined(t, dsn, "b", time.Second)
	ctx := context.Background()
	// 1 rho already in the ledger, from two experiments of tenant t, and
	// 5 rho of another tenant's unit of the same name (not counted).
	if _, err := a.SQL.Exec(`INSERT INTO ledger (unit_id, exp, rewards, nano) VALUES ('u', 't/x', 1, 600000000), ('u', 't/y', 1, 400000000), ('u', 's/x', 5, 5000000000)`); err != nil {
		t.Fatal(err)
	}
	const limit, each = 3_000_000_000, 100_000_000 // 3 rho, 0.1 per reward: 20 fit
	var mu sync.Mutex
	granted := 0
	var wg sync.WaitGroup
	for _, s := range []*Store{a, b, a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 15 {
				ok, err := s.Reserve(ctx, store.UnitKey{Tenant: "t", Unit: "u"}, each, limit)
				if err != nil {
					t.Error(err)
					return
				}
				if ok {
					mu.Lock()
					granted++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if granted != 20 {
		t.Fatalf("%d reservations of 0.1 rho granted from 1 rho spent under a 3 rho cap, want 20", granted)
	}
	var spent int64
	a.SQL.QueryRow(`SELECT nano FROM unit_spend WHERE tenant = 't' AND unit_id = 'u'`).Scan(&spent)
	if spent != limit {
		t.Fatalf("spend row %d, want %d", spent, limit)
	}
}

// TestFenceAndRenewalDoNotDeadlock: a replica's commits (whose fences
// lock the lease rows of the experiments they write, FOR SHARE) and its
// renewals (which update every lease row it holds) run at once on two
// connections, as they do in a replica under load. Locking the rows in
// two orders deadlocked them (found by a stranger's review: the commit
// lost, and the replica stopped taking writes on SQLSTATE 40P01): each
// takes the rows in key order, and nothing is retried.
func TestFenceAndRenewalDoNotDeadlock(t *testing.T) {
	t.Parallel()
	st := joined(t, storetest.Postgres(t), "a", calmLease)
	ctx := context.Background()
	const exps = 8
	for i := range exps {
		if err := st.CreateExperiment(ctx, row("t", fmt.Sprint("e", i))); err != nil {
			t.Fatal(err)
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			held, err := st.Renew(ctx)
			if err != nil {
				t.Errorf("renewal: %v", err)
				return
			}
			if len(held) != exps {
				t.Errorf("renewal holds %d leases, want %d", len(held), exps)
				return
			}
		}
	}()
	deadline := time.Now().Add(10 * time.Second)
	commits := 0
	for seq := int64(1); seq <= 2000 && time.Now().Before(deadline); seq++ {
		// The batch's experiments in the order opposite to their keys'.
		var batch []*store.Change
		for i := exps - 1; i >= 0; i-- {
			batch = append(batch, &store.Change{Exp: fmt.Sprint("t/e", i), Insert: &store.Event{Seq: seq, ID: fmt.Sprint("ev", seq), Unit: "u", Status: store.Pending, PScore: 1, PolicyArm: -1}})
		}
		if err := st.Commit(ctx, batch); err != nil {
			t.Errorf("commit %d: %v", seq, err)
			break
		}
		commits++
	}
	close(stop)
	wg.Wait()
	if n := st.aborted.Load(); n != 0 {
		t.Errorf("%d transactions aborted by PostgreSQL and retried: the lease rows are locked in more than one order", n)
	}
	t.Logf("%d commits of %d experiments beside the renewals", commits, exps)
}

// TestRetryAborted: a transaction PostgreSQL aborted for a deadlock
// (40P01) or a serialisation failure (40001) committed nothing and is
// run again, a bounded number of times; any other error is returned at
// once, and one that outlasts the attempts is returned as it is.
func TestRetryAborted(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		code  string
		retry bool
	}{{"40P01", true}, {"40001", true}, {"23505", false}, {fenceCode, false}, {"57014", false}} {
		err := fmt.Errorf("commit: %w", &pgconn.PgError{Code: c.code})
		if got := abortedTx(err); got != c.retry {
			t.Errorf("SQLSTATE %s: retryable %v, want %v", c.code, got, c.retry)
		}
	}
	if abortedTx(nil) || abortedTx(errors.New("ERROR: deadlock detected (SQLSTATE 40P01)")) {
		t.Error("an error without a PostgreSQL code is taken as retryable")
	}
	st := &Store{}
	ctx := context.Background()
	calls := 0
	err := st.retryAborted(ctx, func() error {
		if calls++; calls < 3 {
			return &pgconn.PgError{Code: "40P01"}
		}
		return nil
	})
	if err != nil || calls != 3 || st.aborted.Load() != 2 {
		t.Fatalf("two deadlocks then a commit: %v after %d calls, %d counted", err, calls, st.aborted.Load())
	}
	calls = 0
	unique := &pgconn.PgError{Code: "23505"}
	if err := st.retryAborted(ctx, func() error { calls++; return unique }); !errors.Is(err, unique) || calls != 1 {
		t.Fatalf("a unique violation: %v after %d calls, want it at once", err, calls)
	}
	calls = 0
	err = st.retryAborted(ctx, func() error { calls++; return &pgconn.PgError{Code: "40001"} })
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "40001" || calls != maxAttempts {
		t.Fatalf("always aborted: %v after %d calls, want the abort after %d", err, calls, maxAttempts)
	}
}

// TestLiveByEachReplicasOwnLease: a replica is live for its own lease
// time, not the reader's. Replicas with different lease times (during a
// rolling change of --lease) judged each other by the reader's: a dead
// replica with a 200-ms lease stayed live for an hour to a replica with
// an hour's, and its experiments, their leases expired, were preferred
// to it and taken by nobody (found by TestOnePollTakesEveryExpiredLease:
// one poll took 9 of 20).
func TestLiveByEachReplicasOwnLease(t *testing.T) {
	t.Parallel()
	dsn := storetest.Postgres(t)
	joined(t, dsn, "z", 200*time.Millisecond)
	a := joined(t, dsn, "a", time.Hour)
	time.Sleep(400 * time.Millisecond)
	live, err := a.Live(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(live) != 1 || live[0].ID != "a" {
		t.Fatalf("live replicas %v, 400 ms after z's 200-ms lease began: want a alone", live)
	}
}
