// Package bloom is the service's filter of the ids it has seen (event
// ids, units), of fixed memory: it answers whether an id may have been
// seen, and the caller asks the store when it says yes.
package bloom

import (
	"hash/maphash"
	"sync/atomic"
)

// Filter is a Bloom filter of fixed size (Bloom, "Space/time
// trade-offs in hash coding with allowable errors", CACM 1970) of the
// ids a server has seen: the event ids of every experiment and the
// units the ledger holds, each under its own prefix. It answers whether
// an id may have been seen: never wrong when it says no; when it says
// yes, the caller asks the store (an experiment's event lookup, the ledger), which
// answers right, more slowly. Its size is fixed when the server starts,
// so memory does not grow with the history: with n ids the false
// positive rate is (1 - e^(-k n / m))^k for m bits and k probes; with
// the default 2^27 bits (16 MiB) and 8 probes, 3 10^-8 at 10^6 ids,
// 1.6 10^-3 at 10^7 and 0.3 at 5 10^7, past which nearly every new id
// costs a store lookup (graceful: answers stay right). Bits are set and
// read atomically, so the background loading of old ids and the live
// requests share it without a lock.
type Filter struct {
	seed maphash.Seed
	bits []atomic.Uint64
	m    uint64 // bits: a power of two
}

const (
	// DefaultBits is the default size of a server's id filter, in bits.
	DefaultBits = 1 << 27
	probes      = 8 // probes an id sets and tests
)

// NewFilter returns an empty filter of m bits (rounded up to a power
// of two, at least 64). Its memory is mapped lazily by the operating
// system: a filter holding few ids costs few pages.
func NewFilter(m uint64) *Filter {
	n := uint64(64)
	for n < m {
		n *= 2
	}
	return &Filter{seed: maphash.MakeSeed(), bits: make([]atomic.Uint64, n/64), m: n}
}

// hashes returns the two hashes of prefix+id that the probes combine
// (Kirsch and Mitzenmacher's double hashing).
func (f *Filter) hashes(prefix, id string) (uint64, uint64) {
	var m maphash.Hash
	m.SetSeed(f.seed)
	m.WriteString(prefix)
	m.WriteString(id)
	h := m.Sum64()
	return h, h>>32 | h<<32 | 1
}

// Add records prefix+id.
func (f *Filter) Add(prefix, id string) {
	h1, h2 := f.hashes(prefix, id)
	for i := range uint64(probes) {
		b := (h1 + i*h2) & (f.m - 1)
		w := &f.bits[b/64]
		if bit := uint64(1) << (b % 64); w.Load()&bit == 0 {
			w.Or(bit)
		}
	}
}

// MayContain reports whether prefix+id may have been added.
func (f *Filter) MayContain(prefix, id string) bool {
	h1, h2 := f.hashes(prefix, id)
	for i := range uint64(probes) {
		b := (h1 + i*h2) & (f.m - 1)
		if f.bits[b/64].Load()&(1<<(b%64)) == 0 {
			return false
		}
	}
	return true
}

// Set is one namespace of a server's id filter (one experiment's
// event ids, or the ledger's units), known in part from the start
// (added since) and in part from the store, loaded later in the
// background: until it is loaded, every id may have been seen.
type Set struct {
	f       *Filter
	prefix  string
	loading atomic.Bool // the ids in the store are not all added yet
}

// NewSet returns the namespace prefix of f; loading says whether ids
// stored before are still to be added (Set.load).
func NewSet(f *Filter, prefix string, loading bool) *Set {
	s := &Set{f: f, prefix: prefix + "\x00"}
	s.loading.Store(loading)
	return s
}

// Add records id.
func (s *Set) Add(id string) { s.f.Add(s.prefix, id) }

// MayContain reports whether id may have been seen.
func (s *Set) MayContain(id string) bool {
	return s.loading.Load() || s.f.MayContain(s.prefix, id)
}

// Load adds the stored ids that each calls back with, then ends the
// loading, unless each fails (the namespace then stays loading: every id
// is looked up in the store).
func (s *Set) Load(each func(add func(id string)) error) error {
	if err := each(s.Add); err != nil {
		return err
	}
	s.loading.Store(false)
	return nil
}

// Loading reports whether the stored ids are still to be added (Load):
// until then every id may have been seen.
func (s *Set) Loading() bool { return s.loading.Load() }
