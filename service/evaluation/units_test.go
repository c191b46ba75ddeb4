package evaluation

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/dpbandit/dpbandit/service/engine"
	"github.com/dpbandit/dpbandit/service/fault"
	"github.com/dpbandit/dpbandit/service/internal/enginetest"
	"github.com/dpbandit/dpbandit/service/internal/storetest"
	"github.com/dpbandit/dpbandit/service/outcome"
	"github.com/dpbandit/dpbandit/service/store"
)

// The tests of an evaluation's debits from its units' ledgers
// (units.go). "pz" is a Personalizer experiment at rho 1: each of
// its events is its own unit, whose learned reward costs it 1e9
// nano-rho, and an evaluation 1e9 more.

const evalNano int64 = 1e9 // pz's rho_e, in nano-rho

// evalUnits returns the units of the events an evaluation of pz's whole
// log reads, and their events.
func evalUnits(t *testing.T, h *enginetest.Harness) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, le := range loggedEvents(t, h, h.Get("pz").Definition()) {
		out[le.e.Unit]++
	}
	return out
}

// unitTotals returns each unit's total in the store's ledger, every
// experiment's debits folded first.
func unitTotals(t *testing.T, h *enginetest.Harness, units map[string]int) map[string]int64 {
	t.Helper()
	h.Tick(time.Now())
	out := map[string]int64{}
	for u := range units {
		n, err := h.Store.UnitTotal(context.Background(), "default", u)
		if err != nil {
			t.Fatal(err)
		}
		out[u] = n
	}
	return out
}

// checkUnitDebits returns an error unless evaluation ev, created when
// the units' totals were before under the cap limit, debited evalNano
// from the ledger of each unit that could afford it and left the
// others' out (their ledgers unchanged, counted with their events),
// the debits summing to evalNano times the units it read; after are the
// totals once it is stored.
func checkUnitDebits(ev Evaluation, units map[string]int, before, after map[string]int64, limit int64) error {
	var read, over, overEvents int
	var sum int64
	for u, n := range units {
		debit := after[u] - before[u]
		sum += debit
		if before[u]+evalNano > limit {
			over++
			overEvents += n
			if debit != 0 {
				return fmt.Errorf("unit %s at %d of its cap %d: debited %d, want its ledger unchanged", u, before[u], limit, debit)
			}
			continue
		}
		read++
		if debit != evalNano {
			return fmt.Errorf("unit %s: its ledger went from %d to %d, want the evaluation's debit %d", u, before[u], after[u], evalNano)
		}
	}
	switch {
	case ev.Units != read || ev.UnitsOverCap != over || ev.EventsOverCap != overEvents:
		return fmt.Errorf("the evaluation read %d units, left out %d (%d events); want %d, %d (%d)", ev.Units, ev.UnitsOverCap, ev.EventsOverCap, read, over, overEvents)
	case sum != int64(read)*evalNano || ev.Privacy.UnitsNanoRho != sum:
		return fmt.Errorf("the units' ledgers moved by %d in all, the evaluation says %d; want %d x %d units", sum, ev.Privacy.UnitsNanoRho, evalNano, read)
	case ev.Privacy.UnitCapNanoRho != limit:
		return fmt.Errorf("unit cap %d, want %d", ev.Privacy.UnitCapNanoRho, limit)
	}
	return nil
}

// evalDebitRounds creates pz under a cap of 2 rho a unit, ranks and
// rewards 10 events, evaluates them (every unit affords it), ranks 5
// more, and evaluates them all again: the first 10 units whose learned
// rewards cost them 1 rho are at their cap and left out, the others
// debited. It returns the error of the first check that fails
// (checkUnitDebits).
func evalDebitRounds(t *testing.T, h *enginetest.Harness, limit int64) error {
	t.Helper()
	evalRounds(t, h, "e", 10, false, 11)
	for i, prefix := range []string{"", "f"} {
		if prefix != "" {
			evalRounds(t, h, prefix, 5, false, 12)
		}
		units := evalUnits(t, h)
		before := unitTotals(t, h, units)
		ev, err := Create(context.Background(), h.Get("pz"), fmt.Sprint("ev", i), evalRequest())
		if err != nil {
			t.Fatalf("evaluation %d: %v", i, err)
		}
		if err := checkUnitDebits(ev, units, before, unitTotals(t, h, units), limit); err != nil {
			return fmt.Errorf("evaluation %d: %w", i, err)
		}
		if i == 1 && ev.UnitsOverCap == 0 {
			t.Fatalf("the second evaluation left no unit out: %+v (the test wants some at their cap)", ev)
		}
		if got := ev.Events + ev.EventsOverCap; got != len(loggedEvents(t, h, h.Get("pz").Definition())) {
			t.Fatalf("evaluation %d: %d events read and %d left out, of %d", i, ev.Events, ev.EventsOverCap, got)
		}
	}
	return nil
}

// TestEvaluationDebitsUnits: an evaluation debits rho_e from the ledger
// of every unit whose events it reads, in a row of the experiment's
// evaluations, and leaves out the events of the units at their cap,
// their ledgers unchanged (checkUnitDebits); the in-memory ledger holds
// the debits, so that a live reward of a unit the evaluations took to
// its cap is refused in another experiment (unit_budget); after a
// restart and after a crash the ledger is the same and still refuses it.
func TestEvaluationDebitsUnits(t *testing.T) {
	enginetest.ForAllStores(t, func(t *testing.T, dsn string) {
		const limit = 2 * evalNano
		h := enginetest.Start(t, dsn, enginetest.Config{KeepLog: true, UnitBudget: limit})
		h.Create(personalizerSpec("pz"))
		if err := evalDebitRounds(t, h, limit); err != nil {
			t.Fatal(err)
		}
		units := evalUnits(t, h)
		totals := unitTotals(t, h, units)
		var full string // a unit at its cap, one rho of it spent by evaluations
		for _, u := range slices.Sorted(maps.Keys(units)) {
			rows, err := h.Store.Ledger(context.Background(), "default", u)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rows {
				if r.Experiment == store.EvaluationLedger("default/pz") && r.Rewards == 0 && r.NanoRho > 0 && totals[u] == limit && full == "" {
					full = u
				}
			}
		}
		if full == "" {
			t.Fatalf("no unit at its cap through an evaluation: %v", totals)
		}
		h.Create(storetest.BernoulliSpec("fin", 2, 1))
		liveRefused := func(what, ev string) {
			t.Helper()
			h.Decide("fin", ev, full)
			if res := h.Reward("fin", ev, 1); res.Learned || res.Reason != "unit_budget" {
				t.Fatalf("%s: a live reward of unit %s, at its cap: %+v, want refused for unit_budget", what, full, res)
			}
		}
		liveRefused("before a restart", "live-0")
		h.Restart()
		if got := unitTotals(t, h, units); fmt.Sprint(got) != fmt.Sprint(totals) {
			t.Fatalf("after a restart the ledger is %v, before it %v", got, totals)
		}
		liveRefused("after a restart", "live-1")
		h.Crash()
		h.Open()
		if got := unitTotals(t, h, units); fmt.Sprint(got) != fmt.Sprint(totals) {
			t.Fatalf("after a crash the ledger is %v, before it %v", got, totals)
		}
		liveRefused("after a crash", "live-2")
	})
}

// noDebits is a store that drops an evaluation's units: the evaluation
// is stored without their debits (the hole units.go closes).
type noDebits struct{ engine.Store }

func (s noDebits) AddEvaluation(ctx context.Context, e store.EvaluationRow, limit int64) (bool, error) {
	e.Units = nil
	return s.Store.AddEvaluation(ctx, e, limit)
}

// TestEvaluationDebitsCheckFails: the checks of TestEvaluationDebitsUnits
// fail on a service that stores evaluations without their units' debits.
func TestEvaluationDebitsCheckFails(t *testing.T) {
	h := enginetest.Start(t, enginetest.MemDSN, enginetest.Config{KeepLog: true, UnitBudget: 2 * evalNano})
	h.Env.Store = noDebits{h.Env.Store}
	h.Create(personalizerSpec("pz"))
	if err := evalDebitRounds(t, h, 2*evalNano); err == nil {
		t.Fatal("evaluations stored without their units' debits passed the checks")
	} else {
		t.Logf("as it should, the check failed: %v", err)
	}
}

// TestEvaluationDebitsAtomic: a store adds an evaluation and its units'
// debits in one transaction: an addition that fails after writing both
// (fenced: another service took the store over, checked last before
// the commit) leaves neither, and one that succeeds writes both.
func TestEvaluationDebitsAtomic(t *testing.T) {
	storetest.ForStores(t, func(t *testing.T, dsn string) {
		h := enginetest.Start(t, dsn, enginetest.Config{KeepLog: true})
		h.Create(personalizerSpec("pz"))
		key := store.EvaluationLedger("default/pz")
		row := store.EvaluationRow{Exp: "default/pz", ID: "kept", Nano: 7, Result: "{}", Units: []string{"b", "a"}}
		if ok, err := h.Store.AddEvaluation(context.Background(), row, 100); !ok || err != nil {
			t.Fatalf("add: %v %v", ok, err)
		}
		db := storetest.DB(t, dsn)
		if _, err := db.Exec(`UPDATE owner SET epoch = epoch + 1 WHERE id = 1`); err != nil { // a takeover
			t.Fatal(err)
		}
		row.ID, row.Units = "fenced", []string{"a", "c"}
		if ok, err := h.Store.AddEvaluation(context.Background(), row, 100); ok || !errors.Is(err, store.ErrFenced) {
			t.Fatalf("a fenced add: %v %v", ok, err)
		}
		got := map[string]int64{}
		rows, err := db.Query(`SELECT unit_id, nano FROM ledger WHERE exp = '` + key + `'`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var u string
			var n int64
			if err := rows.Scan(&u, &n); err != nil {
				t.Fatal(err)
			}
			got[u] = n
		}
		var evals int
		if err := db.QueryRow(`SELECT COUNT(*) FROM evaluations`).Scan(&evals); err != nil || evals != 1 || fmt.Sprint(got) != "map[a:7 b:7]" {
			t.Fatalf("%d evaluations (%v), ledger %v: want the first alone, with its debits alone", evals, err, got)
		}
	})
}

// TestEvaluationStoreFailure: an evaluation whose store fails is not
// stored, nor are its units' debits; after a restart the ledger is as
// before it. The reservations of an evaluation refused before its
// commit (its id taken) are refunded: the next evaluation reads every
// unit. The cap, 3 rho, holds a learned reward and two evaluations, not
// three; whether a unit's reward was learned depends on the policy's
// noise, so the cap leaves room for the second evaluation either way (a
// cap of 2 failed when every reward of the 8 was learned).
func TestEvaluationStoreFailure(t *testing.T) {
	h := enginetest.Start(t, enginetest.MemDSN, enginetest.Config{KeepLog: true, UnitBudget: 3 * evalNano})
	h.Create(personalizerSpec("pz"))
	evalRounds(t, h, "e", 8, false, 13)
	units := evalUnits(t, h)
	before := unitTotals(t, h, units)
	failing(t, h, "AddEvaluation")
	if _, err := Create(context.Background(), h.Get("pz"), "failed", evalRequest()); fault.Of(err) != fault.Unavailable {
		t.Fatalf("an evaluation the store fails: %v", err)
	}
	mem(t, h).FailWith(nil)
	h.Restart()
	if got := unitTotals(t, h, units); fmt.Sprint(got) != fmt.Sprint(before) {
		t.Fatalf("after a failed evaluation and a restart the ledger is %v, before it %v", got, before)
	}
	if _, err := Create(context.Background(), h.Get("pz"), "ev", evalRequest()); err != nil {
		t.Fatal(err)
	}
	mid := unitTotals(t, h, units)
	if _, err := Create(context.Background(), h.Get("pz"), "ev", evalRequest()); fault.Of(err) != fault.Conflict {
		t.Fatalf("an id taken: %v", err)
	}
	ev, err := Create(context.Background(), h.Get("pz"), "ev2", evalRequest())
	if err != nil {
		t.Fatal(err)
	}
	if err := checkUnitDebits(ev, units, mid, unitTotals(t, h, units), 3*evalNano); err != nil {
		t.Fatalf("after an evaluation refused for its id: %v", err)
	}
}

// TestEvaluationUnitsRaceLiveRewards: an evaluation reserves its units'
// debits under the ledger's lock, as live rewards do: while it runs,
// each of its units, which can afford one more rho, gets a live reward
// in another experiment; whatever the interleaving, no unit passes its
// cap, and each unit at 1 rho is debited by exactly one of the two (the
// evaluation reads it exactly when the live reward was not learned).
func TestEvaluationUnitsRaceLiveRewards(t *testing.T) {
	enginetest.ForAllStores(t, func(t *testing.T, dsn string) {
		const limit = 2 * evalNano
		h := enginetest.Start(t, dsn, enginetest.Config{KeepLog: true, UnitBudget: limit})
		h.Create(personalizerSpec("pz"))
		h.Create(storetest.BernoulliSpec("fin", 2, 1))
		evalRounds(t, h, "e", 30, false, 14)
		units := evalUnits(t, h)
		before := unitTotals(t, h, units)
		done := make(chan error, 1)
		go func() {
			_, err := Create(context.Background(), h.Get("pz"), "ev", evalRequest())
			done <- err
		}()
		live := map[string]outcome.RewardResult{}
		for u := range units {
			ev := "live-" + u
			h.Decide("fin", ev, u)
			live[u] = h.Reward("fin", ev, 1)
		}
		if err := <-done; err != nil && fault.Of(err) != fault.Conflict { // Conflict: every unit went to the live rewards
			t.Fatal(err)
		}
		after := unitTotals(t, h, units)
		for u := range units {
			rows, err := h.Store.Ledger(context.Background(), "default", u)
			if err != nil {
				t.Fatal(err)
			}
			var evalDebit int64
			for _, r := range rows {
				if r.Experiment == store.EvaluationLedger("default/pz") {
					evalDebit = r.NanoRho
				}
			}
			both := before[u]+2*evalNano > limit
			switch {
			case after[u] > limit:
				t.Fatalf("unit %s: %d past its cap %d", u, after[u], limit)
			case both && live[u].Learned == (evalDebit == evalNano):
				t.Fatalf("unit %s at %d: live reward %+v, evaluation's debit %d: want exactly one of them", u, before[u], live[u], evalDebit)
			case !both && evalDebit != evalNano:
				t.Fatalf("unit %s at %d: the evaluation debited %d, want %d", u, before[u], evalDebit, evalNano)
			}
		}
	})
}

// TestEvaluationDebitsUnreserved: on PostgreSQL, an evaluation stored by
// a replica without a cap (Unreserved: nothing reserved its debits)
// adds them to its units' spend rows too, as a commit's unreserved fold
// does, so that replicas with a cap count them: a unit's spend row is
// its ledger's total.
func TestEvaluationDebitsUnreserved(t *testing.T) {
	dsn := storetest.Postgres(t)
	h := enginetest.Start(t, dsn, enginetest.Config{KeepLog: true})
	h.Create(personalizerSpec("pz"))
	db := storetest.DB(t, dsn)
	if _, err := db.Exec(`INSERT INTO ledger (unit_id, exp, rewards, nano) VALUES ('a', 'default/pz', 1, 5)`); err != nil {
		t.Fatal(err)
	}
	row := store.EvaluationRow{Exp: "default/pz", ID: "e", Nano: 7, Result: "{}", Units: []string{"a", "b"}, Unreserved: true}
	if ok, err := h.Store.AddEvaluation(context.Background(), row, 100); !ok || err != nil {
		t.Fatalf("add: %v %v", ok, err)
	}
	for u, want := range map[string]int64{"a": 12, "b": 7} {
		var spend, total int64
		err := db.QueryRow(`SELECT (SELECT nano FROM unit_spend WHERE unit_id = $1), (SELECT SUM(nano) FROM ledger WHERE unit_id = $1)`, u).Scan(&spend, &total)
		if err != nil || spend != want || total != want {
			t.Fatalf("unit %s: spend row %d, ledger %d (%v), want %d", u, spend, total, err, want)
		}
	}
}
