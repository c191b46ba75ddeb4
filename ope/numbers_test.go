package ope

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// finiteResult reports the first number of res that is NaN or infinite
// but may not be: every number but those the log leaves undefined (the
// SEs of a one-event log, SNIPS of a target the log never plays, DM's
// SE).
func finiteResult(res *Result) string {
	for name, x := range map[string]float64{"ess": res.ESS, "max weight": res.MaxWeight, "clip bias": res.ClipBias, "uncovered": res.Uncovered} {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return name
		}
	}
	for _, e := range res.Estimate {
		for _, x := range []float64{e.Value, e.SE, e.Lo, e.Hi} {
			if math.IsInf(x, 0) || math.IsNaN(x) && e.Name != "dm" {
				return e.Name
			}
		}
	}
	return ""
}

// Pscores whose weights overflow: a subnormal pscore (5e-324) is refused
// at its line; a pscore of 1e-300 makes the uncapped weights' squares
// overflow, refused at the line of the largest weight with the advice to
// cap them; capped, the same log gives finite numbers throughout.
func TestTinyPScores(t *testing.T) {
	body := "action,reward,pscore\n0,1,0.5\n1,0,0.5\n0,1,%s\n1,1,0.5\n"
	for _, ps := range []string{"5e-324", "1e-310"} {
		_, err := Evaluate(opener([]byte(strings.Replace(body, "%s", ps, 1))), Uniform{}, Options{Arms: 2})
		var le *LogError
		if !errors.As(err, &le) || le.Line != 4 || !strings.Contains(le.Reason, "pscore") {
			t.Errorf("pscore %s: %v, want a LogError at line 4 on the pscore", ps, err)
		}
	}
	log := []byte(strings.Replace(body, "%s", "1e-300", 1))
	_, err := Evaluate(opener(log), Uniform{}, Options{Arms: 2})
	var le *LogError
	if !errors.As(err, &le) || le.Line != 4 || !strings.Contains(le.Reason, "clip") {
		t.Errorf("pscore 1e-300 uncapped: %v, want a LogError at line 4 advising a cap", err)
	}
	res, err := Evaluate(opener(log), Uniform{}, Options{Arms: 2, Clip: 10})
	if err != nil {
		t.Fatal(err)
	}
	if bad := finiteResult(res); bad != "" {
		t.Errorf("pscore 1e-300 capped at 10: %s is not finite: %+v", bad, res)
	}
	if _, err := json.Marshal(res); err != nil {
		t.Error(err)
	}
}

// The effective sample size of weights too small to square in float64
// (a target putting 1e-200 on every action the log takes) is that of
// equal weights, n, not 0: the log does take the target's actions.
func TestESSOfTinyWeights(t *testing.T) {
	log := []byte("action,reward,pscore\n0,1,0.5\n1,0,0.5\n0,1,0.5\n1,1,0.5\n")
	res, err := Evaluate(opener(log), fixed{1e-200, 1e-200, 1 - 2e-200}, Options{Arms: 3})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(res.ESS-4) > 1e-12 {
		t.Errorf("ESS %v, want 4", res.ESS)
	}
}

// A weight cap below 1 cuts even the weight of an event the target
// plays as the logging policy did (1/1e-320 is no cap anyone means):
// refused as an OptionError on clip.
func TestClipFloor(t *testing.T) {
	for _, c := range []float64{1e-320, 1e-6, 0.5} {
		var oe *OptionError
		if err := (Options{Clip: c}).Validate(); !errors.As(err, &oe) || oe.Field != "clip" {
			t.Errorf("clip %v: %v, want an OptionError on clip", c, err)
		}
	}
	if err := (Options{Clip: 1}).Validate(); err != nil {
		t.Errorf("clip 1: %v", err)
	}
}

// One event: every standard error is undefined (NaN), SNIPS's too (its
// delta-method variance is 0 by construction there, not by the data).
func TestOneEventHasNoStandardErrors(t *testing.T) {
	res, err := Evaluate(opener([]byte("action,reward,pscore\n0,1,0.5\n")), Uniform{}, Options{Arms: 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range res.Estimate {
		if !math.IsNaN(e.SE) || !math.IsNaN(e.Lo) {
			t.Errorf("one event: %s has SE %v and interval [%v, %v]; want none", e.Name, e.SE, e.Lo, e.Hi)
		}
	}
}

// A JSON record that names a key twice (exactly, or as encoding/json
// would match it, by case) is refused at its line, naming the key.
func TestDuplicateJSONKeys(t *testing.T) {
	for _, c := range []struct{ line, key string }{
		{`{"action":0,"reward":1,"pscore":0.5,"reward":0}`, `"reward"`},
		{`{"action":0,"reward":1,"pscore":0.5,"Action":1}`, `"Action"`},
		{`{"action":0,"reward":1,"pscore":0.5,"id":1,"id":2}`, `"id"`},
		{`{"action":0,"reward":1,"pscore":0.5,"p\u0073core":0.25}`, `"pscore"`},
	} {
		log := `{"action":1,"reward":0,"pscore":0.5}` + "\n" + c.line + "\n"
		_, err := Evaluate(opener([]byte(log)), Uniform{}, Options{Arms: 2})
		var le *LogError
		if !errors.As(err, &le) || le.Line != 2 || !strings.Contains(le.Reason, c.key) {
			t.Errorf("%s: %v, want a LogError at line 2 naming %s", c.line, err, c.key)
		}
	}
	// Nested objects may repeat their parent's keys.
	log := `{"action":1,"reward":0,"pscore":0.5,"meta":{"action":3,"x":{"reward":1}}}` + "\n"
	if _, err := Evaluate(opener([]byte(log)), Uniform{}, Options{Arms: 2}); err != nil {
		t.Errorf("nested keys: %v", err)
	}
}

// A dist: file with more rows than the log has records, or fewer (its
// last records without a reward, whose rows are never read), is refused
// naming both lengths.
func TestDistLengthMustMatch(t *testing.T) {
	dir := t.TempDir()
	log := []byte("action,reward,pscore\n0,1,0.5\n1,0,0.5\n1,,0.5\n")
	for _, c := range []struct {
		rows string
		want string
	}{
		{strings.Repeat("0.5,0.5\n", 4), "4 rows"},
		{strings.Repeat("0.5,0.5\n", 2), "2 rows"},
	} {
		path := filepath.Join(dir, "rows")
		if err := os.WriteFile(path, []byte(c.rows), 0o600); err != nil {
			t.Fatal(err)
		}
		pol, err := ParsePolicy("dist:" + path)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Evaluate(opener(log), pol, Options{Arms: 2})
		pol.(*Dist).Close()
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "3 records") {
			t.Errorf("%q: %v, want an error naming %s and 3 records", c.rows, err, c.want)
		}
	}
}

// Numbers too large for float64's sums are refused naming their cause:
// rewards of 1e300 (in a range that admits them) at the reward's line,
// contexts of 1e200 as a ModelError (their squares overflow the reward
// model), never an infinite estimate or a solver's message.
func TestHugeRewardsAndContexts(t *testing.T) {
	log := []byte("action,reward,pscore\n0,1,0.5\n0,1e300,0.5\n1,-1e300,0.5\n")
	_, err := Evaluate(opener(log), Uniform{}, Options{Arms: 2})
	var le *LogError
	if !errors.As(err, &le) || le.Line != 3 || !strings.Contains(le.Reason, "reward") {
		t.Errorf("rewards of 1e300: %v, want a LogError at line 3 on the reward", err)
	}
	ctx := []byte(`{"action":0,"reward":1,"pscore":0.5,"context":[1e200]}` + "\n" + `{"action":1,"reward":0,"pscore":0.5,"context":[1]}` + "\n")
	_, err = Evaluate(opener(ctx), Uniform{}, Options{Arms: 2})
	var me *ModelError
	if !errors.As(err, &me) || !strings.Contains(me.Reason, "too large") {
		t.Errorf("a context of 1e200: %v, want a ModelError", err)
	}
}
