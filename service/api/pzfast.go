package api

import (
	"math"

	"github.com/dpbandit/dpbandit/service/rank"
)

// The Personalizer surface's hot path, as the native one's (fastjson.go):
// a rank's answer written by hand, json.Encoder's bytes
// (TestRankAnswerAgreesWithEncoder); a reward's body is read by
// define.DecodePzReward.

// appendRank appends a rank's answer as json.Encoder writes it; ok false
// for a probability JSON cannot hold.
func appendRank(b []byte, v rank.Response) (_ []byte, ok bool) {
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
