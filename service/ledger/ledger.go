package ledger

import (
	"context"
	"log/slog"
	"sync"

	"github.com/dpbandit/dpbandit/service/fault"
	"github.com/dpbandit/dpbandit/service/internal/bloom"
	"github.com/dpbandit/dpbandit/service/store"
)

// Ledger is what the service knows of every unit's spend over its
// tenant's experiments: a bounded cache of the units' totals, and a
// filter of the units the ledger holds. On replicas the totals are the
// database's (store.Replicated's spend rows), not memory's.
type Ledger struct {
	store  store.Units
	rep    store.Replicated // nil: a single service
	cap    int64            // nano-rho (0: none)
	logger *slog.Logger

	mu     sync.Mutex
	totals *Cache // nano-rho per unit, over its tenant's experiments
	// the units the ledger may hold: debited since the start, and those
	// it held at the start (read in the background: Load)
	known *bloom.Set
}

// New returns the ledger of a store: rep is the store's replica side
// (nil for a single service), capNano the cap on a unit's total in
// nano-rho (0: none), keepUnits the units whose totals memory keeps,
// and ids the server's id filter, of which the ledger takes a namespace.
func New(st store.Units, rep store.Replicated, capNano int64, keepUnits int, ids *bloom.Filter, logger *slog.Logger) *Ledger {
	return &Ledger{store: st, rep: rep, cap: capNano, logger: logger, totals: NewCache(keepUnits), known: bloom.NewSet(ids, "u", true)}
}

// Cap returns the cap on a unit's total, in nano-rho (0: none).
func (l *Ledger) Cap() int64 { return l.cap }

// unitKey is the key of a unit among its tenant's units.
func unitKey(u store.UnitKey) string { return u.Tenant + "\x00" + u.Unit }

// MaySpend reports whether the ledger may hold a row of a unit in
// experiment exp.
func (l *Ledger) MaySpend(u store.UnitKey, exp string) bool {
	if l.rep != nil {
		return true // other replicas debit units too: ask the store
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.known.MayContain(unitExpKey(u, exp))
}

// unitExpKey names a unit's ledger row in experiment exp, in the filter
// of the units the ledger holds (which holds unitKey(u) too).
func unitExpKey(u store.UnitKey, exp string) string { return unitKey(u) + "\x00" + exp }

// Reserve debits nano from a unit's total in its tenant, unless that
// would exceed the cap; folded is the channel of the fold that will
// write the debit to the ledger: the entry is not evicted before it is
// closed.
//
// On a replica the cap is the database's: the debit is added to the
// unit's spend row in a transaction of its own, which locks the row and
// refuses a total over the cap, before the reward is learned (a replica
// that dies in between leaves the unit charged for a reward it did not
// learn: never the other way round).
//
// Without a cap the unit's total is not needed (the ledger's rows are
// incremented in the store), and is not read: a unit known from other
// experiments costs no lookup. A replica without a cap reserves nothing;
// its commits add the debit to the unit's spend row (store.Fold.Unreserved),
// so that replicas with a cap count it.
func (l *Ledger) Reserve(u store.UnitKey, exp string, nano int64, folded chan struct{}) (*Entry, bool, error) {
	if l.rep != nil {
		if l.cap == 0 {
			return nil, true, nil
		}
		ctx, cancel := context.WithTimeout(context.Background(), store.LookupTimeout)
		defer cancel()
		ok, err := l.rep.Reserve(ctx, u, nano, l.cap)
		if err != nil {
			return nil, false, fault.Errorf(fault.Unavailable, "store: %v", err)
		}
		return nil, ok, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	key := unitKey(u)
	l.known.Add(unitExpKey(u, exp))
	if l.cap == 0 {
		l.known.Add(key)
		return nil, true, nil
	}
	e, err := l.totals.Get(key, func() (int64, error) {
		if !l.known.MayContain(key) {
			return 0, nil
		}
		ctx, cancel := context.WithTimeout(context.Background(), store.LookupTimeout)
		defer cancel()
		n, err := l.store.UnitTotal(ctx, u.Tenant, u.Unit)
		if err != nil {
			return 0, fault.Errorf(fault.Unavailable, "store: %v", err)
		}
		return n, nil
	})
	if err != nil {
		return nil, false, err
	}
	if !Fits(e.N, nano, l.cap) {
		return e, false, nil
	}
	e.N += nano
	e.Pin(folded)
	l.known.Add(key)
	return e, true, nil
}

// Refund gives back what Reserve took for a debit that will not be made
// (the policy refused the reward). The entry stays pinned until the
// fold: other debits of the unit may be in it.
func (l *Ledger) Refund(e *Entry, nano int64) {
	if e == nil {
		return
	}
	l.mu.Lock()
	e.N -= nano
	l.mu.Unlock()
}

// Load fills the filter of the units the ledger holds, in the
// background: until it is done, every unit not cached is looked up.
func (l *Ledger) Load(ctx context.Context) {
	err := l.known.Load(func(add func(string)) error {
		return l.store.LedgerUnits(ctx, func(u store.UnitKey, exp string) { add(unitKey(u)); add(unitExpKey(u, exp)) })
	})
	if err != nil && ctx.Err() == nil {
		l.logger.Warn("unit filter not built: units not cached are looked up in the store", "err", err)
	}
}

// Loading reports whether the filter of the units the ledger holds is
// still being built (Load): until then every unit is looked up.
func (l *Ledger) Loading() bool { return l.known.Loading() }
