package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dpbandit/dpbandit/service/engine"
)

// pzRewardCorpus is Personalizer reward bodies, of the common shape and
// around it.
var pzRewardCorpus = []string{
	`{"value":1}`, `{"value":0}`, `{"value":0.5}`, ` { "value" : 1 } `, "{\"value\":1}\n", `{"value":-0}`, `{"value":1e-7}`,
	`{"value":1E+2}`, `{"value":01}`, `{"value":1.}`, `{"value":.5}`, `{"value":+1}`, `{"value":1e400}`, `{"value":NaN}`,
	`{"value":null}`, `{"value":"1"}`, `{"value":true}`, `{"value":[1]}`, `{"value":1,"value":0}`, `{"Value":1}`, `{"VALUE":0.25}`,
	`{}`, `{"value":1,"other":2}`, `{"value":1}x`, `{"value":1}{}`, `{"value":1}]`, `{"value":1}}`, `{"value":1`, `{"value"`,
	`{`, ``, ` `, `null`, `[]`, `1`, `{"valu\u0065":1}`, "{\"value\":1,}", `{"value" 1}`,
}

// TestPzRewardFastAgreesWithDecoder: decodePzReward reads every body as
// encoding/json does (decodePzRewardStrict): the same value or the same
// error, on the corpus and random mutations of it; and it reads the
// common shape itself.
func TestPzRewardFastAgreesWithDecoder(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	alphabet := []byte("{}[],:\"\\ \n0123456789.eE+-valuenrt\x00\xc3\xa9")
	check := func(b []byte) {
		got, gerr := decodePzReward(b)
		want, werr := decodePzRewardStrict(b)
		if (gerr == nil) != (werr == nil) || gerr != nil && gerr.Error() != werr.Error() || gerr == nil && math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("%q: %v, %v; encoding/json %v, %v", b, got, gerr, want, werr)
		}
	}
	body := []byte(`{"value":1}`) // dpbandit loadtest's
	if n := testing.AllocsPerRun(100, func() { decodePzReward(body) }); n != 0 {
		t.Errorf("the common shape's reward took %v allocations: not the fast path", n)
	}
	mutate(r, pzRewardCorpus, 300, alphabet, check)
}

// mutate calls check with each body of corpus and n random mutations of
// it (a byte replaced by one of alphabet, dropped, or doubled).
func mutate(r *rand.Rand, corpus []string, n int, alphabet []byte, check func([]byte)) {
	for _, s := range corpus {
		check([]byte(s))
		for range n {
			b := []byte(s)
			if len(b) == 0 {
				continue
			}
			switch i := r.IntN(len(b)); r.IntN(3) {
			case 0:
				b[i] = alphabet[r.IntN(len(alphabet))]
			case 1:
				b = append(b[:i:i], b[i+1:]...)
			default:
				b = append(b[:i+1:i+1], b[i:]...)
			}
			check(b)
		}
	}
}

// TestRankAnswerAgreesWithEncoder: a rank's answer written by hand is
// json.Encoder's bytes, for ids that need escapes and probabilities of
// every magnitude; a NaN is left to the encoder.
func TestRankAnswerAgreesWithEncoder(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	ids := []string{"a1", "", "a<b>&c", `q"uote\`, "é", "\u2028", "\x00", "\xff", "tab\t", "NewsArticle"}
	for i := range 2000 {
		v := engine.RankResponse{EventID: ids[i%len(ids)], RewardActionID: ids[(i/3)%len(ids)]}
		if i%50 != 0 {
			v.Ranking = []engine.RankedAction{}
		}
		for k := range r.IntN(12) {
			p := []float64{0, 1, 0.1, 1.0 / 3, 0.8999999999999999, 1e-7, 5e-324, r.Float64(), math.Float64frombits(r.Uint64() >> 2)}[r.IntN(9)]
			v.Ranking = append(v.Ranking, engine.RankedAction{ID: fmt.Sprint(ids[k%len(ids)], k), Probability: p})
		}
		var want bytes.Buffer
		json.NewEncoder(&want).Encode(v)
		got, ok := appendAnswer(nil, v)
		if !ok || !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("%+v: %q (%v), json.Encoder %q", v, got, ok, want.Bytes())
		}
	}
	if _, ok := appendAnswer(nil, engine.RankResponse{Ranking: []engine.RankedAction{{ID: "a", Probability: math.NaN()}}}); ok {
		t.Error("a NaN probability took the fast path")
	}
}
