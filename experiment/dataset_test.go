package experiment

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/dpbandit/dpbandit/sim"
)

// On the shipped data sets, uniform play loses 1 - 1/K (within 4 standard
// errors of its Bernoulli steps) and non-private OFUL learns: its loss
// lies more than 4 standard errors below uniform's. On a data set without
// flips the loss is the regret (mistakes) over T.
func TestDatasetOFULBeatsUniform(t *testing.T) {
	for _, c := range []struct {
		name string
		k    int
	}{{"iris", 3}, {"wine", 3}, {"breast-cancer", 2}} {
		cfg := Defaults()
		cfg.Env = "dataset:" + c.name
		cfg.Algos = []string{"uniform", "oful"}
		cfg.Horizon, cfg.Runs, cfg.Seed, cfg.Checkpoints = 1000, 10, 3, 10
		rep, err := Run(context.Background(), cfg, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if h := rep.Summary.HindsightLoss; h == nil || *h < 0 || *h > 1 {
			t.Fatalf("%s: hindsight loss %v", c.name, h)
		}
		T, n := float64(cfg.Horizon), float64(cfg.Runs)
		loss := map[string]float64{}
		for _, r := range rep.Summary.Results {
			l, ok := r.Metrics["loss"]
			if !ok {
				t.Fatalf("%s %s: no loss metric", c.name, r.Label)
			}
			if math.Abs(l-r.RegretMean/T) > 1e-9 {
				t.Fatalf("%s %s: loss %v, regret/T %v", c.name, r.Label, l, r.RegretMean/T)
			}
			loss[r.Algorithm] = l
			if r.Algorithm == "oful" {
				se := r.RegretStd / T / math.Sqrt(n)
				loss["oful+4se"] = l + 4*se
			}
		}
		p := 1 / float64(c.k)
		if se := math.Sqrt(p * (1 - p) / (T * n)); math.Abs(loss["uniform"]-(1-p)) > 4*se {
			t.Errorf("%s: uniform loss %v, want %v +- %v", c.name, loss["uniform"], 1-p, 4*se)
		}
		if loss["oful+4se"] >= 1-p {
			t.Errorf("%s: OFUL loss %v (+4 SE: %v) not below uniform's %v", c.name, loss["oful"], loss["oful+4se"], 1-p)
		}
	}
}

// TestDatasetLossPlot: on a data set with flipped labels the loss at T is
// min(p, 1-p) plus the regret over T in every entry (the constant offset
// plotLoss reads off each entry), and the run writes the loss plot; on a
// synthetic instance it writes none.
func TestDatasetLossPlot(t *testing.T) {
	cfg := Defaults()
	cfg.Env = "dataset:iris,flip=0.2"
	cfg.Algos = []string{"uniform", "oful"}
	cfg.Horizon, cfg.Runs, cfg.Seed, cfg.Checkpoints = 500, 4, 3, 10
	dir := t.TempDir()
	rep, err := Run(context.Background(), cfg, Options{Out: dir})
	if err != nil {
		t.Fatal(err)
	}
	T := float64(cfg.Horizon)
	for _, r := range rep.Summary.Results {
		if c := r.Metrics["loss"] - r.RegretMean/T; math.Abs(c-0.2) > 1e-9 {
			t.Errorf("%s: loss %v - regret/T %v = %v, want 0.2", r.Label, r.Metrics["loss"], r.RegretMean/T, c)
		}
	}
	for _, f := range []string{"loss.svg", "loss.png"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	cfg.Env, cfg.Algos = "contextual-gauss:k=5,d=3", []string{"oful"}
	dir = t.TempDir()
	if _, err := Run(context.Background(), cfg, Options{Out: dir}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "loss.svg")); err == nil {
		t.Error("a loss plot on a synthetic instance")
	}
}

// TestLossCurveWithinUnit: a loss is 1 minus an average of rewards in
// [0, 1], so its curve and interval stay in [0, 1] even where a t
// interval over two runs (t quantile 12.7) reaches beyond: there it is
// cut to [0, 1], which keeps its coverage (the mean lies inside).
func TestLossCurveWithinUnit(t *testing.T) {
	ts := []float64{1, 2, 10, 100}
	got := lossCurve(0.2, []float64{-3, 4, 5, 30}, ts)
	want := []float64{0, 1, 0.7, 0.5}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-12 {
			t.Errorf("lossCurve at t = %v: %v, want %v", ts[i], got[i], want[i])
		}
	}
}

// TestDatasetClippedFeatures: feature values outside their declared
// range are clipped, and the summary counts them (three of the six values
// here lie outside [0, 1]); a shipped data set has none. The summary
// records a data set's rows and classes (it had neither: issue #50).
func TestDatasetClippedFeatures(t *testing.T) {
	path := filepath.Join(t.TempDir(), "wide.csv")
	if err := os.WriteFile(path, []byte("a,b,y\n-2,0.5,x\n3,0.2,z\n0.5,2,x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for spec, want := range map[string]int{"csv:" + path + ",lo=0,hi=1": 3, "dataset:iris": 0} {
		cfg := Defaults()
		cfg.Env, cfg.Algos = spec, []string{"uniform"}
		cfg.Horizon, cfg.Runs, cfg.Checkpoints = 20, 2, 5
		rep, err := Run(context.Background(), cfg, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Summary.ClippedFeatures != want {
			t.Errorf("%s: %d clipped feature values, want %d", spec, rep.Summary.ClippedFeatures, want)
		}
		if spec == "dataset:iris" && (rep.Summary.DataRows != 150 || !slices.Equal(rep.Summary.Classes, []string{"setosa", "versicolor", "virginica"}) || !slices.Equal(rep.Summary.ClassCounts, []int{50, 50, 50})) {
			t.Errorf("iris: summary has %d rows, classes %q, counts %v; want 150, the three species, 50 each", rep.Summary.DataRows, rep.Summary.Classes, rep.Summary.ClassCounts)
		}
	}
}

// TestRunReadsDataOnce: a data file is read once, by Config.Plan; the
// plan's Run reads nothing more (the file is gone by then).
// Read twice, a FIFO hung and a file changed in between gave two
// different data sets.
func TestRunReadsDataOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "once.csv")
	if err := os.WriteFile(path, []byte("a,b,y\n0,0.5,x\n1,0.2,z\n0.5,1,x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := Defaults()
	cfg.Env, cfg.Algos = "csv:"+path+",lo=0,hi=1", []string{"uniform"}
	cfg.Horizon, cfg.Runs, cfg.Checkpoints = 20, 2, 5
	p, err := cfg.Plan(sim.Shard{})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Run(context.Background(), Options{}); err != nil {
		t.Fatalf("Run read the data file again: %v", err)
	}
}

// TestPlanParsesOnce: a plan's Run builds the entries Config.Plan
// parsed, and parses the config's specs, budgets and reference no more:
// made unparsable after planning, they change nothing.
func TestPlanParsesOnce(t *testing.T) {
	cfg := Defaults()
	cfg.Env, cfg.Algos, cfg.Rho, cfg.Reference = "bernoulli:0.6,0.4", []string{"ucb-doubling", "adac-ucb:beta=4"}, []float64{0.5, 2}, "ucb-doubling"
	cfg.Horizon, cfg.Runs, cfg.Checkpoints, cfg.Workers = 200, 2, 5, 1
	p, err := cfg.Plan(sim.Shard{})
	if err != nil {
		t.Fatal(err)
	}
	want, err := p.Run(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	p.config.Algos, p.config.Rho, p.config.Reference = []string{"nope:x=1"}, []float64{-1}, "nope"
	got, err := p.Run(context.Background(), Options{})
	if err != nil {
		t.Fatalf("the plan's Run parsed the config again: %v", err)
	}
	if len(got.Curves) != 3 || len(want.Curves) != 3 {
		t.Fatalf("the plan ran %d and %d entries, want the 3 it planned", len(want.Curves), len(got.Curves))
	}
	for i, g := range got.Curves {
		w := want.Curves[i]
		if g.Label != w.Label || g.Ref != w.Ref || !reflect.DeepEqual(g.Regret.Mean, w.Regret.Mean) {
			t.Errorf("entry %d: %s (ref %d) ran as %s (ref %d), or with other results", i, w.Label, w.Ref, g.Label, g.Ref)
		}
	}
}

// TestCSVAtRangeEnds: a CSV whose rows have every feature at an end of
// its declared range (norm 1 in exact arithmetic) runs with every
// algorithm that checks ||a|| <= 1, for d in {2, 5, 11, 17}; it failed
// mid-run with "action 0 has squared norm 1.0000000000000002 > 1"
// (issue #50).
func TestCSVAtRangeEnds(t *testing.T) {
	for _, d := range []int{2, 5, 11, 17} {
		var b strings.Builder
		for j := range d {
			fmt.Fprintf(&b, "x%d,", j)
		}
		b.WriteString("y\n")
		for i := range 60 {
			for j := range d {
				b.WriteString([]string{"0", "1", "2"}[(i*7+j*j)%3] + ",") // 2 is clipped to 1
			}
			fmt.Fprintf(&b, "%d\n", i%3)
		}
		path := filepath.Join(t.TempDir(), "ends.csv")
		if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg := Defaults()
		cfg.Env = "csv:" + path + ",lo=0,hi=1"
		cfg.Algos = []string{"oful", "rs-oful", "adac-oful", "lasso-bandit", "private-lasso"}
		cfg.Eps, cfg.Delta = []float64{1}, []float64{1e-6}
		cfg.Horizon, cfg.Runs, cfg.Checkpoints, cfg.Workers = 40, 2, 5, 1
		if _, err := Run(context.Background(), cfg, Options{}); err != nil {
			t.Errorf("d=%d: %v", d, err)
		}
	}
}
