package service

import (
	"context"
	"slices"
	"time"

	"github.com/dpbandit/dpbandit/service/store"

	"github.com/dpbandit/dpbandit/service/fault"
)

// Per-unit state. A unit's learned rewards in an experiment (its
// contribution count) and its total spend over its tenant's experiments
// (the ledger's cap) are the store's ledger rows; memory holds a bounded
// cache of them, so that it does not grow with the number of units. An
// entry moved by a debit that is not yet folded into the ledger (fold.go)
// is never evicted: the store would answer a stale count, and a unit
// could then exceed its contribution limit or its cap. A filter of the units the ledger holds
// (built in the background at start) spares the store the lookups of
// units never seen, such as a new visitor's.

// unitCache is a bounded cache of per-unit counters held by the store.
type unitCache struct {
	m   map[string]*unitEntry
	cap int
}

// unitEntry is one cached counter and the channels of the folds that
// will write the debits that moved it (an experiment's next fold's,
// experiment.foldCh). They are all kept: two experiments' folds commit
// in their own order.
type unitEntry struct {
	n       int64
	pending []chan struct{}
}

// pin records that the fold of the channel folded will write a debit
// that moves the entry.
func (e *unitEntry) pin(folded chan struct{}) {
	e.settled()
	if !slices.Contains(e.pending, folded) {
		e.pending = append(e.pending, folded)
	}
}

// settled reports whether every fold that moves the entry is committed,
// forgetting those that are.
func (e *unitEntry) settled() bool {
	e.pending = slices.DeleteFunc(e.pending, func(c chan struct{}) bool {
		select {
		case <-c:
			return true
		default:
			return false
		}
	})
	return len(e.pending) == 0
}

func newUnitCache(n int) *unitCache { return &unitCache{m: map[string]*unitEntry{}, cap: n} }

// get returns the entry of key, read by load on a miss.
func (c *unitCache) get(key string, load func() (int64, error)) (*unitEntry, error) {
	if e, ok := c.m[key]; ok {
		return e, nil
	}
	n, err := load()
	if err != nil {
		return nil, err
	}
	if len(c.m) >= c.cap {
		c.evict()
	}
	e := &unitEntry{n: n}
	c.m[key] = e
	return e, nil
}

// evict forgets durable entries until the cache is half full (or none
// is durable). It copies the rest into a new map: a map with deletions
// keeps their slots (Go prunes them only at best), and would grow with
// the units that passed through.
func (c *unitCache) evict() {
	keep := make(map[string]*unitEntry, c.cap)
	for k, e := range c.m {
		if !e.settled() || len(keep) < c.cap/2 {
			keep[k] = e
		}
	}
	c.m = keep
}

// unitKey is the key of a unit among its tenant's units.
func unitKey(u store.UnitKey) string { return u.Tenant + "\x00" + u.Unit }

// storeTimeout bounds a lookup in the store on a request's path.
const storeTimeout = 10 * time.Second

// unitRewards returns the entry of a unit's learned rewards in an
// experiment. The caller holds x.mu.
func (s *Server) unitRewards(x *experiment, unit string) (*unitEntry, error) {
	return x.units.get(unit, func() (int64, error) {
		if !s.unitMaySpend(store.UnitKey{Tenant: x.def.Tenant, Unit: unit}, x.def.key()) {
			return 0, nil
		}
		ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
		defer cancel()
		n, err := s.cfg.Store.UnitRewards(ctx, x.def.key(), unit)
		if err != nil {
			return 0, fault.Errorf(fault.Unavailable, "store: %v", err)
		}
		return n, nil
	})
}

// unitMaySpend reports whether the ledger may hold a row of a unit in
// experiment exp.
func (s *Server) unitMaySpend(u store.UnitKey, exp string) bool {
	if s.rep != nil {
		return true // other replicas debit units too: ask the store
	}
	s.lmu.Lock()
	defer s.lmu.Unlock()
	return s.spent.mayContain(unitExpKey(u, exp))
}

// unitExpKey names a unit's ledger row in experiment exp, in the filter
// of the units the ledger holds (which holds unitKey(u) too).
func unitExpKey(u store.UnitKey, exp string) string { return unitKey(u) + "\x00" + exp }

// reserve debits nano from a unit's total in its tenant, unless that
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
// its commits add the debit to the unit's spend row (Change.Unreserved),
// so that replicas with a cap count it.
func (s *Server) reserve(u store.UnitKey, exp string, nano int64, folded chan struct{}) (*unitEntry, bool, error) {
	if s.rep != nil {
		if s.cfg.UnitBudget == 0 {
			return nil, true, nil
		}
		ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
		defer cancel()
		ok, err := s.rep.rs.Reserve(ctx, u, nano, s.cfg.UnitBudget)
		if err != nil {
			return nil, false, fault.Errorf(fault.Unavailable, "store: %v", err)
		}
		return nil, ok, nil
	}
	s.lmu.Lock()
	defer s.lmu.Unlock()
	key := unitKey(u)
	s.spent.add(unitExpKey(u, exp))
	if s.cfg.UnitBudget == 0 {
		s.spent.add(key)
		return nil, true, nil
	}
	e, err := s.totals.get(key, func() (int64, error) {
		if !s.spent.mayContain(key) {
			return 0, nil
		}
		ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
		defer cancel()
		n, err := s.cfg.Store.UnitTotal(ctx, u.Tenant, u.Unit)
		if err != nil {
			return 0, fault.Errorf(fault.Unavailable, "store: %v", err)
		}
		return n, nil
	})
	if err != nil {
		return nil, false, err
	}
	if e.n+nano > s.cfg.UnitBudget || e.n > 1<<62-nano { // a cap there is (none returned above)
		return e, false, nil
	}
	e.n += nano
	e.pin(folded)
	s.spent.add(key)
	return e, true, nil
}

// refund gives back what reserve took for a debit that will not be made
// (the policy refused the reward). The entry stays pinned until the
// fold: other debits of the unit may be in it.
func (s *Server) refund(e *unitEntry, nano int64) {
	if e == nil {
		return
	}
	s.lmu.Lock()
	e.n -= nano
	s.lmu.Unlock()
}

// buildUnitFilter fills the filter of the units the ledger holds, in the
// background: until it is done, every unit not cached is looked up.
func (s *Server) buildUnitFilter(ctx context.Context) {
	err := s.spent.load(func(add func(string)) error {
		return s.cfg.Store.LedgerUnits(ctx, func(u store.UnitKey, exp string) { add(unitKey(u)); add(unitExpKey(u, exp)) })
	})
	if err != nil && ctx.Err() == nil {
		s.cfg.Logger.Warn("unit filter not built: units not cached are looked up in the store", "err", err)
	}
}
