package engine_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/dpbandit/dpbandit/service/engine"
	"github.com/dpbandit/dpbandit/service/internal/enginetest"
	"github.com/dpbandit/dpbandit/service/internal/storetest"
)

// pooledState returns the Pooled state and the engine's pool map
// of experiment id.
func pooledState(t *testing.T, h *enginetest.Harness, id string) ([]byte, string) {
	t.Helper()
	x := h.Get(id)
	m := engine.Inspect(x)
	if m.Failed != nil {
		t.Fatalf("%s failed: %v", id, m.Failed)
	}
	b, err := engine.PooledPolicy(x)
	if err != nil {
		t.Fatal(err)
	}
	return b, fmt.Sprint(m.PooledAt, m.Unfreed, m.Counts)
}

// drivePooled runs n decisions of experiment id with late, reordered,
// held and missing rewards, all inside the window (10 s, 10 ms a
// decision), crashing and reopening every crashEvery decisions and
// checking stored = unreleased after each reopen.
func drivePooled(t *testing.T, h *enginetest.Harness, c *storetest.Clock, id string, n, crashEvery int, seed uint64, toggle bool) int {
	means := []float64{0.8, 0.6, 0.5, 0.4, 0.2}
	r := rand.New(rand.NewPCG(seed, seed))
	type rw struct {
		ev string
		x  float64
	}
	due := map[int][]rw{}
	sent := 0
	send := func(rs []rw) {
		r.Shuffle(len(rs), func(i, j int) { rs[i], rs[j] = rs[j], rs[i] })
		for _, w := range rs {
			if res := h.Reward(id, w.ev, w.x); !res.Learned {
				t.Fatalf("reward of %s not learned: %+v", w.ev, res)
			}
			sent++
		}
	}
	for i := range n + 600 {
		c.Add(10 * time.Millisecond)
		send(due[i])
		delete(due, i)
		if i%50 == 0 {
			h.Tick(c.Now())
		}
		if i > 0 && i%crashEvery == 0 {
			before := h.State(id)
			h.Crash()
			if toggle {
				h.Config().KeepLog = !h.Config().KeepLog
			}
			h.Open()
			after := h.State(id)
			if after.Learned != before.Learned || after.Defaulted != before.Defaulted || after.Pooled != before.Pooled || after.Releases != before.Releases {
				t.Fatalf("decision %d: after a crash %+v pooled %d, before %+v pooled %d", i, after.Counts, after.Pooled, before.Counts, before.Pooled)
			}
			if toggle {
				neededStored(t, h, id)
			} else {
				storesOnlyUnreleased(t, h, id)
			}
		}
		if i%250 == 0 {
			t.Logf("%4d: %s", i, engine.DescribePooled(h.Get(id)))
		}
		if i >= n {
			continue
		}
		ev := fmt.Sprint(id, i)
		d := h.Decide(id, ev, "u"+ev)
		rwd := 0.0
		if r.Float64() < means[d.Arm] {
			rwd = 1
		}
		switch u := r.Float64(); {
		case u < 0.1: // never sent: the default at the window
		case u < 0.3:
			at := i + 1 + r.IntN(500)
			due[at] = append(due[at], rw{ev, rwd})
		default:
			at := i + 1 + r.IntN(51)
			due[at] = append(due[at], rw{ev, rwd})
		}
	}
	c.Add(20 * time.Second)
	h.Tick(c.Now())
	return sent
}

// startPooled starts a harness on SQLite with a clock of its own,
// snapshotting every snapshotEvery operations, and creates experiment id
// whose slots overdue pool: 5 Bernoulli arms, a reward window of 10 s
// and a default reward of 0.
func startPooled(t *testing.T, id string, snapshotEvery int64) (*enginetest.Harness, *storetest.Clock) {
	t.Helper()
	c := storetest.NewClock(time.Unix(1e9, 0))
	h := enginetest.Start(t, storetest.SQLite(t), enginetest.Config{Now: c.Now, SnapshotEvery: snapshotEvery})
	spec := storetest.BernoulliSpec(id, 5, 1)
	spec["reward_window_seconds"] = 10
	spec["default_reward"] = 0
	h.Create(spec)
	return h, c
}

// TestPoolsSurviveCrashes (written by an independent review): pools non-empty at crashes (no snapshot
// at close, --snapshot-every 37), default rewards at a short window;
// after each reopen the counts and pools are as before, stored rewards
// are the unreleased ones, and at the end a restore from the snapshot
// and a full replay (snapshot deleted) give the same Pooled state.
func TestPoolsSurviveCrashes(t *testing.T) {
	h, c := startPooled(t, "pool", 37)
	dsn := h.DSN()
	sent := drivePooled(t, h, c, "pool", 3000, 433, 1, false)
	st := h.State("pool")
	t.Logf("%d sent; %+v pooled %d", sent, st.Counts, st.Pooled)
	if st.Learned != int64(sent) || st.Learned+st.Defaulted != 3000 {
		t.Errorf("learned %d of %d sent, defaulted %d", st.Learned, sent, st.Defaulted)
	}
	storesOnlyUnreleased(t, h, "pool")
	h.Crash()
	h.Open()
	snap, eng := pooledState(t, h, "pool")
	h.Crash()
	if _, err := storetest.DB(t, dsn).ExecContext(context.Background(), storetest.Rebind(dsn, `DELETE FROM snapshots WHERE exp = ?`), "default/pool"); err != nil {
		t.Fatal(err)
	}
	h.Open()
	full, eng2 := pooledState(t, h, "pool")
	if !bytes.Equal(snap, full) || eng != eng2 {
		t.Errorf("restore from the snapshot and full replay differ:\n%s\n%s", eng, eng2)
	}
	storesOnlyUnreleased(t, h, "pool")
}

// neededStored fails if a reward that no release covers yet (one
// that went through a pool, engine.Memory's PooledAt) is no longer stored, or if fewer
// rewards are stored than are unreleased.
func neededStored(t *testing.T, h *enginetest.Harness, id string) (stored, held int64) {
	t.Helper()
	x := h.Get(id)
	held = h.State(id).Unreleased // (once what it shows is durable)
	var seqs []int64
	for _, s := range engine.Inspect(x).PooledAt {
		seqs = append(seqs, s)
	}
	if err := x.Durable(context.Background()); err != nil {
		t.Fatal(err)
	}
	db := storetest.DB(t, h.DSN())
	for _, s := range seqs {
		var n int
		if err := db.QueryRow(storetest.Rebind(h.DSN(), `SELECT COUNT(*) FROM events WHERE exp = ? AND seq = ? AND reward IS NOT NULL`), "default/"+id, s).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			t.Fatalf("event %d's reward waits for a release and is not stored", s)
		}
	}
	stored = int64(storetest.StoredRewards(t, h.DSN(), "default/"+id))
	if stored < held {
		t.Fatalf("%d rewards stored, %d unreleased", stored, held)
	}
	return stored, held
}

// TestKeepLogToggledKeepsWhatIsNeeded (written by an independent
// review): --keep-log toggled at every crash; no
// reward a later release needs is ever deleted. (Rewards stored while
// --keep-log was on stay stored after it is turned off, as before
// Pooled: the check is only that nothing needed is lost.)
func TestKeepLogToggledKeepsWhatIsNeeded(t *testing.T) {
	h, c := startPooled(t, "tog", 29)
	drivePooled(t, h, c, "tog", 2500, 311, 2, true)
	stored, held := neededStored(t, h, "tog")
	t.Logf("keep-log %v: %d stored, %d unreleased", h.Config().KeepLog, stored, held)
	h.Crash()
	h.Open()
	neededStored(t, h, "tog")
}

// storesOnlyUnreleased fails unless the rewards stored for experiment id
// are exactly those no release covers yet.
func storesOnlyUnreleased(t *testing.T, h *enginetest.Harness, id string) {
	t.Helper()
	st := h.State(id) // (once what it shows is durable)
	n := int64(storetest.StoredRewards(t, h.DSN(), "default/"+id))
	if n != st.Unreleased {
		t.Fatalf("%d rewards stored, %d unreleased (pooled rewards %d): released episodes' must be deleted, the others kept", n, st.Unreleased, st.Pooled)
	}
}
