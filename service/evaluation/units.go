package evaluation

import (
	"fmt"
	"maps"
	"slices"

	"github.com/dpbandit/dpbandit/service/fault"
	"github.com/dpbandit/dpbandit/service/ledger"
	"github.com/dpbandit/dpbandit/service/store"
)

// An evaluation's debits from its units' ledgers (docs/personalizer.md,
// Evaluations; docs/privacy.md, What an evaluation spends). An
// evaluation is rho_e-zCDP for the replacement of all of a unit's events
// in its range, so each unit whose events it reads pays rho_e in its
// ledger across the tenant's experiments, under the server's cap, as a
// live reward pays its debit: the debit is reserved first
// (ledger.Ledger.Reserve, under the ledger's lock, which live rewards
// of the same units take too), the evaluation is released, and the
// debits are written in the transaction that stores it
// (store.Evaluations.AddEvaluation: both or neither), in the ledger row
// store.EvaluationLedger of the experiment. A unit whose ledger cannot
// afford rho_e has its events left out of the evaluation (counted in
// Evaluation.UnitsOverCap and EventsOverCap), as a live reward of a
// unit over its cap is not learned: the decision depends only on the
// unit's ledger, its own past spends, never on the events evaluated, so
// the cap bounds what the unit loses over everything the service
// released (a privacy filter: docs/privacy.md).

// unitDebits is an evaluation's reservations in its units' ledgers.
type unitDebits struct {
	l    *ledger.Ledger
	nano int64
	// units are the units read, reserved, in key order; entries their
	// ledger entries (nil ones: no cap, or a replica's, which the
	// store reserved).
	units   []string
	entries []*ledger.Entry
	// overUnits and overEvents count the units refused and their events.
	overUnits, overEvents int
	// done pins the entries until the evaluation is stored or dropped:
	// an entry is not evicted while a debit it holds is not in the store.
	done chan struct{}
}

// reserveUnits reserves nano in the ledger of every unit whose events lg
// holds, in key order, and leaves out of lg the events of the units
// whose ledgers cannot afford it. With no unit left, nothing stays
// reserved and the evaluation is refused (Conflict, OperationNotAllowed).
// A store that cannot be read undoes the reservations made (Unavailable).
func (s *subject) reserveUnits(lg *evalLog, nano int64) (*unitDebits, error) {
	events := map[string]int{}
	for _, u := range lg.unitOf {
		events[u]++
	}
	d := &unitDebits{l: s.env.Ledger, nano: nano, done: make(chan struct{})}
	var over map[string]bool
	for _, u := range slices.Sorted(maps.Keys(events)) {
		e, ok, err := d.l.Reserve(store.UnitKey{Tenant: lg.def.Tenant, Unit: u}, store.EvaluationLedger(s.key), nano, d.done)
		if err != nil {
			d.end(false)
			return nil, err
		}
		if !ok {
			if over == nil {
				over = map[string]bool{}
			}
			over[u] = true
			d.overUnits++
			d.overEvents += events[u]
			continue
		}
		d.units, d.entries = append(d.units, u), append(d.entries, e)
	}
	if len(d.units) == 0 {
		d.end(false)
		return nil, &Error{Kind: fault.Conflict, Code: "OperationNotAllowed", Msg: fmt.Sprintf(
			"every unit whose events lie in the range (%d units, %d events) is at its ledger's cap of %g rho: an evaluation would cost each %g rho more",
			d.overUnits, d.overEvents, float64(d.l.Cap())/1e9, float64(nano)/1e9)}
	}
	lg.leaveOut(over)
	return d, nil
}

// end ends the reservations: kept, they stay debited (the evaluation
// and its debits are stored, or may be: a store's error after its
// commit began); else they are refunded. The entries may then be
// evicted (the store holds the debits, or none).
func (d *unitDebits) end(kept bool) {
	if !kept {
		for _, e := range d.entries {
			d.l.Refund(e, d.nano)
		}
	}
	close(d.done)
}

// leaveOut drops the events of the units over from the log (nil: none),
// so that the later passes skip them.
func (lg *evalLog) leaveOut(over map[string]bool) {
	if over == nil {
		lg.unitOf = nil // read once, by reserveUnits
		return
	}
	lg.over = over
	seqs, eligible := lg.seqs[:0], lg.eligible[:0]
	for i, s := range lg.seqs {
		if !over[lg.unitOf[i]] {
			seqs, eligible = append(seqs, s), append(eligible, lg.eligible[i])
		}
	}
	lg.seqs, lg.eligible, lg.unitOf = seqs, eligible, nil
}
