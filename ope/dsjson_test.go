package ope

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fileOpener opens a file for each pass.
func fileOpener(path string) func() (io.ReadCloser, error) {
	return func() (io.ReadCloser, error) { return os.Open(path) }
}

// TestDSJSONAgainstIndependentGenerator: dsjson logs written by an
// independent Python generator (testdata/dsjson/gen.py, from VW's
// DSJSON documentation: single-slot records with a, p and c._multi, some
// without a cost or marked _skipLearn; records of two slots under
// _outcomes) evaluate to the IPS and SNIPS the generator computed
// itself, to 1e-9, for uniform, a fixed action, the logging policy (from
// a and p) and a linear softmax on the features hashed as featurehash
// documents (the generator's own FNV-1a), with the format detected from
// the content; the events without a reward are counted, not read.
func TestDSJSONAgainstIndependentGenerator(t *testing.T) {
	dir := filepath.Join("testdata", "dsjson")
	b, err := os.ReadFile(filepath.Join(dir, "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]map[string]struct {
		IPS, SNIPS float64
		Events     int
	}
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	linear := "linear:" + filepath.Join(dir, "theta.json") + ",softmax=0.5"
	for file, targets := range map[string][]string{"single": {"uniform", "arm:2", "logging", "linear"}, "slots": {"uniform", "linear"}} {
		var pols []Policy
		for _, s := range targets {
			if s == "linear" {
				s = linear
			}
			p, err := ParsePolicy(s)
			if err != nil {
				t.Fatal(err)
			}
			pols = append(pols, p)
		}
		res, err := EvaluateAll(fileOpener(filepath.Join(dir, file+".dsjson")), pols, Options{Reading: Reading{HashBits: 4}})
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		for i, s := range targets {
			w := want[file][s]
			r := res[i]
			if r.Events != w.Events {
				t.Errorf("%s %s: %d events, the generator %d", file, s, r.Events, w.Events)
			}
			if r.Skipped == 0 {
				t.Errorf("%s %s: no event skipped; the generator wrote decisions without a cost", file, s)
			}
			got := map[string]float64{}
			for _, e := range r.Estimate {
				got[e.Name] = e.Value
			}
			if math.Abs(got["ips"]-w.IPS) > 1e-9 || math.Abs(got["snips"]-w.SNIPS) > 1e-9 {
				t.Errorf("%s %s: IPS %.15g SNIPS %.15g, the generator %.15g %.15g", file, s, got["ips"], got["snips"], w.IPS, w.SNIPS)
			}
		}
	}
}

// TestDSJSONRefusesBadRecords: a malformed dsjson record stops the
// evaluation with its line and its field.
func TestDSJSONRefusesBadRecords(t *testing.T) {
	good := `{"_label_cost":-1,"_label_probability":0.5,"_label_Action":2,"_labelIndex":1,"a":[2,1],"p":[0.5,0.5],"c":{"U":{"f":"x"},"_multi":[{"A":{"i":1}},{"A":{"i":2}}]},"EventId":"e1"}`
	for _, c := range []struct{ bad, field string }{
		{strings.Replace(good, `"_label_probability":0.5,`, ``, 1) + "", ""}, // p[0] still gives it
		{strings.NewReplacer(`"_label_probability":0.5,`, ``, `"p":[0.5,0.5],`, ``, `"a":[2,1],`, ``).Replace(good), "_label_probability"},
		{strings.Replace(good, `"_label_probability":0.5`, `"_label_probability":0`, 1), "_label_probability"},
		{strings.Replace(good, `"_label_probability":0.5`, `"_label_probability":1.5`, 1), "_label_probability"},
		{strings.Replace(good, `"_label_probability":0.5`, `"_label_probability":"NaN"`, 1), "_label_probability"},
		{strings.Replace(good, `"_label_cost":-1`, `"_label_cost":"NaN"`, 1), "_label_cost"},
		{strings.NewReplacer(`"_label_Action":2,"_labelIndex":1`, `"_label_Action":3,"_labelIndex":2`, `"a":[2,1]`, `"a":[3,1]`).Replace(good), "_labelIndex"},
		{strings.Replace(good, `"_labelIndex":1`, `"_labelIndex":0`, 1), "_label_Action"},
		{strings.Replace(good, `"a":[2,1]`, `"a":[1,2]`, 1), "a[0]"},
		// The chosen action outside c._multi is named by the field that
		// gave it: _labelIndex first, else _label_Action, else a[0].
		{strings.Replace(good, `"_label_Action":2,"_labelIndex":1,"a":[2,1],"p":[0.5,0.5],`, `"_label_Action":3,`, 1), "_label_Action"},
		{strings.Replace(good, `"_label_Action":2,"_labelIndex":1,"a":[2,1],"p":[0.5,0.5],`, `"a":[3,1],"p":[0.5,0.5],`, 1), "a[0]"},
		{strings.Replace(good, `"p":[0.5,0.5]`, `"p":[0.5]`, 1), "p"},
		{strings.Replace(good, `"c":{`, `"c":{"N":NaN,`, 1), ""},
		{strings.Replace(good, `{"A":{"i":1}}`, `{"A":{"i":[1,"x"]}}`, 1), "c._multi[0].A.i[1]"},
		{strings.Replace(good, `"p":[0.5,0.5]`, `"p":[0.5,0.25]`, 1), ""}, // a distribution that does not sum to 1
	} {
		log := good + "\n" + c.bad + "\n"
		_, err := Evaluate(opener([]byte(log)), Uniform{}, Options{})
		if c.bad == strings.Replace(good, `"_label_probability":0.5,`, ``, 1) {
			if err != nil {
				t.Errorf("p[0] gives the probability: %v", err)
			}
			continue
		}
		var le *LogError
		if !errors.As(err, &le) || le.Line != 2 {
			t.Errorf("%s: %v, want a LogError at line 2", c.bad, err)
			continue
		}
		var fe *FieldError
		if c.field != "" && (!errors.As(err, &fe) || fe.Field != c.field) {
			t.Errorf("%s: %v, want the field %s", c.bad, err, c.field)
		}
	}
}

// TestDSJSONFloat32Probabilities: a distribution written in float32's
// seven digits (here summing to 1 - 4e-6, beyond the 1e-6 a JSON-lines
// log's action_prob is held to) is read, exact around the chosen action:
// the logging policy's weights are all 1.
func TestDSJSONFloat32Probabilities(t *testing.T) {
	rec := `{"_label_cost":%s,"_label_probability":0.333332,"_labelIndex":%d,"a":[%d,%d,%d],"p":[0.333332,0.333332,0.333332],"c":{"U":{"f":1},"_multi":[{"A":{"i":1}},{"A":{"i":2}},{"A":{"i":3}}]}}` + "\n"
	log := fmt.Sprintf(rec, "-1", 0, 1, 2, 3) + fmt.Sprintf(rec, "0", 2, 3, 1, 2)
	res, err := Evaluate(opener([]byte(log)), Logging{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.MaxWeight != 1 || res.Estimate[1].Value != 0.5 {
		t.Errorf("largest weight %v, IPS %v: want 1 and the mean reward 0.5", res.MaxWeight, res.Estimate[1].Value)
	}
}
