package service

import (
	"hash/maphash"
	"math"
)

// idFilter is a scalable Bloom filter of an experiment's event ids
// (Almeida, Baquero, Preguiça and Hutchison, "Scalable Bloom Filters",
// 2007): stages of doubling capacity, each with a false positive rate
// half the last's, so that the whole stays below 2 p whatever the number
// of ids, at 2 to 3 bytes an id for p = 10^-3. It answers whether an
// id may have been seen: never wrong when it says no, and wrong with
// probability below 2 p when it says yes. The service keeps only pending
// and recent events in memory and asks the store about the others
// (Server.event) only when the filter says yes.
type idFilter struct {
	seed   maphash.Seed
	stages []bloomStage
	n      int // ids added to the last stage
}

// bloomStage is one Bloom filter: k probes into m bits, for cap ids.
type bloomStage struct {
	bits []uint64
	m    uint64
	k    int
	cap  int
}

const (
	filterFirst = 1 << 12 // the first stage's capacity
	filterP     = 1e-3    // the first stage's false positive rate
)

func newIDFilter() *idFilter { return &idFilter{seed: maphash.MakeSeed()} }

// hashes returns the two hashes of id that the probes combine (Kirsch
// and Mitzenmacher's double hashing).
func (f *idFilter) hashes(id string) (uint64, uint64) {
	h := maphash.String(f.seed, id)
	return h, h>>32 | h<<32 | 1
}

// add records id.
func (f *idFilter) add(id string) {
	if len(f.stages) == 0 || f.n >= f.stages[len(f.stages)-1].cap {
		i := len(f.stages)
		c := filterFirst << i
		p := filterP / math.Pow(2, float64(i))
		m := uint64(math.Ceil(-float64(c) * math.Log(p) / (math.Ln2 * math.Ln2)))
		k := max(1, int(math.Round(float64(m)/float64(c)*math.Ln2)))
		f.stages = append(f.stages, bloomStage{bits: make([]uint64, (m+63)/64), m: m, k: k, cap: c})
		f.n = 0
	}
	s := &f.stages[len(f.stages)-1]
	h1, h2 := f.hashes(id)
	for i := range s.k {
		b := (h1 + uint64(i)*h2) % s.m
		s.bits[b/64] |= 1 << (b % 64)
	}
	f.n++
}

// mayContain reports whether id may have been added.
func (f *idFilter) mayContain(id string) bool {
	h1, h2 := f.hashes(id)
	for _, s := range f.stages {
		in := true
		for i := range s.k {
			b := (h1 + uint64(i)*h2) % s.m
			if s.bits[b/64]&(1<<(b%64)) == 0 {
				in = false
				break
			}
		}
		if in {
			return true
		}
	}
	return false
}

// seenIDs is a set of ids known in part from the start (live: added
// since) and in part from the store, loaded later in the background
// (old): until it is loaded, every id may have been seen.
type seenIDs struct {
	live, old *idFilter
	loading   bool // old is not loaded yet
}

func newSeenIDs(loading bool) *seenIDs { return &seenIDs{live: newIDFilter(), loading: loading} }

// add records id.
func (s *seenIDs) add(id string) { s.live.add(id) }

// mayContain reports whether id may have been seen.
func (s *seenIDs) mayContain(id string) bool {
	return s.loading || s.live.mayContain(id) || s.old != nil && s.old.mayContain(id)
}

// loaded sets the ids read from the store.
func (s *seenIDs) loaded(old *idFilter) { s.old, s.loading = old, false }
