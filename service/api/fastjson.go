package api

import (
	"encoding/json"
	"math"
	"strconv"

	"github.com/dpbandit/dpbandit/internal/jsonscan"
	"github.com/dpbandit/dpbandit/service/outcome"
	"github.com/dpbandit/dpbandit/service/rank"
)

// The fast path of the strict decoding of the two bodies of the hot
// path, a decision's and a reward's: one pass over the bytes for the
// common shape of each, a flat object of plain strings (printable ASCII
// without escapes) and, for a reward, a number. Whatever else a body
// holds (escapes, other bytes, a context, null ids, a key twice or
// unknown, any syntax error) it leaves to requests.Decode, which decides
// alike for every body (TestFastDecodeAgreesWithStrict): so the fast
// path only ever accepts what requests.Decode accepts, with the same value.

// plain reads a string of printable ASCII without escapes at s.
func plain(s *jsonscan.Scanner) ([]byte, bool) {
	b, ok := s.Str()
	for _, c := range b {
		if c >= 0x7f {
			return nil, false
		}
	}
	return b, ok
}

// whole reports whether the object read by s, its value read, ends the
// body.
func whole(s *jsonscan.Scanner, read bool) bool {
	s.WS()
	return read && s.I == len(s.B)
}

// fastDecide decodes a decision's body of the common shape (no context)
// into q; false leaves it to requests.Decode.
func fastDecide(data []byte, q *decideReq) bool {
	s := jsonscan.Scanner{B: data}
	var ev, unit bool
	return whole(&s, s.Object(func(key []byte) bool {
		b, ok := plain(&s)
		switch string(key) {
		case "event_id":
			ok = ok && !ev
			q.EventID, ev = string(b), true
		case "unit_id":
			ok = ok && !unit
			q.UnitID, unit = string(b), true
		default:
			return false
		}
		return ok
	}))
}

// fastReward decodes a reward's body of the common shape into q; false
// leaves it to requests.Decode.
func fastReward(data []byte, q *rewardReq) bool {
	s := jsonscan.Scanner{B: data}
	var ev bool
	return whole(&s, s.Object(func(key []byte) bool {
		switch string(key) {
		case "event_id":
			b, ok := plain(&s)
			if !ok || ev {
				return false
			}
			q.EventID, ev = string(b), true
		case "reward":
			f, ok := s.Float()
			if !ok || q.Reward != nil {
				return false
			}
			q.Reward = &f
		default:
			return false
		}
		return true
	}))
}

// appendAnswer appends the JSON of the hot path's two answers, an
// outcome.Decision and an outcome.RewardResult, as json.Encoder writes it
// (the same bytes, newline included: TestFastEncodeAgreesWithEncoder);
// ok is false for any other value, or a float that JSON cannot hold.
func appendAnswer(b []byte, v any) (_ []byte, ok bool) {
	switch v := v.(type) {
	case outcome.Decision:
		if math.IsNaN(v.Probability) || math.IsInf(v.Probability, 0) {
			return b, false
		}
		b = appendString(append(b, `{"event_id":`...), v.EventID)
		b = strconv.AppendInt(append(b, `,"arm":`...), int64(v.Arm), 10)
		b = appendFloat(append(b, `,"probability":`...), v.Probability)
		b = strconv.AppendInt(append(b, `,"policy_version":`...), v.PolicyVersion, 10)
		b = strconv.AppendBool(append(b, `,"learns":`...), v.Learns)
	case rank.Response:
		return appendRank(b, v)
	case outcome.RewardResult:
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
