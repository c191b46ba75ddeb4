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

// combineRobust draws the regret at the horizon against alpha at eps = 1
// and against eps at alpha = 0.1, with 95% intervals, one line per
// algorithm and client model.
func combineRobust(reps []*Report, points []SweepPoint, dir string) ([]string, error) {
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
	var la, le layers
	line := func(l *layers, p *plot.Plot, xs []float64, cells []cell, name string, i int) {
		y, lo, hi := make([]float64, len(cells)), make([]float64, len(cells)), make([]float64, len(cells))
		for k, c := range cells {
			y[k], lo[k], hi[k] = c.mean, math.Max(c.lo, 1), c.hi
		}
		l.band(p, xs, lo, hi, i)
		l.line(p, xs, y, name, i, nil, true)
	}
	// Regret against alpha at eps = 1; alpha = 0 sits at the left end of
	// a linear axis.
	pa := plot.New()
	pa.Title.Text = "regret at T against the corruption probability (eps = 1, local)"
	pa.X.Label.Text, pa.Y.Label.Text = "alpha", "regret at T"
	pa.Y.Scale, pa.Y.Tick.Marker = plot.LogScale{}, logTicks{}
	pa.Add(plotter.NewGrid())
	var alphas []float64
	for _, pt := range points[:len(reps)] {
		alphas = append(alphas, pt.X)
	}
	for i, n := range names {
		var cells []cell
		for _, rep := range reps {
			c, ok := at(rep, n, 1)
			if !ok {
				c = cell{math.NaN(), math.NaN(), math.NaN()}
			}
			cells = append(cells, c)
		}
		line(&la, pa, alphas, cells, n, i)
	}
	la.draw()
	// Regret against eps at alpha = 0.1.
	k := slices.Index(alphas, 0.1)
	if k < 0 {
		return nil, fmt.Errorf("the robust sweep has no alpha = 0.1")
	}
	epss := budgetGrid(reps[k], privacy.LDP)
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
		line(&le, pe, epss, cells, n, i)
	}
	le.draw()
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
