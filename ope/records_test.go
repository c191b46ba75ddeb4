package ope

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// TestKeepRecords: with KeepRecords a dsjson reader keeps each event's
// record and reads each record's actions as its own (ranks of 2 and 3
// actions in one log); without it a log's records must agree on K.
func TestKeepRecords(t *testing.T) {
	two := `{"_label_cost":-1,"_label_probability":0.5,"_labelIndex":1,"EventId":"e1","c":{"u":1,"_multi":[{"x":1},{"x":2}]}}`
	three := `{"_label_cost":0,"_label_probability":0.25,"_labelIndex":2,"EventId":"e2","c":{"u":2,"_multi":[{"x":1},{"x":2},{"x":3}]}}`
	log := two + "\n" + three + "\n"
	for _, keep := range []bool{false, true} {
		rd, err := NewReaderWith(strings.NewReader(log), 50, Reading{})
		if err != nil {
			t.Fatal(err)
		}
		if keep {
			rd.KeepRecords()
		}
		var texts []string
		for {
			e, err := rd.Next()
			if err == io.EOF {
				break
			}
			var le *LogError
			if errors.As(err, &le) {
				texts = append(texts, "refused")
				continue
			}
			if err != nil {
				t.Fatalf("keep %v: %v", keep, err)
			}
			texts = append(texts, string(e.Text))
		}
		want := []string{"refused", "refused"} // (ranks of 2 and 3 actions in a log of 50)
		if keep {
			want = []string{two, three}
		}
		if len(texts) != 2 || texts[0] != want[0] || texts[1] != want[1] {
			t.Fatalf("keep %v: %q, want %q", keep, texts, want)
		}
		if rd.Format() != "dsjson" {
			t.Fatalf("format %q", rd.Format())
		}
	}
}
