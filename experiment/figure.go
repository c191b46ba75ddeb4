package experiment

import (
	"fmt"
	"image/color"
	"image/png"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgpdf"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Figure geometry, for print: one panel at a journal's column width, more
// at its page width, each panel 1.6 times as wide as high, every text at
// 8 points or more, the PNG at 300 dpi.
const (
	columnWidth = 3.5 * vg.Inch
	pageWidth   = 7 * vg.Inch
	panelAspect = 1.6
	textSize    = 8 * vg.Length(1)
	titleSize   = 9 * vg.Length(1)
	pngDPI      = 300
	// maxPanels bounds the grid (3 x 3), maxLegend the legend's entries
	// and maxLegendRows its rows, so that a figure's size is bounded
	// whatever the number of curves (at most 7 x 8 inches): more panels
	// are thinned to maxPanels evenly spaced ones, more entries cut.
	maxPanels     = 9
	maxLegend     = 36
	maxLegendRows = 12
	// maxFigureBytes is the most memory a figure's raster takes while it
	// is written (7 x 8 inches at 300 dpi, 4 bytes a pixel: 20 MiB), the
	// bound a memory estimate counts for the plots whatever the curves.
	maxFigureBytes = 7 * 8 * pngDPI * pngDPI * 4
	// maxTitleLines and maxNoteLines bound the title and the notes
	// drawn in the figure (the report prints the notes in full).
	maxTitleLines = 2
	maxNoteLines  = 8
	// coincideTol is the distance, as a fraction of the y axis' range,
	// below which two curves are said to coincide: about the width of a
	// line in a panel 1.5 inches high.
	coincideTol = 0.01
	// minBandRuns is the fewest runs a 95% band is drawn from: below, the
	// t quantile (12.7 at 2 runs, 2.8 at 5) makes a band that says more
	// about the number of runs than about the algorithm.
	minBandRuns = 10
)

// figure is one figure, written as name.svg, name.pdf and name.png: a
// title, panels in a grid of at most maxPanels, one legend below them
// for every panel, and notes, the statements its caption makes (curves
// that coincide, bands not drawn, where a curve starts and why).
type figure struct {
	name, title string
	panels      []*figPanel
	notes       []string
	keys        []legendEntry // entries for a kind of line, after the curves'
}

// figPanel is one panel of a figure: a plot, its bands (drawn under
// every line) and its curves (drawn, given a legend entry and compared
// with each other for coincidence when the figure is saved).
type figPanel struct {
	title  string // its own title (a budget, a data set), lettered when the figure is finished
	p      *plot.Plot
	logY   bool
	bands  []plot.Plotter
	curves []figCurve
	extra  []plot.Plotter // drawn over the lines (error bars)
}

// figCurve is one curve of a panel.
type figCurve struct {
	label string
	x, y  []float64
	style curveStyle
}

// curveStyle is how a curve is told apart: a colour of the palette, a
// dash pattern and a marker, each an index into its list.
type curveStyle struct{ colour, dash, marker int }

// styleOf is the i-th curve's style: the i-th colour, dash pattern and
// marker (the 8th curve on repeats none of its predecessors' triples).
func styleOf(i int) curveStyle {
	return curveStyle{colour: i, dash: i / len(palette), marker: i + i/len(palette)}
}

// withDash returns s with the dash pattern d.
func (s curveStyle) withDash(d int) curveStyle { s.dash = d; return s }

// palette holds colours told apart with the common colour-vision
// deficiencies (Okabe and Ito's, without its yellow, which is lost on
// white, and with a grey).
var palette = []color.Color{
	color.RGBA{0x00, 0x72, 0xb2, 255}, color.RGBA{0xd5, 0x5e, 0x00, 255}, color.RGBA{0x00, 0x9e, 0x73, 255},
	color.RGBA{0xcc, 0x79, 0xa7, 255}, color.RGBA{0xe6, 0x9f, 0x00, 255}, color.RGBA{0x56, 0xb4, 0xe9, 255},
	color.RGBA{0x00, 0x00, 0x00, 255}, color.RGBA{0x88, 0x88, 0x88, 255},
}

// dashPatterns are solid, dashed, dotted and dash-dotted.
var dashPatterns = [][]vg.Length{{}, {vg.Points(5), vg.Points(2.5)}, {vg.Points(1), vg.Points(2)}, {vg.Points(5), vg.Points(2), vg.Points(1), vg.Points(2)}}

// markers are the curves' glyphs, filled and open.
var markers = []draw.GlyphDrawer{draw.CircleGlyph{}, draw.BoxGlyph{}, draw.PyramidGlyph{}, draw.CrossGlyph{}, draw.RingGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{}, draw.PlusGlyph{}}

// Dash indices with a meaning.
const (
	dashSolid = iota
	dashDashed
	dashDotted
	dashDotDash
)

// seriesColor returns the i-th colour.
func seriesColor(i int) color.Color { return palette[i%len(palette)] }

// newFigure returns an empty figure.
func newFigure(name, title string) *figure { return &figure{name: name, title: title} }

// note adds a statement to the figure's caption, once.
func (f *figure) note(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	if !slices.Contains(f.notes, s) {
		f.notes = append(f.notes, s)
	}
}

// key adds a legend entry for a kind of line (a bound, say): a grey line
// of dash pattern d.
func (f *figure) key(label string, d int) {
	l := &plotter.Line{LineStyle: draw.LineStyle{Color: color.Gray{Y: 80}, Width: vg.Points(1.1), Dashes: dashPatterns[d]}}
	f.keys = append(f.keys, legendEntry{label: label, style: curveStyle{colour: -1, dash: d, marker: -1}, thumbs: []plot.Thumbnailer{l}})
}

// panel adds a panel titled title (empty: the figure's title says it;
// lettered (a), (b), ... when the figure has several) whose x axis is logarithmic over the range of xs (widened to a decade
// when xs holds one value).
func (f *figure) panel(title, x, y string, xs []float64) *figPanel {
	fp := &figPanel{title: title, p: newPlot(title, x, y, xs)}
	f.panels = append(f.panels, fp)
	return fp
}

// newPlot returns a plot at the figures' text sizes whose x axis is
// logarithmic over the range of xs (positive values), widened to a
// decade when xs holds a single value, and whose y axis has niceTicks.
func newPlot(title, x, y string, xs []float64) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = textSize
	p.Title.Padding = vg.Points(2)
	p.X.Label.Text = x
	p.Y.Label.Text = y
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font.Size = textSize
		a.Tick.Label.Font.Size = textSize
		a.Padding = vg.Points(2)
		a.Label.Padding = vg.Points(2)
	}
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = logTicks{}
	p.Y.Tick.Marker = niceTicks{}
	if len(xs) > 0 {
		lo, hi := slices.Min(xs), slices.Max(xs)
		if hi <= lo {
			hi = lo * 10
		}
		p.X.Min, p.X.Max = lo, hi
	}
	g := plotter.NewGrid()
	g.Vertical.Color, g.Horizontal.Color = color.Gray{Y: 225}, color.Gray{Y: 225}
	g.Vertical.Width, g.Horizontal.Width = vg.Points(0.4), vg.Points(0.4)
	p.Add(g)
	return p
}

// setLogY makes the panel's y axis logarithmic (curves keep only their
// positive points).
func (fp *figPanel) setLogY() {
	fp.logY = true
	fp.p.Y.Scale = plot.LogScale{}
	fp.p.Y.Tick.Marker = logTicks{}
}

// setLinearX makes the panel's x axis linear (alpha from 0, say).
func (fp *figPanel) setLinearX() {
	fp.p.X.Scale = plot.LinearScale{}
	fp.p.X.Tick.Marker = niceTicks{}
}

// band adds the translucent area between lo and hi in the style's colour.
func (fp *figPanel) band(x, lo, hi []float64, s curveStyle) {
	var ring plotter.XYs
	for k := range x {
		if finite(lo[k]) && finite(hi[k]) {
			ring = append(ring, plotter.XY{X: x[k], Y: lo[k]})
		}
	}
	for k := len(x) - 1; k >= 0; k-- {
		if finite(lo[k]) && finite(hi[k]) {
			ring = append(ring, plotter.XY{X: x[k], Y: hi[k]})
		}
	}
	if len(ring) < 3 {
		return
	}
	poly, err := plotter.NewPolygon(ring)
	if err != nil {
		return
	}
	r, g, b, _ := seriesColor(s.colour).RGBA()
	poly.Color = color.NRGBA{R: uint8(r >> 8), G: uint8(g >> 8), B: uint8(b >> 8), A: 50}
	poly.LineStyle = draw.LineStyle{}
	fp.bands = append(fp.bands, poly)
}

// line adds a curve (NaN and infinite points, and non-positive ones on a
// log y axis, are skipped) and reports whether it has a point. An empty
// label adds no legend entry and no comparison.
func (fp *figPanel) line(x, y []float64, label string, s curveStyle) bool {
	yy := make([]float64, len(y))
	n := 0
	for k := range y {
		yy[k] = math.NaN()
		if finite(y[k]) && (!fp.logY || y[k] > 0) {
			yy[k] = y[k]
			n++
		}
	}
	if n == 0 {
		return false
	}
	fp.curves = append(fp.curves, figCurve{label: label, x: x, y: yy, style: s})
	return true
}

// errorBars adds symmetric error bars of half-widths half at (x, y).
func (fp *figPanel) errorBars(x, y, half []float64, s curveStyle) {
	var xy plotter.XYs
	var errs plotter.YErrors
	for k := range x {
		if finite(y[k]) && finite(half[k]) && half[k] > 0 {
			xy = append(xy, plotter.XY{X: x[k], Y: y[k]})
			errs = append(errs, struct{ Low, High float64 }{half[k], half[k]})
		}
	}
	if len(xy) == 0 {
		return
	}
	eb, err := plotter.NewYErrorBars(struct {
		plotter.XYs
		plotter.YErrors
	}{xy, errs})
	if err != nil {
		return
	}
	eb.Color = seriesColor(s.colour)
	eb.CapWidth = vg.Points(4)
	fp.extra = append(fp.extra, eb)
}

// hline adds a flat reference line at y, grey and dashed, without legend.
func (fp *figPanel) hline(y float64) {
	l := plotter.NewFunction(func(float64) float64 { return y })
	l.Color = color.Gray{Y: 110}
	l.Width = vg.Points(0.6)
	l.Dashes = dashPatterns[dashDashed]
	fp.extra = append(fp.extra, l)
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// markerCount is the number of markers a curve of many points carries
// (a curve of at most 2 x markerCount points is marked at every point).
const markerCount = 6

// finish adds the panel's bands, lines and markers to its plot, and
// returns its legend entries and the groups of curves that coincide.
func (fp *figPanel) finish() (entries []legendEntry, same [][]string) {
	for _, b := range fp.bands {
		fp.p.Add(b)
	}
	for k, c := range fp.curves {
		var xy plotter.XYs
		var idx []int
		for i := range c.x {
			if !math.IsNaN(c.y[i]) {
				xy = append(xy, plotter.XY{X: c.x[i], Y: c.y[i]})
				idx = append(idx, i)
			}
		}
		l, err := plotter.NewLine(xy)
		if err != nil {
			continue
		}
		l.Color = seriesColor(c.style.colour)
		l.Dashes = dashPatterns[c.style.dash%len(dashPatterns)]
		l.Width = vg.Points(1.1)
		fp.p.Add(l)
		thumbs := []plot.Thumbnailer{l}
		if c.style.marker >= 0 {
			sc, err := plotter.NewScatter(markerPoints(xy, k, len(fp.curves), fp.p.X.Scale))
			if err != nil {
				continue
			}
			sc.GlyphStyle = draw.GlyphStyle{Color: l.Color, Radius: vg.Points(2), Shape: markers[c.style.marker%len(markers)]}
			fp.p.Add(sc)
			thumbs = append(thumbs, sc)
		}
		if c.label != "" {
			entries = append(entries, legendEntry{label: c.label, style: c.style, thumbs: thumbs})
		}
	}
	fp.p.Add(fp.extra...)
	return entries, fp.coinciding()
}

// markerPoints returns where a curve of points xy carries its markers:
// every point when it has at most 2 x markerCount, else markerCount
// points evenly spaced along the x axis (on its scale), shifted by a
// fraction k/n of the spacing for the k-th of n curves, so that two
// curves that coincide still show both markers.
func markerPoints(xy plotter.XYs, k, n int, scale plot.Normalizer) plotter.XYs {
	if len(xy) <= 2*markerCount {
		return xy
	}
	lo, hi := xy[0].X, xy[len(xy)-1].X
	var out plotter.XYs
	j := 0
	for m := range markerCount {
		at := (float64(m) + 0.5 + float64(k)/float64(max(n, 1)) - 0.5) / markerCount
		for j < len(xy)-1 && scale.Normalize(lo, hi, xy[j].X) < at {
			j++
		}
		if len(out) == 0 || out[len(out)-1] != xy[j] {
			out = append(out, xy[j])
		}
	}
	return out
}

// coinciding returns the groups of labelled curves of the panel drawn
// on one another, each in the order drawn: each curve joins the group of
// the first earlier curve (itself first in its group) that is defined at
// the same points and never further from it than coincideTol of the y
// axis' range (on a log axis, of its decades). No chain: every member is
// within that distance of its group's first.
func (fp *figPanel) coinciding() [][]string {
	lo, hi := fp.p.Y.Min, fp.p.Y.Max
	f := func(y float64) float64 { return y }
	if fp.logY {
		f = math.Log10
	}
	span := f(hi) - f(lo)
	if !(span > 0) {
		return nil
	}
	var groups [][]int
	for b, cb := range fp.curves {
		if cb.label == "" {
			continue
		}
		k := slices.IndexFunc(groups, func(g []int) bool {
			d, ok := maxGap(fp.curves[g[0]], cb, f)
			return ok && d <= coincideTol*span
		})
		if k < 0 {
			groups = append(groups, []int{b})
			continue
		}
		groups[k] = append(groups[k], b)
	}
	var out [][]string
	for _, g := range groups {
		if len(g) > 1 {
			labels := make([]string, len(g))
			for i, c := range g {
				labels[i] = fp.curves[c].label
			}
			out = append(out, labels)
		}
	}
	return out
}

// coincidence is a group of curves that coincide, and the panels where.
type coincidence struct{ labels, panels []string }

// sentence says that the curves coincide: "rs-oful coincides with oful",
// "b, c and d coincide with a".
func (c coincidence) sentence() string {
	later := c.labels[1:]
	if len(later) == 1 {
		return fmt.Sprintf("%s coincides with %s", later[0], c.labels[0])
	}
	return fmt.Sprintf("%s and %s coincide with %s", strings.Join(later[:len(later)-1], ", "), later[len(later)-1], c.labels[0])
}

// maxGap returns the largest distance between two curves over their
// points, through f, and whether they are comparable (the same x and the
// same points defined).
func maxGap(a, b figCurve, f func(float64) float64) (float64, bool) {
	if !slices.Equal(a.x, b.x) {
		return 0, false
	}
	gap := 0.0
	for i := range a.y {
		na, nb := math.IsNaN(a.y[i]), math.IsNaN(b.y[i])
		if na != nb {
			return 0, false
		}
		if !na {
			gap = max(gap, math.Abs(f(a.y[i])-f(b.y[i])))
		}
	}
	return gap, true
}

// legendEntry is one entry of a figure's legend.
type legendEntry struct {
	label  string
	style  curveStyle
	thumbs []plot.Thumbnailer
}

// finish finishes every panel (after thinning them to maxPanels), notes
// the curves that coincide, and returns the legend's entries, each
// label and style once.
func (f *figure) finish() []legendEntry {
	if n := len(f.panels); n > maxPanels {
		var kept []*figPanel
		for _, i := range spread(n, maxPanels) {
			kept = append(kept, f.panels[i])
		}
		f.panels = kept
		f.note("%d of %d panels shown, evenly spaced (regret.csv and summary.json hold every curve)", maxPanels, n)
	}
	for k, fp := range f.panels {
		fp.p.Title.Text = panelTitle(fp.title, k, len(f.panels))
	}
	var entries []legendEntry
	var groups []coincidence
	for _, fp := range f.panels {
		es, same := fp.finish()
		for _, e := range es {
			if !slices.ContainsFunc(entries, func(x legendEntry) bool { return x.label == e.label && x.style == e.style }) {
				entries = append(entries, e)
			}
		}
		for _, g := range same {
			k := slices.IndexFunc(groups, func(x coincidence) bool { return slices.Equal(x.labels, g) })
			if k < 0 {
				groups = append(groups, coincidence{labels: g})
				k = len(groups) - 1
			}
			groups[k].panels = append(groups[k].panels, fp.p.Title.Text)
		}
	}
	for _, g := range groups {
		in := ""
		if len(f.panels) > 1 && len(g.panels) < len(f.panels) {
			in = " (" + strings.Join(g.panels, "; ") + ")"
		}
		f.note("%s%s", g.sentence(), in)
	}
	if len(entries) > maxLegend {
		f.note("The legend names %d of %d curves", maxLegend, len(entries))
		entries = entries[:maxLegend]
	}
	return append(entries, f.keys...)
}

// spread returns k indices of 0..n-1 evenly spaced, the first and the
// last among them (all of them when n <= k).
func spread(n, k int) []int {
	if n <= k {
		return seq(n)
	}
	out := make([]int, k)
	for i := range out {
		out[i] = int(math.Round(float64(i) * float64(n-1) / float64(k-1)))
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

// textStyle is the figures' text style at size points.
func textStyle(size vg.Length) text.Style {
	return text.Style{Color: color.Black, Font: font.From(plot.DefaultFont, size), Handler: plot.DefaultTextHandler}
}

// wrap breaks s into lines no wider than w in sty, at most n of them,
// the last ending in "…" when s does not fit.
func wrap(s string, sty text.Style, w vg.Length, n int) []string {
	var lines []string
	cur := ""
	for _, word := range strings.Fields(s) {
		try := strings.TrimSpace(cur + " " + word)
		if sty.Width(try) <= w || cur == "" {
			cur = try
			continue
		}
		lines = append(lines, cur)
		cur = word
	}
	if cur != "" {
		lines = append(lines, cur)
	}
	for i := range lines {
		lines[i] = truncate(lines[i], sty, w)
	}
	if len(lines) > n {
		lines = lines[:n]
		lines[n-1] = truncate(lines[n-1]+"…", sty, w)
		if !strings.HasSuffix(lines[n-1], "…") {
			lines[n-1] = truncate(strings.TrimSuffix(lines[n-1], " ")+" …", sty, w)
		}
	}
	return lines
}

// truncate cuts s to fit w in sty, ending it in "…" when cut.
func truncate(s string, sty text.Style, w vg.Length) string {
	if sty.Width(s) <= w {
		return s
	}
	r := []rune(s)
	lo, hi := 0, len(r) // the longest prefix that fits with "…"
	for lo < hi {
		m := (lo + hi + 1) / 2
		if sty.Width(string(r[:m])+"…") <= w {
			lo = m
		} else {
			hi = m - 1
		}
	}
	return string(r[:lo]) + "…"
}

// layout is where a figure's parts go, in points from its top.
type layout struct {
	w, h                  vg.Length
	cols, rows            int
	cellW, cellH          vg.Length
	title, notes          []string
	legendCols, legendRow int // columns of the legend and rows per column
	legendW               vg.Length
	labels                []string // the legend's labels, fitted to a column
}

const figPad = 4 * vg.Length(1) // points between a figure's parts

// layoutOf lays the finished figure out: one panel at column width,
// more at page width in 2 (up to 4) or 3 columns, each panel panelAspect
// times as wide as high; the title wrapped above, the legend below in as
// many columns as its widest label allows (labels cut to fit), the notes
// wrapped below it.
func (f *figure) layoutOf(entries []legendEntry) layout {
	var l layout
	n := len(f.panels)
	l.w, l.cols = columnWidth, 1
	switch {
	case n == 1 && len(entries) > 8: // a legend of many lines: at page width, in columns
		l.w = pageWidth
	case n > 4:
		l.w, l.cols = pageWidth, 3
	case n > 1:
		l.w, l.cols = pageWidth, 2
	}
	l.rows = (n + l.cols - 1) / l.cols
	l.cellW = l.w / vg.Length(l.cols)
	l.cellH = l.cellW / panelAspect
	inner := l.w - 2*figPad
	l.title = wrap(f.title, textStyle(titleSize), inner, maxTitleLines)
	sty := textStyle(textSize)
	const thumb, gap = 16 * vg.Length(1), 8 * vg.Length(1)
	widest := vg.Length(0)
	for _, e := range entries {
		widest = max(widest, sty.Width(e.label))
	}
	l.legendCols = max(1, min(4, len(entries), int(inner/(thumb+gap+sty.Width(" ")+widest))))
	l.legendW = inner / vg.Length(l.legendCols)
	if n := maxLegendRows * l.legendCols; len(entries) > n {
		f.note("The legend names %d of %d curves", n, len(entries))
		entries = entries[:n]
	}
	for _, e := range entries {
		l.labels = append(l.labels, truncate(e.label, sty, l.legendW-thumb-gap-sty.Width(" ")))
	}
	if len(entries) > 0 {
		l.legendRow = (len(entries) + l.legendCols - 1) / l.legendCols
	}
	for _, s := range f.notes {
		l.notes = append(l.notes, wrap(s+".", sty, inner, maxNoteLines)...)
	}
	if len(l.notes) > maxNoteLines {
		l.notes = l.notes[:maxNoteLines]
		l.notes[maxNoteLines-1] = truncate(l.notes[maxNoteLines-1]+" …", sty, inner)
	}
	// The y axis is named once a row when every panel has the same name,
	// and no name is longer than the panel is high (gonum would shrink
	// the data to fit it).
	same := !slices.ContainsFunc(f.panels, func(fp *figPanel) bool { return fp.p.Y.Label.Text != f.panels[0].p.Y.Label.Text })
	for i, fp := range f.panels {
		if same && i%l.cols != 0 {
			fp.p.Y.Label.Text = ""
		}
		fp.p.Y.Label.Text = truncate(fp.p.Y.Label.Text, sty, l.cellH-5*textSize)
	}
	l.h = figPad + lineHeight(titleSize)*vg.Length(len(l.title)) + vg.Length(l.rows)*l.cellH +
		figPad + lineHeight(textSize)*vg.Length(l.legendRow+len(l.notes)) + 2*figPad
	return l
}

// lineHeight is the height of a line of text at size points.
func lineHeight(size vg.Length) vg.Length { return size * 1.25 }

// save finishes and lays the figure out and writes it as name.svg,
// name.pdf and name.png in dir, atomically. gonum/plot panics on some
// degenerate data; that becomes an error, so a run never loses its
// numbers to a plot. It returns the files written.
func (f *figure) save(dir string) (files []string, err error) {
	defer func() {
		if r := recover(); r != nil {
			files, err = nil, fmt.Errorf("plot %s: %v", f.name, r)
		}
	}()
	if len(f.panels) == 0 {
		return nil, nil
	}
	entries := f.finish()
	l := f.layoutOf(entries)
	paint := func(c draw.Canvas) { f.paint(c, l, entries) }
	if err := saveCanvas(paint, l.w, l.h, pngDPI, dir, f.name); err != nil {
		return nil, err
	}
	return []string{f.name + ".svg", f.name + ".pdf", f.name + ".png"}, nil
}

// paint draws the laid-out figure on c.
func (f *figure) paint(c draw.Canvas, l layout, entries []legendEntry) {
	top := c.Max.Y - figPad
	ts := textStyle(titleSize)
	ts.XAlign, ts.YAlign = draw.XCenter, draw.YTop
	for _, s := range l.title {
		c.FillText(ts, vg.Point{X: (c.Min.X + c.Max.X) / 2, Y: top}, s)
		top -= lineHeight(titleSize)
	}
	for i, fp := range f.panels {
		r, k := i/l.cols, i%l.cols
		x0 := c.Min.X + vg.Length(k)*l.cellW
		y1 := top - vg.Length(r)*l.cellH
		fp.p.Draw(draw.Canvas{Canvas: c.Canvas, Rectangle: vg.Rectangle{
			Min: vg.Point{X: x0 + figPad, Y: y1 - l.cellH + figPad},
			Max: vg.Point{X: x0 + l.cellW - figPad, Y: y1},
		}})
	}
	top -= vg.Length(l.rows)*l.cellH + figPad
	sty := textStyle(textSize)
	for k := range l.legendCols {
		leg := plot.NewLegend()
		leg.TextStyle = sty
		leg.ThumbnailWidth = 16
		leg.Top, leg.Left = true, true
		leg.Padding = lineHeight(textSize) - sty.Rectangle("Ag").Max.Y // rows at lineHeight
		for j := k * l.legendRow; j < min((k+1)*l.legendRow, len(l.labels)); j++ {
			leg.Add(l.labels[j], entries[j].thumbs...)
		}
		x0 := c.Min.X + figPad + vg.Length(k)*l.legendW
		leg.Draw(draw.Canvas{Canvas: c.Canvas, Rectangle: vg.Rectangle{
			Min: vg.Point{X: x0, Y: top - lineHeight(textSize)*vg.Length(l.legendRow)},
			Max: vg.Point{X: x0 + l.legendW, Y: top},
		}})
	}
	top -= lineHeight(textSize)*vg.Length(l.legendRow) + figPad
	sty.YAlign = draw.YTop
	for _, s := range l.notes {
		c.FillText(sty, vg.Point{X: c.Min.X + figPad, Y: top}, s)
		top -= lineHeight(textSize)
	}
}

// saveCanvas writes what paint draws on a w x h canvas as name.svg,
// name.pdf and name.png (at dpi) in dir, atomically.
func saveCanvas(paint func(draw.Canvas), w, h vg.Length, dpi int, dir, name string) error {
	svg := vgsvg.New(w, h)
	pdf := vgpdf.New(w, h)
	// Not embedded: the fonts are metric clones of Times, which every
	// PDF reader has (a PDF of 10 kB, not 400).
	pdf.EmbedFonts(false)
	for _, v := range []struct {
		c interface {
			vg.CanvasSizer
			io.WriterTo
		}
		ext string
	}{{svg, ".svg"}, {pdf, ".pdf"}} {
		paint(draw.New(v.c))
		if err := writeFile(filepath.Join(dir, name+v.ext), func(out io.Writer) error {
			_, err := v.c.WriteTo(out)
			return err
		}); err != nil {
			return err
		}
	}
	img := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(dpi))
	paint(draw.New(img))
	// The fastest deflate: about 40% of the default's time on these
	// plots, whose flat areas compress well at any level (files about 5%
	// larger).
	enc := png.Encoder{CompressionLevel: png.BestSpeed}
	return writeFile(filepath.Join(dir, name+".png"), func(out io.Writer) error { return enc.Encode(out, img.Image()) })
}

// savePlot writes one plot as name.svg, name.pdf and name.png (192
// dpi: the audit's chart is 9 inches wide and grows with its rows) in
// dir, atomically, its legend where the plot puts it.
func savePlot(p *plot.Plot, w, h vg.Length, dir, name string) error {
	return saveCanvas(p.Draw, w, h, 192, dir, name)
}
