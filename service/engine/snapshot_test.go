package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/dpbandit/dpbandit/internal/state"
	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/service/engine"
	"github.com/dpbandit/dpbandit/service/fault"
	"github.com/dpbandit/dpbandit/service/internal/enginetest"
	"github.com/dpbandit/dpbandit/service/internal/storetest"
	"github.com/dpbandit/dpbandit/service/outcome"
	"github.com/dpbandit/dpbandit/service/snapshot"
	"github.com/dpbandit/dpbandit/service/store"
	"github.com/dpbandit/dpbandit/service/store/stores"
	"github.com/dpbandit/dpbandit/service/tape"
)

// policyState returns the encoded state of an experiment's policy,
// without its delayed-feedback wrapper's histogram of delays (which
// counts late rewards that are not stored: a snapshot keeps them, a
// replay of the whole history does not), and the wrapper's plan.
func policyState(t *testing.T, x *engine.Experiment) string {
	t.Helper()
	s, err := engine.PolicyState(x)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// playMixed takes n decisions of experiment id, rewarding most at once,
// some later (out of order) and some never (storetest.PlayMixed).
func playMixed(t testing.TB, h *enginetest.Harness, id string, dim, n int, r *rand.Rand, prefix string) {
	storetest.PlayMixed(r, dim, n, prefix, func(ev, unit string, ctxt any) int {
		d, err := h.DecideWith(id, ev, unit, ctxt)
		if err != nil {
			t.Fatal(err)
		}
		return d.Arm
	}, func(ev string, x float64, late bool) {
		// A late reward is learned, or refused once its slot was
		// resolved as overdue (Conflict).
		if _, err := h.Get(id).Reward(context.Background(), ev, x); err != nil && (!late || fault.Of(err) != fault.Conflict) {
			t.Fatalf("reward of %s: %v", ev, err)
		}
	})
}

// TestSnapshotRestoresTheState restarts experiments of every family
// from snapshots taken every few operations, with rewards pending, late
// and missing: the policy's state, the counts and what the API shows are
// those of a replay of the whole history, and both go on alike.
func TestSnapshotRestoresTheState(t *testing.T) {
	t.Parallel()
	specs := []map[string]any{
		storetest.BernoulliSpec("adac", 4, 0.5),
		{"id": "dpse", "algorithm": "dp-se", "arms": 3, "reward_range": []float64{0, 1}, "horizon": 100000, "privacy": map[string]float64{"eps": 1}},
		{"id": "adap", "algorithm": "adap-ucb", "arms": 3, "reward_range": []float64{0, 1}, "privacy": map[string]float64{"eps": 1}},
		{"id": "explore", "algorithm": "adac-ucb", "arms": 3, "reward_range": []float64{0, 1}, "privacy": map[string]float64{"rho": 1}, "exploration": 0.2},
		{"id": "ctx", "algorithm": "adac-oful", "arms": 4, "dim": 2, "horizon": 4000, "reward_range": []float64{-1, 1}, "privacy": map[string]float64{"rho": 10}},
		{"id": "lin", "algorithm": "adac-gope", "actions": [][]float64{{1, 0}, {0, 1}, {0.6, 0.8}}, "reward_range": []float64{0, 1}, "privacy": map[string]float64{"rho": 1}},
		{"id": "dppe", "algorithm": "dp-pe", "actions": [][]float64{{1, 0}, {0, 1}, {0.6, 0.8}}, "horizon": 100000, "reward_range": []float64{0, 1}, "privacy": map[string]float64{"eps": 1}},
	}
	enginetest.ForAllStores(t, func(t *testing.T, dsn string) {
		h := enginetest.Start(t, dsn, enginetest.Config{SnapshotEvery: 37})
		for _, sp := range specs {
			h.Create(sp)
			dim, _ := sp["dim"].(int)
			playMixed(t, h, sp["id"].(string), dim, 300, rand.New(rand.NewPCG(1, uint64(len(sp["id"].(string))))), "a")
		}
		before, retry := map[string]outcome.State{}, map[string]outcome.Decision{}
		for _, sp := range specs {
			id := sp["id"].(string)
			before[id] = h.State(id)
			retry[id] = retryA3(t, h, sp)
		}
		h.Restart()
		for _, sp := range specs {
			id := sp["id"].(string)
			x := h.Get(id)
			if _, err := engine.PolicyState(x); err != nil {
				t.Fatalf("%s: %v", id, err)
			}
			m := engine.Inspect(x)
			if m.SnapSeq == 0 || m.Seq-m.SnapSeq > 37+10 {
				t.Fatalf("%s: loaded from the snapshot of operation %d of %d", id, m.SnapSeq, m.Seq)
			}
			full, err := engine.Replay(context.Background(), x, h.Env)
			if err != nil {
				t.Fatal(err)
			}
			f := engine.Inspect(full)
			if policyState(t, x) != policyState(t, full) || m.Seq != f.Seq || m.Counts != f.Counts || m.Releases != f.Releases || m.Draws != f.Draws ||
				fmt.Sprint(m.Pulls, m.Unfreed) != fmt.Sprint(f.Pulls, f.Unfreed) || m.UnitCache != f.UnitCache {
				t.Fatalf("%s: the snapshot and the whole history restore different states: policy equal %v, operations %d %d, releases %d %d, draws %d %d\n%+v %v %v %v\n%+v %v %v %v",
					id, policyState(t, x) == policyState(t, full), m.Seq, f.Seq, m.Releases, f.Releases, m.Draws, f.Draws, m.Counts, m.Pulls, m.UnitCache, m.Unfreed, f.Counts, f.Pulls, f.UnitCache, f.Unfreed)
			}
			a, b := before[id], h.State(id)
			if fmt.Sprint(a.Released, a.Counts, a.Pulls, a.Releases, a.Recent, a.Pending, a.Episodes) != fmt.Sprint(b.Released, b.Counts, b.Pulls, b.Releases, b.Recent, b.Pending, b.Episodes) {
				t.Fatalf("%s: restart changed the state:\n%+v\n%+v", id, a, b)
			}
		}
		// Both go on: retries of old events answer as before, and the
		// experiments keep learning across another restart.
		for _, sp := range specs {
			id := sp["id"].(string)
			if d := retryA3(t, h, sp); d != retry[id] {
				t.Fatalf("%s: a retry answers %+v after the restart, %+v before", id, d, retry[id])
			}
			dim, _ := sp["dim"].(int)
			playMixed(t, h, id, dim, 100, rand.New(rand.NewPCG(2, 0)), "b")
		}
		h.Restart()
		for _, sp := range specs {
			id := sp["id"].(string)
			x := h.Get(id)
			full, err := engine.Replay(context.Background(), x, h.Env)
			if err != nil || policyState(t, x) != policyState(t, full) {
				t.Fatalf("%s: after the second restart: %v", id, err)
			}
		}
	})
}

// TestCorruptSnapshotFallsBackToReplay: a snapshot whose bytes changed,
// or that does not fit its history, is not used: the experiment is
// rebuilt from its whole history, to the same state.
func TestCorruptSnapshotFallsBackToReplay(t *testing.T) {
	t.Parallel()
	storetest.ForStores(t, func(t *testing.T, dsn string) {
		for _, corrupt := range []string{
			`UPDATE snapshots SET state = sum`,   // checksum
			`UPDATE snapshots SET seq = seq - 1`, // another operation
		} {
			h := enginetest.Start(t, dsn, enginetest.Config{SnapshotEvery: 50})
			id := fmt.Sprint("e", len(corrupt))
			h.Create(storetest.BernoulliSpec(id, 3, 0.5))
			playMixed(t, h, id, 0, 300, rand.New(rand.NewPCG(3, 0)), "a")
			before := h.State(id)
			h.Close()
			db := storetest.DB(t, dsn)
			if _, err := db.Exec(corrupt); err != nil {
				t.Fatal(err)
			}
			db.Close()
			h.Open()
			m := engine.Inspect(h.Get(id))
			if m.SnapSeq != 0 || m.Failed != nil {
				t.Fatalf("%s: loaded from the snapshot of operation %d (failed: %v)", corrupt, m.SnapSeq, m.Failed)
			}
			after := h.State(id)
			if fmt.Sprint(before.Released, before.Counts, before.Pulls, before.Releases) != fmt.Sprint(after.Released, after.Counts, after.Pulls, after.Releases) {
				t.Fatalf("%s: replay changed the state:\n%+v\n%+v", corrupt, before, after)
			}
			h.Close()
		}
	})
}

// TestTamperedReleaseAfterSnapshot: a release after the snapshot that
// does not match what the replay asks for stops the experiment
// (ErrDiverged), from the snapshot and from the whole history alike: it
// is never re-drawn.
func TestTamperedReleaseAfterSnapshot(t *testing.T) {
	enginetest.EachStore(t, enginetest.Config{SnapshotEvery: 1 << 20, KeepLog: true}, func(t *testing.T, h *enginetest.Harness) {
		h.Create(storetest.BernoulliSpec("e", 3, 0.5))
		playMixed(t, h, "e", 0, 200, rand.New(rand.NewPCG(4, 0)), "a")
		x := h.Get("e")
		x.Save() // one snapshot now, none after
		if err := x.Durable(context.Background()); err != nil {
			t.Fatal(err)
		}
		mid, err := h.Store.Snapshot(context.Background(), "default/e")
		if err != nil || mid == nil {
			t.Fatalf("no snapshot saved: %v", err)
		}
		r := rand.New(rand.NewPCG(5, 0))
		for i, rel := 0, h.State("e").Releases; h.State("e").Releases == rel; i++ {
			playMixed(t, h, "e", 0, 1, r, fmt.Sprint("b", i, "-"))
			if i > 5000 {
				t.Fatalf("no release in 5000 decisions: %+v", h.State("e"))
			}
		}
		h.Close()
		db := storetest.DB(t, h.DSN())
		// As after a crash: the last snapshot is the one above (not the
		// one the close saved).
		if _, err := db.Exec(storetest.Rebind(h.DSN(), `UPDATE snapshots SET seq = ?, state = ?, sum = ?`), mid.Seq, mid.State, mid.Sum); err != nil {
			t.Fatal(err)
		}
		res, err := db.Exec(`UPDATE releases SET scale = scale * 2 WHERE seq > (SELECT seq FROM snapshots)`)
		if n, _ := res.RowsAffected(); err != nil || n == 0 {
			t.Fatalf("no release after the snapshot (%v)", err)
		}
		db.Close()
		h.Open()
		if failed := engine.Inspect(h.Get("e")).Failed; !errors.Is(failed, tape.ErrDiverged) {
			t.Fatalf("tampered experiment: %v, want ErrDiverged", failed)
		}
	})
}

// retryA3 retries the decision of event a3, with its context as stored.
func retryA3(t testing.TB, h *enginetest.Harness, sp map[string]any) outcome.Decision {
	var ctxt any
	if sp["dim"] != nil {
		e, err := h.Store.Event(context.Background(), "default/"+sp["id"].(string), "a3")
		if err != nil || e == nil {
			t.Fatalf("event a3: %v %v", e, err)
		}
		ctxt = json.RawMessage(e.Context)
	}
	d, err := h.DecideWith(sp["id"].(string), "a3", "a3", ctxt)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestSnapshotHoldsNoDeletedReward: when an AdaC-UCB episode's mean is
// released, its rewards are deleted from the store and a snapshot is
// taken; that snapshot must not hold the episode's exact sum (an episode
// of one pull is one unit's reward). Found by an independent review.
func TestSnapshotHoldsNoDeletedReward(t *testing.T) {
	t.Parallel()
	dsn := storetest.SQLite(t)
	h := enginetest.Start(t, dsn, enginetest.Config{})
	h.Create(storetest.BernoulliSpec("e", 3, 0.5))
	h.Decide("e", "a", "ua")
	res := h.Reward("e", "a", 0.123456789)
	if !res.Learned {
		t.Fatal(res)
	}
	if err := h.Get("e").Durable(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := storetest.StoredRewards(t, h.DSN(), "default/e"); n != 0 {
		t.Fatalf("reward not deleted: %d", n)
	}
	sn, err := h.Store.Snapshot(context.Background(), "default/e")
	if err != nil || sn == nil {
		t.Fatalf("no snapshot: %v", err)
	}
	var s snapshot.Snapshot
	if err := state.Decode(sn.State, &s); err != nil {
		t.Fatal(err)
	}
	var d struct{ Policy []byte }
	if err := state.Decode(s.Policy, &d); err != nil {
		t.Fatal(err)
	}
	var p struct {
		Sum mechanism.SumsState
		Arm int
	}
	if err := state.Decode(d.Policy, &p); err != nil {
		t.Fatal(err)
	}
	t.Logf("snapshot seq %d, unfreed %v, arm %d, sum %v exact %v", s.Seq, s.Unfreed, p.Arm, p.Sum.F, p.Sum.X)
	if p.Sum.F[0] != 0 || len(p.Sum.X) > 0 && p.Sum.X[0].Sign() != 0 {
		t.Fatalf("the deleted reward is in the snapshot: sum %v, exact %v", p.Sum.F, p.Sum.X)
	}
}

// TestCloseSavesSnapshots: a service that closes (SIGTERM) saves each
// experiment's state, so that the next start replays nothing; an
// experiment with nothing new since its last snapshot is not saved
// again. Both stores.
func TestCloseSavesSnapshots(t *testing.T) {
	enginetest.EachStore(t, enginetest.Config{}, func(t *testing.T, h *enginetest.Harness) {
		h.Create(storetest.BernoulliSpec("busy", 3, 0.5))
		h.Create(storetest.BernoulliSpec("idle", 3, 0.5))
		h.Play("busy", []float64{0.7, 0.5, 0.3}, 50, 1, "")
		ops := h.State("busy").Decisions + h.State("busy").Learned
		h.Close()
		st, err := stores.Open(context.Background(), h.DSN())
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		sn, err := st.Snapshot(context.Background(), "default/busy")
		if err != nil || sn == nil || sn.Seq != ops {
			seq := int64(-1)
			if sn != nil {
				seq = sn.Seq
			}
			t.Fatalf("snapshot after close at operation %d (-1: none), %v; want one at operation %d", seq, err, ops)
		}
		if sn, err := st.Snapshot(context.Background(), "default/idle"); err != nil || sn != nil {
			t.Fatalf("an experiment with no operation was saved: %+v, %v", sn, err)
		}
	})
}

// TestCloseStoresNoReleaseTwice: the snapshot a closing service writes
// carries no release: the last operation's releases, stored with it,
// are not stored again (found by the replicas' handover, which snapshots
// the same way).
func TestCloseStoresNoReleaseTwice(t *testing.T) {
	t.Parallel()
	h := enginetest.Start(t, storetest.SQLite(t), enginetest.Config{SnapshotEvery: 1 << 20, KeepLog: true})
	h.Create(storetest.BernoulliSpec("e", 2, 1))
	// Operations until one releases (the first decision does; take a
	// later one, a reward's).
	for i, n := 0, h.State("e").Releases; ; i++ {
		if i > 1000 {
			t.Fatal("no release in 1000 rewards")
		}
		ev := fmt.Sprint(i)
		h.Decide("e", ev, "u"+ev)
		n = h.State("e").Releases
		h.Reward("e", ev, 1)
		if h.State("e").Releases > n {
			break
		}
	}
	want := h.State("e").Releases
	h.Restart()
	if got := h.State("e").Releases; got != want {
		t.Fatalf("%d releases before the close, %d after", want, got)
	}
	hist, err := h.Store.History(context.Background(), "default/e", store.Mark{})
	if err != nil {
		t.Fatal(err)
	}
	if len(hist.Releases) != want {
		t.Fatalf("%d releases stored, %d made", len(hist.Releases), want)
	}
}

// TestSnapshotSizeIndependentOfHistory: a snapshot's size must not grow
// with the rewards of the episode in progress. It listed their seqs (to
// delete their rewards once released): with AdaC-UCB's doubling episodes,
// about a third of all events at any time, so that each snapshot grew
// with the history (500 kB at 4 x 10^5 events) and with it the service's
// memory (SQLite's allocator keeps the blobs' regions). The snapshot
// without its dashboard series (O(log t) by design) and its last releases
// (at most recentReleases) may grow only by the width of its counters:
// it is compared with the largest snapshot seen before the episode of
// 1,000 rewards (the policy's own state grows by about 50 bytes within
// each episode, its exact sums' widths, and starts again with the next;
// a snapshot taken early in an episode is that much smaller), which held
// at most about 500 rewards, so that a size growing with the rewards
// held is still caught by hundreds of bytes.
func TestSnapshotSizeIndependentOfHistory(t *testing.T) {
	t.Parallel()
	h := enginetest.Start(t, storetest.SQLite(t), enginetest.Config{})
	h.Create(storetest.BernoulliSpec("e", 3, 1))
	x := h.Get("e")
	size := func() (int, int64) {
		sn, err := engine.SaveSnapshot(x)
		if err != nil {
			t.Fatal(err)
		}
		var s snapshot.Snapshot
		if err := state.Decode(sn.State, &s); err != nil {
			t.Fatal(err)
		}
		s.Series, s.Recent = nil, nil
		b, err := state.Encode(s)
		if err != nil {
			t.Fatal(err)
		}
		return len(b), h.State("e").Unreleased // (the policy's, bandit.Forgetter)
	}
	means := []float64{0.9, 0.2, 0.1}
	h.Play("e", means, 300, 1, "a") // every arm's statistics released: its floats take their width
	early, _ := size()
	for i := 0; ; i++ {
		h.Play("e", means, 100, uint64(i+2), fmt.Sprintf("b%d-", i))
		late, held := size()
		if held < 1000 {
			early = max(early, late)
			if i == 60 {
				t.Fatalf("no episode of 1,000 rewards in 6,300 decisions (%d held)", held)
			}
			continue
		}
		if late > early+64 {
			t.Fatalf("snapshot of %d bytes while the episode holds %d rewards, at most %d bytes before", late, held, early)
		}
		t.Logf("snapshot %d bytes with %d unreleased rewards (at most %d before)", late, held, early)
		return
	}
}
