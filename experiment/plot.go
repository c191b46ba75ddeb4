package experiment

import (
	"fmt"
	"image/color"
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
	for k, g := range groups {
		p := newPlot(panelTitle(title, k, len(groups)), "t (log scale)", "pseudo-regret (mean, 95% CI)", ts)
		for _, i := range g {
			cv := r.Curves[i]
			addBand(p, ts, cv.Regret.CILo, cv.Regret.CIHi, i)
			addLine(p, ts, cv.Regret.Mean, cv.Label, i, nil, false)
		}
		regret = append(regret, p)
	}
	if err := r.save(regret, dir, "regret"); err != nil {
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
		p := newPlot(panelTitle(title+": price of privacy", k, len(groups)), "t (log scale)", "PoP = (Reg_priv - Reg_ref) / Reg_ref", ts)
		any := false
		for _, i := range g {
			cv := r.Curves[i]
			if cv.Ref < 0 {
				continue
			}
			any = addLine(p, ts, r.popShown(cv), cv.Label+" vs "+r.Curves[cv.Ref].Label, i, nil, false) || any
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

// panels splits the curves into groups of at most maxSeries for separate
// panels: one panel when they fit, else the curves of each algorithm
// kept together (with their references), packed in order.
func (r *Report) panels() [][]int {
	if len(r.Curves) <= maxSeries {
		return [][]int{seq(len(r.Curves))}
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
	var out [][]int
	for _, g := range byAlgo {
		if n := len(out); n > 0 && len(out[n-1])+len(g) <= perPanel {
			out[n-1] = append(out[n-1], g...)
		} else {
			out = append(out, slices.Clone(g))
		}
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

// panelTitle numbers the panels of a split plot.
func panelTitle(title string, k, n int) string {
	if n == 1 {
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
	p.Y.Tick.Marker = logTicks{}
	drawn := false
	for i, cv := range r.Curves {
		drawn = addLine(p, ts, cv.Regret.Mean, cv.Label, i, []vg.Length{}, true) || drawn
		if cv.Upper != nil {
			addLine(p, ts, cv.Upper, "", i, dashed, true)
		}
		if cv.Lower != nil {
			addLine(p, ts, cv.Lower, "", i, dotted, true)
		}
	}
	if !drawn {
		return nil // no positive regret to draw on a log axis (T = 1, say)
	}
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
		}
	}
	return r.save([]*plot.Plot{p}, dir, "bounds")
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

// save draws each panel with its legend in a column to its right, outside
// the data area, the panels stacked top to bottom, into name.svg and
// name.png.
func save(panels []*plot.Plot, dir, name string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("plot %s: %v", name, r)
		}
	}()
	const width = 8 * vg.Inch
	legW, heights := vg.Length(0), make([]vg.Length, len(panels))
	legends := make([]plot.Legend, len(panels))
	var total vg.Length
	for i, p := range panels {
		legends[i] = p.Legend
		p.Legend = plot.NewLegend() // drawn beside the panel, not on it
		legends[i].Top, legends[i].Left = true, true
		lw, lh := legendSize(&legends[i])
		if lw > 0 {
			legW = max(legW, lw+vg.Points(12))
		}
		heights[i] = max(4*vg.Inch, lh+vg.Inch)
		total += heights[i]
	}
	paint := func(dc draw.Canvas) {
		top := total
		for i, p := range panels {
			area := draw.Crop(dc, 0, 0, top-heights[i], -(total - top))
			top -= heights[i]
			p.Draw(draw.Crop(area, 0, -legW, 0, 0))
			if legW > 0 {
				legends[i].Draw(draw.Crop(area, width, 0, 0, 0))
			}
		}
	}
	return saveCanvas(paint, width+legW, total, dir, name)
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

// saveCanvas writes what paint draws on a w x h canvas as name.svg and
// name.png in dir, atomically.
func saveCanvas(paint func(draw.Canvas), w, h vg.Length, dir, name string) error {
	for _, ext := range []string{"svg", "png"} {
		var c interface {
			vg.CanvasSizer
			io.WriterTo
		}
		if ext == "svg" {
			c = vgsvg.New(w, h)
		} else {
			c = vgimg.PngCanvas{Canvas: vgimg.New(w, h)}
		}
		paint(draw.New(c))
		if err := writeFile(filepath.Join(dir, name+"."+ext), func(out io.Writer) error {
			_, err := c.WriteTo(out)
			return err
		}); err != nil {
			return err
		}
	}
	return nil
}

// logTicks marks a log axis at the powers of 10, or, when its range holds
// fewer than two of them (a regret between 26 and 50, say), at the
// default linear ticks, so that the axis always has labels.
type logTicks struct{}

// Ticks implements plot.Ticker.
func (logTicks) Ticks(min, max float64) []plot.Tick {
	t := plot.LogTicks{Prec: -1}.Ticks(min, max)
	labels := 0
	for _, x := range t {
		if x.Label != "" && x.Value >= min && x.Value <= max {
			labels++
		}
	}
	if labels >= 2 {
		return t
	}
	return plot.DefaultTicks{}.Ticks(min, max)
}
