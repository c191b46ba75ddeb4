package engine_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/dpbandit/dpbandit/service/engine"
	"github.com/dpbandit/dpbandit/service/internal/enginetest"
	"github.com/dpbandit/dpbandit/service/internal/storetest"
)

// TestFoldKeepsUnfoldedEvents: settled events beyond Env.KeepEvents stay
// in memory until their ids are folded into the index (a lookup by id
// would not find them in the store before), and leave it after.
func TestFoldKeepsUnfoldedEvents(t *testing.T) {
	t.Parallel()
	h := enginetest.Start(t, storetest.SQLite(t), enginetest.Config{KeepEvents: 1, SnapshotEvery: 1 << 30, KeepLog: true})
	h.Create(storetest.BernoulliSpec("e", 2, 0.5))
	play := func(prefix string, n int) {
		for i := range n {
			ev := fmt.Sprintf("%s%d", prefix, i)
			h.Decide("e", ev, "u"+ev)
			h.Reward("e", ev, float64(i%2))
		}
	}
	play("a", 50)
	x := h.Get("e")
	count := func() int { return len(engine.Inspect(x).Events) }
	if n := count(); n != 50 {
		t.Fatalf("%d events in memory before the fold, want the 50 not folded", n)
	}
	ch, err := x.FoldNow()
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Writer.Wait(context.Background(), ch); err != nil {
		t.Fatal(err)
	}
	var unindexed int
	if err := storetest.DB(t, h.DSN()).QueryRow(`SELECT COUNT(*) FROM events WHERE exp = 'default/e' AND indexed = 0`).Scan(&unindexed); err != nil || unindexed != 0 {
		t.Fatalf("after the fold: %d events not indexed (%v)", unindexed, err)
	}
	play("b", 1)
	if n := count(); n > 2 {
		t.Fatalf("%d events in memory after the fold, want at most 2", n)
	}
}
