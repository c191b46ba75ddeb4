package experiment

import (
	"fmt"
	"math"
	"slices"
	"strings"

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
	fa := newFigure("regret-vs-alpha", "Regret at T against the corruption probability alpha (eps = 1, local)")
	fe := newFigure("regret-vs-eps", "Regret at T against eps (alpha = 0.1, local)")
	bands := reps[0].bands(fa) && reps[0].bands(fe)
	line := func(fp *figPanel, xs []float64, cells []cell, name string, i int) {
		y, lo, hi := make([]float64, len(cells)), make([]float64, len(cells)), make([]float64, len(cells))
		for k, c := range cells {
			y[k], lo[k], hi[k] = c.mean, math.Max(c.lo, 1), c.hi
		}
		if bands {
			fp.band(xs, lo, hi, styleOf(i))
		}
		fp.line(xs, y, name, styleOf(i))
	}
	// Regret against alpha at eps = 1; alpha = 0 sits at the left end of
	// a linear axis.
	var alphas []float64
	for _, pt := range points[:len(reps)] {
		alphas = append(alphas, pt.X)
	}
	pa := fa.panel("", "alpha", "regret at T", alphas)
	pa.setLinearX()
	pa.setLogY()
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
	epss := budgetGrid(reps[k], privacy.LDP)
	pe := fe.panel("", "eps (local)", "regret at T", epss)
	pe.setLogY()
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
	for _, f := range []*figure{fa, fe} {
		if _, err := f.save(dir); err != nil {
			return nil, err
		}
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
