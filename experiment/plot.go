package experiment

import (
	"fmt"
	"github.com/dpbandit/dpbandit/sim"
	"image/color"
	"image/png"
	"io"
	"math"
	"path/filepath"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

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
	groups := r.panels()
	var regret []*plot.Plot
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, g := range groups {
		for _, i := range g.series {
			lo = min(lo, slices.Min(r.Curves[i].Regret.CILo))
			hi = max(hi, slices.Max(r.Curves[i].Regret.CIHi))
		}
	}
	for k, g := range groups {
		p := newPlot(panelTitle(title, g.title, k, len(groups)), "t (log scale)", "pseudo-regret (mean, 95% CI)", ts)
		if len(groups) > 1 && hi > lo {
			p.Y.Min, p.Y.Max = lo, hi // panels compared on one scale
		}
		var l layers
		for n, i := range g.series {
			l.band(p, ts, r.Curves[i].Regret.CILo, r.Curves[i].Regret.CIHi, g.colors[n])
			l.line(p, ts, r.Curves[i].Regret.Mean, g.labels[n], g.colors[n], g.dashes[n], false)
		}
		l.draw()
		regret = append(regret, p)
	}
	if err := r.save(regret, dir, "regret"); err != nil {
		return err
	}
	if err := r.plotLoss(dir, title, ts, groups); err != nil {
		return err
	}
	if err := r.plotBounds(dir, title, ts); err != nil {
		return err
	}

	if !slices.ContainsFunc(r.Curves, func(c Curve) bool { return c.Ref >= 0 }) {
		return nil
	}
	var pop []*plot.Plot
	for k, g := range groups {
		p := newPlot(panelTitle(title+": price of privacy", g.title, k, len(groups)), "t (log scale)", "PoP = (Reg_priv - Reg_ref) / Reg_ref", ts)
		any := false
		for n, i := range g.series {
			cv := r.Curves[i]
			if cv.Ref < 0 {
				continue
			}
			any = addLine(p, ts, r.popShown(cv), g.labels[n]+" vs "+r.Curves[cv.Ref].Label, g.colors[n], nil, false) || any
		}
		if any {
			pop = append(pop, p)
		}
	}
	if len(pop) > 0 {
		if err := r.save(pop, dir, "pop"); err != nil {
			return err
		}
	}
	return r.plotDiff(dir, title)
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

// maxSeries is the number of series one panel shows: the palette's
// colours, each once.
const maxSeries = 12

// panel is one panel of a split plot: its title (besides the
// experiment's), the curves it shows, their legend labels and colours.
type panel struct {
	title  string
	series []int
	labels []string
	colors []int
	dashes [][]vg.Length // nil: the colour's own pattern
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
			label, c := cv.Label, i // else each curve its own colour
			if byBudget {
				if _, ok := colour[cv.Spec]; !ok {
					colour[cv.Spec] = len(colour)
				}
				label, c = cv.Spec, colour[cv.Spec]
			}
			p.labels, p.colors = append(p.labels, label), append(p.colors, c)
			var d []vg.Length
			if byBudget && !cv.Budget.IsPrivate() {
				d = []vg.Length{vg.Points(6), vg.Points(3)} // the references, dashed in every panel
			}
			p.dashes = append(p.dashes, d)
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

func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// panelTitle titles one of n panels: by its own title when it has one
// (its budget), else numbered.
func panelTitle(title, own string, k, n int) string {
	switch {
	case own != "":
		return title + ": " + own
	case n == 1:
		return title
	}
	return fmt.Sprintf("%s (%d/%d)", title, k+1, n)
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
	for _, cv := range r.Curves {
		if cv.Ref < 0 {
			continue
		}
		key := cv.Spec + " (" + budgetAxis(cv.Budget) + ")"
		g := groups[key]
		if g == nil {
			g = &series{}
			groups[key] = g
			order = append(order, key)
		}
		g.xy = append(g.xy, plotter.XY{X: budgetValue(cv.Budget), Y: cv.DiffMean[last]})
		half := sim.TQuantile(r.Summary.Runs) * cv.DiffSE[last]
		if math.IsNaN(half) || math.IsInf(half, 0) {
			half = 0 // one run: no interval, the point alone
		}
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
		l.Color, pts.Color = seriesColor(i), seriesColor(i)
		l.Dashes = seriesDashes(i)
		eb, err := plotter.NewYErrorBars(struct {
			plotter.XYs
			plotter.YErrors
		}{xy, errs})
		if err != nil {
			return err
		}
		eb.Color = seriesColor(i)
		p.Add(l, pts, eb)
		p.Legend.Add(k, l, pts)
	}
	zero := plotter.NewFunction(func(float64) float64 { return 0 })
	zero.Color = color.Gray{Y: 128}
	zero.Dashes = []vg.Length{vg.Points(3), vg.Points(3)}
	p.Add(zero)
	return r.save([]*plot.Plot{p}, dir, "diff")
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
	p.X.Tick.Marker = logTicks{}
	lo, hi := slices.Min(xs), slices.Max(xs)
	if hi <= lo {
		hi = lo * 10
	}
	p.X.Min, p.X.Max = lo, hi
	p.Y.Tick.Marker = niceTicks{}
	p.Legend.Top, p.Legend.Left = true, true
	p.Add(plotter.NewGrid())
	return p
}

// palette holds 12 colours told apart by most readers (Paul Tol's muted
// scheme and four of his bright ones); series beyond 12 reuse them with
// another dash pattern.
var palette = []color.Color{
	color.RGBA{0x33, 0x22, 0x88, 255}, color.RGBA{0x88, 0xcc, 0xee, 255}, color.RGBA{0x44, 0xaa, 0x99, 255},
	color.RGBA{0x11, 0x77, 0x33, 255}, color.RGBA{0x99, 0x99, 0x33, 255}, color.RGBA{0xdd, 0xcc, 0x77, 255},
	color.RGBA{0xcc, 0x66, 0x77, 255}, color.RGBA{0x88, 0x22, 0x55, 255}, color.RGBA{0xaa, 0x44, 0x99, 255},
	color.RGBA{0xee, 0x77, 0x33, 255}, color.RGBA{0x44, 0x77, 0xaa, 255}, color.RGBA{0x66, 0x66, 0x66, 255},
}

// seriesColor returns the colour of series i.
func seriesColor(i int) color.Color { return palette[i%len(palette)] }

// seriesDashes returns the dash pattern of series i: solid for the first
// 12, then dashed, dotted and dash-dotted.
func seriesDashes(i int) []vg.Length {
	pats := [][]vg.Length{{}, {vg.Points(6), vg.Points(3)}, {vg.Points(1.5), vg.Points(2.5)}, {vg.Points(6), vg.Points(2), vg.Points(1.5), vg.Points(2)}}
	return pats[(i/len(palette))%len(pats)]
}

// addLine adds a line in the i-th colour, skipping NaN and infinite
// points (and non-positive ones on a log y axis), and reports whether it
// drew anything. dashes nil means the i-th dash pattern; an empty label
// adds no legend entry.
func addLine(p *plot.Plot, x, y []float64, label string, i int, dashes []vg.Length, logY bool) bool {
	var xy plotter.XYs
	for k := range x {
		if !math.IsNaN(y[k]) && !math.IsInf(y[k], 0) && (!logY || y[k] > 0) {
			xy = append(xy, plotter.XY{X: x[k], Y: y[k]})
		}
	}
	if len(xy) == 0 {
		return false
	}
	l, err := plotter.NewLine(xy)
	if err != nil {
		return false
	}
	l.Color = seriesColor(i)
	l.Dashes = dashes
	if dashes == nil {
		l.Dashes = seriesDashes(i)
	}
	l.Width = vg.Points(1.5)
	p.Add(l)
	if label != "" {
		p.Legend.Add(label, l)
	}
	return true
}

// plotBounds draws, on log-log axes, each entry's mean regret with the
// paper's upper bound (dashed) of the same colour, and each distinct
// minimax lower bound once (dotted, in the colour of its first entry),
// every curve with its own legend entry, when any bound applies.
func (r *Report) plotBounds(dir, title string, ts []float64) error {
	if !slices.ContainsFunc(r.Curves, func(c Curve) bool { return c.Upper != nil || c.Lower != nil }) {
		return nil
	}
	dashed := []vg.Length{vg.Points(6), vg.Points(3)}
	dotted := []vg.Length{vg.Points(1), vg.Points(3)}
	p := newPlot(title+": regret and bounds", "t (log scale)", "pseudo-regret (log scale)", ts)
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = logTicks{}
	drawn := false
	var lowers [][]float64 // distinct lower bounds, each drawn and named once
	for i, cv := range r.Curves {
		drawn = addLine(p, ts, cv.Regret.Mean, cv.Label, i, []vg.Length{}, true) || drawn
		if cv.Upper != nil {
			addLine(p, ts, cv.Upper, cv.Label+": upper bound (paper)", i, dashed, true)
		}
		if cv.Lower != nil && !slices.ContainsFunc(lowers, func(l []float64) bool { return slices.Equal(l, cv.Lower) }) {
			lowers = append(lowers, cv.Lower)
			name := "lower bound (001 Thm 17)"
			if cv.Budget.IsPrivate() {
				name += ", " + cv.Budget.Label(4)
			}
			addLine(p, ts, cv.Lower, name, i, dotted, true)
		}
	}
	if !drawn {
		return nil // no positive regret to draw on a log axis (T = 1, say)
	}
	return r.save([]*plot.Plot{p}, dir, "bounds")
}

// layers collects a plot's bands and lines and adds them with every band
// before any line, so that no band hides another series' line.
type layers struct{ bands, lines []func() }

// band adds the i-th series' band (addBand) to the bands.
func (l *layers) band(p *plot.Plot, x, lo, hi []float64, i int) {
	l.bands = append(l.bands, func() { addBand(p, x, lo, hi, i) })
}

// line adds the i-th series' line (addLine) to the lines.
func (l *layers) line(p *plot.Plot, x, y []float64, label string, i int, dashes []vg.Length, logY bool) {
	l.lines = append(l.lines, func() { addLine(p, x, y, label, i, dashes, logY) })
}

// draw adds the bands, then the lines.
func (l *layers) draw() {
	for _, f := range append(l.bands, l.lines...) {
		f()
	}
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
	r, g, b, _ := seriesColor(i).RGBA()
	poly.Color = color.NRGBA{R: uint8(r >> 8), G: uint8(g >> 8), B: uint8(b >> 8), A: 60}
	poly.LineStyle = draw.LineStyle{}
	p.Add(poly)
}

// save writes the panels, stacked, as name.svg and name.png in dir and
// records the files in r.Files. gonum/plot panics on some degenerate
// data; that becomes an error, so a run never loses its numbers to a
// plot.
func (r *Report) save(panels []*plot.Plot, dir, name string) error {
	if err := save(panels, dir, name); err != nil {
		return err
	}
	r.Files = append(r.Files, name+".svg", name+".png")
	return nil
}

// save draws each panel with its legend in a column to its right,
// outside the data area, into name.svg and name.png: one column of
// panels, or two when there are more than two, row by row.
func save(panels []*plot.Plot, dir, name string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("plot %s: %v", name, r)
		}
	}()
	cols := 1
	width := 8 * vg.Inch
	if len(panels) > 2 {
		cols, width = 2, 6*vg.Inch
	}
	rows := (len(panels) + cols - 1) / cols
	legW, heights := vg.Length(0), make([]vg.Length, rows)
	legends := make([]plot.Legend, len(panels))
	for i, p := range panels {
		legends[i] = p.Legend
		p.Legend = plot.NewLegend() // drawn beside the panel, not on it
		legends[i].Top, legends[i].Left = true, true
		lw, lh := legendSize(&legends[i])
		if lw > 0 {
			legW = max(legW, lw+vg.Points(12))
		}
		heights[i/cols] = max(heights[i/cols], 4*vg.Inch, lh+vg.Inch)
	}
	var total vg.Length
	for _, h := range heights {
		total += h
	}
	const pad = 6 // points above each panel, so that no title is clipped
	cell := width + legW
	paint := func(dc draw.Canvas) {
		top := total
		for r := range rows {
			for c := range cols {
				i := r*cols + c
				if i >= len(panels) {
					break
				}
				x := vg.Length(c) * cell
				area := draw.Crop(dc, x, -(vg.Length(cols)*cell - x - cell), top-heights[r], -(total-top)-vg.Points(pad))
				panels[i].Draw(draw.Crop(area, 0, -legW, 0, 0))
				if legW > 0 {
					legends[i].Draw(draw.Crop(area, width, 0, 0, 0))
				}
			}
			top -= heights[r]
		}
	}
	return saveCanvas(paint, vg.Length(cols)*cell, total, dir, name)
}

// legendSize returns the width and height the legend's entries take.
func legendSize(l *plot.Legend) (w, h vg.Length) {
	r := l.Rectangle(draw.Canvas{Rectangle: vg.Rectangle{Max: vg.Point{X: 1, Y: 1}}})
	return r.Max.X - r.Min.X, r.Max.Y - r.Min.Y
}

// savePlot writes one plot as name.svg and name.png in dir, atomically,
// its legend where the plot puts it.
func savePlot(p *plot.Plot, w, h vg.Length, dir, name string) error {
	return saveCanvas(p.Draw, w, h, dir, name)
}

// pngDPI is the PNGs' resolution: twice the screen's 96, for print.
const pngDPI = 192

// saveCanvas writes what paint draws on a w x h canvas as name.svg and
// name.png in dir, atomically.
func saveCanvas(paint func(draw.Canvas), w, h vg.Length, dir, name string) error {
	svg := vgsvg.New(w, h)
	paint(draw.New(svg))
	if err := writeFile(filepath.Join(dir, name+".svg"), func(out io.Writer) error {
		_, err := svg.WriteTo(out)
		return err
	}); err != nil {
		return err
	}
	img := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(pngDPI))
	paint(draw.New(img))
	// The fastest deflate: about 40% of the default's time on these
	// plots, whose flat areas compress well at any level (files about 5%
	// larger).
	enc := png.Encoder{CompressionLevel: png.BestSpeed}
	return writeFile(filepath.Join(dir, name+".png"), func(out io.Writer) error { return enc.Encode(out, img.Image()) })
}

// plotLoss draws, on a data set, each entry's loss against t (1 minus its
// average reward up to t, progressive validation: each row scored before
// it is learned) with its 95% interval, and the hindsight least-squares
// loss as a flat line, into loss.svg and loss.png. The loss at t is
// c + Regret(t)/t, where c = 1 - (the best reward a round can give),
// constant over rounds and runs (0 without flipped labels, min(p, 1-p)
// with flip = p); c is read off the entry's loss at T.
func (r *Report) plotLoss(dir, title string, ts []float64, groups []panel) error {
	h := r.Summary.HindsightLoss
	if h == nil {
		return nil
	}
	T := float64(r.Summary.Horizon)
	var panels []*plot.Plot
	for k, g := range groups {
		p := newPlot(panelTitle(title+": loss", g.title, k, len(groups)), "t (log scale)", "loss (1 - average reward, 95% CI)", ts)
		p.Y.Min, p.Y.Max = 0, 1
		var l layers
		for n, i := range g.series {
			res, cv := r.Summary.Results[i], r.Curves[i]
			c := res.Metrics["loss"] - res.RegretMean/T
			l.band(p, ts, lossCurve(c, cv.Regret.CILo, ts), lossCurve(c, cv.Regret.CIHi, ts), g.colors[n])
			l.line(p, ts, lossCurve(c, cv.Regret.Mean, ts), g.labels[n], g.colors[n], g.dashes[n], false)
		}
		l.line(p, ts, filled(len(ts), *h), "least squares, hindsight", len(g.series), seriesDashes(2), false)
		l.draw()
		panels = append(panels, p)
	}
	return r.save(panels, dir, "loss")
}

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
