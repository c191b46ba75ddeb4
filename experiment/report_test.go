package experiment

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpbandit/dpbandit/privacy"
	"github.com/dpbandit/dpbandit/sim"
)

// popReport is a report of one algorithm at two budgets against a
// reference, over checkpoints 1000 to 100000: at rho=0.1 the price of
// privacy stays at 1.6 (a peak of 1.62 at t = 2000 within noise of its
// 1.6 at T), at rho=10 it falls from 0.9 to 0.2 with small intervals.
func popReport(runs int) *Report {
	ts := []int64{1000, 2000, 10000, 100000}
	flat := func(v float64) []float64 { return filled(len(ts), v) }
	r := &Report{Checkpoints: ts}
	r.Summary.Horizon, r.Summary.Runs = 100000, runs
	ref := Curve{Label: "ucb", Ref: -1, Regret: sim.Stats{Mean: flat(100), CILo: flat(99), CIHi: flat(101)}}
	add := func(rho float64, pop, se []float64, diff float64) {
		b, _ := privacy.NewZCDP(rho)
		d, dse := diff, se[len(se)-1]*100
		r.Curves = append(r.Curves, Curve{Label: "adac " + b.String(), Spec: "adac", Budget: b, Ref: 1, PoP: pop, DiffSE: scaled(se, 100), DiffMean: scaled(pop, 100),
			Regret: sim.Stats{Mean: flat(100 + diff), CILo: flat(99 + diff), CIHi: flat(101 + diff)}})
		var res Result
		res.Label, res.Algorithm, res.Privacy, res.DiffVs, res.DiffMean, res.DiffSE = "adac "+b.String(), "adac", b, "ucb", &d, &dse
		r.Summary.Results = append(r.Summary.Results, res)
	}
	add(0.1, []float64{1.58, 1.62, 1.6, 1.6}, []float64{0.1, 0.1, 0.1, 0.1}, 160)
	r.Curves = append(r.Curves, ref)
	var res Result
	res.Label, res.Algorithm, res.Privacy = "ucb", "ucb", privacy.None()
	r.Summary.Results = append(r.Summary.Results, res)
	add(10, []float64{0.9, 0.6, 0.4, 0.2}, []float64{0.01, 0.01, 0.01, 0.01}, 20)
	return r
}

func scaled(x []float64, k float64) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = v * k
	}
	return out
}

// TestObservationsStateWhatRunsSupport: the report's sentences round to
// what the intervals support and claim no change that the runs do not
// resolve (the "rho=0.1: 1.6 at t=2000 to 1.6 at T").
func TestObservationsStateWhatRunsSupport(t *testing.T) {
	obs := strings.Join(popReport(10).Observations(), "\n")
	for _, bad := range []string{"1.62 at t=2000", "to 1.6 at T", "down to"} {
		if strings.Contains(obs, bad) {
			t.Errorf("observations say %q:\n%s", bad, obs)
		}
	}
	for _, want := range []string{
		"falls from its peak at rho=10 (0.900 ± 0.023 at t = 1000 to 0.200 ± 0.023 at T)",
		"no change from its peak that the runs resolve at rho=0.1 (1.60 ± 0.23 at T)",
		"falls from 160 ± 23 at rho=0.1 to 20.0 ± 2.3 at rho=10",
	} {
		if !strings.Contains(obs, want) {
			t.Errorf("observations lack %q:\n%s", want, obs)
		}
	}
}

// TestIndexTextOncePerPreset: a preset of several parts (realdata's five
// data sets) has its source, description and the statements all its
// figures make written once, not once per part.
func TestIndexTextOncePerPreset(t *testing.T) {
	c := smallConfig()
	c.Horizon, c.Runs, c.Checkpoints = 200, 3, 5
	p := Preset{Name: "two", Source: "SOURCE-TEXT", Description: "DESCRIPTION-TEXT"}
	var reports []presetReport
	dir := t.TempDir()
	for _, tag := range []string{"a", "b"} {
		rep, err := Run(context.Background(), c, Options{Out: filepath.Join(dir, "two", tag)})
		if err != nil {
			t.Fatal(err)
		}
		reports = append(reports, presetReport{Preset: p, Report: rep, Dir: "two/" + tag})
	}
	path, err := writeIndex(dir, Quick, reports, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	html := string(b)
	for _, once := range []string{"DESCRIPTION-TEXT", "No 95% bands: 3 runs"} {
		if n := strings.Count(html, once); n != 1 {
			t.Errorf("%q written %d times, want once", once, n)
		}
	}
	for _, each := range []string{"two/a/regret.svg", "two/b/regret.svg", "two/b/regret.pdf"} {
		if !strings.Contains(html, each) {
			t.Errorf("index lacks %s", each)
		}
	}
}
