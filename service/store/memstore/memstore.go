// Package memstore is an in-memory store.Store for tests: it keeps what
// the SQL stores keep, as they keep it (every change folding its own
// writes, as PostgreSQL does), and fails any operation a test asks it
// to, so that the engine's and the ledger's error paths can be tested
// without a database. Its state goes with the process: never serve from
// it.
package memstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/dpbandit/dpbandit/service/store"
)

// Store is an in-memory store.Store.
type Store struct {
	mu sync.Mutex
	// fail, if set, is asked before each operation, by its method's name
	// ("Commit", "Event", "UnitRewards", ...): an error fails it,
	// changing nothing.
	fail func(op string) error

	exps      map[string]store.Experiment
	events    map[string]map[int64]*store.Event // by experiment, by seq
	releases  map[string][]store.Release
	draws     map[string][]uint64
	snapshots map[string]store.Snapshot
	ledger    map[ledgerKey]*store.LedgerRow
	// shared holds each distinct shared part of the events' contexts
	// once, by its digest, as the SQL stores' action_sets: an event keeps
	// its Context without it, and its Shared the part's place and digest.
	shared map[[32]byte]string
	owned  bool
	evals  map[string][]store.EvaluationRow // by experiment, oldest first (evaluations.go)
}

type ledgerKey struct{ unit, exp string }

// New returns an empty store.
func New() *Store {
	return &Store{exps: map[string]store.Experiment{}, events: map[string]map[int64]*store.Event{},
		releases: map[string][]store.Release{}, draws: map[string][]uint64{}, snapshots: map[string]store.Snapshot{},
		ledger: map[ledgerKey]*store.LedgerRow{}, shared: map[[32]byte]string{}}
}

// FailWith makes every later operation ask f first (nil: none fails).
func (s *Store) FailWith(f func(op string) error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = f
}

// enter locks the store and asks whether op fails.
func (s *Store) enter(op string) error {
	s.mu.Lock()
	if s.fail != nil {
		if err := s.fail(op); err != nil {
			s.mu.Unlock()
			return err
		}
	}
	return nil
}

// Own makes the caller the store's owner.
func (s *Store) Own(context.Context, string, func(string)) error {
	if err := s.enter("Own"); err != nil {
		return err
	}
	defer s.mu.Unlock()
	s.owned = true
	return nil
}

// Owned returns nil: nothing else owns the store.
func (s *Store) Owned(context.Context) error {
	if err := s.enter("Owned"); err != nil {
		return err
	}
	s.mu.Unlock()
	return nil
}

// CreateExperiment stores a new experiment; store.ErrExists if its key
// is taken.
func (s *Store) CreateExperiment(_ context.Context, e store.Experiment) error {
	if err := s.enter("CreateExperiment"); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if _, ok := s.exps[e.Key]; ok {
		return store.ErrExists
	}
	s.exps[e.Key] = e
	s.events[e.Key] = map[int64]*store.Event{}
	return nil
}

// Experiments returns every experiment, oldest first.
func (s *Store) Experiments(context.Context) ([]store.Experiment, error) {
	if err := s.enter("Experiments"); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	out := slices.Collect(maps.Values(s.exps))
	slices.SortFunc(out, func(a, b store.Experiment) int {
		return cmp.Or(cmp.Compare(a.Created, b.Created), strings.Compare(a.Key, b.Key))
	})
	return out, nil
}

// History returns what is needed to rebuild an experiment from a mark.
func (s *Store) History(_ context.Context, exp string, from store.Mark) (*store.History, error) {
	if err := s.enter("History"); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	h := &store.History{}
	for _, seq := range slices.Sorted(maps.Keys(s.events[exp])) {
		if seq > from.Seq || slices.Contains(from.Pending, seq) {
			h.Events = append(h.Events, s.copyOf(exp, seq))
		}
	}
	h.Releases = slices.Clone(s.releases[exp][min(from.Releases, int64(len(s.releases[exp]))):])
	h.Draws = slices.Clone(s.draws[exp][min(from.Draws, int64(len(s.draws[exp]))):])
	return h, nil
}

// copyOf returns a copy of an event, its reward copied too and its
// context whole.
func (s *Store) copyOf(exp string, seq int64) store.Event {
	e := *s.events[exp][seq]
	if e.Reward != nil {
		r := *e.Reward
		e.Reward = &r
	}
	if p := e.Shared; p != nil {
		e.Context = e.Context[:p.At] + s.shared[p.Digest] + e.Context[p.At:]
		e.Shared = nil
	}
	return e
}

// Snapshot returns an experiment's last snapshot, or nil.
func (s *Store) Snapshot(_ context.Context, exp string) (*store.Snapshot, error) {
	if err := s.enter("Snapshot"); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	sn, ok := s.snapshots[exp]
	if !ok {
		return nil, nil
	}
	return &sn, nil
}

// Event returns an experiment's event of an event id, or nil.
func (s *Store) Event(_ context.Context, exp, id string) (*store.Event, error) {
	if err := s.enter("Event"); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	for seq, e := range s.events[exp] {
		if e.ID == id {
			c := s.copyOf(exp, seq)
			return &c, nil
		}
	}
	return nil, nil
}

// EventIDs calls fn with the id of every event decided up to upTo.
func (s *Store) EventIDs(_ context.Context, exp string, upTo int64, fn func(string)) error {
	if err := s.enter("EventIDs"); err != nil {
		return err
	}
	var ids []string
	for seq, e := range s.events[exp] {
		if seq <= upTo {
			ids = append(ids, e.ID)
		}
	}
	s.mu.Unlock()
	for _, id := range ids {
		fn(id)
	}
	return nil
}

// Log calls fn for every rewarded event of an experiment, in order.
func (s *Store) Log(_ context.Context, exp string, fn func(store.Event) error) error {
	if err := s.enter("Log"); err != nil {
		return err
	}
	var out []store.Event
	for _, seq := range slices.Sorted(maps.Keys(s.events[exp])) {
		if e := s.copyOf(exp, seq); e.Status != store.Pending {
			out = append(out, e)
		}
	}
	s.mu.Unlock()
	for _, e := range out {
		if err := fn(e); err != nil {
			return err
		}
	}
	return nil
}

// UnitRewards returns the rewards of a unit an experiment learned.
func (s *Store) UnitRewards(_ context.Context, exp, unit string) (int64, error) {
	if err := s.enter("UnitRewards"); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	if r := s.ledger[ledgerKey{unit, exp}]; r != nil {
		return r.Rewards, nil
	}
	return 0, nil
}

// UnitTotal returns a unit's spend over its tenant's experiments.
func (s *Store) UnitTotal(_ context.Context, tenant, unit string) (int64, error) {
	if err := s.enter("UnitTotal"); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	var n int64
	for k, r := range s.ledger {
		if k.unit == unit && strings.HasPrefix(k.exp, tenant+"/") {
			n += r.NanoRho
		}
	}
	return n, nil
}

// UnitStats returns the units an experiment learned from and the most
// rewards it learned from one.
func (s *Store) UnitStats(_ context.Context, exp string) (units, most int64, err error) {
	if err := s.enter("UnitStats"); err != nil {
		return 0, 0, err
	}
	defer s.mu.Unlock()
	for k, r := range s.ledger {
		if k.exp == exp {
			units++
			most = max(most, r.Rewards)
		}
	}
	return units, most, nil
}

// LedgerUnits calls fn for every unit the ledger holds, with each
// experiment it has a row in.
func (s *Store) LedgerUnits(_ context.Context, fn func(store.UnitKey, string)) error {
	if err := s.enter("LedgerUnits"); err != nil {
		return err
	}
	keys := slices.Collect(maps.Keys(s.ledger))
	s.mu.Unlock()
	for _, k := range keys {
		tenant, _, _ := strings.Cut(k.exp, "/")
		fn(store.UnitKey{Tenant: tenant, Unit: k.unit}, k.exp)
	}
	return nil
}

// Ledger returns a tenant's unit's ledger rows, by experiment.
func (s *Store) Ledger(_ context.Context, tenant, unit string) ([]store.LedgerRow, error) {
	if err := s.enter("Ledger"); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	var out []store.LedgerRow
	for k, r := range s.ledger {
		if k.unit == unit && strings.HasPrefix(k.exp, tenant+"/") {
			out = append(out, *r)
		}
	}
	slices.SortFunc(out, func(a, b store.LedgerRow) int { return strings.Compare(a.Experiment, b.Experiment) })
	return out, nil
}

// errUnowned is a commit before Own.
var errUnowned = errors.New("memstore: the store is written before it is owned (Own)")

// Commit applies a batch of changes, all or nothing.
func (s *Store) Commit(_ context.Context, batch []*store.Change) error {
	if err := s.enter("Commit"); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if !s.owned {
		return errUnowned
	}
	rel, drw := map[string]int64{}, map[string]int64{}
	for _, c := range batch {
		if _, ok := s.exps[c.Exp]; !ok {
			return errors.New("memstore: a change of an unknown experiment " + c.Exp)
		}
		// A release or a draw is written once, at the next index: what
		// the SQL stores' primary keys enforce.
		if _, ok := rel[c.Exp]; !ok {
			rel[c.Exp], drw[c.Exp] = int64(len(s.releases[c.Exp])), int64(len(s.draws[c.Exp]))
		}
		if len(c.Releases) > 0 && c.RelBase != rel[c.Exp] || len(c.Draws) > 0 && c.DrawBase != drw[c.Exp] {
			return fmt.Errorf("memstore: %s writes releases from %d and draws from %d, the store holds %d and %d", c.Exp, c.RelBase, c.DrawBase, rel[c.Exp], drw[c.Exp])
		}
		rel[c.Exp] += int64(len(c.Releases))
		drw[c.Exp] += int64(len(c.Draws))
	}
	for _, c := range batch {
		s.apply(c)
	}
	return nil
}

// apply writes one change. The caller holds s.mu.
func (s *Store) apply(c *store.Change) {
	evs := s.events[c.Exp]
	if e := c.Insert; e != nil {
		ins := *e
		ins.Shared = nil
		if rest, p := e.Split(); p != nil {
			if _, ok := s.shared[p.Digest]; !ok {
				s.shared[p.Digest] = p.Text
			}
			ins.Context, ins.Shared = rest, &store.Shared{At: p.At, Digest: p.Digest}
		}
		evs[e.Seq] = &ins
	}
	if u := c.Update; u != nil {
		if e := evs[u.Seq]; e != nil {
			e.Status, e.Reason, e.Reward, e.RSeq, e.At, e.Debit = u.Status, u.Reason, u.Reward, u.RSeq, u.At, c.Debit
			if u.Reward != nil {
				r := *u.Reward
				e.Reward = &r
			}
		}
	}
	s.releases[c.Exp] = append(s.releases[c.Exp], c.Releases...)
	s.draws[c.Exp] = append(s.draws[c.Exp], c.Draws...)
	for _, p := range c.Forget.Except(c.Keep) {
		for seq := p.Lo; seq <= p.Hi; seq++ {
			if e := evs[seq]; e != nil {
				e.Reward = nil
			}
		}
	}
	if c.Status != "" {
		e := s.exps[c.Exp]
		e.Status = c.Status
		s.exps[c.Exp] = e
	}
	if c.Definition != "" {
		e := s.exps[c.Exp]
		e.Definition = c.Definition
		s.exps[c.Exp] = e
	}
	if sn := c.Snapshot; sn != nil {
		s.snapshots[c.Exp] = store.Snapshot{Seq: sn.Seq, State: slices.Clone(sn.State), Sum: slices.Clone(sn.Sum)}
	}
	if f := c.Fold; f != nil {
		for _, d := range f.Debits {
			k := ledgerKey{d.Unit, c.Exp}
			if s.ledger[k] == nil {
				s.ledger[k] = &store.LedgerRow{Unit: d.Unit, Experiment: c.Exp}
			}
			s.ledger[k].Rewards += d.Rewards
			s.ledger[k].NanoRho += d.Nano
		}
		e := s.exps[c.Exp]
		e.Folded = f.Upto
		s.exps[c.Exp] = e
	}
}

// WritesAsItGoes reports true: every change folds its own writes.
func (s *Store) WritesAsItGoes() bool { return true }

// Close does nothing: the state stays for a next harness.
func (s *Store) Close() error { return nil }
