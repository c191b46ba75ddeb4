package api

import (
	"bytes"
	"encoding/json"
	"math"
	"net/http"

	"github.com/dpbandit/dpbandit/internal/jsonscan"
	"github.com/dpbandit/dpbandit/service/engine"
	"github.com/dpbandit/dpbandit/service/fault"
)

// The Personalizer surface's hot path, as the native one's (fastjson.go):
// a reward's body read in one pass for its common shape, {"value": x},
// else by encoding/json as before (TestPzRewardFastAgreesWithDecoder); a
// rank's answer written by hand, json.Encoder's bytes
// (TestRankAnswerAgreesWithEncoder); bodies read into buffers used again.

// decodePzReward reads a Personalizer reward's body: its value, required.
func decodePzReward(raw []byte) (float64, error) {
	s := jsonscan.Scanner{B: raw}
	var v float64
	seen := false
	if whole(&s, s.Object(func(key []byte) bool {
		if string(key) != "value" || seen {
			return false
		}
		var ok bool
		v, ok = s.Float()
		seen = true
		return ok
	})) && seen {
		return v, nil
	}
	return decodePzRewardStrict(raw)
}

// decodePzRewardStrict is decodePzReward by encoding/json, for every body.
func decodePzRewardStrict(raw []byte) (float64, error) {
	var req struct {
		Value *float64 `json:"value"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return 0, fault.Errorf(fault.Invalid, "the reward request is not valid: %v", err)
	}
	if dec.More() {
		return 0, fault.Errorf(fault.Invalid, "the reward request has data after its object")
	}
	if req.Value == nil {
		return 0, fault.Errorf(fault.Invalid, "value is required")
	}
	return *req.Value, nil
}

// appendRank appends a rank's answer as json.Encoder writes it; ok false
// for a probability JSON cannot hold.
func appendRank(b []byte, v engine.RankResponse) (_ []byte, ok bool) {
	b = append(b, `{"ranking":`...)
	if v.Ranking == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, a := range v.Ranking {
			if math.IsNaN(a.Probability) || math.IsInf(a.Probability, 0) {
				return b, false
			}
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(append(b, `{"id":`...), a.ID)
			b = append(appendFloat(append(b, `,"probability":`...), a.Probability), '}')
		}
		b = append(b, ']')
	}
	b = appendString(append(b, `,"eventId":`...), v.EventID)
	b = appendString(append(b, `,"rewardActionId":`...), v.RewardActionID)
	return append(b, "}\n"...), true
}

// readPooled is readBody into a buffer of the server's (bodies), which
// putBody gives back once the body is read whole (Rank keeps nothing of
// it).
func (a *server) readPooled(r *http.Request) (data []byte, buf *[]byte, err error) {
	if _, err := contentType(r, jsonType); err != nil {
		return nil, nil, err
	}
	return a.readSmall(nil, r)
}
