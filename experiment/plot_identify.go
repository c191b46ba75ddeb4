package experiment

import (
	"math"
	"slices"

	"github.com/dpbandit/dpbandit/sim"
)

// stoppingFigure draws, when the report holds best-arm identifications
// (results with the metric sim.MetricTau), their mean stopping time
// against the privacy budget with a band of one standard deviation, as
// in Azize et al.'s (NeurIPS 2023) figures; a non-private identification
// is a flat line across the budgets. Nil without identifications or
// without a sweep of budgets to draw.
func (r *Report) stoppingFigure(title string) *figure {
	type series struct{ x, mean, sd []float64 }
	groups := map[string]*series{}
	var order []string
	flat := map[string]float64{}
	var xs []float64
	n := float64(r.Summary.Runs)
	for i, res := range r.Summary.Results {
		tau, ok := res.Metrics[sim.MetricTau]
		if !ok {
			continue
		}
		key := r.Curves[i].Spec
		if !res.Privacy.IsPrivate() {
			flat[key] = tau
			order = append(order, key)
			continue
		}
		key += " (" + budgetAxis(res.Privacy) + ")"
		g := groupOf(groups, &order, key)
		sd := res.Metrics[MetricTauSE] * math.Sqrt(n)
		x := budgetValue(res.Privacy)
		g.x, g.mean, g.sd = append(g.x, x), append(g.mean, tau), append(g.sd, sd)
		xs = append(xs, x)
	}
	if len(xs) == 0 || slices.Min(xs) == slices.Max(xs) {
		return nil
	}
	slices.Sort(xs)
	xs = slices.Compact(xs)
	f := newFigure("stopping", title+": stopping time")
	f.note("Mean stopping time (pulls made when the rule fired) over %d runs, with a band of one standard deviation; a run not stopped by T = %d counts T", r.Summary.Runs, r.Summary.Horizon)
	fp := f.panel("", "privacy budget (rho for zCDP, else eps)", "stopping time", xs)
	fp.setLogY()
	for i, k := range order {
		if tau, ok := flat[k]; ok {
			fp.line(xs, filled(len(xs), tau), k+" (non-private)", styleOf(i))
			continue
		}
		g := groups[k]
		idx := seq(len(g.x))
		slices.SortFunc(idx, func(a, b int) int { return cmpFloat(g.x[a], g.x[b]) })
		x, y, lo, hi := make([]float64, len(idx)), make([]float64, len(idx)), make([]float64, len(idx)), make([]float64, len(idx))
		for m, j := range idx {
			x[m], y[m], lo[m], hi[m] = g.x[j], g.mean[j], g.mean[j]-g.sd[j], g.mean[j]+g.sd[j]
		}
		if slices.IndexFunc(lo, func(v float64) bool { return !(v > 0) }) < 0 {
			fp.band(x, lo, hi, styleOf(i))
		}
		fp.line(x, y, k, styleOf(i))
	}
	return f
}
