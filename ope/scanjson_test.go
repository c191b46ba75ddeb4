package ope

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"reflect"
	"testing"
)

// agreeWithEncodingJSON fails if the fast path reads line otherwise
// than encoding/json (parseJSON) does: when it accepts a line, parseJSON
// must accept it too, with the same event and the same rewarded flag.
func agreeWithEncodingJSON(t *testing.T, line []byte) (fast bool) {
	t.Helper()
	for _, c := range [][2]bool{{false, false}, {true, false}, {true, true}} {
		rd := &Reader{reuse: c[0], wantUnit: c[1]}
		e, ok, fast := rd.fastJSON(line)
		if !fast {
			return false
		}
		want, wantOK, err := rd.parseJSON(line)
		if err != nil {
			t.Fatalf("%s: the fast path reads %+v, encoding/json refuses it: %v", line, e, err)
		}
		if ok != wantOK || ok && !reflect.DeepEqual(e, want) {
			t.Fatalf("%s: the fast path reads %+v (rewarded %v), encoding/json %+v (%v)", line, e, ok, want, wantOK)
		}
	}
	return true
}

// TestFastJSONAgreesWithEncodingJSON: the scanner reads every record of
// the generated logs itself (no fallback), as encoding/json reads them;
// and on 20,000 mutations of them (bytes deleted, inserted, replaced by
// JSON's punctuation, keys renamed, repeated or recased) whatever it
// accepts encoding/json reads the same way. Fast, how often it
// accepted, is checked to be neither none nor all of the mutations.
func TestFastJSONAgreesWithEncodingJSON(t *testing.T) {
	var lines [][]byte
	for _, kind := range []string{"vector", "sets", "none"} {
		for _, l := range bytes.Split(genLog(kind, 300, 3), []byte("\n")) {
			if len(l) == 0 {
				continue
			}
			if !agreeWithEncodingJSON(t, l) {
				t.Fatalf("the fast path falls back on a generated record: %s", l)
			}
			lines = append(lines, l)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	edits := []string{`"`, `\`, `,`, `:`, `[`, `]`, `{`, `}`, ` `, `-`, `.`, `e`, `0`, `1`, `null`, `"action":1,`, `"Reward":1,`, `"x":[1,{"a":"\u0041"}],`, `"event_id":"a",`, `"unit_id":"u",`, `"Unit_ID":"v",`, `"unit_id":3,`, `1e400`, "\t", "\x01"}
	fast := 0
	const n = 20000
	for range n {
		l := append([]byte(nil), lines[r.IntN(len(lines))]...)
		for range 1 + r.IntN(2) {
			i := r.IntN(len(l) + 1)
			switch r.IntN(3) {
			case 0:
				if i < len(l) {
					l = append(l[:i], l[i+1:]...)
				}
			case 1:
				l = append(l[:i], append([]byte(edits[r.IntN(len(edits))]), l[i:]...)...)
			default:
				if i < len(l) {
					l[i] = edits[r.IntN(9)][0]
				}
			}
		}
		if agreeWithEncodingJSON(t, l) {
			fast++
		}
	}
	if fast == 0 || fast == n {
		t.Errorf("the fast path accepted %d of %d mutated records: the mutations do not test both paths", fast, n)
	}
}

// FuzzFastJSON checks the fast path against encoding/json on any line.
func FuzzFastJSON(f *testing.F) {
	for _, l := range bytes.Split(genLog("vector", 3, 1), []byte("\n")) {
		f.Add(l)
	}
	f.Add([]byte(`{"action":0,"reward":1,"pscore":0.5,"context":[[1,2],[3,4]]}`))
	f.Fuzz(func(t *testing.T, line []byte) { agreeWithEncodingJSON(t, line) })
}

// TestFastJSONDoesNotAllocate: with the Reader's buffers reused, a
// record of the service's export (ids, a time, a context and action_prob)
// is read without an allocation.
func TestFastJSONDoesNotAllocate(t *testing.T) {
	line := bytes.Split(genLog("vector", 1, 3), []byte("\n"))[0]
	rd := &Reader{reuse: true}
	rd.fastJSON(line)
	if a := testing.AllocsPerRun(100, func() { rd.fastJSON(line) }); a != 0 {
		t.Errorf("%v allocations a record", a)
	}
}

// TestDecisionSetHasNoVector: encoding/json, failing to read a decision
// set as a vector, left a vector of zeros behind (X = [0 0]), so that a
// decision set counted as a vector context and a log mixing the two
// kinds passed when their model dimensions agreed (K (c + 1) = c' + 1):
// the log below (K = 2, a 1-dimensional vector, then decision sets of
// 3-dimensional vectors, both 4 features) is refused at line 2.
func TestDecisionSetHasNoVector(t *testing.T) {
	e, _, err := (&Reader{}).parseJSON([]byte(`{"action":0,"reward":1,"pscore":0.5,"context":[[1,2],[3,4]]}`))
	if err != nil || e.X != nil {
		t.Errorf("a decision set read as X = %v, Actions = %v (%v): X must be nil", e.X, e.Actions, err)
	}
	log := "{\"action\":0,\"reward\":1,\"pscore\":0.5,\"context\":[0.5]}\n" +
		"{\"action\":1,\"reward\":0,\"pscore\":0.5,\"context\":[[1,2,3],[4,5,6]]}\n"
	_, err = Evaluate(opener([]byte(log)), Uniform{}, Options{Arms: 2})
	var le *LogError
	if !errors.As(err, &le) || le.Line != 2 {
		t.Errorf("a vector context then a decision set: %v, want a LogError at line 2", err)
	}
}

// TestSpillKeepsEmptyDecisionSets: decision sets of empty vectors (the
// model's features are the intercept alone) come back from the spill as
// decision sets, and evaluate as when the log is decoded again.
func TestSpillKeepsEmptyDecisionSets(t *testing.T) {
	log := []byte("{\"action\":0,\"reward\":1,\"pscore\":0.5,\"context\":[[],[]]}\n{\"action\":1,\"reward\":0,\"pscore\":0.5,\"context\":[[],[]]}\n")
	a, err := Evaluate(opener(log), Uniform{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Evaluate(opener(log), Uniform{}, Options{redecode: true})
	if err != nil {
		t.Fatal(err)
	}
	if a.Estimate[0].Value != b.Estimate[0].Value || a.Estimate[3].Value != b.Estimate[3].Value || a.Estimate[3].SE != b.Estimate[3].SE {
		t.Errorf("from the spill %+v, decoded again %+v", a.Estimate, b.Estimate)
	}
}
