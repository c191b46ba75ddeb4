package ope

import (
	"bytes"
	"strconv"

	"github.com/dpbandit/dpbandit/internal/jsonscan"
)

// The fast path of a JSON line (Reader.fastJSON): a hand-written scanner
// for the record's fixed fields that allocates nothing per field (the
// numbers are parsed in place; with Reader.reuse, the vectors are
// written into the Reader's buffers). It accepts only what it is sure of
// (the keys written exactly, without escapes; numbers in JSON's grammar;
// strings without control characters; nesting below jsonscan.MaxDepth;
// a context that is a non-empty vector or a non-empty set of non-empty
// vectors)
// and returns ok = false for anything else, which parseJSON then reads
// with encoding/json: the unusual record gets encoding/json's reading and
// its error, word for word.

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
	s := jsonscan.Scanner{B: b}
	if !s.Eat('{') {
		return e, false, false
	}
	seen := 0
	others := rd.others[:0] // the other keys, to refuse one named twice
	defer func() { rd.others = others[:0] }()
	null := false // the reward is null
	if s.Eat('}') {
		return e, false, false
	}
	for {
		key, ok := s.Str()
		if !ok || !s.Eat(':') {
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
			u, ok := s.Str()
			if !ok {
				return e, false, false
			}
			e.Unit = string(u)
		case "action":
			bit = fAction
			t, ok := s.Num()
			if !ok {
				return e, false, false
			}
			a, err := strconv.Atoi(jsonscan.UnsafeString(t))
			if err != nil {
				return e, false, false
			}
			e.Action = a
		case "reward":
			bit = fReward
			if s.Literal("null") {
				null = true
			} else if e.Reward, ok = s.Float(); !ok {
				return e, false, false
			}
		case "pscore":
			bit = fPScore
			if e.PScore, ok = s.Float(); !ok {
				return e, false, false
			}
		case "action_prob":
			bit = fProbs
			if s.Literal("null") {
				break
			}
			if rd.probs, ok = s.Floats(rd.probs); !ok {
				return e, false, false
			}
			e.Probs = rd.own(rd.probs)
		case "context":
			bit = fContext
			if s.Literal("null") {
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
		if s.Eat('}') {
			break
		}
		if !s.Eat(',') {
			return e, false, false
		}
	}
	if s.WS(); s.I != len(b) || seen&(fAction|fReward|fPScore) != fAction|fReward|fPScore {
		return e, false, false // trailing bytes, or a field missing: parseJSON's error
	}
	return e, !null, true
}

// other walks over the value of a key that is not a field, refusing
// (false) a key already seen.
func (rd *Reader) other(s *jsonscan.Scanner, others *[][]byte, key []byte) bool {
	for _, k := range *others {
		if bytes.Equal(k, key) {
			return false
		}
	}
	*others = append(*others, key)
	return s.Skip(1)
}

// context reads a context: a vector of numbers, or a decision set (a
// vector of vectors of numbers), into the Reader's buffers.
func (rd *Reader) context(s *jsonscan.Scanner) (x []float64, set [][]float64, ok bool) {
	save := s.I
	if !s.Eat('[') {
		return nil, nil, false
	}
	if !s.Eat('[') {
		s.I = save
		if rd.x, ok = s.Floats(rd.x); !ok {
			return nil, nil, false
		}
		return rd.own(rd.x), nil, true
	}
	s.I = save + 1 // back before the first vector
	rd.flat = rd.flat[:0]
	rd.ends = rd.ends[:0]
	for {
		var v []float64
		if v, ok = s.Floats(rd.flat[len(rd.flat):]); !ok {
			return nil, nil, false
		}
		rd.flat = append(rd.flat, v...) // in place when v fits rd.flat's capacity
		rd.ends = append(rd.ends, len(rd.flat))
		if s.Eat(']') {
			break
		}
		if !s.Eat(',') {
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
