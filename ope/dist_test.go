package ope

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/noise"
)

// probsOf is a context-dependent target for the tests: pi(0 | x) = (1 + x)/2.
type probsOf struct{}

func (probsOf) Probs(e *Event, p []float64) error {
	p[0] = (1 + e.X[0]) / 2
	p[1] = 1 - p[0]
	return nil
}

// A target given per event (Dist, as OBP's action_dist): every estimate
// equals the same policy's given as code, with rows in JSON or CSV, on
// a log with events without a reward (their rows count, and are
// deliberately wrong to catch a misalignment), and on a CSV log (its
// header has no row); a row of the wrong length, out of [0, 1], NaN, not
// summing to 1, or a file with fewer rows than the log is an error naming
// the row's line; the digest changes with the contents.
func TestDistPolicy(t *testing.T) {
	w := world{mu: func(x float64, a int) float64 { return 0.3 + 0.4*float64(a)*x*x }, log0: func(x float64) float64 { return 0.5 + 0.3*x }}
	var log, rowsJSON, rowsCSV bytes.Buffer
	for i, line := range bytes.Split(bytes.TrimSpace(w.write(noise.Stream(7), 400)), []byte("\n")) {
		if i%50 == 3 { // a record without a reward, and a wrong row for it
			log.WriteString(`{"action":1,"reward":null,"pscore":0.5,"context":[0]}` + "\n")
			rowsJSON.WriteString("[1, 0]\n")
			rowsCSV.WriteString("1,0\n")
		}
		log.Write(append(line, '\n'))
		var e struct{ Context []float64 }
		json.Unmarshal(line, &e)
		p0 := (1 + e.Context[0]) / 2
		fmt.Fprintf(&rowsJSON, "[%s, %s]\n", strconv.FormatFloat(p0, 'g', -1, 64), strconv.FormatFloat(1-p0, 'g', -1, 64))
		fmt.Fprintf(&rowsCSV, "%s,%s\n", strconv.FormatFloat(p0, 'g', -1, 64), strconv.FormatFloat(1-p0, 'g', -1, 64))
	}
	unit := mechanism.Unit
	o := Options{Arms: 2, Clip: 10, Rewards: &unit}
	want, err := Evaluate(opener(log.Bytes()), probsOf{}, o)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	digests := map[string]bool{}
	for name, rows := range map[string]string{"rows.jsonl": rowsJSON.String(), "rows.csv": rowsCSV.String()} {
		pol, err := ParsePolicy("dist:" + write(name, rows))
		if err != nil {
			t.Fatal(err)
		}
		d := pol.(*Dist)
		got, err := Evaluate(opener(log.Bytes()), d, o)
		d.Close()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if fmt.Sprint(got.Estimate) != fmt.Sprint(want.Estimate) || got.ESS != want.ESS {
			t.Fatalf("%s: %+v, want %+v", name, got.Estimate, want.Estimate)
		}
		digests[d.Digest] = true
	}
	if len(digests) != 2 {
		t.Fatalf("digests %v", digests)
	}
	// A CSV log: its header has no row.
	csvLog := "action,reward,pscore,context_0\n0,1,0.5,0.2\n1,,0.5,0\n1,0,0.5,-0.6\n"
	pol, _ := ParsePolicy("dist:" + write("csvrows", "0.6,0.4\n0.5,0.5\n0.2,0.8\n"))
	got, err := Evaluate(opener([]byte(csvLog)), pol, Options{Arms: 2})
	pol.(*Dist).Close()
	want, _ = Evaluate(opener([]byte(csvLog)), probsOf{}, Options{Arms: 2})
	if err != nil || fmt.Sprint(got.Estimate) != fmt.Sprint(want.Estimate) {
		t.Fatalf("CSV log: %v, %v; want %v", got, err, want.Estimate)
	}
	good := strings.Repeat("[0.5, 0.5]\n", 2)
	for _, c := range []struct{ rows, want string }{
		{good + "[0.5, 0.25, 0.25]\n", "line 3: 3 probabilities"},
		{good + "[1.5, -0.5]\n", "line 3: probability 1.5"},
		{good + "NaN,0.5\n", "line 3: probability NaN"},
		{good + "[0.5, 0.4]\n", "line 3: the probabilities sum to 0.9"},
		{good + "[0.5, x]\n", "line 3: "},
		{good, "has 2 rows"},
	} {
		pol, err := ParsePolicy("dist:" + write("bad", c.rows))
		if err != nil {
			t.Fatal(err)
		}
		_, err = Evaluate(opener(log.Bytes()), pol, o)
		pol.(*Dist).Close()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("rows %q: %v, want %q", c.rows, err, c.want)
		}
	}
	if _, err := ParsePolicy("dist:" + filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing file: no error")
	}
}
