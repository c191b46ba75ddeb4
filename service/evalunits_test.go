package service

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/dpbandit/dpbandit/service/evaluation"
	"github.com/dpbandit/dpbandit/service/internal/storetest"
)

// ledgerTotals returns the total of each unit's ledger
// (GET /v1/units/{unit}/ledger) and its row of pz's evaluations.
func ledgerTotals(h *harness, units []string) (totals, evals map[string]int64) {
	totals, evals = map[string]int64{}, map[string]int64{}
	for _, u := range units {
		v := h.ledger(u)
		totals[u] = v.TotalNanoRho
		for _, r := range v.Experiments {
			if r.Experiment == "pz#evaluations" {
				evals[u] = r.NanoRho
			}
		}
	}
	return totals, evals
}

// TestPersonalizerEvaluationUnitLedger: under --unit-budget 2, an
// evaluation debits rho (1) from the ledger of each unit it reads, shown
// by GET /v1/units/{unit}/ledger in the row "pz#evaluations", the
// debits summing to rho times dpbandit.units; a second evaluation
// leaves out the units it would take past the cap
// (dpbandit.units_over_cap, their ledgers unchanged), or, when every
// unit is, is 409 OperationNotAllowed; after a restart the ledgers are
// the same.
func TestPersonalizerEvaluationUnitLedger(t *testing.T) {
	t.Parallel()
	storetest.ForStores(t, func(t *testing.T, dsn string) {
		const nano, limit = int64(1e9), int64(2e9)
		h := start(t, dsn, Config{KeepLog: true, UnitBudget: limit})
		c := createPZ(t, h)
		var units []string
		for _, r := range pzRound(c, "e", 10) {
			units = append(units, r.EventID) // each event its own unit
		}
		before, _ := ledgerTotals(h, units)
		evaluate := func() (int, evaluation.Evaluation) {
			t.Helper()
			code, _, b := c.call("POST", pzV11, "/evaluations", specEvaluation("uniform"))
			var ev struct {
				Dpbandit evaluation.Evaluation `json:"dpbandit"`
			}
			if code == 201 && json.Unmarshal(b, &ev) != nil {
				t.Fatalf("%s", b)
			}
			return code, ev.Dpbandit
		}
		code, ev := evaluate()
		after, evals := ledgerTotals(h, units)
		var sum int64
		for _, u := range units {
			sum += after[u] - before[u]
			if after[u]-before[u] != nano || evals[u] != nano {
				t.Fatalf("unit %s: ledger %d -> %d, its evaluations' row %d: want %d debited there", u, before[u], after[u], evals[u], nano)
			}
		}
		if code != 201 || ev.Units != len(units) || ev.UnitsOverCap != 0 || sum != int64(ev.Units)*nano ||
			ev.Privacy.UnitsNanoRho != sum || ev.Privacy.UnitCapNanoRho != limit {
			t.Fatalf("the first evaluation: %d %+v; the ledgers moved by %d", code, ev, sum)
		}
		over := 0
		for _, u := range units {
			if after[u]+nano > limit {
				over++
			}
		}
		code, ev = evaluate()
		again, _ := ledgerTotals(h, units)
		for _, u := range units {
			want := after[u]
			if after[u]+nano <= limit {
				want += nano
			}
			if again[u] != want {
				t.Fatalf("unit %s at %d under the cap %d: ledger %d after the second evaluation, want %d", u, after[u], limit, again[u], want)
			}
		}
		switch {
		case over == 0:
			t.Fatalf("no unit at its cap after the first evaluation: %v (the test wants some)", after)
		case over == len(units) && code != 409:
			t.Fatalf("every unit at its cap: %d, want 409", code)
		case over < len(units) && (code != 201 || ev.UnitsOverCap != over || ev.EventsOverCap != over || ev.Units != len(units)-over):
			t.Fatalf("%d units at their cap: %d %+v", over, code, ev)
		}
		h.restart()
		if got, _ := ledgerTotals(h, units); fmt.Sprint(got) != fmt.Sprint(again) {
			t.Fatalf("after a restart the ledgers are %v, before it %v", got, again)
		}
	})
}
