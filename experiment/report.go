package experiment

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot/vg"

	"github.com/dpbandit/dpbandit/privacy"
	"github.com/dpbandit/dpbandit/sim"
)

// tableNum formats a table cell in one format for every magnitude a
// column holds (never an exponent for a regret): no decimals from 1000
// up (89060), 4 significant digits below (38.81, 0.1234), and an
// exponent only below 10^-3.
func tableNum(x float64) string {
	a := math.Abs(x)
	switch {
	case x == 0 || math.IsNaN(x) || math.IsInf(x, 0):
		return strconv.FormatFloat(x, 'f', -1, 64)
	case a >= 999.5:
		return strconv.FormatFloat(x, 'f', 0, 64)
	case a >= 1e-3:
		return strconv.FormatFloat(x, 'f', 3-int(math.Floor(math.Log10(a))), 64)
	}
	return strconv.FormatFloat(x, 'e', 2, 64)
}

var indexTmpl = template.Must(template.New("index").Funcs(template.FuncMap{
	"num": tableNum,
	// anchor is a section's id: its folder with / and = as -.
	"anchor": func(dir string) string { return strings.NewReplacer("/", "-", "=", "-").Replace(dir) },
	"opt": func(x *float64) string {
		if x == nil {
			return ""
		}
		return tableNum(*x)
	},
	"image": func(name string) bool { return strings.HasSuffix(name, ".svg") || strings.HasSuffix(name, ".png") },
	"pm": func(m, se *float64, runs int) string {
		if m == nil || se == nil {
			return ""
		}
		return tableNum(*m) + " ± " + tableNum(sim.TQuantile(runs)**se)
	},
}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>dpbandit reproduction ({{.Scale}})</title>
<style>
body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;font-size:90%;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}
td:first-child,th:first-child{text-align:left}img{max-width:100%;height:auto;border:1px solid #eee;margin:4px 0}
figure{margin:1em 0}figcaption{max-width:700px}
.note{color:#555;font-size:90%}
</style></head><body>
<h1>dpbandit reproduction: {{.Scale}} scale</h1>
{{if .Quick}}<p><b>Illustrative.</b> The quick scale runs each preset at a short horizon with a few runs, in
seconds: its numbers show what the experiments compute, not the papers' claims, and the statements under each
table are illustrations, not findings. Run <code>dpbandit reproduce --scale paper</code> for the papers' horizons
and runs.</p>{{else}}<p>Paper scale: each preset at its paper's horizon and number of runs.</p>{{end}}
<p class="note">Written {{.Date}}. Regret is pseudo-regret at the horizon T; ± and [ , ] are 95% intervals
(Student's t intervals over the runs, the regret's clipped at 0, the least regret there is). Differences are paired (common
random numbers: in each run every policy faces the same reward sequence of each arm).</p>
<nav><b>Contents</b><ol>{{range .Presets}}<li><a href="#{{anchor .Name}}">{{.Name}}</a>: {{.Source}}</li>{{end}}</ol></nav>
{{range .Presets}}
<h2 id="{{anchor .Name}}">{{.Name}}</h2>
<p><b>Source:</b> {{.Source}}</p>
<p>{{.Description}}</p>
{{if .HasLoss}}<p class="note">The least-squares hindsight loss is that of the linear policy fit on all rows, in hindsight.</p>{{end}}
{{if .HasBounds}}<p class="note">A blank bound cell means no theorem applies there: the minimax lower bound (001, Theorem 17)
is stated for rho &le; 1 (pure budgets counted as eps&sup2;/2) and rewards in [0, 1]; upper bounds exist for
AdaC-UCB and AdaP-UCB with beta &gt; 3 (001, Theorem 10 and Table II), DP-SE (000, Lemma 4.1) and the online learners
with explicit bounds (003).</p>{{end}}
{{with .Common}}<p class="note">In every part's figures: {{range .}}{{.}}. {{end}}</p>{{end}}
{{$parts := gt (len .Parts) 1}}{{range .Parts}}
{{if $parts}}<h3 id="{{anchor .Dir}}">{{.Dir}}</h3>{{else}}<span id="{{anchor .Dir}}"></span>{{end}}
<p class="note">{{.Summary.Env}}, T = {{.Summary.Horizon}}, {{.Summary.Runs}} runs, seed {{.Summary.Seed}},
{{printf "%.1f" .Summary.WallSeconds}} s.{{if .Summary.Interrupted}} <b>Interrupted: partial results.</b>{{end}}
Files: <a href="{{.Dir}}/summary.json">summary.json</a>, <a href="{{.Dir}}/regret.csv">regret.csv</a>.</p>
{{with .Report.Observations}}{{if $.Quick}}<p class="note">Illustrative (quick scale):</p>{{end}}<ul>{{range .}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{$loss := .Summary.HindsightLoss}}<table><tr><th>entry</th><th>regret</th><th>95% CI</th><th>diff vs reference</th><th>PoP</th><th>episodes</th>{{if $loss}}<th>loss</th>{{end}}<th>lower bound</th><th>upper bound</th></tr>
{{$runs := .Summary.Runs}}{{range .Summary.Results}}<tr><td>{{.Label}}</td><td>{{num .RegretMean}}</td><td>[{{num (index .RegretCI95 0)}}, {{num (index .RegretCI95 1)}}]</td>
<td>{{pm .DiffMean .DiffSE $runs}}</td><td>{{opt .PoP}}</td><td>{{if .EpisodesMean}}{{num .EpisodesMean}}{{end}}</td>{{if $loss}}<td>{{num (index .Metrics "loss")}}</td>{{end}}<td>{{opt .LowerBound}}</td><td>{{opt .Bound}}</td></tr>
{{end}}</table>{{with $loss}}<p class="note">Least-squares hindsight loss: {{num .}}.</p>{{end}}
{{with .Report.PoPTable}}{{if .Rows}}<p>Price of privacy (Reg_priv - Reg_ref)/Reg_ref over time:</p>
<table><tr><th>entry</th>{{range .Times}}<th>t={{.}}</th>{{end}}</tr>
{{range .Rows}}<tr><td>{{.Label}}</td>{{range .Values}}<td>{{num .}}</td>{{end}}</tr>{{end}}</table>{{end}}{{end}}
{{$n := .Dir}}{{range .Plots}}<figure><img src="{{$n}}/{{.Name}}.svg" width="{{.Width}}" alt="{{.Name}} plot of {{$n}}">
<figcaption class="note">{{range .Notes}}{{.}}. {{end}}<a href="{{$n}}/{{.Name}}.pdf">PDF</a>, <a href="{{$n}}/{{.Name}}.png">PNG</a>.</figcaption></figure>
{{end}}{{end}}{{with .Extra}}<p>Across the preset's parts:</p>{{range .}}{{if image .}}<img src="{{.}}" alt="{{.}}">{{else}}<p><a href="{{.}}">{{.}}</a></p>{{end}}
{{end}}{{end}}
{{end}}
</body></html>
`))

// figureView is a figure of a report part: its file name (without
// extension) and the statements of its caption.
type figureView struct {
	Name  string
	Notes []string
	// Width is the width it is shown at, in CSS pixels: 150 an inch
	// (1.5 times its print size, 8 pt text at 16 px).
	Width int
}

// partView is one part of a preset in the index: its report and figures.
type partView struct {
	presetReport
	Plots []figureView
}

// presetView is one preset in the index: its text, written once, what
// its parts' figures need explained, and its parts.
type presetView struct {
	Preset
	HasBounds, HasLoss bool
	// Common holds the figures' statements that every part makes,
	// written once for the preset instead of under each part's figure.
	Common []string
	Parts  []partView
	// Extra holds the plots drawn across the parts.
	Extra []string
}

// writeIndex writes dir/index.html over the presets' reports: each
// preset's source, description and explanations once, then each of its
// parts' numbers and figures (with their captions).
func writeIndex(dir string, scale Scale, reports []presetReport, now func() time.Time) (string, error) {
	if now == nil {
		now = time.Now
	}
	if err := ensureDir(dir); err != nil {
		return "", err
	}
	var views []presetView
	for _, r := range reports {
		if len(views) == 0 || views[len(views)-1].Name != r.Preset.Name {
			views = append(views, presetView{Preset: r.Preset})
		}
		v := &views[len(views)-1]
		part := partView{presetReport: r}
		for _, c := range r.Curves {
			v.HasBounds = v.HasBounds || c.Upper != nil || c.Lower != nil
		}
		v.HasLoss = v.HasLoss || r.Summary.HindsightLoss != nil
		for _, f := range r.Report.figures() {
			if !slices.Contains(r.Files, f.name+".svg") {
				continue
			}
			w := f.layoutOf(f.finish()).w
			part.Plots = append(part.Plots, figureView{Name: f.name, Notes: f.notes, Width: int(math.Round(float64(w/vg.Inch) * 150))})
		}
		v.Extra = append(v.Extra, r.Extra...)
		v.Parts = append(v.Parts, part)
	}
	for i := range views {
		views[i].hoist()
	}
	path := filepath.Join(dir, "index.html")
	return path, writeFile(path, func(w io.Writer) error {
		return indexTmpl.Execute(w, map[string]any{"Scale": scale, "Quick": scale == Quick, "Date": now().UTC().Format(time.RFC3339), "Presets": views})
	})
}

// hoist moves the statements that every part's figures make (of two
// parts or more) into v.Common, off the parts' captions.
func (v *presetView) hoist() {
	if len(v.Parts) < 2 {
		return
	}
	count := map[string]int{}
	for _, p := range v.Parts {
		seen := map[string]bool{}
		for _, f := range p.Plots {
			for _, n := range f.Notes {
				if !seen[n] {
					seen[n] = true
					count[n]++
				}
			}
		}
	}
	for _, p := range v.Parts {
		for k := range p.Plots {
			f := &p.Plots[k]
			var kept []string
			for _, n := range f.Notes {
				if count[n] < len(v.Parts) {
					kept = append(kept, n)
				} else if !slices.Contains(v.Common, n) {
					v.Common = append(v.Common, n)
				}
			}
			f.Notes = kept
		}
	}
}

// sweep is one algorithm spec swept over budgets against one reference.
type sweep struct {
	key     string
	entries []int // indices in Results, by increasing budget
}

// sweeps groups the paired entries by algorithm spec and reference.
func (r *Report) sweeps() []sweep {
	var out []sweep
	for j, res := range r.Summary.Results {
		if res.DiffMean == nil {
			continue
		}
		key := res.Label[:len(res.Label)-len(res.Privacy.String())-1] + " vs " + res.DiffVs
		i := slices.IndexFunc(out, func(s sweep) bool { return s.key == key })
		if i < 0 {
			out = append(out, sweep{key: key})
			i = len(out) - 1
		}
		out[i].entries = append(out[i].entries, j)
	}
	for _, s := range out {
		slices.SortStableFunc(s.entries, func(a, b int) int {
			return cmpFloat(budgetValue(r.Summary.Results[a].Privacy), budgetValue(r.Summary.Results[b].Privacy))
		})
	}
	return out
}

// Observations states the numbers behind the papers' two claims for every
// algorithm swept over budgets, only as far as the runs resolve them:
// (a) how the paired regret difference at the horizon changes from the
// smallest to the largest budget, and whether it is within noise of 0
// at the largest; (b) at which budgets the price of privacy falls from
// its peak (over the checkpoints it is drawn at) to the horizon by more
// than the two values' 95% intervals, where it still rises from its
// first drawn value to the horizon, and where neither is resolved; (c) the
// ranking of the private algorithms at the smallest and largest budget.
// Every number is rounded to what its interval supports.
func (r *Report) Observations() []string {
	var out []string
	tq := sim.TQuantile(r.Summary.Runs)
	for _, sw := range r.sweeps() {
		lo, hi := r.Summary.Results[sw.entries[0]], r.Summary.Results[sw.entries[len(sw.entries)-1]]
		verdict := "not yet within noise of 0"
		if math.Abs(*hi.DiffMean) <= tq**hi.DiffSE {
			verdict = "within noise of 0"
		}
		at := func(x Result) string { return pmText(*x.DiffMean, tq**x.DiffSE) + " at " + x.Privacy.String() }
		trend := at(hi)
		if len(sw.entries) > 1 {
			trend = changeText(*lo.DiffMean, tq**lo.DiffSE, *hi.DiffMean, tq**hi.DiffSE, at(lo), at(hi))
		}
		out = append(out, fmt.Sprintf("(a) %s, Reg_priv - Reg_ref at T = %d: %s; at %s %s.", sw.key, r.Summary.Horizon, trend, hi.Privacy, verdict))
		if b := r.popObservation(sw, tq); b != "" {
			out = append(out, b)
		}
	}
	return append(out, r.rankings()...)
}

// changeText says how a value changes from (a ± ha, said as from) to
// (b ± hb, said as to): "falls from A to B" or "rises from A to B" when
// the intervals are apart, else "A and B: no change the runs resolve".
func changeText(a, ha, b, hb float64, from, to string) string {
	switch {
	case a-ha > b+hb:
		return "falls from " + from + " to " + to
	case b-hb > a+ha:
		return "rises from " + from + " to " + to
	}
	return from + " and " + to + ": no change the runs resolve"
}

// popObservation states, for a sweep, where the price of privacy falls
// from its peak to the horizon by more than their 95% intervals (the
// paired difference's, over the reference's mean regret), where it rises
// from its first drawn value to the horizon by more, and where neither;
// "" when no curve is drawn.
func (r *Report) popObservation(sw sweep, tq float64) string {
	var falls, rises, flat []string
	for _, j := range sw.entries {
		cv := r.Curves[j]
		shown := r.popShown(cv)
		ref := r.Curves[cv.Ref].Regret.Mean
		half := func(c int) float64 { return tq * cv.DiffSE[c] / ref[c] }
		peak, at := math.Inf(-1), -1
		for c, v := range shown {
			if finite(v) && v > peak {
				peak, at = v, c
			}
		}
		last := len(shown) - 1
		if at < 0 || !finite(shown[last]) {
			continue
		}
		b := r.Summary.Results[j].Privacy.String()
		first := slices.IndexFunc(shown, finite)
		switch {
		case peak-half(at) > shown[last]+half(last):
			falls = append(falls, fmt.Sprintf("%s (%s at t = %d to %s at T)", b, pmText(peak, half(at)), r.Checkpoints[at], pmText(shown[last], half(last))))
		case shown[last]-half(last) > shown[first]+half(first):
			rises = append(rises, fmt.Sprintf("%s (%s at t = %d to %s at T)", b, pmText(shown[first], half(first)), r.Checkpoints[first], pmText(shown[last], half(last))))
		default:
			flat = append(flat, fmt.Sprintf("%s (%s at T)", b, pmText(shown[last], half(last))))
		}
	}
	var parts []string
	if len(falls) > 0 {
		parts = append(parts, "falls from its peak at "+strings.Join(falls, "; "))
	}
	if len(rises) > 0 {
		parts = append(parts, "still rises at "+strings.Join(rises, "; "))
	}
	if len(flat) > 0 {
		parts = append(parts, "no change from its peak that the runs resolve at "+strings.Join(flat, "; "))
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("(b) %s, price of privacy: %s.", sw.key, strings.Join(parts, "; "))
}

// pmText writes x ± h rounded to what h supports: h to 2 significant
// digits, x to the same decimals ("1520 ± 87", "0.43 ± 0.05"); x alone
// to 3 significant digits when h is 0 or not finite.
func pmText(x, h float64) string {
	if !(h > 0) || !finite(h) {
		return sigText(x, 3)
	}
	d := decimalsFor(h)
	return strconv.FormatFloat(roundTo(x, d), 'f', max(d, 0), 64) + " ± " + strconv.FormatFloat(roundTo(h, d), 'f', max(d, 0), 64)
}

// decimalsFor is the number of decimals that writes h to 2 significant
// digits (negative: tens, hundreds; rounded there).
func decimalsFor(h float64) int { return 1 - int(math.Floor(math.Log10(h))) }

// ciText writes a mean and its interval [lo, hi] rounded to what the
// interval's half-width supports.
func ciText(m, lo, hi float64) string {
	h := (hi - lo) / 2
	if !(h > 0) || !finite(h) {
		return sigText(m, 3)
	}
	d := decimalsFor(h)
	f := func(x float64) string { return strconv.FormatFloat(roundTo(x, d), 'f', max(d, 0), 64) }
	return f(m) + " [" + f(lo) + ", " + f(hi) + "]"
}

// sigText writes x to n significant digits, without an exponent from
// 10^-4 to 10^15.
func sigText(x float64, n int) string {
	if x == 0 || !finite(x) || math.Abs(x) < 1e-4 || math.Abs(x) >= 1e15 {
		return strconv.FormatFloat(x, 'g', n, 64)
	}
	d := n - 1 - int(math.Floor(math.Log10(math.Abs(x))))
	return strconv.FormatFloat(roundTo(x, d), 'f', max(d, 0), 64)
}

// rankings compares, at the smallest and the largest budget, the regret of
// every private algorithm run at that budget, when there are several.
func (r *Report) rankings() []string {
	var budgets []privacy.Budget
	for _, res := range r.Summary.Results {
		if res.Privacy.IsPrivate() && !slices.Contains(budgets, res.Privacy) {
			budgets = append(budgets, res.Privacy)
		}
	}
	if len(budgets) == 0 {
		return nil
	}
	slices.SortFunc(budgets, func(a, b privacy.Budget) int { return cmpFloat(budgetValue(a), budgetValue(b)) })
	var out []string
	for _, b := range []privacy.Budget{budgets[0], budgets[len(budgets)-1]} {
		var rs []Result
		for _, res := range r.Summary.Results {
			if res.Privacy == b {
				rs = append(rs, res)
			}
		}
		if len(rs) < 2 {
			continue
		}
		slices.SortFunc(rs, func(x, y Result) int { return cmpFloat(x.RegretMean, y.RegretMean) })
		var parts []string
		for _, x := range rs {
			spec := strings.TrimSuffix(x.Label, " "+x.Privacy.String()) // the algorithm with its parameters
			parts = append(parts, spec+" "+ciText(x.RegretMean, x.RegretCI95[0], x.RegretCI95[1]))
		}
		out = append(out, fmt.Sprintf("(c) at %s, regret at T = %d from lowest (95%% intervals): %s.", b, r.Summary.Horizon, strings.Join(parts, "; ")))
		if b == budgets[len(budgets)-1] {
			break
		}
	}
	return out
}

// PoPTable is the price of privacy of every paired entry at the decades
// t = 10^3, 10^4, ... and at the horizon.
type PoPTable struct {
	Times []int64
	Rows  []PoPRow
}

// PoPRow is one entry of a PoPTable.
type PoPRow struct {
	Label  string
	Values []float64
}

// PoPTable returns the price of privacy of the paired entries by decade.
func (r *Report) PoPTable() PoPTable {
	var tab PoPTable
	var cols []int
	next := int64(1000)
	for c, t := range r.Checkpoints {
		if (t >= next && t >= 1000) || c == len(r.Checkpoints)-1 {
			cols = append(cols, c)
			tab.Times = append(tab.Times, t)
			for next <= t {
				next *= 10
			}
		}
	}
	for j, cv := range r.Curves {
		if cv.PoP == nil {
			continue
		}
		row := PoPRow{Label: r.Summary.Results[j].Label}
		for _, c := range cols {
			row.Values = append(row.Values, cv.PoP[c])
		}
		tab.Rows = append(tab.Rows, row)
	}
	return tab
}
