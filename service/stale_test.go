package service

import (
	"context"
	"testing"
	"time"

	"github.com/dpbandit/dpbandit/service/internal/storetest"
	"github.com/dpbandit/dpbandit/service/store"
)

// TestStaleHolderAnswersNoUnknownEvent: a replica whose lease expired
// while it was starved of CPU (or paused) still has the experiment in
// memory until its next renewal finds the lease gone; meanwhile another
// replica took the experiment over and decided events this one never
// saw. A reward for such an event that reaches the stale replica must
// not be answered 404 "unknown event_id" (a final answer: the client
// does not retry it, and the decision it was answered 200 for looks
// lost): it is answered 503 with Retry-After, so that the retry reaches
// the holder. Found by TestReplicaFailover on a loaded machine (load
// average 15 on 2 cores, 500-ms leases): three rewards answered 404 just
// after a failover. Made deterministic here: both replicas' leases are
// an hour (their background loops stay out of the way), the expiry of
// a's lease is written in the store, and b takes it with one poll.
func TestStaleHolderAnswersNoUnknownEvent(t *testing.T) {
	t.Parallel()
	dsn := storetest.Postgres(t)
	a := start(t, dsn, Config{Replica: &store.Replica{ID: "a", Addr: "http://127.0.0.1:1/a"}, LeaseTTL: time.Hour})
	a.create(storetest.BernoulliSpec("e", 2, 0.5))
	a.decide("e", "before", "u")
	db, _ := rawDB(t, dsn)
	// a is starved past its lease: the lease expires, a does not know.
	if _, err := db.Exec(`UPDATE leases SET expires = clock_timestamp() - interval '1 second' WHERE exp = 'default/e'`); err != nil {
		t.Fatal(err)
	}
	b := start(t, dsn, Config{Replica: &store.Replica{ID: "b", Addr: "http://127.0.0.1:1/b"}, LeaseTTL: time.Hour})
	b.srv.rep.take(context.Background(), []string{"default/e"})
	if len(b.srv.List("")) != 1 {
		t.Fatal("b did not take the expired lease over")
	}
	b.decide("e", "after", "u") // answered 200 by the new holder
	code, body := a.do("POST", "/v1/experiments/e/rewards", "application/json", []byte(`{"event_id":"after","reward":1}`))
	if code != 503 {
		t.Fatalf("a reward for an event the new holder decided, sent to the replica that lost the lease: %d %s, want 503 (retry)", code, body)
	}
	if res := b.reward("e", "after", 1); res.Status != store.Learned {
		t.Fatalf("the retried reward on the holder: %+v", res)
	}
}
