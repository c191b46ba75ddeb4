package service

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/dpbandit/dpbandit/service/define"
	"github.com/dpbandit/dpbandit/service/internal/storetest"
	"github.com/dpbandit/dpbandit/service/outcome"
)

// lateRun is what driveLate saw of a contextual experiment.
type lateRun struct {
	held      int // rewards held back past the patience, then sent
	learned   int // of them, answered as learned
	conflicts int // of them, answered 409
	want      int64
}

// driveLate is the finding's repro on contextual experiment id (AdaC-OFUL
// on 4 random directions of R^2): 150 decisions, each rewarded at once
// except 6 learning ones from the 60th on (every 10th), held back past
// the patience (2*1 + 8 = 10 decisions: every other delay is 0); then
// between runs, the clock moves 2 s and 5 of the held rewards are sent,
// inside the window; 50 more decisions are rewarded at once; the last
// held reward is never sent and its window passes. want counts the
// rewards that must be learned: every one sent to a learning decision.
func driveLate(t *testing.T, h *harness, c *storetest.Clock, id string, between func()) lateRun {
	t.Helper()
	r := rand.New(rand.NewPCG(21, 21))
	theta := []float64{0.8, -0.6}
	var run lateRun
	var held []string
	decide := func(i int, hold bool) {
		set, _ := storetest.Directions(r, theta)
		ev := fmt.Sprint(id, i)
		var d outcome.Decision
		h.call("POST", "/v1/experiments/"+id+"/decisions", map[string]any{"event_id": ev, "unit_id": ev, "context": set}, 200, &d)
		if hold && d.Learns {
			held = append(held, ev)
			return
		}
		mean := theta[0]*set[d.Arm][0] + theta[1]*set[d.Arm][1]
		if h.reward(id, ev, math.Max(-1, math.Min(1, mean))).Learned {
			run.want++
		}
	}
	for i := range 150 {
		decide(i, i >= 60 && len(held) < 6 && len(held) < (i-50)/10)
	}
	if len(held) != 6 {
		t.Fatalf("%d learning decisions held, want 6", len(held))
	}
	between()
	c.Add(2 * time.Second)
	for _, ev := range held[:5] {
		run.held++
		b, _ := json.Marshal(map[string]any{"event_id": ev, "reward": 0.5})
		code, body := h.do("POST", "/v1/experiments/"+id+"/rewards", "application/json", b)
		var res outcome.RewardResult
		switch {
		case code == 409:
			run.conflicts++
		case code != 200 || json.Unmarshal(body, &res) != nil:
			t.Fatalf("late reward of %s: %d %s", ev, code, body)
		case res.Learned:
			run.learned++
			run.want++
		}
	}
	for i := 150; i < 200; i++ {
		decide(i, false)
	}
	c.Add(601 * time.Second) // the last held reward's window passes
	h.srv.Expire()
	return run
}

// releasesOf is what a restart must keep of a state: the counts and the
// releases (a release re-drawn differs in its values).
func releasesOf(s outcome.State) []any {
	return []any{s.Counts, s.Releases, s.Recent, s.Episodes, s.Pending, s.Awaiting, s.Failed}
}

// keepsAcross runs stop (a restart or a crash and a reopen) and fails the
// test unless what view shows of experiment id's state is the same after
// as before.
func (h *harness) keepsAcross(id string, view func(outcome.State) []any, stop func()) {
	h.t.Helper()
	before := h.state(id)
	stop()
	if after := h.state(id); fmt.Sprint(view(before)...) != fmt.Sprint(view(after)...) {
		h.t.Fatalf("%s's state changed across the stop:\n%+v\n%+v", id, before, after)
	}
}

// lateSpec is the spec of a contextual experiment (the default window,
// 600 s) with the default reward def (nil: none).
func lateSpec(id string, def *float64) map[string]any {
	sp := map[string]any{"id": id, "algorithm": "adac-oful", "arms": 4, "dim": 2, "horizon": 4000,
		"reward_range": []float64{-1, 1}, "privacy": map[string]float64{"rho": 10}}
	if def != nil {
		sp["default_reward"] = *def
	}
	return sp
}

// TestLateContextualRewardsLearned: the finding (a contextual
// experiment settled an overdue decision at once, by the default reward
// or a drop, and refused its reward that came later inside its window:
// 409, not learned), on both stores, with and without a default reward,
// and with a restart (from a snapshot: one every 7 operations, and one
// at the stop) or a crash (no snapshot at the stop, and the snapshots
// deleted: the whole history replays) between the overdue and the late
// rewards, across which the counts and releases stay the same: every
// held reward sent inside its window is learned (state's learned counts
// it), the one never sent takes the default (or expires) at its
// window's end, and a restart at the end replays the history to the
// same releases (none re-drawn). Before rules 5 (define.RulesLate) the
// held rewards were answered 409.
func TestLateContextualRewardsLearned(t *testing.T) {
	t.Parallel()
	zero := 0.0
	storetest.ForStores(t, func(t *testing.T, dsn string) {
		c := storetest.NewClock(time.Unix(1e9, 0))
		h := start(t, dsn, Config{Now: c.Now, SnapshotEvery: 7, Entropy: rand.NewChaCha8([32]byte{21})})
		raw, q := rawDB(t, dsn)
		crashReplay := func() { // a crash, and a reopen that replays the whole history
			h.crash()
			if _, err := raw.Exec(q(`DELETE FROM snapshots WHERE exp = ?`), "default/crash"); err != nil {
				t.Fatal(err)
			}
			h.open()
		}
		for _, tc := range []struct {
			id      string
			def     *float64
			between func()
		}{
			{"late", nil, func() {}},
			{"latedef", &zero, func() {}},
			{"restart", &zero, func() { h.restartKeeps("restart", releasesOf) }},
			{"crash", nil, func() { h.keepsAcross("crash", releasesOf, crashReplay) }},
		} {
			if st := h.create(lateSpec(tc.id, tc.def)); st.Rules != define.RulesLate {
				t.Fatalf("%s: rules %d, want %d", tc.id, st.Rules, define.RulesLate)
			}
			run := driveLate(t, h, c, tc.id, tc.between)
			st := h.state(tc.id)
			t.Logf("%s: %d held rewards sent late, %d learned, %d refused; state learned %d defaulted %d expired %d, %d releases",
				tc.id, run.held, run.learned, run.conflicts, st.Learned, st.Defaulted, st.Expired, st.Releases)
			if run.learned != run.held || st.Learned != run.want {
				t.Errorf("%s: %d of %d late rewards learned (%d refused); learned %d, want %d", tc.id, run.learned, run.held, run.conflicts, st.Learned, run.want)
			}
			if tc.def != nil && (st.Defaulted != 1 || st.Expired != 0) || tc.def == nil && (st.Defaulted != 0 || st.Expired != 1) {
				t.Errorf("%s: defaulted %d, expired %d: want only the reward never sent settled at its window's end", tc.id, st.Defaulted, st.Expired)
			}
			if st.Awaiting != 0 || st.Failed != "" {
				t.Errorf("%s: %d awaiting, failed %q", tc.id, st.Awaiting, st.Failed)
			}
			h.restartKeeps(tc.id, releasesOf)
		}
	})
}

// TestLateContextualUnderRules4: an experiment created under rules 4
// (define.RulesPooled) keeps its rule: an overdue decision takes the
// default reward at once, and its reward sent later inside the window is
// refused (409), as its stored history was written.
func TestLateContextualUnderRules4(t *testing.T) {
	t.Parallel()
	zero := 0.0
	storetest.ForStores(t, func(t *testing.T, dsn string) {
		c := storetest.NewClock(time.Unix(1e9, 0))
		h := start(t, dsn, Config{Now: c.Now, Entropy: rand.NewChaCha8([32]byte{22})})
		h.create(lateSpec("old", &zero))
		raw, q := rawDB(t, dsn)
		if _, err := raw.Exec(q(`UPDATE experiments SET definition = REPLACE(definition, ?, ?)`),
			fmt.Sprintf(`"rules":%d`, define.RulesLate), fmt.Sprintf(`"rules":%d`, define.RulesPooled)); err != nil {
			t.Fatal(err)
		}
		h.restart()
		if st := h.state("old"); st.Rules != define.RulesPooled {
			t.Fatalf("rules %d, want %d", st.Rules, define.RulesPooled)
		}
		run := driveLate(t, h, c, "old", func() {})
		st := h.state("old")
		t.Logf("rules 4: %d held rewards sent late, %d learned, %d refused; defaulted %d", run.held, run.learned, run.conflicts, st.Defaulted)
		if run.conflicts == 0 || st.Defaulted < int64(run.conflicts) {
			t.Errorf("under rules 4 %d late rewards were refused and %d defaulted: the old rule settles overdue decisions at once", run.conflicts, st.Defaulted)
		}
		h.restartKeeps("old", releasesOf)
	})
}

// TestLateContextualPatienceReplays: under rules 5 the patience decides
// which choices are withdrawn from V, so it may count only the arrivals
// a replay sees. Explored decisions' rewards sent after their window
// (409) are not stored; if their delays counted live (as under the
// slot rule, where the patience only chose which settlements were
// stored), the patience would grow live but not in a replay: a choice
// held 20 decisions would stay in V live and be withdrawn in the
// replay, and the replay would diverge.
func TestLateContextualPatienceReplays(t *testing.T) {
	t.Parallel()
	storetest.ForStores(t, func(t *testing.T, dsn string) {
		c := storetest.NewClock(time.Unix(1e9, 0))
		h := start(t, dsn, Config{Now: c.Now, Entropy: rand.NewChaCha8([32]byte{23})})
		sp := lateSpec("px", nil)
		sp["exploration"], sp["reward_window_seconds"] = 0.3, 10
		h.create(sp)
		r := rand.New(rand.NewPCG(23, 23))
		n := 0
		decide := func() outcome.Decision {
			set, _ := storetest.Directions(r, []float64{0.8, -0.6})
			var d outcome.Decision
			ev := fmt.Sprint(n)
			n++
			h.call("POST", "/v1/experiments/px/decisions", map[string]any{"event_id": ev, "unit_id": ev, "context": set}, 200, &d)
			return d
		}
		for range 100 {
			h.reward("px", decide().EventID, 0.5)
		}
		var explored []string
		for range 40 {
			if d := decide(); d.PolicyArm != d.Arm {
				explored = append(explored, d.EventID)
			} else {
				h.reward("px", d.EventID, 0.5)
			}
		}
		c.Add(11 * time.Second)
		h.srv.Expire()
		for _, ev := range explored { // after their window: refused, not stored
			b, _ := json.Marshal(map[string]any{"event_id": ev, "reward": 0.5})
			if code, body := h.do("POST", "/v1/experiments/px/rewards", "application/json", b); code != 409 {
				t.Fatalf("a reward after its window: %d %s", code, body)
			}
		}
		var held []string
		for range 3 {
			held = append(held, decide().EventID)
			for range 20 {
				h.reward("px", decide().EventID, 0.5)
			}
		}
		for _, ev := range held {
			h.reward("px", ev, 0.5)
		}
		t.Logf("%d explored rewards refused after their window, %d held 20 decisions", len(explored), len(held))
		h.keepsAcross("px", releasesOf, func() {
			h.crash()
			raw, q := rawDB(t, dsn)
			if _, err := raw.Exec(q(`DELETE FROM snapshots WHERE exp = ?`), "default/px"); err != nil {
				t.Fatal(err)
			}
			h.open()
		})
	})
}

// TestLateContextualPersonalizerRanks: the finding as it was reproduced,
// on the Personalizer surface: 150 ranks rewarded at once, 5 held back
// past the patience and sent 2 s later (inside the window). Every reward
// counts as a reward (learned, or ignored as explored or overflow: its
// decision did not learn), none took the
// default (before: 3 of the 5 defaulted to 0 and their rewards were
// answered 204 and not learned).
func TestLateContextualPersonalizerRanks(t *testing.T) {
	t.Parallel()
	storetest.ForStores(t, func(t *testing.T, dsn string) {
		c := storetest.NewClock(time.Unix(1e9, 0))
		h := start(t, dsn, Config{Now: c.Now, Entropy: rand.NewChaCha8([32]byte{24})})
		pz := createPZ(t, h)
		var held []string
		for i := range 150 {
			ev := fmt.Sprint("r", i)
			pz.rank(pzRankRequest{ContextFeatures: []map[string]any{{"hour": i % 24}}, EventID: ev, Actions: []pzAction{
				{ID: "a", Features: []map[string]any{{"t": "a"}}}, {ID: "b", Features: []map[string]any{{"t": "b"}}}, {ID: "c", Features: []map[string]any{{"t": "c"}}}}})
			if i >= 60 && i <= 100 && i%10 == 0 {
				held = append(held, ev)
				continue
			}
			pz.reward(ev, 1)
		}
		c.Add(2 * time.Second)
		for _, ev := range held {
			pz.reward(ev, 1)
		}
		st := h.state("pz")
		t.Logf("rewards %d, learned %d, ignored %d, defaulted %d", st.Rewards, st.Learned, st.Ignored, st.Defaulted)
		if st.Defaulted != 0 || st.Rewards != 150 || st.Learned+st.Ignored != 150 || st.Ignored > st.Explored+st.Overflow {
			t.Errorf("rewards %d, learned %d, ignored %d (explored decisions %d, overflow %d), defaulted %d: want every reward learned unless its decision did not learn",
				st.Rewards, st.Learned, st.Ignored, st.Explored, st.Overflow, st.Defaulted)
		}
	})
}
