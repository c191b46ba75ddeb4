package jsonscan

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestCompactIsEncodingJSONs: on valid JSON, Compact writes what
// encoding/json's Compact does (blanks in strings and escaped quotes
// kept).
func TestCompactIsEncodingJSONs(t *testing.T) {
	for _, s := range []string{
		`{}`, ` { "a" : [ 1 , 2.5e3 ,"x y" ] ,` + "\n\t" + `"b\" c":{"d":"\\"} , "e" : "\"  \\\" " } `,
		`[ true , false , null , "é\u00e9" ]`, `"  "`, ` -0.5 `,
	} {
		var want bytes.Buffer
		if err := json.Compact(&want, []byte(s)); err != nil {
			t.Fatal(err)
		}
		if got := Compact(nil, []byte(s)); string(got) != want.String() {
			t.Errorf("%s: %s, encoding/json %s", s, got, want.String())
		}
	}
}

// TestDepth: Depth counts the nesting of objects and arrays, not the
// brackets and braces inside strings (escaped quotes included).
func TestDepth(t *testing.T) {
	for _, c := range []struct {
		json string
		want int
	}{
		{`1`, 0}, {`"[{"`, 0}, {`{}`, 1}, {`[[],[[]]]`, 3}, {`{"a":{"b":[1]}}`, 3},
		{`{"[\"{[": "}]\\", "b": [{"c": "\"[["}]}`, 3}, {`["\\", [0]]`, 2},
	} {
		if got := Depth([]byte(c.json)); got != c.want {
			t.Errorf("Depth(%s) = %d, want %d", c.json, got, c.want)
		}
	}
}
