package strictjson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/dpbandit/dpbandit/service/define"
)

// decideReq and rewardReq have the shapes of the native surface's
// decision and reward requests (service/api).
type decideReq struct {
	EventID string          `json:"event_id"`
	UnitID  string          `json:"unit_id"`
	Context json.RawMessage `json:"context"`
}

type rewardReq struct {
	EventID string   `json:"event_id"`
	Reward  *float64 `json:"reward"`
	Slot    string   `json:"slot"`
}

// checkKeysDecoder (the oracle: the Decoder-based check the walker replaced) reads one JSON value from dec, nested depth deep, and checks
// its objects' keys against t, the Go type it will be decoded into (nil:
// any value): no key twice, a struct's keys exactly its fields' JSON
// names, and no nesting beyond MaxDepth.
func checkKeysDecoder(dec *json.Decoder, t reflect.Type, depth int) error {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == rawMessage {
		t = nil
	}
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); ok && (d == '{' || d == '[') && depth >= MaxDepth {
		return fmt.Errorf("nested deeper than %d levels", MaxDepth)
	}
	switch tok {
	case json.Delim('{'):
		seen := map[string]bool{}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return err
			}
			key := k.(string)
			if seen[key] {
				return fmt.Errorf("field %q appears twice", key)
			}
			seen[key] = true
			ft, err := (*Decoder)(nil).fieldType(t, key)
			if err != nil {
				return err
			}
			if err := checkKeysDecoder(dec, ft, depth+1); err != nil {
				return err
			}
		}
		_, err = dec.Token()
		return err
	case json.Delim('['):
		var et reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			et = t.Elem()
		}
		for dec.More() {
			if err := checkKeysDecoder(dec, et, depth+1); err != nil {
				return err
			}
		}
		_, err = dec.Token()
		return err
	}
	return nil
}

// oracle is the strict check as it was: keys by json.Decoder's tokens,
// then no trailing data.
func oracle(data []byte, t reflect.Type) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := checkKeysDecoder(dec, t, 0); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("data after the value")
	}
	return nil
}

// The byte walker accepts exactly what the Decoder-based check accepted,
// on hand-written cases and on 20,000 random mutations of valid requests
// (escaped keys, duplicates after unescaping, wrong case, nesting, raw
// contexts, trailing data, broken syntax).
func TestKeyWalkerMatchesDecoder(t *testing.T) {
	types := []reflect.Type{reflect.TypeFor[*define.Spec](), reflect.TypeFor[*decideReq](), reflect.TypeFor[*rewardReq]()}
	requests := NewDecoder(types...)
	seeds := []string{
		`{"event_id":"a","unit_id":"u"}`,
		`{"event_id":"a","unit_id":"u","context":[[1,2],[3,4]]}`,
		`{"event_id":"a","unit_id":"u","context":{"x":1,"y":{"z":[1,{"w":2}]}}}`,
		`{"\u0065vent_id":"a","event_id":"b"}`,
		`{"event_id":"a\"b","unit_id":"\\"}`,
		`{"event_id":"a","reward":0.5}`,
		`{"id":"g","algorithm":"adac-ucb","arms":2,"reward_range":[0,1],"privacy":{"rho":1,"eps":null}}`,
		`{"id":"g","actions":[[1,0],[0,1]],"default_reward":null,"privacy":{"Rho":1}}`,
		` { "event_id" : "a" , "unit_id" : "u" } `,
		`{"event_id":"a","unit_id":"u","context":` + strings.Repeat("[", 40) + strings.Repeat("]", 40) + `}`,
		`[]`, `"x"`, `1`, `null`, `{}`, `{"a":1}`, `{"event_id":1e400}`,
	}
	pieces := []string{`"event_id"`, `"EVENT_ID"`, `"x"`, `:`, `,`, `{`, `}`, `[`, `]`, `1`, `"a"`, ` `, `null`, `"\u0078"`, `"context"`, `"reward"`, `"privacy"`, `"rho"`, `tru`, `"`, `\`}
	r := rand.New(rand.NewPCG(1, 2))
	cases := append([]string(nil), seeds...)
	for range 20000 {
		s := []byte(seeds[r.IntN(len(seeds))])
		for range 1 + r.IntN(3) {
			i := r.IntN(len(s) + 1)
			switch r.IntN(3) {
			case 0: // insert a piece
				s = append(s[:i:i], append([]byte(pieces[r.IntN(len(pieces))]), s[i:]...)...)
			case 1: // delete a byte
				if i < len(s) {
					s = append(s[:i:i], s[i+1:]...)
				}
			case 2: // duplicate a span
				j := i + r.IntN(len(s)-i+1)
				s = append(s[:j:j], append(append([]byte(nil), s[i:j]...), s[j:]...)...)
			}
		}
		cases = append(cases, string(s))
	}
	accepted := 0
	for _, c := range cases {
		for _, ty := range types {
			want := oracle([]byte(c), ty)
			got := requests.Check([]byte(c), ty)
			if (got == nil) != (want == nil) {
				t.Fatalf("%s into %v: walker %v, decoder %v", c, ty, got, want)
			}
			if got == nil {
				accepted++
			}
		}
	}
	if accepted < 1000 {
		t.Fatalf("only %d accepted cases: the mutations test little", accepted)
	}
}
