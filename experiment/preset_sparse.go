package experiment

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/dpbandit/dpbandit/privacy"
)

// combineSparse draws, for each dimension, the regret at the horizon
// against eps (with 95% intervals where they stay above 0) of each
// private algorithm, the LASSO bandit as a flat reference, and the
// support recall against eps.
func combineSparse(reps []*Report, points []SweepPoint, dir string) ([]string, error) {
	reg := newFigure("regret-vs-eps", "Regret at T against eps (delta = 1e-5), per dimension")
	rec := newFigure("recall-vs-eps", "Support recall at T against eps, per dimension")
	for i, rep := range reps {
		d := points[i].X
		sparseEps := budgetGrid(rep, privacy.Approx)
		p := reg.panel(fmt.Sprintf("d = %g, T = %d", d, rep.Summary.Horizon), "eps", "regret at T", sparseEps)
		p.setLogY()
		q := rec.panel(fmt.Sprintf("d = %g", d), "eps", "support recall", sparseEps)
		q.p.Y.Min, q.p.Y.Max = 0, 1
		bands := rep.bands(reg)
		for k, name := range []string{"private-lasso", "private-lasso:support=peel", "adac-oful", "lasso-bandit"} {
			alg, peel := strings.CutSuffix(name, ":support=peel")
			y, lo, hi := make([]float64, len(sparseEps)), make([]float64, len(sparseEps)), make([]float64, len(sparseEps))
			recall := make([]float64, len(sparseEps))
			found := false
			for e, eps := range sparseEps {
				y[e], lo[e], hi[e], recall[e] = math.NaN(), math.NaN(), math.NaN(), math.NaN()
				for _, r := range rep.Summary.Results {
					if r.Algorithm != alg || (r.Params["support"] == "peel") != peel || (r.Privacy.Notion == privacy.Approx && r.Privacy.Eps != eps) {
						continue
					}
					found = true
					y[e], lo[e], hi[e] = r.RegretMean, r.RegretCI95[0], r.RegretCI95[1]
					if v, ok := r.Metrics["support_recall"]; ok {
						recall[e] = v
					}
				}
			}
			if !found {
				continue
			}
			if bands && slices.IndexFunc(lo, func(x float64) bool { return !(x > 0) }) < 0 {
				p.band(sparseEps, lo, hi, styleOf(k)) // a band reaching 0 has no place on a log axis
			}
			p.line(sparseEps, y, name, styleOf(k))
			if name != "adac-oful" {
				q.line(sparseEps, recall, name, styleOf(k))
			}
		}
	}
	for _, f := range []*figure{reg, rec} {
		if _, err := f.save(dir); err != nil {
			return nil, err
		}
	}
	return []string{"regret-vs-eps.svg", "recall-vs-eps.svg"}, nil
}

// budgetGrid returns the distinct eps of a report's results of one
// privacy notion, in increasing order: the grid a sweep's plots share.
func budgetGrid(rep *Report, notion privacy.Notion) []float64 {
	var out []float64
	for _, r := range rep.Summary.Results {
		if r.Privacy.Notion == notion && !slices.Contains(out, r.Privacy.Eps) {
			out = append(out, r.Privacy.Eps)
		}
	}
	slices.Sort(out)
	return out
}
