package define

import (
	"bytes"
	"crypto/sha256"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/dpbandit/dpbandit/featurehash"
	"github.com/dpbandit/dpbandit/internal/jsonscan"
	"github.com/dpbandit/dpbandit/service/store"
)

// Rank calls repeat their action lists (a site ranks the same articles
// for every visitor): what a list gives, whatever the rest of the
// request (its actions checked, each action's hashed features f_a, its
// compacted text and its SHA-256 for the store: store.Shared) is kept,
// so that a rank whose list was seen before hashes only its context, and
// the store keeps the list once (RankSet.Shared) from its second rank on
// (a list sent once would only add a row). A list is kept by its text as
// the request has it (a client sends one list as the same bytes), only
// once a request with it was read whole without error, and looked up
// only on the fast path (rankfast.go): the result is the one ReadRank
// gives, to the bit (TestRankCacheAgrees).

// rankCacheBytes bounds the lists a cache keeps (their texts and
// vectors, roughly): when full, it starts again empty.
const rankCacheBytes = 8 << 20

// rankCache is a Definition's cache of action lists (CacheRanks), shared
// by its copies and safe for concurrent use.
type rankCache struct {
	bits int
	// quad[i<<bits+j] is the coordinate of the interaction of context
	// coordinate i with action coordinate j (interact), computed once.
	quad []int

	mu    sync.Mutex
	lists map[string]*knownList
	size  int
	// last is the list found or kept last, tried first (recent).
	last atomic.Pointer[knownList]
}

// knownList is what an action list gives (rankCache).
type knownList struct {
	key     string // its text, as the requests have it
	actions []RankableAction
	index   map[string]int // action id -> its position
	vectors [][]float64    // each action's hashed features f_a
	shared  store.Shared   // its text (compacted) and digest; At unset
}

// CacheRanks gives a Personalizer experiment's definition a cache of the
// action lists its rank requests repeat (read-only once made; its copies
// share it). Other definitions are left as they are.
func (d *Definition) CacheRanks() {
	if d.Surface != SurfacePersonalizer || d.ranks != nil {
		return
	}
	h, err := featurehash.New(d.HashBits)
	if err != nil {
		return // (ReadRank reports the bits)
	}
	n := h.Dim()
	quad := make([]int, n*n)
	var buf [48]byte
	for i := range n {
		pre := append(strconv.AppendInt(buf[:0], int64(i), 10), '^')
		for j := range n {
			quad[i*n+j] = h.IndexBytes("^", strconv.AppendInt(pre, int64(j), 10))
		}
	}
	d.ranks = &rankCache{bits: d.HashBits, quad: quad, lists: map[string]*knownList{}}
}

// recent returns the list that was found or kept last if the text at s
// (s.I at its first byte) starts with it, with s.I after it; nil
// otherwise. A list's text is one whole JSON value: a text that starts
// with it holds that value there, and no other.
func (c *rankCache) recent(s *jsonscan.Scanner) *knownList {
	l := c.last.Load()
	if l == nil || !bytes.HasPrefix(s.B[s.I:], jsonscan.UnsafeBytes(l.key)) {
		return nil
	}
	s.I += len(l.key)
	return l
}

// get returns the list of text key (as the request has it), or nil.
func (c *rankCache) get(key []byte) *knownList {
	c.mu.Lock()
	l := c.lists[string(key)]
	c.mu.Unlock()
	if l != nil {
		c.last.Store(l)
	}
	return l
}

// put keeps the list of a request read whole without error, under its
// text key: its actions, their ids' positions and hashed features (every
// action's, excluded or not), and its text compacted as stored.
func (c *rankCache) put(key []byte, actions []RankableAction, index map[string]int, vectors [][]float64) *knownList {
	text := string(jsonscan.Compact(make([]byte, 0, len(key)), key))
	l := &knownList{key: string(key), actions: actions, index: index, vectors: vectors, shared: store.Shared{Text: text, Digest: sha256.Sum256([]byte(text))}}
	size := 2*len(key) + 2*len(text) + len(vectors)*(len(c.quad)/max(1, 1<<c.bits))*8 + 64*len(actions)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.size+size > rankCacheBytes {
		clear(c.lists)
		c.size = 0
	}
	if old := c.lists[string(key)]; old != nil {
		return old
	}
	c.lists[l.key] = l
	c.size += size
	c.last.Store(l)
	return l
}

// actionsKey returns the text of the action list at s (its value, s.I
// at its first byte), s.I after it; ok false if it is not valid JSON
// there.
func actionsKey(s *jsonscan.Scanner) ([]byte, bool) {
	start := s.I
	if !s.Skip(1) {
		return nil, false
	}
	return s.B[start:s.I], true
}
