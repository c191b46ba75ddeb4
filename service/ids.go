package service

import (
	"hash/maphash"
	"sync/atomic"

	"github.com/dpbandit/dpbandit/service/fault"
)

// idFilter is a Bloom filter of fixed size (Bloom, "Space/time
// trade-offs in hash coding with allowable errors", CACM 1970) of the
// ids a server has seen: the event ids of every experiment and the
// units the ledger holds, each under its own prefix. It answers whether
// an id may have been seen: never wrong when it says no; when it says
// yes, the caller asks the store (Server.event, the ledger), which
// answers right, more slowly. Its size is fixed when the server starts,
// so memory does not grow with the history: with n ids the false
// positive rate is (1 - e^(-k n / m))^k for m bits and k probes; with
// the default 2^27 bits (16 MiB) and 8 probes, 3 10^-8 at 10^6 ids,
// 1.6 10^-3 at 10^7 and 0.3 at 5 10^7, past which nearly every new id
// costs a store lookup (graceful: answers stay right). Bits are set and
// read atomically, so the background loading of old ids and the live
// requests share it without a lock.
type idFilter struct {
	seed maphash.Seed
	bits []atomic.Uint64
	m    uint64 // bits: a power of two
}

const (
	filterBits   = 1 << 27 // the default size of a server's id filter, in bits
	filterProbes = 8       // probes an id sets and tests
)

// newIDFilter returns an empty filter of m bits (rounded up to a power
// of two, at least 64). Its memory is mapped lazily by the operating
// system: a filter holding few ids costs few pages.
func newIDFilter(m uint64) *idFilter {
	n := uint64(64)
	for n < m {
		n *= 2
	}
	return &idFilter{seed: maphash.MakeSeed(), bits: make([]atomic.Uint64, n/64), m: n}
}

// hashes returns the two hashes of prefix+id that the probes combine
// (Kirsch and Mitzenmacher's double hashing).
func (f *idFilter) hashes(prefix, id string) (uint64, uint64) {
	var m maphash.Hash
	m.SetSeed(f.seed)
	m.WriteString(prefix)
	m.WriteString(id)
	h := m.Sum64()
	return h, h>>32 | h<<32 | 1
}

// add records prefix+id.
func (f *idFilter) add(prefix, id string) {
	h1, h2 := f.hashes(prefix, id)
	for i := range uint64(filterProbes) {
		b := (h1 + i*h2) & (f.m - 1)
		w := &f.bits[b/64]
		if bit := uint64(1) << (b % 64); w.Load()&bit == 0 {
			w.Or(bit)
		}
	}
}

// mayContain reports whether prefix+id may have been added.
func (f *idFilter) mayContain(prefix, id string) bool {
	h1, h2 := f.hashes(prefix, id)
	for i := range uint64(filterProbes) {
		b := (h1 + i*h2) & (f.m - 1)
		if f.bits[b/64].Load()&(1<<(b%64)) == 0 {
			return false
		}
	}
	return true
}

// seenIDs is one namespace of a server's id filter (one experiment's
// event ids, or the ledger's units), known in part from the start
// (added since) and in part from the store, loaded later in the
// background: until it is loaded, every id may have been seen.
type seenIDs struct {
	f       *idFilter
	prefix  string
	loading atomic.Bool // the ids in the store are not all added yet
}

// newSeenIDs returns the namespace prefix of f; loading says whether ids
// stored before are still to be added (seenIDs.load).
func newSeenIDs(f *idFilter, prefix string, loading bool) *seenIDs {
	s := &seenIDs{f: f, prefix: prefix + "\x00"}
	s.loading.Store(loading)
	return s
}

// add records id.
func (s *seenIDs) add(id string) { s.f.add(s.prefix, id) }

// mayContain reports whether id may have been seen.
func (s *seenIDs) mayContain(id string) bool {
	return s.loading.Load() || s.f.mayContain(s.prefix, id)
}

// load adds the stored ids that each calls back with, then ends the
// loading, unless each fails (the namespace then stays loading: every id
// is looked up in the store).
func (s *seenIDs) load(each func(add func(id string)) error) error {
	if err := each(s.add); err != nil {
		return err
	}
	s.loading.Store(false)
	return nil
}

// dotSegment reports whether id is "." or "..": as a segment of a URL
// path, clients (curl, Python's urllib3, browsers, Go's ResolveReference)
// remove it before sending the request (RFC 3986, section 5.2.4), so an
// experiment or unit of that id could never be addressed. Every other id,
// escaped as one path segment (url.PathEscape), reaches the server
// unchanged: escaping leaves only unreserved characters unencoded, which
// no normalisation alters.
func dotSegment(id string) bool { return id == "." || id == ".." }

// checkPathID checks an id that appears as a segment of a URL path (a
// unit's, in its ledger's path): checkID's rules, and not a dot segment.
func checkPathID(name, v string) error {
	if err := checkID(name, v); err != nil {
		return err
	}
	if dotSegment(v) {
		return fault.Errorf(fault.Invalid, "%s %q cannot be addressed in a URL: clients remove the path segments \".\" and \"..\"", name, v)
	}
	return nil
}
