// Package ledger is the service's per-unit state across experiments. A
// unit's learned rewards in an experiment (its contribution count) and
// its total spend over its tenant's experiments (the cap on its ledger)
// are the store's ledger rows; memory holds a bounded cache of them, so
// that it does not grow with the number of units. An entry moved by a
// debit that is not yet folded into the ledger (the engine's folds) is
// never evicted: the store would answer a stale count, and a unit could
// then exceed its contribution limit or its cap. A filter of the units
// the ledger holds (built in the background at start) spares the store
// the lookups of units never seen, such as a new visitor's.
//
// The ledger's side of a reward's admission is plain arithmetic here
// (Cost: the contribution limit and a reward's debit; Fits: the cap), as
// are the debits an experiment's fold writes (Debts); the engine calls
// them under its experiment's lock.
package ledger

import "slices"

// Cache is a bounded cache of per-unit counters held by the store.
type Cache struct {
	m   map[string]*Entry
	cap int
	// next is the size at which a miss tries to evict: cap, or more
	// after an eviction that left the cache full of pinned entries, so
	// that misses do not each visit every entry.
	next      int
	evictions int // evictions tried (tests)
}

// Entry is one cached counter and the channels of the folds that
// will write the debits that moved it (an experiment's next fold's,
// experiment.foldCh). They are all kept: two experiments' folds commit
// in their own order.
type Entry struct {
	N       int64 // the counter: rewards learned, or nano-rho spent
	pending []chan struct{}
}

// Pin records that the fold of the channel folded will write a debit
// that moves the entry.
func (e *Entry) Pin(folded chan struct{}) {
	e.Settled()
	if !slices.Contains(e.pending, folded) {
		e.pending = append(e.pending, folded)
	}
}

// Settled reports whether every fold that moves the entry is committed,
// forgetting those that are.
func (e *Entry) Settled() bool {
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

// NewCache returns an empty cache of at most n entries (but those
// pinned by folds not committed yet).
func NewCache(n int) *Cache { return &Cache{m: map[string]*Entry{}, cap: n, next: n} }

// Get returns the entry of key, read by load on a miss.
func (c *Cache) Get(key string, load func() (int64, error)) (*Entry, error) {
	if e, ok := c.m[key]; ok {
		return e, nil
	}
	n, err := load()
	if err != nil {
		return nil, err
	}
	if len(c.m) >= c.next {
		c.evict()
	}
	e := &Entry{N: n}
	c.m[key] = e
	return e, nil
}

// evict forgets durable entries until the cache is half full (or none
// is durable). It copies the rest into a new map: a map with deletions
// keeps their slots (Go prunes them only at best), and would grow with
// the units that passed through.
// The next eviction is tried at cap entries, or, when pinned entries
// keep the cache fuller, once cap/2 more have come.
func (c *Cache) evict() {
	c.evictions++
	keep := make(map[string]*Entry, c.cap)
	for k, e := range c.m {
		if !e.Settled() || len(keep) < c.cap/2 {
			keep[k] = e
		}
	}
	c.m = keep
	c.next = max(c.cap, len(keep)+max(c.cap/2, 1))
}

// Len returns the number of entries in memory.
func (c *Cache) Len() int { return len(c.m) }
