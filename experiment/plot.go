package experiment

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/dpbandit/dpbandit/privacy"
	"github.com/dpbandit/dpbandit/sim"
)

// writePlots writes the report's figures (figures) into dir and records
// their files in r.Files.
func (r *Report) writePlots(dir string) error {
	for _, f := range r.figures() {
		files, err := f.save(dir)
		if err != nil {
			return err
		}
		r.Files = append(r.Files, files...)
	}
	return nil
}

// figures returns the report's figures, not yet drawn: regret against
// time (regret), the loss on a data set (loss), regret with the papers'
// bounds (bounds), the stopping time of best-arm identifications against
// the budget (stopping) and, for entries paired with a reference, the price of
// privacy over time (pop) and the paired difference at T against the
// budget (diff).
func (r *Report) figures() []*figure {
	title := r.Config.Name
	if title == "" {
		title = r.Summary.Env
	}
	ts := make([]float64, len(r.Checkpoints))
	for i, t := range r.Checkpoints {
		ts[i] = float64(t)
	}
	groups := r.panels()
	out := []*figure{r.regretFigure(title, ts, groups)}
	for _, f := range []*figure{r.lossFigure(title, ts, groups), r.boundsFigure(title, ts), r.stoppingFigure(title)} {
		if f != nil {
			out = append(out, f)
		}
	}
	if !slices.ContainsFunc(r.Curves, func(c Curve) bool { return c.Ref >= 0 }) {
		return out
	}
	for _, f := range []*figure{r.popFigure(title, ts, groups), r.diffFigure(title)} {
		if f != nil {
			out = append(out, f)
		}
	}
	return out
}

// bands reports whether the runs support 95% bands (minBandRuns), and
// notes on f when they do not.
func (r *Report) bands(f *figure) bool {
	if r.Summary.Runs >= minBandRuns {
		return true
	}
	f.note("No 95%% bands: %d runs (bands are drawn from %d runs on; the tables give the intervals)", r.Summary.Runs, minBandRuns)
	return false
}

// bandNote says what the bands are.
func (r *Report) bandNote(f *figure) {
	f.note("Mean over %d runs; bands: 95%% Student t intervals", r.Summary.Runs)
}

// regretFigure draws the mean regret against time, one panel per group,
// the panels on one y range, with 95% bands when the runs support them.
func (r *Report) regretFigure(title string, ts []float64, groups []panel) *figure {
	f := newFigure("regret", title+": pseudo-regret")
	bands := r.bands(f)
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, g := range groups {
		for _, i := range g.series {
			st := r.Curves[i].Regret
			if bands {
				lo, hi = min(lo, slices.Min(st.CILo)), max(hi, slices.Max(st.CIHi))
			} else {
				lo, hi = min(lo, slices.Min(st.Mean)), max(hi, slices.Max(st.Mean))
			}
		}
	}
	if bands {
		r.bandNote(f)
	}
	for _, g := range groups {
		fp := f.panel(g.title, "t", "pseudo-regret", ts)
		if len(groups) > 1 && hi > lo && finite(lo) && finite(hi) {
			fp.p.Y.Min, fp.p.Y.Max = lo, hi // panels compared on one scale
		}
		for n, i := range g.series {
			if bands {
				fp.band(ts, r.Curves[i].Regret.CILo, r.Curves[i].Regret.CIHi, g.styles[n])
			}
			fp.line(ts, r.Curves[i].Regret.Mean, g.labels[n], g.styles[n])
		}
	}
	return f
}

// popFigure draws the price of privacy of the paired entries over time,
// each from the checkpoint popPrecision allows, the x axis from the
// first of them, and says so in its notes.
func (r *Report) popFigure(title string, ts []float64, groups []panel) *figure {
	f := newFigure("pop", title+": price of privacy (Reg_priv - Reg_ref) / Reg_ref")
	first, last := math.Inf(1), math.Inf(-1)
	var refs []string
	for _, g := range groups {
		fp := f.panel(g.title, "t", "price of privacy", ts)
		for n, i := range g.series {
			cv := r.Curves[i]
			if cv.Ref < 0 {
				continue
			}
			y := r.popShown(cv)
			if !fp.line(ts, y, g.labels[n], g.styles[n]) {
				continue
			}
			c := slices.IndexFunc(y, finite)
			first, last = min(first, ts[c]), max(last, ts[c])
			if ref := r.Curves[cv.Ref].Label; !slices.Contains(refs, ref) {
				refs = append(refs, ref)
			}
		}
		fp.hline(0)
	}
	if math.IsInf(first, 0) {
		return nil
	}
	f.panels = slices.DeleteFunc(f.panels, func(fp *figPanel) bool { return len(fp.curves) == 0 })
	for _, fp := range f.panels {
		fp.p.X.Min = first
	}
	f.note("Each private entry against its non-private reference (%s)", strings.Join(refs, ", "))
	from := fmt.Sprintf("from t = %g", first)
	if last > first {
		from = fmt.Sprintf("from t = %g to %g (by curve)", first, last)
	}
	f.note("Curves start %s: the first checkpoint at which the reference's regret is known to ±%g%% "+
		"(half-width of its 95%% interval) and has reached %g%% of its value at T; before, the ratio divides by noise",
		from, 100*popPrecision, 100*popPrecision)
	return f
}

// popPrecision sets where the price of privacy starts to be drawn: once
// the reference's regret is known to a tenth (the half-width of its 95%
// interval at most popPrecision times its mean) and has reached a tenth
// of its value at the horizon. Earlier, the ratio divides by a regret
// that is mostly noise or a transient of a few steps (in linear-compare
// it swung from -1 to 6).
const popPrecision = 0.1

// popShown returns the curve's price of privacy from the first
// checkpoint that popPrecision allows (NaN before, which the plot skips).
func (r *Report) popShown(cv Curve) []float64 {
	ref := r.Curves[cv.Ref].Regret
	out := slices.Clone(cv.PoP)
	final := ref.Mean[len(ref.Mean)-1]
	for c := range out {
		m := ref.Mean[c]
		if m > 0 && (ref.CIHi[c]-ref.CILo[c])/2 <= popPrecision*m && m >= popPrecision*final {
			break
		}
		out[c] = math.NaN()
	}
	return out
}

// maxSeries is the number of series one panel shows.
const maxSeries = 12

// panel is one panel of a split plot: its title (besides the
// experiment's), the curves it shows, their legend labels and styles.
type panel struct {
	title  string
	series []int
	labels []string
	styles []curveStyle
}

// panels splits the curves into panels by meaning. One panel when they
// fit (at most maxSeries). Else one panel per privacy budget, each
// holding that budget's entries and every non-private one (their
// references): the algorithms compared at a budget, and what they are
// compared with, share an axis, the panels share a y range, and each
// algorithm keeps one colour and its name as the label across panels
// (the budget is the panel's title). If a budget's panel would still
// hold too many, the curves of each algorithm are kept together instead
// (with their references), packed in order.
func (r *Report) panels() []panel {
	whole := func(series []int, title string, byBudget bool) panel {
		p := panel{title: title, series: series}
		colour := map[string]int{} // by budget: one colour per algorithm
		for _, i := range series {
			cv := r.Curves[i]
			label, st := cv.Label, styleOf(i) // else each curve its own style
			if byBudget {
				if _, ok := colour[cv.Spec]; !ok {
					colour[cv.Spec] = len(colour)
				}
				label, st = cv.Spec, styleOf(colour[cv.Spec]).withDash(dashSolid)
				if !cv.Budget.IsPrivate() {
					st = st.withDash(dashDashed) // the references, dashed in every panel
				}
			}
			p.labels, p.styles = append(p.labels, label), append(p.styles, st)
		}
		return p
	}
	if len(r.Curves) <= maxSeries {
		return []panel{whole(seq(len(r.Curves)), "", false)}
	}
	var public []int
	budgets := map[string][]int{}
	var order []string
	for j, cv := range r.Curves {
		if !cv.Budget.IsPrivate() {
			public = append(public, j)
			continue
		}
		b := cv.Budget
		b.Client = 0 // local entries at one eps per report compare, whatever their clients' totals
		k := b.Label(4)
		if _, ok := budgets[k]; !ok {
			order = append(order, k)
		}
		budgets[k] = append(budgets[k], j)
	}
	if len(order) > 1 && !slices.ContainsFunc(order, func(k string) bool { return len(budgets[k])+len(public) > maxSeries }) {
		var out []panel
		for _, k := range order {
			series := append(slices.Clone(budgets[k]), public...)
			out = append(out, whole(series, k, true))
		}
		return out
	}
	var byAlgo [][]int
	index := map[string]int{}
	for j := range r.Curves {
		a := r.Summary.Results[j].Algorithm
		k, ok := index[a]
		if !ok {
			k = len(byAlgo)
			index[a] = k
			byAlgo = append(byAlgo, nil)
		}
		byAlgo[k] = append(byAlgo[k], j)
	}
	const perPanel = 6
	var groups [][]int
	for _, g := range byAlgo {
		for len(g) > maxSeries { // an algorithm at many budgets: in chunks
			groups, g = append(groups, slices.Clone(g[:maxSeries])), g[maxSeries:]
		}
		if n := len(groups); n > 0 && len(groups[n-1])+len(g) <= perPanel {
			groups[n-1] = append(groups[n-1], g...)
		} else {
			groups = append(groups, slices.Clone(g))
		}
	}
	out := make([]panel, len(groups))
	for k, g := range groups {
		out[k] = whole(g, "", false)
	}
	return out
}

// panelTitle titles the k-th of n panels: "(a) rho=0.1" by its letter
// and its own title (its budget), nothing when it is alone.
func panelTitle(own string, k, n int) string {
	if n == 1 {
		return own
	}
	letter := fmt.Sprintf("(%c)", 'a'+rune(k%26))
	if k >= 26 {
		letter = fmt.Sprintf("(%d)", k+1)
	}
	return strings.TrimSpace(letter + " " + own)
}

// groupOf returns the series of key in groups, made on its first use
// and its key then appended to order (the legend's order: first seen).
func groupOf[S any](groups map[string]*S, order *[]string, key string) *S {
	g := groups[key]
	if g == nil {
		g = new(S)
		groups[key] = g
		*order = append(*order, key)
	}
	return g
}

// diffFigure draws, for each algorithm swept over budgets, the paired
// regret difference at the horizon against the budget, with 95% error
// bars (at most maxSeries algorithms, evenly chosen, said so); nil for a
// single budget.
func (r *Report) diffFigure(title string) *figure {
	type series struct{ x, y, half []float64 }
	groups := map[string]*series{}
	var order []string
	last := len(r.Checkpoints) - 1
	for _, cv := range r.Curves {
		if cv.Ref < 0 {
			continue
		}
		key := cv.Spec + " (" + budgetAxis(cv.Budget) + ")"
		g := groupOf(groups, &order, key)
		half := sim.TQuantile(r.Summary.Runs) * cv.DiffSE[last]
		if !finite(half) {
			half = 0 // one run: no interval, the point alone
		}
		g.x, g.y, g.half = append(g.x, budgetValue(cv.Budget)), append(g.y, cv.DiffMean[last]), append(g.half, half)
	}
	var xs []float64
	for _, g := range groups {
		xs = append(xs, g.x...)
	}
	if slices.Min(xs) == slices.Max(xs) {
		return nil // a single budget: no sweep to draw
	}
	f := newFigure("diff", title+": Reg_priv - Reg_ref at T")
	if len(order) > maxSeries {
		f.note("%d of %d algorithms shown, evenly chosen", maxSeries, len(order))
		var kept []string
		for _, i := range spread(len(order), maxSeries) {
			kept = append(kept, order[i])
		}
		order = kept
	}
	f.note("Paired difference of the regret at T = %d (common random numbers), mean over %d runs with 95%% intervals", r.Summary.Horizon, r.Summary.Runs)
	fp := f.panel("", "privacy budget", "regret difference", xs)
	for i, k := range order {
		g := groups[k]
		idx := seq(len(g.x))
		slices.SortFunc(idx, func(a, b int) int { return cmpFloat(g.x[a], g.x[b]) })
		x, y, half := make([]float64, len(idx)), make([]float64, len(idx)), make([]float64, len(idx))
		for n, j := range idx {
			x[n], y[n], half[n] = g.x[j], g.y[j], g.half[j]
		}
		fp.line(x, y, k, styleOf(i))
		fp.errorBars(x, y, half, styleOf(i))
	}
	fp.hline(0)
	return f
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// budgetValue is the x coordinate of a budget: rho for zCDP, eps otherwise.
func budgetValue(b privacy.Budget) float64 {
	if b.Notion == privacy.ZCDP {
		return b.Rho
	}
	return b.Eps
}

// trimFloat formats x in its shortest form, as an axis names a budget's
// delta or alpha.
func trimFloat(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

// budgetAxis names the budget axis of b's notion.
func budgetAxis(b privacy.Budget) string {
	switch b.Notion {
	case privacy.ZCDP:
		return "rho"
	case privacy.Approx:
		return "eps, delta=" + trimFloat(b.Delta)
	case privacy.Renyi:
		return "eps, alpha=" + trimFloat(b.Alpha)
	}
	return "eps"
}

// boundsFigure draws, on log-log axes, each entry's mean regret (solid)
// with the paper's upper bound (dashed) in the same style, and each
// distinct minimax lower bound once (dotted, in the style of its first
// entry), when any bound applies; at most maxSeries entries, evenly
// chosen (said so). The legend names each entry once and the three line
// kinds once.
func (r *Report) boundsFigure(title string, ts []float64) *figure {
	if !slices.ContainsFunc(r.Curves, func(c Curve) bool { return c.Upper != nil || c.Lower != nil }) {
		return nil
	}
	f := newFigure("bounds", title+": regret and bounds")
	shown := spread(len(r.Curves), maxSeries)
	if len(shown) < len(r.Curves) {
		f.note("%d of %d entries shown, evenly chosen", len(shown), len(r.Curves))
	}
	fp := f.panel("", "t", "pseudo-regret", ts)
	fp.setLogY()
	drawn, upper, lower := false, false, false
	var lowers [][]float64 // distinct lower bounds, each drawn once
	for _, i := range shown {
		cv := r.Curves[i]
		st := styleOf(i).withDash(dashSolid)
		drawn = fp.line(ts, cv.Regret.Mean, cv.Label, st) || drawn
		if cv.Upper != nil {
			upper = fp.line(ts, cv.Upper, "", st.withDash(dashDashed)) || upper
		}
		if cv.Lower != nil && !slices.ContainsFunc(lowers, func(l []float64) bool { return slices.Equal(l, cv.Lower) }) {
			lowers = append(lowers, cv.Lower)
			lower = fp.line(ts, cv.Lower, "", st.withDash(dashDotted)) || lower
		}
	}
	if !drawn {
		return nil // no positive regret to draw on a log axis (T = 1, say)
	}
	kinds := []string{"Solid: mean regret"}
	if upper {
		f.key("upper bound (paper)", dashDashed)
		kinds = append(kinds, "dashed: the paper's upper bound")
	}
	if lower {
		f.key("lower bound (001 Thm 17)", dashDotted)
		kinds = append(kinds, "dotted: the minimax lower bound of 001 Theorem 17, in the colour of the first entry at its budget")
	}
	f.note("%s", strings.Join(kinds, "; "))
	return f
}

// lossFigure draws, on a data set, each entry's loss against t (1 minus
// its average reward up to t, progressive validation: each row scored
// before it is learned) with its 95% interval when the runs support it,
// and the hindsight least-squares loss as a flat line. The loss at t is
// c + Regret(t)/t, where c = 1 - (the best reward a round can give),
// constant over rounds and runs (0 without flipped labels, min(p, 1-p)
// with flip = p); c is read off the entry's loss at T.
func (r *Report) lossFigure(title string, ts []float64, groups []panel) *figure {
	h := r.Summary.HindsightLoss
	if h == nil {
		return nil
	}
	f := newFigure("loss", title+": loss")
	bands := r.bands(f)
	T := float64(r.Summary.Horizon)
	if bands {
		r.bandNote(f)
	}
	f.note("Loss: 1 - the average reward up to t (each row scored before it is learned)")
	for _, g := range groups {
		fp := f.panel(g.title, "t", "loss", ts)
		fp.p.Y.Min, fp.p.Y.Max = 0, 1
		for n, i := range g.series {
			res, cv := r.Summary.Results[i], r.Curves[i]
			c := res.Metrics["loss"] - res.RegretMean/T
			if bands {
				fp.band(ts, lossCurve(c, cv.Regret.CILo, ts), lossCurve(c, cv.Regret.CIHi, ts), g.styles[n])
			}
			fp.line(ts, lossCurve(c, cv.Regret.Mean, ts), g.labels[n], g.styles[n])
		}
		fp.line(ts, filled(len(ts), *h), "least squares, hindsight", referenceStyle)
	}
	return f
}

// referenceStyle draws a flat reference (the hindsight loss): grey,
// dotted, without markers.
var referenceStyle = curveStyle{colour: 7, dash: dashDotted, marker: -1}

// lossCurve returns the loss c + regret(t)/t at each checkpoint t of ts,
// within [0, 1]: a loss is 1 minus an average of rewards in [0, 1], so an
// interval's end beyond (a t interval over a few runs) is cut to [0, 1],
// which keeps its coverage.
func lossCurve(c float64, regret, ts []float64) []float64 {
	out := make([]float64, len(regret))
	for i, x := range regret {
		out[i] = min(max(c+x/ts[i], 0), 1)
	}
	return out
}

// filled returns n copies of v (a flat line, or a row not yet known).
func filled(n int, v float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}
