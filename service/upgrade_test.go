package service

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/dpbandit/dpbandit/service/define"
	"github.com/dpbandit/dpbandit/service/internal/storetest"
)

// TestStoreOfThePreviousVersion opens a SQLite store written by revision
// 87fffe2 (testdata/store-87fffe2.db: a contextual AdaC-OFUL experiment
// "ctx" taken with one choice in flight, and an AdaC-UCB one "mab", by
// an independent reviewer): the columns and index added since are
// migrated in place, the debits move from their table to their events, both experiments replay under their own rules
// (Definition.Rules: the contextual one without concurrent decisions),
// and both take new decisions.
func TestStoreOfThePreviousVersion(t *testing.T) {
	t.Parallel()
	dsn := storeOf(t, "store-87fffe2.db")
	h := start(t, dsn, Config{})
	raw, q := rawDB(t, dsn)
	var ledger, debits int64
	if err := raw.QueryRow(`SELECT SUM(nano) FROM ledger`).Scan(&ledger); err != nil {
		t.Fatal(err)
	}
	if err := raw.QueryRow(q(`SELECT SUM(debit) FROM events`)).Scan(&debits); err != nil {
		t.Fatal(err)
	}
	if ledger == 0 || debits != ledger {
		t.Fatalf("the debits moved to the events sum to %d nano-rho, the ledger to %d", debits, ledger)
	}
	for _, id := range []string{"ctx", "mab"} {
		st := h.state(id)
		if st.Failed != "" || st.Decisions == 0 || st.Rules != 0 {
			t.Fatalf("%s after the upgrade: failed %q, %d decisions, rules %d", id, st.Failed, st.Decisions, st.Rules)
		}
	}
	h.decide("mab", "after-upgrade", "u-new")
	h.call("POST", "/v1/experiments/ctx/decisions", map[string]any{"event_id": "after-upgrade", "unit_id": "u-new",
		"context": ctxSet(h, "ctx")}, 200, nil)
	h.restart()
	if st := h.state("ctx"); st.Failed != "" {
		t.Fatalf("ctx after a second restart: %q", st.Failed)
	}
}

// ctxSet returns a decision set of an experiment's shape: its arms as
// the first coordinate vectors, cycled.
func ctxSet(h *harness, id string) [][]float64 {
	st := h.state(id)
	set := make([][]float64, st.Arms)
	for k := range set {
		set[k] = make([]float64, st.Dim)
		set[k][k%st.Dim] = 1
	}
	return set
}

// TestExplorationUnderItsOwnRule opens a SQLite store written by the
// revision before 3a1b958 (testdata/store-explore-rules2.db: AdaC-UCB
// over 4 arms with exploration 0.1, 40 decisions of which 4 explored, 20
// rewards, killed with SIGKILL before any snapshot). Its decisions'
// propensities were 1 - e + e/K and e/K; later experiments use the
// coin's exact probability (exploreProb), which differs from e in the
// last bits. The history must replay under its own rule (it failed as
// diverged: 0.9500000000000001 against 0.95; found by a reviewer), take
// new decisions under it, and log them as it did; a new experiment
// decides under the current rule.
func TestExplorationUnderItsOwnRule(t *testing.T) {
	t.Parallel()
	h := start(t, storeOf(t, "store-explore-rules2.db"), Config{KeepLog: true})
	st := h.state("explore")
	if st.Failed != "" || st.Decisions != 40 || st.Explored != 4 || st.Rules != 2 {
		t.Fatalf("after the upgrade: failed %q, %d decisions, %d explored, rules %d", st.Failed, st.Decisions, st.Explored, st.Rules)
	}
	const e, k = 0.1, 4.0
	for i := range 40 {
		d := h.decide("explore", fmt.Sprint("new", i), fmt.Sprint("v", i))
		if d.Probability != 1-e+e/k && d.Probability != e/k {
			t.Fatalf("decision %d under the old rule: probability %v", i, d.Probability)
		}
	}
	h.restart()
	if st := h.state("explore"); st.Failed != "" || st.Decisions != 80 {
		t.Fatalf("after a restart: failed %q, %d decisions", st.Failed, st.Decisions)
	}
	sp := storetest.BernoulliSpec("fresh", 4, 1)
	sp["exploration"] = e
	if st := h.create(sp); st.Rules != define.CurrentRules {
		t.Fatalf("a new experiment's rules %d, want %d", st.Rules, define.CurrentRules)
	}
	p := math.Ceil(e*(1<<53)) / (1 << 53) // the coin's exact probability
	if d := h.decide("fresh", "1", "u"); d.Probability != 1-p+p/k && d.Probability != p/k {
		t.Fatalf("a new experiment's probability %v", d.Probability)
	}
}

// storeOf copies testdata/name, a SQLite store of an earlier revision,
// into a temporary directory and returns its path.
func storeOf(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	dsn := filepath.Join(t.TempDir(), "state.db")
	if err := os.WriteFile(dsn, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dsn
}
