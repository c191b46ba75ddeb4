package define

import (
	"github.com/dpbandit/dpbandit/internal/jsonscan"
	"github.com/dpbandit/dpbandit/service/fault"
)

// DecodePzReward reads a Personalizer reward's body, {"value": x}, as
// DecodePz reads it (the value required): in one pass when it has that
// shape exactly (the name in lower case, once, a number), else by
// DecodePz, for the same value or the same error
// (TestPzRewardFastAgreesWithDecodePz).
func DecodePzReward(raw []byte) (float64, error) {
	s := jsonscan.Scanner{B: raw}
	var v float64
	seen := false
	ok := s.Object(func(key []byte) bool {
		if string(key) != "value" || seen {
			return false
		}
		var ok bool
		v, ok = s.Float()
		seen = true
		return ok
	})
	if s.WS(); ok && seen && s.I == len(raw) {
		return v, nil
	}
	return decodePzRewardSlow(raw)
}

// decodePzRewardSlow is DecodePzReward by DecodePz, for every body.
func decodePzRewardSlow(raw []byte) (float64, error) {
	var req struct {
		Value *float64 `json:"value"`
	}
	if err := DecodePz(raw, &req, "the reward request"); err != nil {
		return 0, err
	}
	if req.Value == nil {
		return 0, fault.Errorf(fault.Invalid, "value is required")
	}
	return *req.Value, nil
}
