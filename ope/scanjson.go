package ope

import (
	"bytes"
	"strconv"
	"unsafe"
)

// The fast path of a JSON line (Reader.fastJSON): a hand-written scanner
// for the record's fixed fields that allocates nothing per field (the
// numbers are parsed in place; with Reader.reuse, the vectors are
// written into the Reader's buffers). It accepts only what it is sure of
// (the keys written exactly, without escapes; numbers in JSON's grammar;
// strings without control characters; nesting below scanDepth; a context
// that is a non-empty vector or a non-empty set of non-empty vectors)
// and returns ok = false for anything else, which parseJSON then reads
// with encoding/json: the unusual record gets encoding/json's reading and
// its error, word for word.

// scanDepth bounds the nesting of the other keys' values the scanner
// walks (encoding/json's own bound is 10000).
const scanDepth = 64

// jsonScanner walks one JSON line.
type jsonScanner struct {
	b []byte
	i int
}

func (s *jsonScanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\r', '\n':
			s.i++
		default:
			return
		}
	}
}

// eat consumes c after blanks, reporting whether it was there.
func (s *jsonScanner) eat(c byte) bool {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// str reads a string without escapes nor control characters, returning
// its contents (ok false otherwise).
func (s *jsonScanner) str() ([]byte, bool) {
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, false
	}
	start := s.i + 1
	for j := start; j < len(s.b); j++ {
		switch c := s.b[j]; {
		case c == '"':
			s.i = j + 1
			return s.b[start:j], true
		case c == '\\' || c < 0x20:
			return nil, false
		}
	}
	return nil, false
}

// num reads a number in JSON's grammar,
// -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?, and returns its text.
func (s *jsonScanner) num() ([]byte, bool) {
	s.ws()
	b, i := s.b, s.i
	start := i
	if i < len(b) && b[i] == '-' {
		i++
	}
	digits := func() bool {
		j := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i > j
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case !digits():
		return nil, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if !digits() {
			return nil, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !digits() {
			return nil, false
		}
	}
	s.i = i
	return b[start:i], true
}

// float reads a number as encoding/json reads one into a float64
// (strconv.ParseFloat of its text; ok false when out of range).
func (s *jsonScanner) float() (float64, bool) {
	t, ok := s.num()
	if !ok {
		return 0, false
	}
	x, err := strconv.ParseFloat(unsafeString(t), 64)
	return x, err == nil
}

// literal consumes word (true, false or null) if it comes next.
func (s *jsonScanner) literal(word string) bool {
	s.ws()
	if len(s.b)-s.i >= len(word) && string(s.b[s.i:s.i+len(word)]) == word {
		s.i += len(word)
		return true
	}
	return false
}

// floats reads an array of numbers, appending them to dst[:0]; ok false
// for anything else, an empty array included.
func (s *jsonScanner) floats(dst []float64) ([]float64, bool) {
	if !s.eat('[') {
		return dst, false
	}
	dst = dst[:0]
	for {
		x, ok := s.float()
		if !ok {
			return dst, false
		}
		dst = append(dst, x)
		if s.eat(']') {
			return dst, true
		}
		if !s.eat(',') {
			return dst, false
		}
	}
}

// skip walks over any value, checking its grammar.
func (s *jsonScanner) skip(depth int) bool {
	if depth > scanDepth {
		return false
	}
	s.ws()
	if s.i >= len(s.b) {
		return false
	}
	switch s.b[s.i] {
	case '"':
		_, ok := s.str()
		return ok
	case 't':
		return s.literal("true")
	case 'f':
		return s.literal("false")
	case 'n':
		return s.literal("null")
	case '[':
		s.i++
		if s.eat(']') {
			return true
		}
		for {
			if !s.skip(depth + 1) {
				return false
			}
			if s.eat(']') {
				return true
			}
			if !s.eat(',') {
				return false
			}
		}
	case '{':
		s.i++
		if s.eat('}') {
			return true
		}
		for {
			if _, ok := s.str(); !ok || !s.eat(':') || !s.skip(depth+1) {
				return false
			}
			if s.eat('}') {
				return true
			}
			if !s.eat(',') {
				return false
			}
		}
	}
	_, ok := s.num()
	return ok
}

// The fields of a record, as bits of the set of those seen.
const (
	fAction = 1 << iota
	fReward
	fPScore
	fContext
	fProbs
	fUnit
)

// fastJSON reads a JSON line's record on the fast path; ok is false when
// the line needs parseJSON (which then reads it whole). The event's
// vectors are the Reader's buffers when rd.reuse is set.
func (rd *Reader) fastJSON(b []byte) (e Event, rewarded, ok bool) {
	s := jsonScanner{b: b}
	if !s.eat('{') {
		return e, false, false
	}
	seen := 0
	others := rd.others[:0] // the other keys, to refuse one named twice
	defer func() { rd.others = others[:0] }()
	null := false // the reward is null
	if s.eat('}') {
		return e, false, false
	}
	for {
		key, ok := s.str()
		if !ok || !s.eat(':') {
			return e, false, false
		}
		bit := 0
		switch string(key) { // no allocation: the compiler compares in place
		case "unit_id":
			if !rd.wantUnit {
				if !rd.other(&s, &others, key) {
					return e, false, false
				}
				break
			}
			bit = fUnit
			u, ok := s.str()
			if !ok {
				return e, false, false
			}
			e.Unit = string(u)
		case "action":
			bit = fAction
			t, ok := s.num()
			if !ok {
				return e, false, false
			}
			a, err := strconv.Atoi(unsafeString(t))
			if err != nil {
				return e, false, false
			}
			e.Action = a
		case "reward":
			bit = fReward
			if s.literal("null") {
				null = true
			} else if e.Reward, ok = s.float(); !ok {
				return e, false, false
			}
		case "pscore":
			bit = fPScore
			if e.PScore, ok = s.float(); !ok {
				return e, false, false
			}
		case "action_prob":
			bit = fProbs
			if s.literal("null") {
				break
			}
			if rd.probs, ok = s.floats(rd.probs); !ok {
				return e, false, false
			}
			e.Probs = rd.own(rd.probs)
		case "context":
			bit = fContext
			if s.literal("null") {
				break
			}
			if e.X, e.Actions, ok = rd.context(&s); !ok {
				return e, false, false
			}
		default:
			if isField(key) || rd.wantUnit && bytes.EqualFold(key, []byte("unit_id")) { // "Action": encoding/json's reading
				return e, false, false
			}
			if !rd.other(&s, &others, key) {
				return e, false, false
			}
		}
		if seen&bit != 0 {
			return e, false, false
		}
		seen |= bit
		if s.eat('}') {
			break
		}
		if !s.eat(',') {
			return e, false, false
		}
	}
	if s.ws(); s.i != len(b) || seen&(fAction|fReward|fPScore) != fAction|fReward|fPScore {
		return e, false, false // trailing bytes, or a field missing: parseJSON's error
	}
	return e, !null, true
}

// other walks over the value of a key that is not a field, refusing
// (false) a key already seen.
func (rd *Reader) other(s *jsonScanner, others *[][]byte, key []byte) bool {
	for _, k := range *others {
		if bytes.Equal(k, key) {
			return false
		}
	}
	*others = append(*others, key)
	return s.skip(1)
}

// context reads a context: a vector of numbers, or a decision set (a
// vector of vectors of numbers), into the Reader's buffers.
func (rd *Reader) context(s *jsonScanner) (x []float64, set [][]float64, ok bool) {
	save := s.i
	if !s.eat('[') {
		return nil, nil, false
	}
	if !s.eat('[') {
		s.i = save
		if rd.x, ok = s.floats(rd.x); !ok {
			return nil, nil, false
		}
		return rd.own(rd.x), nil, true
	}
	s.i = save + 1 // back before the first vector
	rd.flat = rd.flat[:0]
	rd.ends = rd.ends[:0]
	for {
		var v []float64
		if v, ok = s.floats(rd.flat[len(rd.flat):]); !ok {
			return nil, nil, false
		}
		rd.flat = append(rd.flat, v...) // in place when v fits rd.flat's capacity
		rd.ends = append(rd.ends, len(rd.flat))
		if s.eat(']') {
			break
		}
		if !s.eat(',') {
			return nil, nil, false
		}
	}
	flat := rd.own(rd.flat)
	if !rd.reuse || cap(rd.set) < len(rd.ends) {
		rd.set = make([][]float64, len(rd.ends))
	}
	set = rd.set[:len(rd.ends)]
	start := 0
	for i, end := range rd.ends {
		set[i] = flat[start:end:end]
		start = end
	}
	return nil, set, true
}

// own returns v as the event's: v itself when the Reader reuses its
// buffers, else a copy.
func (rd *Reader) own(v []float64) []float64 {
	if rd.reuse {
		return v
	}
	return append([]float64(nil), v...)
}

// unsafeString is b as a string without a copy, for a parse that does
// not keep it.
func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// isField reports whether key names a record's field in another case
// ("Action"), which encoding/json reads as the field.
func isField(key []byte) bool {
	for _, f := range jsonFields {
		if bytes.EqualFold(key, []byte(f)) {
			return true
		}
	}
	return false
}
