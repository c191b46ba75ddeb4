package experiment

import (
	"context"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestCoincidingCurves: curves within coincideTol of the y range of each
// other everywhere are said to coincide (on a log axis in decades);
// curves apart somewhere, defined at other points, or close only through
// a chain of curves, are not.
func TestCoincidingCurves(t *testing.T) {
	xs := []float64{1, 10, 100, 1000}
	f := newFigure("x", "x")
	fp := f.panel("", "t", "loss", xs)
	fp.p.Y.Min, fp.p.Y.Max = 0, 1
	fp.line(xs, []float64{0.5, 0.6, 0.7, 0.8}, "oful", styleOf(0))
	fp.line(xs, []float64{0.505, 0.6, 0.695, 0.8}, "rs-oful", styleOf(1))                  // within 1% of [0, 1]
	fp.line(xs, []float64{0.5, 0.6, 0.7, 0.83}, "adac-oful rho=1", styleOf(2))             // 3% apart at the end
	fp.line(xs, []float64{math.NaN(), 0.6, 0.7, 0.8}, "adac-oful rho=10", styleOf(3))      // other points
	fp.line(xs, []float64{0.2, 0.2, 0.2, 0.2}, "uniform", styleOf(4))                      //
	fp.line(xs, []float64{0.209, 0.209, 0.209, 0.209}, "uniform again", styleOf(5))        // 0.009 from uniform
	fp.line(xs, []float64{0.218, 0.218, 0.218, 0.218}, "uniform a third time", styleOf(6)) // 0.009 from the second
	f.finish()
	want := []string{"rs-oful coincides with oful", "uniform again coincides with uniform"}
	if !slices.Equal(f.notes, want) {
		t.Errorf("notes %q, want %q", f.notes, want)
	}

	g := newFigure("y", "y")
	lp := g.panel("", "t", "regret", xs)
	lp.setLogY()
	lp.line(xs, []float64{1, 10, 100, 1000}, "a", styleOf(0))
	lp.line(xs, []float64{1.05, 10.5, 105, 1050}, "b", styleOf(1)) // 0.02 decades of 3: within 1%
	lp.line(xs, []float64{1.2, 12, 120, 1200}, "c", styleOf(2))    // 0.08 decades: apart
	g.finish()
	if !slices.Equal(g.notes, []string{"b coincides with a"}) {
		t.Errorf("log axis: notes %q", g.notes)
	}
}

// TestFigureBounded: a run with many budgets (the issue's --rho with
// 1,000 values wrote a 2722 x 384000-pixel regret.png) draws bounded
// figures, at most maxPanels panels, says which it shows, and writes SVG
// and PDF beside each PNG, all small.
func TestFigureBounded(t *testing.T) {
	t.Parallel()
	c := Defaults()
	c.Env = "bernoulli:0.7,0.3"
	c.Algos = []string{"adac-ucb", "ucb-doubling"}
	c.Horizon, c.Runs, c.Checkpoints = 50, 2, 10
	c.Rho = nil
	for i := range 120 {
		c.Rho = append(c.Rho, math.Pow(10, -2+4*float64(i)/119))
	}
	dir := t.TempDir()
	rep, err := Run(context.Background(), c, Options{Out: dir})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"regret", "pop", "diff"} {
		for _, ext := range []string{".svg", ".pdf", ".png"} {
			st, err := os.Stat(filepath.Join(dir, name+ext))
			if err != nil {
				t.Fatal(err)
			}
			if st.Size() > 2<<20 {
				t.Errorf("%s%s is %d bytes, want at most 2 MiB", name, ext, st.Size())
			}
		}
		f, err := os.Open(filepath.Join(dir, name+".png"))
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := png.DecodeConfig(f)
		f.Close()
		// At most the page's width, and a 3 x 3 grid with its title,
		// legend and notes below 8 inches, at 300 dpi.
		if err != nil || cfg.Width > 7*pngDPI || cfg.Height > 8*pngDPI || 4*cfg.Width*cfg.Height > maxFigureBytes {
			t.Errorf("%s.png is %dx%d (%v), want at most %dx%d", name, cfg.Width, cfg.Height, err, 7*pngDPI, 8*pngDPI)
		}
	}
	figs := rep.figures()
	if len(figs[0].panels) != 120 {
		t.Fatalf("regret: %d panels before thinning, want one per budget (120)", len(figs[0].panels))
	}
	figs[0].finish()
	if len(figs[0].panels) != maxPanels || !slices.ContainsFunc(figs[0].notes, func(n string) bool { return strings.HasPrefix(n, "9 of 120 panels shown") }) {
		t.Errorf("regret: %d panels, notes %q", len(figs[0].panels), figs[0].notes)
	}
	for k, fp := range figs[0].panels { // lettered as shown, not as before thinning
		if want := "(" + string(rune('a'+k)) + ") rho="; !strings.HasPrefix(fp.p.Title.Text, want) {
			t.Errorf("panel %d titled %q, want %q...", k, fp.p.Title.Text, want)
		}
	}
}

// TestFigureLayout: one panel is a column wide, several a page wide,
// every panel panelAspect times as wide as high, the legend below the
// panels (never beside them) and long titles wrapped to at most
// maxTitleLines lines that fit the width.
func TestFigureLayout(t *testing.T) {
	xs := []float64{1, 10}
	f := newFigure("x", strings.Repeat("a long title ", 200))
	fp := f.panel("", "t", "regret", xs)
	fp.line(xs, []float64{1, 2}, "a", styleOf(0))
	l := f.layoutOf(f.finish())
	if l.w != columnWidth || math.Abs(float64(l.cellW/l.cellH)-panelAspect) > 1e-9 {
		t.Errorf("one panel: width %v, cell %v x %v", l.w, l.cellW, l.cellH)
	}
	if len(l.title) != maxTitleLines || !strings.HasSuffix(l.title[maxTitleLines-1], "…") {
		t.Errorf("title lines %q", l.title)
	}
	for _, s := range l.title {
		if w := textStyle(titleSize).Width(s); w > l.w {
			t.Errorf("title line %q is %v wide, the figure %v", s, w, l.w)
		}
	}
	g := newFigure("y", "y")
	for range 4 {
		p := g.panel("", "t", "regret", xs)
		p.line(xs, []float64{1, 2}, "a", styleOf(0))
	}
	m := g.layoutOf(g.finish())
	if m.w != pageWidth || m.cols != 2 || m.rows != 2 || m.legendRow != 1 {
		t.Errorf("four panels: width %v, %d x %d, legend rows %d (one entry shared by the panels)", m.w, m.cols, m.rows, m.legendRow)
	}
	if g.panels[1].p.Y.Label.Text != "" || g.panels[2].p.Y.Label.Text != "regret" {
		t.Errorf("y labels %q, %q: want the first column's only", g.panels[1].p.Y.Label.Text, g.panels[2].p.Y.Label.Text)
	}
}

// TestLegendBounded: a legend of many long labels keeps at most
// maxLegendRows rows, says what it leaves out, and the figure stays
// within 7 x 8 inches.
func TestLegendBounded(t *testing.T) {
	xs := []float64{1, 10}
	f := newFigure("x", "x")
	for k := range 9 {
		fp := f.panel("", "t", "regret", xs)
		for i := range 12 {
			fp.line(xs, []float64{float64(i), float64(i + 1)}, strings.Repeat("long label ", 8)+string(rune('a'+k))+string(rune('a'+i)), styleOf(12*k+i))
		}
	}
	l := f.layoutOf(f.finish())
	if l.legendRow > maxLegendRows || len(l.labels) != l.legendCols*maxLegendRows {
		t.Errorf("legend: %d rows of %d columns, %d labels", l.legendRow, l.legendCols, len(l.labels))
	}
	if !slices.ContainsFunc(f.notes, func(n string) bool { return strings.HasPrefix(n, "The legend names") }) {
		t.Errorf("notes %q do not say the legend is cut", f.notes)
	}
	if l.w > pageWidth || l.h > 8*72 {
		t.Errorf("figure %v x %v points, want at most 504 x 576", l.w, l.h)
	}
}

// TestBandsNeedRuns: 95% bands are drawn from minBandRuns runs on; with
// fewer (the quick sparse preset's 2) none is drawn and the figure says
// so.
func TestBandsNeedRuns(t *testing.T) {
	ts := []float64{1000, 2000, 10000, 100000}
	for _, runs := range []int{2, minBandRuns} {
		r := popReport(runs)
		f := r.regretFigure("x", ts, r.panels())
		said := slices.ContainsFunc(f.notes, func(n string) bool { return strings.HasPrefix(n, "No 95% bands") })
		if drawn := len(f.panels[0].bands) > 0; drawn != (runs >= minBandRuns) || said == drawn {
			t.Errorf("%d runs: bands drawn %v, notes %q", runs, drawn, f.notes)
		}
	}
}
