package experiment

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"

	"github.com/dpbandit/dpbandit/privacy"
)

// robustAlphas are the corruption probabilities of the robust preset.
var robustAlphas = []float64{0, 0.05, 0.1, 0.2}

// robustPreset compares robust-ae under M1 and M2 with the non-robust
// batched baseline over corruption levels and budgets (seed 004).
func robustPreset() Preset {
	return Preset{
		Name:   "robust",
		Source: "Charisopoulos, Esfandiari and Mirrokni (seed 004), Sections 3.1 and 3.2 (Theorems 3.4 and 3.9)",
		Description: "Robust arm elimination (robust-ae, 004 Algorithm 1, with the Filter of Algorithm 2) under the client " +
			"models M1 (every reward its own client) and M2 (one client per action and batch), against the same batched " +
			"elimination on plain least squares (batched-ae), all eps-LDP with B = 4 batches, on 50 actions in R^5 whose " +
			"observations an adversary replaces, each with probability alpha in {0, 0.05, 0.1, 0.2}, by a value far outside " +
			"the range (hi + 1000 w); robust-ae is told alpha, as in the paper. eps in {0.5, 1, 2, 5}. The paper claims " +
			"that robust-ae's regret stays sublinear under corruption, where the baseline's does not, and that M2 improves on M1.",
		Config: func(s Scale) Config {
			c := Defaults()
			c.Name = "004: robust-ae (M1, M2) vs batched-ae"
			c.Env, c.Algos = robustEnv(0), robustAlgos(0)
			c.Eps = []float64{0.5, 1, 2, 5}
			c.Seed = 2023
			c.Runs, c.Horizon = 20, 100_000
			if s == Paper {
				c.Runs, c.Horizon = 50, 1_000_000
			}
			return c
		},
		Sweep: func(Scale) []SweepPoint {
			var out []SweepPoint
			for _, a := range robustAlphas {
				out = append(out, SweepPoint{Tag: "alpha=" + trimFloat(a), Env: robustEnv(a), Algos: robustAlgos(a)})
			}
			return out
		},
		Combine: combineRobust,
	}
}

// robustEnv is the preset's instance with corruption probability alpha.
func robustEnv(alpha float64) string {
	return "linear-sphere:k=50,d=5,instance=4,corrupt=" + trimFloat(alpha) + ",adversary=far"
}

// robustAlgos returns the preset's algorithms at corruption alpha.
func robustAlgos(alpha float64) []string {
	a := trimFloat(alpha)
	return []string{"robust-ae:model=m1:alpha=" + a, "robust-ae:model=m2:alpha=" + a, "batched-ae:model=m1", "batched-ae:model=m2"}
}

// combineRobust draws the regret at the horizon against alpha at eps = 1
// and against eps at alpha = 0.1, with 95% intervals, one line per
// algorithm and client model.
func combineRobust(reps []*Report, dir string) ([]string, error) {
	type cell struct{ mean, lo, hi float64 }
	// by[series][alpha index] at each eps
	at := func(rep *Report, series string, eps float64) (cell, bool) {
		for _, r := range rep.Summary.Results {
			if r.Privacy.Notion == privacy.LDP && r.Privacy.Eps == eps && seriesName(r.Algorithm, r.Label) == series {
				return cell{r.RegretMean, r.RegretCI95[0], r.RegretCI95[1]}, true
			}
		}
		return cell{}, false
	}
	names := []string{"robust-ae m1", "robust-ae m2", "batched-ae m1", "batched-ae m2"}
	line := func(p *plot.Plot, xs []float64, cells []cell, name string, i int) {
		y, lo, hi := make([]float64, len(cells)), make([]float64, len(cells)), make([]float64, len(cells))
		for k, c := range cells {
			y[k], lo[k], hi[k] = c.mean, math.Max(c.lo, 1), c.hi
		}
		addBand(p, xs, lo, hi, i)
		addLine(p, xs, y, name, i, nil, true)
	}
	// Regret against alpha at eps = 1; alpha = 0 sits at the left end of
	// a linear axis.
	pa := plot.New()
	pa.Title.Text = "regret at T against the corruption probability (eps = 1, local)"
	pa.X.Label.Text, pa.Y.Label.Text = "alpha", "regret at T"
	pa.Y.Scale, pa.Y.Tick.Marker = plot.LogScale{}, logTicks{}
	pa.Add(plotter.NewGrid())
	alphas := robustAlphas[:len(reps)]
	for i, n := range names {
		var cells []cell
		for _, rep := range reps {
			c, ok := at(rep, n, 1)
			if !ok {
				c = cell{math.NaN(), math.NaN(), math.NaN()}
			}
			cells = append(cells, c)
		}
		line(pa, alphas, cells, n, i)
	}
	// Regret against eps at alpha = 0.1.
	k := slices.Index(alphas, 0.1)
	if k < 0 {
		return nil, fmt.Errorf("the robust sweep has no alpha = 0.1")
	}
	epss := []float64{0.5, 1, 2, 5}
	pe := newPlot("regret at T against eps (alpha = 0.1)", "eps (local)", "regret at T", epss)
	pe.Y.Scale, pe.Y.Tick.Marker = plot.LogScale{}, logTicks{}
	for i, n := range names {
		var cells []cell
		for _, e := range epss {
			c, ok := at(reps[k], n, e)
			if !ok {
				c = cell{math.NaN(), math.NaN(), math.NaN()}
			}
			cells = append(cells, c)
		}
		line(pe, epss, cells, n, i)
	}
	if err := save([]*plot.Plot{pa}, dir, "regret-vs-alpha"); err != nil {
		return nil, err
	}
	if err := save([]*plot.Plot{pe}, dir, "regret-vs-eps"); err != nil {
		return nil, err
	}
	return []string{"regret-vs-alpha.svg", "regret-vs-eps.svg"}, nil
}

// seriesName names a robust-family entry by algorithm and client model,
// e.g. "robust-ae m2".
func seriesName(algo, label string) string {
	for _, m := range []string{"m1", "m2", "none"} {
		if strings.Contains(label, "model="+m) {
			return algo + " " + m
		}
	}
	return algo + " m1"
}
