package engine

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/service/internal/storetest"
	"github.com/dpbandit/dpbandit/service/policy"
)

// pooledState returns the Pooled state and the engine's pool map
// of experiment id.
func pooledState(t *testing.T, h *harness, id string) ([]byte, string) {
	t.Helper()
	x := h.get(id)
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.failed != nil {
		t.Fatalf("%s failed: %v", id, x.failed)
	}
	p, _ := policy.Pooled(x.pol)
	b, err := bandit.Save(p)
	if err != nil {
		t.Fatal(err)
	}
	return b, fmt.Sprint(x.pooledAt, x.unfreed, x.n)
}

// drivePooled runs n decisions of experiment id with late, reordered,
// held and missing rewards, all inside the window (10 s, 10 ms a
// decision), crashing and reopening every crashEvery decisions and
// checking stored = unreleased after each reopen.
func drivePooled(t *testing.T, h *harness, c *storetest.Clock, id string, n, crashEvery int, seed uint64, toggle bool) int {
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
			if res := h.reward(id, w.ev, w.x); !res.Learned {
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
			h.tick(c.Now())
		}
		if i > 0 && i%crashEvery == 0 {
			before := h.state(id)
			h.crash()
			if toggle {
				h.cfg.KeepLog = !h.cfg.KeepLog
			}
			h.open()
			after := h.state(id)
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
			x := h.get(id)
			x.mu.Lock()
			p, _ := policy.Pooled(x.pol)
			plan, serial := p.Plan()
			t.Logf("%4d: plan %d %+v, patience %d, pending %d, pooled %d, releases %d", i, serial, plan, p.Patience(), p.Pending(), p.Pooled(), x.nrel)
			x.mu.Unlock()
		}
		if i >= n {
			continue
		}
		ev := fmt.Sprint(id, i)
		d := h.decide(id, ev, "u"+ev)
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
	h.tick(c.Now())
	return sent
}

// startPooled starts a harness on SQLite with a clock of its own,
// snapshotting every snapshotEvery operations, and creates experiment id
// whose slots overdue pool: 5 Bernoulli arms, a reward window of 10 s
// and a default reward of 0.
func startPooled(t *testing.T, id string, snapshotEvery int64) (*harness, *storetest.Clock) {
	t.Helper()
	c := storetest.NewClock(time.Unix(1e9, 0))
	h := start(t, storetest.SQLite(t), config{Now: c.Now, SnapshotEvery: snapshotEvery})
	spec := storetest.BernoulliSpec(id, 5, 1)
	spec["reward_window_seconds"] = 10
	spec["default_reward"] = 0
	h.create(spec)
	return h, c
}

// TestPoolsSurviveCrashes (written by an independent review): pools non-empty at crashes (no snapshot
// at close, --snapshot-every 37), default rewards at a short window;
// after each reopen the counts and pools are as before, stored rewards
// are the unreleased ones, and at the end a restore from the snapshot
// and a full replay (snapshot deleted) give the same Pooled state.
func TestPoolsSurviveCrashes(t *testing.T) {
	h, c := startPooled(t, "pool", 37)
	dsn := h.dsn
	sent := drivePooled(t, h, c, "pool", 3000, 433, 1, false)
	st := h.state("pool")
	t.Logf("%d sent; %+v pooled %d", sent, st.Counts, st.Pooled)
	if st.Learned != int64(sent) || st.Learned+st.Defaulted != 3000 {
		t.Errorf("learned %d of %d sent, defaulted %d", st.Learned, sent, st.Defaulted)
	}
	storesOnlyUnreleased(t, h, "pool")
	h.crash()
	h.open()
	snap, eng := pooledState(t, h, "pool")
	h.crash()
	if _, err := storetest.DB(t, dsn).ExecContext(context.Background(), storetest.Rebind(dsn, `DELETE FROM snapshots WHERE exp = ?`), "default/pool"); err != nil {
		t.Fatal(err)
	}
	h.open()
	full, eng2 := pooledState(t, h, "pool")
	if !bytes.Equal(snap, full) || eng != eng2 {
		t.Errorf("restore from the snapshot and full replay differ:\n%s\n%s", eng, eng2)
	}
	storesOnlyUnreleased(t, h, "pool")
}

// neededStored fails if a reward that no release covers yet (one
// that went through a pool, x.pooledAt) is no longer stored, or if fewer
// rewards are stored than are unreleased.
func neededStored(t *testing.T, h *harness, id string) (stored, held int64) {
	t.Helper()
	x := h.get(id)
	x.mu.Lock()
	held, _ = x.unreleased()
	var seqs []int64
	for _, s := range x.pooledAt {
		seqs = append(seqs, s)
	}
	done := x.last
	x.mu.Unlock()
	if done != nil {
		<-done
	}
	db := storetest.DB(t, h.dsn)
	for _, s := range seqs {
		var n int
		if err := db.QueryRow(storetest.Rebind(h.dsn, `SELECT COUNT(*) FROM events WHERE exp = ? AND seq = ? AND reward IS NOT NULL`), "default/"+id, s).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			t.Fatalf("event %d's reward waits for a release and is not stored", s)
		}
	}
	stored = int64(storetest.StoredRewards(t, h.dsn, "default/"+id))
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
	t.Logf("keep-log %v: %d stored, %d unreleased", h.cfg.KeepLog, stored, held)
	h.crash()
	h.open()
	neededStored(t, h, "tog")
}

// storesOnlyUnreleased fails unless the rewards stored for experiment id
// are exactly those no release covers yet.
func storesOnlyUnreleased(t *testing.T, h *harness, id string) {
	t.Helper()
	st := h.state(id) // (once what it shows is durable)
	n := int64(storetest.StoredRewards(t, h.dsn, "default/"+id))
	if n != st.Unreleased {
		t.Fatalf("%d rewards stored, %d unreleased (pooled rewards %d): released episodes' must be deleted, the others kept", n, st.Unreleased, st.Pooled)
	}
}
