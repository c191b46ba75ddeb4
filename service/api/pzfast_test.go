package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dpbandit/dpbandit/service/rank"
)

// TestRankAnswerAgreesWithEncoder: a rank's answer written by hand is
// json.Encoder's bytes, for ids that need escapes and probabilities of
// every magnitude; a NaN is left to the encoder.
func TestRankAnswerAgreesWithEncoder(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	ids := []string{"a1", "", "a<b>&c", `q"uote\`, "é", "\u2028", "\x00", "\xff", "tab\t", "NewsArticle"}
	for i := range 2000 {
		v := rank.Response{EventID: ids[i%len(ids)], RewardActionID: ids[(i/3)%len(ids)]}
		if i%50 != 0 {
			v.Ranking = []rank.Action{}
		}
		for k := range r.IntN(12) {
			p := []float64{0, 1, 0.1, 1.0 / 3, 0.8999999999999999, 1e-7, 5e-324, r.Float64(), math.Float64frombits(r.Uint64() >> 2)}[r.IntN(9)]
			v.Ranking = append(v.Ranking, rank.Action{ID: fmt.Sprint(ids[k%len(ids)], k), Probability: p})
		}
		var want bytes.Buffer
		json.NewEncoder(&want).Encode(v)
		got, ok := appendAnswer(nil, v)
		if !ok || !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("%+v: %q (%v), json.Encoder %q", v, got, ok, want.Bytes())
		}
	}
	if _, ok := appendAnswer(nil, rank.Response{Ranking: []rank.Action{{ID: "a", Probability: math.NaN()}}}); ok {
		t.Error("a NaN probability took the fast path")
	}
}
