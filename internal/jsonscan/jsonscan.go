// Package jsonscan is a hand-written JSON scanner for the fast paths
// that read known shapes without allocating per field (ope's log
// records, featurehash's contexts, the service's rank requests and the
// bodies of its decisions and rewards). It accepts only what it is sure of:
// strings without escapes nor control characters, numbers in JSON's
// grammar, nesting below MaxDepth; a caller falls back to encoding/json
// for anything else, so that the unusual input gets encoding/json's
// reading and its error, word for word.
package jsonscan

import (
	"strconv"
	"unsafe"
)

// MaxDepth bounds the nesting Skip walks (encoding/json's own bound is
// 10000).
const MaxDepth = 64

// Scanner walks one JSON text.
type Scanner struct {
	// B is the text and I the position of the next byte to read.
	B []byte
	I int
}

// WS skips blanks.
func (s *Scanner) WS() {
	for s.I < len(s.B) {
		switch s.B[s.I] {
		case ' ', '\t', '\r', '\n':
			s.I++
		default:
			return
		}
	}
}

// Eat consumes c after blanks, reporting whether it was there.
func (s *Scanner) Eat(c byte) bool {
	s.WS()
	if s.I < len(s.B) && s.B[s.I] == c {
		s.I++
		return true
	}
	return false
}

// Str reads a string without escapes nor control characters, returning
// its contents (ok false otherwise).
func (s *Scanner) Str() ([]byte, bool) {
	s.WS()
	if s.I >= len(s.B) || s.B[s.I] != '"' {
		return nil, false
	}
	start := s.I + 1
	for j := start; j < len(s.B); j++ {
		switch c := s.B[j]; {
		case c == '"':
			s.I = j + 1
			return s.B[start:j], true
		case c == '\\' || c < 0x20:
			return nil, false
		}
	}
	return nil, false
}

// Num reads a number in JSON's grammar,
// -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?, and returns its text.
func (s *Scanner) Num() ([]byte, bool) {
	s.WS()
	b, i := s.B, s.I
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
	s.I = i
	return b[start:i], true
}

// Float reads a number as encoding/json reads one into a float64
// (strconv.ParseFloat of its text; ok false when out of range).
func (s *Scanner) Float() (float64, bool) {
	t, ok := s.Num()
	if !ok {
		return 0, false
	}
	x, err := strconv.ParseFloat(UnsafeString(t), 64)
	return x, err == nil
}

// Literal consumes word (true, false or null) if it comes next.
func (s *Scanner) Literal(word string) bool {
	s.WS()
	if len(s.B)-s.I >= len(word) && string(s.B[s.I:s.I+len(word)]) == word {
		s.I += len(word)
		return true
	}
	return false
}

// Floats reads an array of numbers, appending them to dst[:0]; ok false
// for anything else, an empty array included.
func (s *Scanner) Floats(dst []float64) ([]float64, bool) {
	if !s.Eat('[') {
		return dst, false
	}
	dst = dst[:0]
	for {
		x, ok := s.Float()
		if !ok {
			return dst, false
		}
		dst = append(dst, x)
		if s.Eat(']') {
			return dst, true
		}
		if !s.Eat(',') {
			return dst, false
		}
	}
}

// Skip walks over any value, checking its grammar.
func (s *Scanner) Skip(depth int) bool {
	if depth > MaxDepth {
		return false
	}
	s.WS()
	if s.I >= len(s.B) {
		return false
	}
	switch s.B[s.I] {
	case '"':
		_, ok := s.Str()
		return ok
	case 't':
		return s.Literal("true")
	case 'f':
		return s.Literal("false")
	case 'n':
		return s.Literal("null")
	case '[':
		return s.Array(func() bool { return s.Skip(depth + 1) })
	case '{':
		return s.Object(func([]byte) bool { return s.Skip(depth + 1) })
	}
	_, ok := s.Num()
	return ok
}

// Object walks the members of the object at s, calling member with each
// key, the scanner then at the member's value, which member reads (false:
// stop); false for anything but an object whose every member was read.
func (s *Scanner) Object(member func(key []byte) bool) bool {
	return s.Eat('{') && s.items('}', func() bool {
		key, ok := s.Str()
		return ok && s.Eat(':') && member(key)
	})
}

// Array walks the array (or null) at s, calling elem, which reads it, at
// each element.
func (s *Scanner) Array(elem func() bool) bool {
	if s.Literal("null") {
		return true
	}
	return s.Eat('[') && s.items(']', elem)
}

// items walks the items of an array or object, after its opening byte,
// up to its closing byte end: none, or items separated by commas, each
// read by item (false: stop); false unless every item was read.
func (s *Scanner) items(end byte, item func() bool) bool {
	if s.Eat(end) {
		return true
	}
	for {
		if !item() {
			return false
		}
		if s.Eat(end) {
			return true
		}
		if !s.Eat(',') {
			return false
		}
	}
}

// UnsafeString is b as a string without a copy, for a parse that does
// not keep it.
func UnsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// UnsafeBytes is s as bytes without a copy, for a scan that only reads
// them.
func UnsafeBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// stringScan follows a scan of valid JSON text byte by byte, telling the
// bytes of its strings (quotes and escapes included) from the others.
type stringScan struct{ in, esc bool }

// outside reports whether c, the scan's next byte, stands outside every
// string (a structural byte, a literal's or a blank).
func (s *stringScan) outside(c byte) bool {
	switch {
	case s.esc:
		s.esc = false
	case s.in && c == '\\':
		s.esc = true
	case c == '"':
		s.in = !s.in
	default:
		return !s.in
	}
	return false
}

// Compact appends b to dst without the blanks outside its strings: what
// encoding/json's Compact writes for a text known to be valid JSON
// (Compact changes nothing else), without checking it again.
func Compact(dst, b []byte) []byte {
	var s stringScan
	for _, c := range b {
		if s.outside(c) && (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
			continue
		}
		dst = append(dst, c)
	}
	return dst
}

// Depth returns how deep JSON text nests objects and arrays (for a text
// known to be valid JSON).
func Depth(raw []byte) int {
	var s stringScan
	d, most := 0, 0
	for _, b := range raw {
		if !s.outside(b) {
			continue
		}
		switch b {
		case '{', '[':
			d++
			most = max(most, d)
		case '}', ']':
			d--
		}
	}
	return most
}
