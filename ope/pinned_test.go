package ope

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/dpbandit/dpbandit/mechanism"
)

var updatePinned = flag.Bool("update-pinned", false, "rewrite testdata/pinned.json from the current Evaluate")

// genLog writes n records of a log of the given shape: "vector" (a
// 2-dimensional context, 3 actions, action_prob, the service export's
// other fields, some rewards null or outside [0, 1]), "sets" (decision
// sets of 3 actions of 2 features), "none" (no context) and "csv" (a CSV
// log with context_0 and context_1). The numbers are written with
// strconv's shortest form, as the service writes them.
func genLog(kind string, n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 7))
	var b bytes.Buffer
	f := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	if kind == "csv" {
		b.WriteString("event_id,context_0,context_1,action,reward,pscore\n")
	}
	for i := range n {
		x := []float64{2*r.Float64() - 1, r.NormFloat64()}
		// logging policy: softmax of x-dependent scores
		s := []float64{x[0], -x[0] + 0.5*x[1], 0.3}
		probs := make([]float64, 3)
		tot := 0.0
		for a := range probs {
			probs[a] = math.Exp(s[a])
			tot += probs[a]
		}
		u, a := r.Float64()*tot, 0
		for a < 2 && u > probs[a] {
			u -= probs[a]
			a++
		}
		for j := range probs {
			probs[j] /= tot
		}
		mu := 0.4 + 0.2*x[0]*float64(a-1) + 0.05*x[1]
		rew := f(mu + 0.3*r.NormFloat64())
		if r.IntN(20) == 0 {
			rew = "null"
		}
		switch kind {
		case "csv":
			if rew == "null" {
				rew = ""
			}
			fmt.Fprintf(&b, "e%d,%s,%s,%d,%s,%s\n", i, f(x[0]), f(x[1]), a, rew, f(probs[a]))
		case "vector":
			fmt.Fprintf(&b, `{"event_id":"e%d","unit_id":"u%d","timestamp":"2026-11-27T09:%02d:00Z","context":[%s,%s],"action":%d,"action_prob":[%s,%s,%s],"pscore":%s,"reward":%s}`+"\n",
				i, r.IntN(n/4+1), i%60, f(x[0]), f(x[1]), a, f(probs[0]), f(probs[1]), f(probs[2]), f(probs[a]), rew)
		case "sets":
			fmt.Fprintf(&b, `{"context":[[%s,%s],[%s,%s],[%s,%s]],"action":%d,"pscore":%s,"reward":%s}`+"\n",
				f(x[0]), f(x[1]), f(-x[0]), f(x[1]/2), f(x[1]), f(1), a, f(probs[a]), rew)
		case "none":
			fmt.Fprintf(&b, `{"action":%d,"reward":%s,"pscore":%s}`+"\n", a, rew, f(probs[a]))
		}
	}
	return b.Bytes()
}

// pinCase is one evaluation whose numbers are pinned.
type pinCase struct {
	name, kind, policy string
	o                  Options
}

func pinCases(dir string) []pinCase {
	os.WriteFile(filepath.Join(dir, "vec.json"), []byte(`[[0.5,-0.2,0.1],[-0.3,0.4,0],[0.1,0.1,0.2]]`), 0o644)
	os.WriteFile(filepath.Join(dir, "set.json"), []byte(`[[0.7,-0.4]]`), 0o644)
	var dist bytes.Buffer
	r := rand.New(rand.NewPCG(5, 5))
	for range 3000 {
		p := r.Float64()
		fmt.Fprintf(&dist, "%s,%s,0\n", strconv.FormatFloat(p, 'g', -1, 64), strconv.FormatFloat(1-p, 'g', -1, 64))
	}
	os.WriteFile(filepath.Join(dir, "dist.csv"), dist.Bytes(), 0o644)
	bounds, _ := mechanism.NewBounds(0, 1)
	var cs []pinCase
	for _, kind := range []string{"vector", "sets", "none", "csv"} {
		pols := []string{"uniform", "arm:1", "dist:" + filepath.Join(dir, "dist.csv")}
		switch kind {
		case "vector":
			pols = append(pols, "logging", "linear:"+filepath.Join(dir, "vec.json")+",softmax=0.5", "linear:"+filepath.Join(dir, "vec.json")+",eps=0.1")
		case "sets":
			pols = append(pols, "linear:"+filepath.Join(dir, "set.json")+",softmax=2")
		case "csv":
			pols = append(pols, "linear:"+filepath.Join(dir, "vec.json"))
		}
		for _, p := range pols {
			for _, o := range []Options{{Arms: 3}, {Arms: 3, Clip: 2, Rewards: &bounds, Lambda: 0.5}} {
				name := fmt.Sprintf("%s %s clip=%g", kind, filepath.Base(p), o.Clip)
				cs = append(cs, pinCase{name, kind, p, o})
			}
		}
	}
	return cs
}

// TestPinnedResults pins Evaluate's numbers on generated logs of every
// shape, for every kind of target, with and without a cap and a reward
// range, as they were before the one-pass evaluation and the scanner
// (testdata/pinned.json, written by -update-pinned on 93ac0e5's
// Evaluate): every number within 1e-12 (relative above 1), every count
// equal.
func TestPinnedResults(t *testing.T) {
	dir := t.TempDir()
	got := map[string]*Result{}
	for _, c := range pinCases(dir) {
		pol, err := ParsePolicy(c.policy)
		if err != nil {
			t.Fatal(err)
		}
		res, err := Evaluate(opener(genLog(c.kind, 3000, 11)), pol, c.o)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got[c.name] = res
		if c.kind == "vector" { // the second pass decoding the log again, not reading the spill
			o := c.o
			o.redecode = true
			again, err := Evaluate(opener(genLog(c.kind, 3000, 11)), pol, o)
			if err != nil {
				t.Fatalf("%s, decoded again: %v", c.name, err)
			}
			got[c.name+" redecode"] = again
		}
	}
	file := filepath.Join("testdata", "pinned.json")
	if *updatePinned {
		for name := range got {
			if strings.HasSuffix(name, " redecode") {
				delete(got, name)
			}
		}
		b, _ := json.MarshalIndent(got, "", " ")
		if err := os.WriteFile(file, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]*Result
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	for name, g := range got {
		base, _ := strings.CutSuffix(name, " redecode")
		if w, ok := want[base]; !ok {
			t.Errorf("%s: not pinned", name)
		} else {
			comparePinned(t, name, g, w)
		}
	}
	for name := range want {
		if got[name] == nil {
			t.Errorf("%s: pinned, not run", name)
		}
	}
}

func comparePinned(t *testing.T, name string, g, w *Result) {
	t.Helper()
	if g == nil {
		t.Errorf("%s: not run", name)
		return
	}
	near := func(a, b float64) bool {
		if math.IsNaN(a) || math.IsNaN(b) {
			return math.IsNaN(a) && math.IsNaN(b)
		}
		return math.Abs(a-b) <= 1e-12*max(1, math.Abs(b))
	}
	if g.Events != w.Events || g.Skipped != w.Skipped || g.Arms != w.Arms || g.Clipped != w.Clipped || g.RewardsClipped != w.RewardsClipped {
		t.Errorf("%s: counts %d/%d/%d/%d/%d, pinned %d/%d/%d/%d/%d", name, g.Events, g.Skipped, g.Arms, g.Clipped, g.RewardsClipped, w.Events, w.Skipped, w.Arms, w.Clipped, w.RewardsClipped)
	}
	for _, f := range [][3]any{{"ess", g.ESS, w.ESS}, {"max weight", g.MaxWeight, w.MaxWeight}, {"uncovered", g.Uncovered, w.Uncovered}, {"clip bias", g.ClipBias, w.ClipBias}} {
		if !near(f[1].(float64), f[2].(float64)) {
			t.Errorf("%s: %s %.17g, pinned %.17g", name, f[0], f[1], f[2])
		}
	}
	if len(g.Estimate) != len(w.Estimate) {
		t.Fatalf("%s: %d estimates, pinned %d", name, len(g.Estimate), len(w.Estimate))
	}
	for i, e := range w.Estimate {
		ge := g.Estimate[i]
		if ge.Name != e.Name || !near(ge.Value, e.Value) || !near(ge.SE, e.SE) || !near(ge.Lo, e.Lo) || !near(ge.Hi, e.Hi) {
			t.Errorf("%s: %+v, pinned %+v", name, ge, e)
		}
	}
}
