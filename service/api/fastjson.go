package api

import (
	"encoding/json"
	"math"
	"strconv"

	"github.com/dpbandit/dpbandit/service/engine"
)

// The fast path of the strict decoding of the two bodies of the hot
// path, a decision's and a reward's: one pass over the bytes for the
// common shape of each, a flat object of plain strings (printable ASCII
// without escapes) and, for a reward, a number. Whatever else a body
// holds (escapes, other bytes, a context, null ids, a key twice or
// unknown, any syntax error) it leaves to decodeBytes, which decides
// alike for every body (TestFastDecodeAgreesWithStrict): so the fast
// path only ever accepts what decodeBytes accepts, with the same value.

// scanner reads a body.
type scanner struct {
	data []byte
	i    int
}

func (s *scanner) space() {
	for s.i < len(s.data) {
		switch s.data[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// next reports whether the byte at s.i, after spaces, is c, and steps
// over it.
func (s *scanner) next(c byte) bool {
	s.space()
	if s.i < len(s.data) && s.data[s.i] == c {
		s.i++
		return true
	}
	return false
}

// plain reads a string of printable ASCII without escapes at s.i (its
// opening quote) and returns its bytes; ok is false for anything else.
func (s *scanner) plain() (b []byte, ok bool) {
	if !s.next('"') {
		return nil, false
	}
	start := s.i
	for ; s.i < len(s.data); s.i++ {
		switch c := s.data[s.i]; {
		case c == '"':
			s.i++
			return s.data[start : s.i-1], true
		case c < 0x20 || c >= 0x7f || c == '\\':
			return nil, false
		}
	}
	return nil, false
}

// number reads a JSON number at s.i (RFC 8259's grammar, exactly) that
// fits a float64.
func (s *scanner) number() (float64, bool) {
	s.space()
	start, d := s.i, s.data
	digits := func() int {
		n := 0
		for s.i < len(d) && d[s.i] >= '0' && d[s.i] <= '9' {
			s.i++
			n++
		}
		return n
	}
	if s.i < len(d) && d[s.i] == '-' {
		s.i++
	}
	switch {
	case s.i < len(d) && d[s.i] == '0':
		s.i++
	case digits() == 0:
		return 0, false
	}
	if s.i < len(d) && d[s.i] == '.' {
		s.i++
		if digits() == 0 {
			return 0, false
		}
	}
	if s.i < len(d) && (d[s.i] == 'e' || d[s.i] == 'E') {
		s.i++
		if s.i < len(d) && (d[s.i] == '+' || d[s.i] == '-') {
			s.i++
		}
		if digits() == 0 {
			return 0, false
		}
	}
	f, err := strconv.ParseFloat(string(d[start:s.i]), 64)
	return f, err == nil
}

// member reads the next member's key of a flat object and its colon
// (first: the object's opening brace before it), or the object's end and
// the end of the body (end); ok is false for anything else.
func (s *scanner) member(first bool) (key []byte, end, ok bool) {
	if first && !s.next('{') {
		return nil, false, false
	}
	if s.next('}') {
		if first {
			s.space()
			return nil, true, s.i == len(s.data)
		}
		return nil, false, false // a comma before the brace
	}
	key, ok = s.plain()
	return key, false, ok && s.next(':')
}

// after reads what follows a member's value: a comma, or the object's
// end and then the end of the body (end).
func (s *scanner) after() (end, ok bool) {
	if s.next(',') {
		return false, true
	}
	if !s.next('}') {
		return false, false
	}
	s.space()
	return true, s.i == len(s.data)
}

// fastDecide decodes a decision's body of the common shape (no context)
// into q; false leaves it to decodeBytes.
func fastDecide(data []byte, q *decideReq) bool {
	s := scanner{data: data}
	var ev, unit bool
	for first := true; ; first = false {
		key, end, ok := s.member(first)
		if end || !ok {
			return ok
		}
		var b []byte
		switch string(key) {
		case "event_id":
			if b, ok = s.plain(); !ok || ev {
				return false
			}
			q.EventID, ev = string(b), true
		case "unit_id":
			if b, ok = s.plain(); !ok || unit {
				return false
			}
			q.UnitID, unit = string(b), true
		default:
			return false
		}
		if end, ok = s.after(); end || !ok {
			return ok
		}
	}
}

// fastReward decodes a reward's body of the common shape into q; false
// leaves it to decodeBytes.
func fastReward(data []byte, q *rewardReq) bool {
	s := scanner{data: data}
	var ev bool
	for first := true; ; first = false {
		key, end, ok := s.member(first)
		if end || !ok {
			return ok
		}
		switch string(key) {
		case "event_id":
			var b []byte
			if b, ok = s.plain(); !ok || ev {
				return false
			}
			q.EventID, ev = string(b), true
		case "reward":
			var f float64
			if f, ok = s.number(); !ok || q.Reward != nil {
				return false
			}
			q.Reward = &f
		default:
			return false
		}
		if end, ok = s.after(); end || !ok {
			return ok
		}
	}
}

// appendAnswer appends the JSON of the hot path's two answers, an
// engine.Decision and an engine.RewardResult, as json.Encoder writes it
// (the same bytes, newline included: TestFastEncodeAgreesWithEncoder);
// ok is false for any other value, or a float that JSON cannot hold.
func appendAnswer(b []byte, v any) (_ []byte, ok bool) {
	switch v := v.(type) {
	case engine.Decision:
		if math.IsNaN(v.Probability) || math.IsInf(v.Probability, 0) {
			return b, false
		}
		b = appendString(append(b, `{"event_id":`...), v.EventID)
		b = strconv.AppendInt(append(b, `,"arm":`...), int64(v.Arm), 10)
		b = appendFloat(append(b, `,"probability":`...), v.Probability)
		b = strconv.AppendInt(append(b, `,"policy_version":`...), v.PolicyVersion, 10)
		b = strconv.AppendBool(append(b, `,"learns":`...), v.Learns)
	case engine.RewardResult:
		b = appendString(append(b, `{"event_id":`...), v.EventID)
		b = appendString(append(b, `,"status":`...), v.Status)
		b = strconv.AppendBool(append(b, `,"learned":`...), v.Learned)
		if v.Reason != "" {
			b = appendString(append(b, `,"reason":`...), v.Reason)
		}
		if v.Slot != "" {
			b = appendString(append(b, `,"slot":`...), v.Slot)
		}
	default:
		return b, false
	}
	return append(b, "}\n"...), true
}

// appendString appends s as encoding/json writes it (escaping HTML's
// <, > and &): by hand when it is printable ASCII that needs no escape,
// else by json.Marshal.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	return append(append(append(b, '"'), s...), '"')
}

// appendFloat appends a finite f as encoding/json writes a float64: 'f'
// format but for magnitudes below 1e-6 or from 1e21 on, whose exponent
// has no leading zero.
func appendFloat(b []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if n := len(b); format == 'e' && n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
		b[n-2] = b[n-1]
		b = b[:n-1]
	}
	return b
}
