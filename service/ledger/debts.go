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
