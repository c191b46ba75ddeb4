package featurehash

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/dpbandit/dpbandit/internal/jsonscan"
)

// The fast path of AddJSON: the context's text is walked in place, each
// object's members sorted by key as Add sorts a map's, and the features
// hashed from the bytes, without building maps of interfaces nor the
// names' strings. It accepts only what it is sure encoding/json reads
// the same way (keys and strings without escapes and in valid UTF-8, no
// key twice in an object, finite numbers, nesting below
// jsonscan.MaxDepth) and otherwise reports ok = false having changed
// nothing, and AddJSON reads the context with encoding/json: the same
// vector, bit for bit (the additions come in the same order), and the
// same errors.

// fast is one context's walk: the features found, applied to the vector
// once the whole context is read.
type fast struct {
	h     Hasher
	b     []byte
	name  []byte    // the name being hashed
	found []feature // in Add's order
	mem   []member  // the members of the objects being read, a stack
}

// feature is a coordinate and the value added to it.
type feature struct {
	i int
	x float64
}

// member is an object's member: its key and its value's text.
type member struct {
	key        []byte
	start, end int
}

// A Reader adds JSON contexts into vectors as its Hasher's AddJSON
// does, reusing its buffers from one context to the next: for a caller
// that reads many (a rank request's actions). It is not safe for
// concurrent use.
type Reader struct {
	f fast
}

// Reader returns a Reader of h.
func (h Hasher) Reader() *Reader { return &Reader{f: fast{h: h}} }

// AddJSON is Hasher.AddJSON.
func (r *Reader) AddJSON(dst []float64, ctx json.RawMessage) error {
	h := r.f.h
	if len(dst) != h.Dim() {
		return &ValueError{Path: "context", Reason: fmt.Sprintf("a vector of %d dimensions, the hasher's are %d", len(dst), h.Dim())}
	}
	if r.f.add(dst, ctx) {
		return nil
	}
	return h.addDecoded(dst, ctx)
}

// add adds ctx's features into dst on the fast path (ok false: dst
// unchanged, the context needs encoding/json).
func (f *fast) add(dst []float64, ctx []byte) bool {
	f.b, f.mem, f.found = ctx, f.mem[:0], f.found[:0]
	s := jsonscan.Scanner{B: ctx}
	n, ok := f.members(&s, 0)
	if s.WS(); !ok || s.I != len(ctx) {
		return false
	}
	for _, m := range f.mem[:n] {
		if len(m.key) > 0 && m.key[0] == '_' {
			continue
		}
		switch {
		case ctx[m.start] == '{':
			ok = f.namespace(m.key, nil, m.start, 1)
		case ctx[m.start] == '[' && f.objects(m.start):
			ok = f.each(m.start, func(start int) bool { return f.namespace(m.key, nil, start, 2) })
		default:
			ok = f.feature(nil, m.key, m.start)
		}
		if !ok {
			return false
		}
	}
	for _, x := range f.found {
		dst[x.i] += x.x
	}
	return true
}

// members reads the object at s into the top of f.mem, sorted by key,
// and returns how many it has (ok false: not an object the fast path
// reads, or a key twice).
func (f *fast) members(s *jsonscan.Scanner, depth int) (int, bool) {
	if depth > jsonscan.MaxDepth || !s.Eat('{') {
		return 0, false
	}
	base := len(f.mem)
	if !s.Eat('}') {
		for {
			key, ok := s.Str()
			if !ok || !utf8.Valid(key) || !s.Eat(':') {
				return 0, false
			}
			s.WS()
			start := s.I
			if !s.Skip(depth + 1) {
				return 0, false
			}
			f.mem = append(f.mem, member{key: key, start: start, end: s.I})
			if s.Eat('}') {
				break
			}
			if !s.Eat(',') {
				return 0, false
			}
		}
	}
	ms := f.mem[base:]
	byKey := func(a, b member) int { return bytes.Compare(a.key, b.key) }
	if !slices.IsSortedFunc(ms, byKey) {
		slices.SortFunc(ms, byKey)
	}
	for i := 1; i < len(ms); i++ {
		if bytes.Equal(ms[i-1].key, ms[i].key) {
			return 0, false // encoding/json keeps the last: let it
		}
	}
	return len(ms), true // (the caller pops them off f.mem)
}

// namespace hashes the members of the object at start into namespace ns,
// their keys prefixed by prefix and a dot.
func (f *fast) namespace(ns, prefix []byte, start, depth int) bool {
	s := jsonscan.Scanner{B: f.b, I: start}
	base := len(f.mem)
	n, ok := f.members(&s, depth)
	if !ok {
		return false
	}
	defer func() { f.mem = f.mem[:base] }()
	for k := range n {
		m := f.mem[base+k]
		if len(m.key) > 0 && m.key[0] == '_' {
			continue
		}
		name := m.key
		if len(prefix) > 0 {
			name = append(append([]byte(nil), prefix...), m.key...)
		}
		if f.b[m.start] == '{' {
			// (a copy: name may be the key's bytes in the context)
			if !f.namespace(ns, append(slices.Clip(name), '.'), m.start, depth+1) {
				return false
			}
			continue
		}
		if !f.feature(ns, name, m.start) {
			return false
		}
	}
	return true
}

// objects reports whether the array at start is a non-empty array of
// objects (a list of namespaces).
func (f *fast) objects(start int) bool {
	all, any := true, false
	f.each(start, func(i int) bool {
		any = true
		all = all && f.b[i] == '{'
		return all
	})
	return all && any
}

// each calls do with the start of each element of the array at start,
// until do returns false.
func (f *fast) each(start int, do func(int) bool) bool {
	s := jsonscan.Scanner{B: f.b, I: start}
	s.Eat('[')
	if s.Eat(']') {
		return true
	}
	for {
		s.WS()
		i := s.I
		if !s.Skip(1) || !do(i) {
			return false
		}
		if s.Eat(']') {
			return true
		}
		s.Eat(',')
	}
}

// feature hashes the feature of key k whose value is at start, in
// namespace ns (ok false: a value the fast path leaves to encoding/json,
// or one Add refuses, for its error).
func (f *fast) feature(ns, k []byte, start int) bool {
	s := jsonscan.Scanner{B: f.b, I: start}
	switch f.b[start] {
	case 'n':
		return true
	case 't':
		f.hash(ns, k, 1)
		return true
	case 'f':
		return true
	case '"':
		v, ok := s.Str()
		if !ok || !utf8.Valid(v) {
			return false
		}
		f.name = append(append(append(f.name[:0], k...), '='), v...)
		f.hash(ns, f.name, 1)
		return true
	case '[':
		i := 0
		return f.each(start, func(e int) bool {
			es := jsonscan.Scanner{B: f.b, I: e}
			x, ok := finite(&es)
			if ok {
				f.name = append(strconv.AppendInt(append(append(f.name[:0], k...), '['), int64(i), 10), ']')
				f.hash(ns, f.name, x)
				i++
			}
			return ok
		})
	}
	x, ok := finite(&s)
	if ok {
		f.hash(ns, k, x)
	}
	return ok
}

// finite reads a finite number.
func finite(s *jsonscan.Scanner) (float64, bool) {
	x, ok := s.Float()
	return x, ok && !math.IsInf(x, 0)
}

// hash records the feature name of namespace ns with value x.
func (f *fast) hash(ns, name []byte, x float64) {
	f.found = append(f.found, feature{index(f.h.Bits, ns, name), x})
}
