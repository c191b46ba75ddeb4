package experiment

import (
	"fmt"
	"image/color"
	"math"
	"path/filepath"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/dpbandit/dpbandit/privacy"
)

// writePlots draws regret against time (regret.svg/png) and, for entries
// paired with a reference, the paired difference against the budget
// (diff.svg/png) and the price of privacy over time (pop.svg/png).
func (r *Report) writePlots(dir string) error {
	title := r.Config.Name
	if title == "" {
		title = r.Summary.Env
	}
	ts := make([]float64, len(r.Checkpoints))
	for i, t := range r.Checkpoints {
		ts[i] = float64(t)
	}

	p := newPlot(title, "t (log scale)", "pseudo-regret (mean, 95% CI)", ts)
	for i, cv := range r.Curves {
		addBand(p, ts, cv.Regret.CILo, cv.Regret.CIHi, i)
		addLine(p, ts, cv.Regret.Mean, cv.Label, i, nil, false)
	}
	if err := save(p, dir, "regret", len(r.Curves)); err != nil {
		return err
	}
	if err := r.plotBounds(dir, title, ts); err != nil {
		return err
	}

	if !slices.ContainsFunc(r.Curves, func(c Curve) bool { return c.Ref >= 0 }) {
		return nil
	}
	p = newPlot(title+": price of privacy", "t (log scale)", "PoP = (Reg_priv - Reg_ref) / Reg_ref", ts)
	for i, cv := range r.Curves {
		if cv.Ref >= 0 {
			addLine(p, ts, cv.PoP, cv.Label+" vs "+r.Curves[cv.Ref].Label, i, nil, false)
		}
	}
	if err := save(p, dir, "pop", len(r.Curves)); err != nil {
		return err
	}
	return r.plotDiff(dir, title)
}

// plotDiff draws, for each algorithm swept over budgets, the paired regret
// difference at the horizon against the budget, with 95% error bars.
func (r *Report) plotDiff(dir, title string) error {
	type series struct {
		xy   plotter.XYs
		errs plotter.YErrors
	}
	groups := map[string]*series{}
	var order []string
	last := len(r.Checkpoints) - 1
	for j, cv := range r.Curves {
		if cv.Ref < 0 {
			continue
		}
		key := r.Summary.Results[j].Algorithm + " " + ParamString(r.Summary.Results[j].Params) + " (" + budgetAxis(cv.Budget) + ")"
		g := groups[key]
		if g == nil {
			g = &series{}
			groups[key] = g
			order = append(order, key)
		}
		g.xy = append(g.xy, plotter.XY{X: budgetValue(cv.Budget), Y: cv.DiffMean[last]})
		half := 1.96 * cv.DiffSE[last]
		g.errs = append(g.errs, struct{ Low, High float64 }{half, half})
	}
	var xs []float64
	for _, g := range groups {
		for _, pt := range g.xy {
			xs = append(xs, pt.X)
		}
	}
	if slices.Min(xs) == slices.Max(xs) {
		return nil // a single budget: no sweep to draw
	}
	p := newPlot(title+": Reg_priv - Reg_ref at T", "privacy budget (log scale)", "paired regret difference (95% CI)", xs)
	p.Legend.Left = false
	for i, k := range order {
		g := groups[k]
		idx := make([]int, len(g.xy))
		for n := range idx {
			idx[n] = n
		}
		slices.SortFunc(idx, func(a, b int) int { return cmpFloat(g.xy[a].X, g.xy[b].X) })
		var xy plotter.XYs
		var errs plotter.YErrors
		for _, n := range idx {
			xy, errs = append(xy, g.xy[n]), append(errs, g.errs[n])
		}
		l, pts, err := plotter.NewLinePoints(xy)
		if err != nil {
			return err
		}
		l.Color, pts.Color = plotutil.Color(i), plotutil.Color(i)
		eb, err := plotter.NewYErrorBars(struct {
			plotter.XYs
			plotter.YErrors
		}{xy, errs})
		if err != nil {
			return err
		}
		eb.Color = plotutil.Color(i)
		p.Add(l, pts, eb)
		p.Legend.Add(k, l, pts)
	}
	zero := plotter.NewFunction(func(float64) float64 { return 0 })
	zero.Color = color.Gray{Y: 128}
	zero.Dashes = []vg.Length{vg.Points(3), vg.Points(3)}
	p.Add(zero)
	return save(p, dir, "diff", len(order))
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

// newPlot returns a plot whose x axis is logarithmic over the range of xs
// (positive values), widened to a decade when xs holds a single value.
func newPlot(title, x, y string, xs []float64) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	lo, hi := slices.Min(xs), slices.Max(xs)
	if hi <= lo {
		hi = lo * 10
	}
	p.X.Min, p.X.Max = lo, hi
	p.Legend.Top, p.Legend.Left = true, true
	p.Add(plotter.NewGrid())
	return p
}

// addLine adds a line in the i-th colour, skipping NaN and infinite
// points (and non-positive ones on a log y axis). dashes nil means the
// i-th default dash pattern; an empty label adds no legend entry.
func addLine(p *plot.Plot, x, y []float64, label string, i int, dashes []vg.Length, logY bool) {
	var xy plotter.XYs
	for k := range x {
		if !math.IsNaN(y[k]) && !math.IsInf(y[k], 0) && (!logY || y[k] > 0) {
			xy = append(xy, plotter.XY{X: x[k], Y: y[k]})
		}
	}
	if len(xy) == 0 {
		return
	}
	l, err := plotter.NewLine(xy)
	if err != nil {
		return
	}
	l.Color = plotutil.Color(i)
	l.Dashes = dashes
	if dashes == nil {
		l.Dashes = plotutil.Dashes(i / len(plotutil.DefaultColors))
	}
	l.Width = vg.Points(1.5)
	p.Add(l)
	if label != "" {
		p.Legend.Add(label, l)
	}
}

// plotBounds draws, on log-log axes, each entry's mean regret with the
// paper's upper bound (dashed) and the minimax lower bound (dotted) of the
// same colour, when any bound applies.
func (r *Report) plotBounds(dir, title string, ts []float64) error {
	if !slices.ContainsFunc(r.Curves, func(c Curve) bool { return c.Upper != nil || c.Lower != nil }) {
		return nil
	}
	dashed := []vg.Length{vg.Points(6), vg.Points(3)}
	dotted := []vg.Length{vg.Points(1), vg.Points(3)}
	p := newPlot(title+": regret and bounds", "t (log scale)", "pseudo-regret (log scale)", ts)
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	for i, cv := range r.Curves {
		addLine(p, ts, cv.Regret.Mean, cv.Label, i, []vg.Length{}, true)
		if cv.Upper != nil {
			addLine(p, ts, cv.Upper, "", i, dashed, true)
		}
		if cv.Lower != nil {
			addLine(p, ts, cv.Lower, "", i, dotted, true)
		}
	}
	keys := 0
	for _, k := range []struct {
		label string
		d     []vg.Length
		has   func(Curve) bool
	}{
		{"upper bound (paper)", dashed, func(c Curve) bool { return c.Upper != nil }},
		{"minimax lower bound (001 Thm 17)", dotted, func(c Curve) bool { return c.Lower != nil }},
	} {
		if slices.ContainsFunc(r.Curves, k.has) {
			l := &plotter.Line{XYs: plotter.XYs{{X: ts[0], Y: 1}}}
			l.Color, l.Dashes, l.Width = color.Gray{Y: 100}, k.d, vg.Points(1.5)
			p.Legend.Add(k.label, l)
			keys++
		}
	}
	return save(p, dir, "bounds", len(r.Curves)+keys)
}

// addBand adds the translucent area between lo and hi.
func addBand(p *plot.Plot, x, lo, hi []float64, i int) {
	var ring plotter.XYs
	for k := range x {
		ring = append(ring, plotter.XY{X: x[k], Y: lo[k]})
	}
	for k := len(x) - 1; k >= 0; k-- {
		ring = append(ring, plotter.XY{X: x[k], Y: hi[k]})
	}
	poly, err := plotter.NewPolygon(ring)
	if err != nil {
		return
	}
	r, g, b, _ := plotutil.Color(i).RGBA()
	poly.Color = color.NRGBA{R: uint8(r >> 8), G: uint8(g >> 8), B: uint8(b >> 8), A: 60}
	poly.LineStyle = draw.LineStyle{}
	p.Add(poly)
}

// save writes the plot as name.svg and name.png, with room for a legend
// of the given number of entries. gonum/plot panics on
// some degenerate data; that becomes an error, so a run never loses its
// numbers to a plot.
func save(p *plot.Plot, dir, name string, entries int) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("plot %s: %v", name, r)
		}
	}()
	// Tall enough for the legend, and the y range stretched so that the
	// curves stay below it.
	h := max(5*vg.Inch, 2.5*vg.Inch+vg.Length(entries)*vg.Points(15))
	f := min(0.6, float64(vg.Length(entries+1)*vg.Points(15)/(h-vg.Inch)))
	if lo, hi := p.Y.Min, p.Y.Max; hi > lo {
		if _, ok := p.Y.Scale.(plot.LogScale); ok && lo > 0 {
			p.Y.Max = math.Exp(math.Log(lo) + (math.Log(hi)-math.Log(lo))/(1-f))
		} else {
			p.Y.Max = lo + (hi-lo)/(1-f)
		}
	}
	for _, ext := range []string{".svg", ".png"} {
		if err := p.Save(8*vg.Inch, h, filepath.Join(dir, name+ext)); err != nil {
			return err
		}
	}
	return nil
}
