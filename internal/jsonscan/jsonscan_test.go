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
