package define

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// randomRank writes a rank request of random shape, now and then with
// what the fast path leaves to encoding/json: escapes, a field twice or
// in another case, an unknown field, invalid UTF-8, nulls, bad values.
func randomRank(r *rand.Rand) string {
	var members []string
	pick := func(opts ...string) string { return opts[r.IntN(len(opts))] }
	str := func() string { return pick(`"e1"`, `"a b"`, `"é"`, `""`, `null`, `"tab\tx"`, "\"\xff\"", `"\u00e9"`) }
	feats := func() string {
		return pick(`[]`, `null`, `[{"a":{"x":1,"y":"z"}}]`, `[{"a":1}, {"b":[1,2]}]`, `[ {"n" : { "deep": {"x":true}}} ]`, `[3]`, `[{"a":1e999}]`)
	}
	if r.IntN(8) > 0 {
		members = append(members, `"contextFeatures":`+feats())
	}
	if r.IntN(10) > 0 {
		var acts []string
		for i := range r.IntN(5) {
			a := fmt.Sprintf(`{"id":%s,"features":%s}`, pick(fmt.Sprintf(`"a%d"`, i), `"a0"`, str()), feats())
			switch r.IntN(20) {
			case 0:
				a = `{"id":"x","features":[],"extra":1}`
			case 1:
				a = `null`
			case 2:
				a = `{"features":[],"id":"y","id":"z"}`
			case 3:
				a = `{"ID":"w","features":[]}`
			}
			acts = append(acts, a)
		}
		members = append(members, `"actions":[`+strings.Join(acts, ",")+`]`)
	}
	if r.IntN(3) == 0 {
		members = append(members, `"excludedActions":`+pick(`[]`, `["a0"]`, `null`, `["a1", "zz"]`, `[1]`))
	}
	if r.IntN(2) == 0 {
		members = append(members, `"eventId":`+str())
	}
	if r.IntN(3) == 0 {
		members = append(members, `"deferActivation":`+pick(`true`, `false`, `null`, `1`))
	}
	switch r.IntN(15) {
	case 0:
		members = append(members, `"eventId":"again"`)
	case 1:
		members = append(members, `"EventId":"folded"`)
	case 2:
		members = append(members, `"unknown":1`)
	}
	r.Shuffle(len(members), func(i, j int) { members[i], members[j] = members[j], members[i] })
	return "{" + strings.Join(members, pick(",", " , ", ",\n")) + "}" + pick("", " ", "\n", " {}")
}

// TestReadRankFastIsEncodingJSON: the fast path reads a rank request
// exactly as encoding/json does (DisallowUnknownFields), or leaves it to
// it; it does read the plain ones; and DeferredActivation agrees with
// encoding/json on every request.
func TestReadRankFastIsEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	fast := 0
	for range 20000 {
		raw := []byte(randomRank(r))
		var want RankRequest
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		err := dec.Decode(&want)
		valid := err == nil && !dec.More()
		got, _, ok := readRankFast(raw, nil)
		if ok {
			fast++
			if !valid {
				t.Fatalf("%s: the fast path read a request encoding/json refuses (%v)", raw, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s:\n fast %+v\n json %+v", raw, got, want)
			}
		}
		if ctxt, _, err := (&Definition{Spec: Spec{HashBits: 4}}).ReadRankContext(raw); err == nil {
			var c bytes.Buffer
			if err := json.Compact(&c, raw); err != nil || ctxt != c.String() {
				t.Fatalf("%s: stored as %s, encoding/json compacts it to %s (%v)", raw, ctxt, c.String(), err)
			}
		}
		var d struct {
			DeferActivation bool `json:"deferActivation"`
		}
		wantDefer := json.Unmarshal(raw, &d) == nil && d.DeferActivation
		if got := DeferredActivation(string(raw)); got != wantDefer {
			t.Fatalf("%s: DeferredActivation %v, encoding/json %v", raw, got, wantDefer)
		}
	}
	if fast < 4000 {
		t.Fatalf("the fast path read %d of 20000 random requests: it gives up on plain ones", fast)
	}
}
