package env

import (
	"math/rand/v2"

	"github.com/dpbandit/dpbandit/noise"
)

// leafSize is the number of rewards in a leaf block of the dyadic bridge.
const leafSize = 64

// law is what a bridge needs of an arm's reward distribution.
type law interface {
	// total draws the sum of n i.i.d. rewards.
	total(r *rand.Rand, n int64) float64
	// split draws the sum of the first half of 2*half i.i.d. rewards
	// conditional on their sum s.
	split(r *rand.Rand, half int64, s float64) float64
	// leaf fills v with leafSize i.i.d. rewards conditional on their sum s.
	leaf(r *rand.Rand, s float64, v *[leafSize]float64)
	// observe maps an underlying reward to the observed one (clipping).
	observe(x float64) float64
	// exact reports whether observe is the identity, so that block sums
	// of the tree are sums of observed rewards.
	exact() bool
}

// Stream is one arm's reward sequence in one run: the "stack of rewards"
// model, in which the j-th pull of the arm returns reward x_j whatever the
// policy. Streams built from the same (seed, run, arm, capacity) return the
// same sequence, so every policy of a run faces the same rewards: paired
// comparisons (common random numbers).
//
// For Bernoulli rewards the sequence is drawn lazily by a dyadic bridge.
// The sum of the whole sequence is drawn first (Binomial); each block's sum
// is split between its halves by a hypergeometric draw seeded by (seed,
// run, arm, level, index); blocks of 64 rewards are filled conditional on
// their sums. The law of the sequence is exactly i.i.d., a range sum costs
// O(log capacity), and a stream keeps the last root-to-leaf path so that
// sequential access costs O(1) amortised. Clipped rewards (Gaussian,
// bounded noise) admit no such shortcut: their blocks are drawn
// independently, seeded by (seed, run, arm, block), and summed.
type Stream struct {
	law    law
	k0, k1 uint64 // the stream's key
	levels int    // the root is at level levels; leaves at level 0
	blocks int64  // number of leaf blocks
	src    rand.PCG
	r      *rand.Rand

	// The cached root-to-leaf path: at level l, node index, sum and the
	// sum of all blocks before the node. valid counts levels from the root.
	idx   []int64
	sum   []float64
	pre   []float64
	valid int

	leafIdx int64 // block held in leafPre, -1 if none
	leafPre [leafSize + 1]float64
	vals    [leafSize]float64
}

// newStream returns the stream of an arm for indices [0, capacity).
func newStream(l law, capacity int64, seed, run uint64, arm int) *Stream {
	blocks := max((capacity+leafSize-1)/leafSize, 1)
	levels := 0
	for int64(1)<<levels < blocks {
		levels++
	}
	s := &Stream{law: l, levels: levels, blocks: int64(1) << levels, leafIdx: -1}
	s.k0, s.k1 = noise.Key(seed, run, uint64(arm))
	s.r = rand.New(&s.src)
	s.idx = make([]int64, levels+1)
	s.sum = make([]float64, levels+1)
	s.pre = make([]float64, levels+1)
	return s
}

// Capacity returns how many rewards the stream holds.
func (s *Stream) Capacity() int64 { return s.blocks * leafSize }

// rng reseeds the stream's generator for node (level, index) of the tree.
func (s *Stream) rng(level int, index int64) *rand.Rand {
	noise.Reseed(&s.src, s.k0, s.k1, uint64(level), uint64(index))
	return s.r
}

// descend brings the cached path down to leaf block b.
func (s *Stream) descend(b int64) {
	top := s.levels
	if s.valid == 0 {
		s.idx[top], s.pre[top] = 0, 0
		s.sum[top] = s.law.total(s.rng(top, 0), s.blocks*leafSize)
		s.valid = 1
	}
	// Keep the levels whose node already contains b.
	start := top
	for l := top - 1; l >= top-s.valid+1 && l >= 0; l-- {
		if s.idx[l] != b>>l {
			break
		}
		start = l
	}
	for l := start - 1; l >= 0; l-- {
		j := s.idx[l+1]
		half := int64(leafSize) << l
		left := s.law.split(s.rng(l+1, j), half, s.sum[l+1])
		s.idx[l] = b >> l
		if s.idx[l]&1 == 0 {
			s.sum[l], s.pre[l] = left, s.pre[l+1]
		} else {
			s.sum[l], s.pre[l] = s.sum[l+1]-left, s.pre[l+1]+left
		}
	}
	s.valid = top + 1
}

// loadLeaf fills leafPre with the prefix sums of observed rewards of block b.
func (s *Stream) loadLeaf(b int64) {
	if s.leafIdx == b {
		return
	}
	sum := 0.0
	if s.law.exact() {
		s.descend(b)
		sum = s.sum[0]
	}
	s.law.leaf(s.rng(-1, b), sum, &s.vals)
	for i, x := range s.vals {
		s.leafPre[i+1] = s.leafPre[i] + s.law.observe(x)
	}
	s.leafIdx = b
}

// prefix returns the sum of observed rewards with index < k (exact laws).
func (s *Stream) prefix(k int64) float64 {
	b, o := k/leafSize, k%leafSize
	if b == s.blocks {
		s.descend(b - 1)
		return s.pre[0] + s.sum[0]
	}
	if o == 0 && s.leafIdx != b {
		s.descend(b)
		return s.pre[0]
	}
	s.loadLeaf(b)
	// The leaf may have been held since before the path last moved (a
	// prefix ending on a block boundary descends without loading its
	// leaf): bring the path back to b, a no-op when it is there.
	s.descend(b)
	return s.pre[0] + s.leafPre[o]
}

// Sum returns the sum of the observed rewards with indices in [from, to),
// 0 <= from <= to <= Capacity().
func (s *Stream) Sum(from, to int64) float64 {
	if from == to {
		return 0
	}
	if b := from / leafSize; b == (to-1)/leafSize {
		// Within one block: the common case of per-step simulation.
		s.loadLeaf(b)
		return s.leafPre[to-b*leafSize] - s.leafPre[from-b*leafSize]
	}
	if s.law.exact() {
		return s.prefix(to) - s.prefix(from)
	}
	total := 0.0
	for b := from / leafSize; b*leafSize < to; b++ {
		s.loadLeaf(b)
		lo, hi := max(from-b*leafSize, 0), min(to-b*leafSize, leafSize)
		total += s.leafPre[hi] - s.leafPre[lo]
	}
	return total
}

// Samples appends the observed rewards with indices in [from, to) to dst.
func (s *Stream) Samples(from, to int64, dst []float64) []float64 {
	for i := from; i < to; i++ {
		b := i / leafSize
		s.loadLeaf(b)
		dst = append(dst, s.law.observe(s.vals[i-b*leafSize]))
	}
	return dst
}
