package api

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/dpbandit/dpbandit/service/outcome"
)

// fastCorpus is bodies of decisions and rewards, of the common shape and
// around it: every one is decoded by the fast path or left to the strict
// decoder.
var fastCorpus = []string{
	`{"event_id":"e1","unit_id":"u1"}`, ` { "event_id" : "e1" , "unit_id" : "u1" } `, "{\"event_id\":\"e1\",\n\"unit_id\":\"u1\"}\n",
	`{"unit_id":"u1","event_id":"e1"}`, `{"event_id":"e1"}`, `{}`, `{"event_id":"e1","unit_id":"u1","context":null}`,
	`{"event_id":"e1","unit_id":"u1","context":[[1,0]]}`, `{"event_id":"e1","event_id":"e2","unit_id":"u1"}`,
	`{"event_id":"e1","unit_id":"u1"}x`, `{"event_id":"e1","unit_id":"u1"}{}`, `{"event_id":"e1","unit_id":"u1",}`,
	`{"event_id":"e1" "unit_id":"u1"}`, `{"Event_id":"e1","unit_id":"u1"}`, `{"event_id":"e\"1","unit_id":"u1"}`,
	`{"event_id":"e\u00e91","unit_id":"u1"}`, "{\"event_id\":\"e\xc3\xa9\",\"unit_id\":\"u1\"}", "{\"event_id\":\"e\xff\",\"unit_id\":\"u1\"}",
	"{\"event_id\":\"e\x01\",\"unit_id\":\"u1\"}", `{"event_id":null,"unit_id":"u1"}`, `{"event_id":1,"unit_id":"u1"}`,
	`{"event_id":"e1","unit_id":"u1"`, `{"event_id":"e1`, `{"event_id"`, `{`, ``, ` `, `[]`, `null`, `"e1"`,
	`{"event_id":"<a&b>","unit_id":"u 1"}`, `{"event_id":"e1","reward":1}`, `{"event_id":"e1","reward":0.25}`,
	`{"reward":-0,"event_id":"e1"}`, `{"event_id":"e1","reward":1e-7}`, `{"event_id":"e1","reward":1E+2}`,
	`{"event_id":"e1","reward":-1.5e3}`, `{"event_id":"e1","reward":01}`, `{"event_id":"e1","reward":1.}`,
	`{"event_id":"e1","reward":.5}`, `{"event_id":"e1","reward":+1}`, `{"event_id":"e1","reward":1e}`,
	`{"event_id":"e1","reward":1e400}`, `{"event_id":"e1","reward":-}`, `{"event_id":"e1","reward":Infinity}`,
	`{"event_id":"e1","reward":NaN}`, `{"event_id":"e1","reward":0x10}`, `{"event_id":"e1","reward":1_0}`,
	`{"event_id":"e1","reward":null}`, `{"event_id":"e1","reward":"1"}`, `{"event_id":"e1","reward":true}`,
	`{"event_id":"e1","reward":1,"reward":0}`, `{"event_id":"e1","reward":1}  `, `{"event_id":"e1","reward":1 }`,
	`{"event_id":"e1","reward":[1]}`, `{"event_id":"e1","reward":1,"unit_id":"u1"}`, `{"event_id":"","unit_id":""}`,
}

// agree checks that decode (decodeDecide or decodeReward) decodes data
// as requests.Decode does: the same error, or the same value.
func agree[T any](t *testing.T, data []byte, decode func([]byte, *T) error) {
	t.Helper()
	var got, want T
	gerr, werr := decode(data, &got), requests.Decode(data, &want)
	if (gerr == nil) != (werr == nil) || gerr != nil && gerr.Error() != werr.Error() {
		t.Errorf("%q: error %v, the strict decoder's %v", data, gerr, werr)
	}
	if gerr == nil && !reflect.DeepEqual(got, want) {
		t.Errorf("%q: %+v, the strict decoder's %+v", data, got, want)
	}
}

// The fast path decodes every body as the strict decoder does, the
// corpus and random mutations of it (bytes replaced, dropped, doubled).
func TestFastDecodeAgreesWithStrict(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte("{}[],:\"\\ \n0123456789.eE+-anrtuledvi_x\x00\x7f\xc3\xa9")
	check := func(data []byte) {
		agree(t, data, decodeDecide)
		agree(t, data, decodeReward)
	}
	for _, s := range fastCorpus {
		check([]byte(s))
		for range 200 {
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

// The fast path takes the bodies dpbandit loadtest sends (else it would
// measure nothing).
func TestFastDecodeTakesTheCommonShape(t *testing.T) {
	var d decideReq
	var q rewardReq
	if !fastDecide(benchDecideBody, &d) || d.EventID != "c17-123456" || d.UnitID != "c17-123456" {
		t.Errorf("fastDecide(%s) = %+v", benchDecideBody, d)
	}
	if !fastReward(benchRewardBody, &q) || q.EventID != "c17-123456" || q.Reward == nil || *q.Reward != 1 {
		t.Errorf("fastReward(%s) = %+v", benchRewardBody, q)
	}
}

// The answers' fast encoding writes json.Encoder's bytes, for ids that
// need escapes and floats of every magnitude.
func TestFastEncodeAgreesWithEncoder(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	ids := []string{"e1", "", "a<b>&c", `q"uote\`, "é", "\u2028", "\x00", "\xff", "tab\t", "~ok-id_1.2"}
	floats := []float64{0, math.Copysign(0, -1), 1, 0.5, 1.0 / 3, 1e-6, 9.99e-7, 1e-7, 1e20, 1e21, 123456789.125, 5e-324, math.MaxFloat64, -2.5e-9}
	for range 1000 {
		floats = append(floats, math.Float64frombits(r.Uint64()), r.Float64()*math.Pow(10, float64(r.IntN(60)-30)))
	}
	var values []any
	for i, f := range floats {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			continue
		}
		id := ids[i%len(ids)]
		values = append(values,
			outcome.Decision{EventID: id, Arm: i % 7, Probability: f, PolicyVersion: int64(i) - 3, Learns: i%2 == 0},
			outcome.RewardResult{EventID: id, Status: "learned", Learned: i%2 == 1, Reason: []string{"", "overflow", "a<b"}[i%3]})
	}
	// Every exported field of the answers set (an answer's field that
	// appendAnswer does not write fails here: a slate's reward lost its
	// slot so).
	for i := range 200 {
		for _, v := range []any{&outcome.Decision{}, &outcome.RewardResult{}} {
			rv := reflect.ValueOf(v).Elem()
			for j := range rv.NumField() {
				f := rv.Field(j)
				if !rv.Type().Field(j).IsExported() {
					continue
				}
				switch f.Kind() {
				case reflect.String:
					f.SetString(ids[(i+j)%len(ids)])
				case reflect.Bool:
					f.SetBool((i+j)%2 == 0)
				case reflect.Int, reflect.Int64:
					f.SetInt(int64(i*7 - j))
				case reflect.Float64:
					f.SetFloat(floats[(i+j)%len(floats)])
				default:
					t.Fatalf("%T.%s: a field of kind %v the test cannot fill", v, rv.Type().Field(j).Name, f.Kind())
				}
			}
			values = append(values, rv.Interface())
		}
	}
	for _, v := range values {
		var want bytes.Buffer
		json.NewEncoder(&want).Encode(v)
		got, ok := appendAnswer(nil, v)
		if !ok || !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("%+v: %q (%v), json.Encoder %q", v, got, ok, want.Bytes())
		}
	}
	if _, ok := appendAnswer(nil, outcome.Decision{Probability: math.NaN()}); ok {
		t.Error("a NaN probability took the fast path")
	}
	if _, ok := appendAnswer(nil, map[string]string{}); ok {
		t.Error("another type took the fast path")
	}
}
