package ledger

import (
	"slices"
	"strings"

	"github.com/dpbandit/dpbandit/service/store"
)

// Debts are the debits of an experiment's learned rewards that no fold
// has written to the ledger yet (the engine's folds), by unit. Values,
// not pointers: no allocation a unit.
type Debts map[string]store.Debit

// Add records a learned reward of unit that cost it nano (nano-rho).
func (d Debts) Add(unit string, nano int64) {
	x := d[unit]
	x.Unit, x.Rewards, x.Nano = unit, x.Rewards+1, x.Nano+nano
	d[unit] = x
}

// Take returns the debits, one a unit, sorted by unit (a fold's rows in
// a fixed order), and forgets them.
func (d Debts) Take() []store.Debit {
	out := make([]store.Debit, 0, len(d))
	for _, x := range d {
		out = append(out, x)
	}
	clear(d)
	slices.SortFunc(out, func(a, b store.Debit) int { return strings.Compare(a.Unit, b.Unit) })
	return out
}

// Unfolded returns what a crash left unfolded of an experiment's history
// (events, read from its operation mark), whose fold cursor is at
// folded: its last operation, and the fold that indexes the events
// decided after folded and writes the debits of the rewards learned (or
// defaulted) after it, up to that operation; nil when the cursor is at
// it. A cursor past it (a store written before folds) moves back to it,
// indexing nothing.
func Unfolded(events []store.Event, mark, folded int64) (last int64, f *store.Fold) {
	last, owed := mark, Debts{}
	for _, e := range events {
		last = max(last, e.Seq, e.RSeq)
		if e.RSeq > folded && (e.Status == store.Learned || e.Status == store.Defaulted) {
			owed.Add(e.Unit, e.Debit)
		}
	}
	if folded == last {
		return last, nil
	}
	f = &store.Fold{Upto: last, Debits: owed.Take()}
	if folded < last {
		f.Index = store.Span{Lo: folded + 1, Hi: last}
	}
	return last, f
}
