package experiment

import (
	"fmt"
	"github.com/dpbandit/dpbandit/sim"
	"html/template"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dpbandit/dpbandit/privacy"
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
td:first-child,th:first-child{text-align:left}img{max-width:100%;border:1px solid #eee;margin:4px 0}
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
<nav><b>Contents</b><ol>{{range .Presets}}<li><a href="#{{anchor .Dir}}">{{.Dir}}</a>: {{.Report.Config.Name}}</li>{{end}}</ol></nav>
{{range .Presets}}
<h2 id="{{anchor .Dir}}">{{.Dir}}</h2>
<p><b>Source:</b> {{.Source}}</p>
<p>{{.Description}}</p>
<p class="note">{{.Summary.Env}}, T = {{.Summary.Horizon}}, {{.Summary.Runs}} runs, seed {{.Summary.Seed}},
{{printf "%.1f" .Summary.WallSeconds}} s.{{if .Summary.Interrupted}} <b>Interrupted: partial results.</b>{{end}}
Files: <a href="{{.Dir}}/summary.json">summary.json</a>, <a href="{{.Dir}}/regret.csv">regret.csv</a>.</p>
{{with .Report.Observations}}{{if $.Quick}}<p class="note">Illustrative (quick scale):</p>{{end}}<ul>{{range .}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{$loss := .Summary.HindsightLoss}}<table><tr><th>entry</th><th>regret</th><th>95% CI</th><th>diff vs reference</th><th>PoP</th><th>episodes</th>{{if $loss}}<th>loss</th>{{end}}<th>lower bound</th><th>upper bound</th></tr>
{{$runs := .Summary.Runs}}{{range .Summary.Results}}<tr><td>{{.Label}}</td><td>{{num .RegretMean}}</td><td>[{{num (index .RegretCI95 0)}}, {{num (index .RegretCI95 1)}}]</td>
<td>{{pm .DiffMean .DiffSE $runs}}</td><td>{{opt .PoP}}</td><td>{{if .EpisodesMean}}{{num .EpisodesMean}}{{end}}</td>{{if $loss}}<td>{{num (index .Metrics "loss")}}</td>{{end}}<td>{{opt .LowerBound}}</td><td>{{opt .Bound}}</td></tr>
{{end}}</table>{{with $loss}}<p class="note">Loss is 1 minus the average reward (progressive validation: each row
is scored before it is learned); the least-squares linear policy fit on all rows, in hindsight, has loss {{num .}}.</p>{{end}}
{{if .HasBounds}}<p class="note">A blank bound cell means no theorem applies there: the minimax lower bound (001, Theorem 17)
is stated for rho &le; 1 (pure budgets counted as eps&sup2;/2) and rewards in [0, 1]; upper bounds exist for
AdaC-UCB and AdaP-UCB with beta &gt; 3 (001, Theorem 10 and Table II), DP-SE (000, Lemma 4.1) and the online learners
with explicit bounds (003).</p>{{end}}
{{with .Report.PoPTable}}{{if .Rows}}<p>Price of privacy (Reg_priv - Reg_ref)/Reg_ref over time:</p>
<table><tr><th>entry</th>{{range .Times}}<th>t={{.}}</th>{{end}}</tr>
{{range .Rows}}<tr><td>{{.Label}}</td>{{range .Values}}<td>{{num .}}</td>{{end}}</tr>{{end}}</table>{{end}}{{end}}
{{$n := .Dir}}{{range .Plots}}<img src="{{$n}}/{{.}}.svg" alt="{{.}} plot of {{$n}}">
{{end}}{{with .Extra}}<p>Across the preset's parts:</p>{{range .}}{{if image .}}<img src="{{.}}" alt="{{.}}">{{else}}<p><a href="{{.}}">{{.}}</a></p>{{end}}
{{end}}{{end}}{{if .HasPoP}}<p class="note">The price of privacy is drawn from the first checkpoint at which the reference's
regret is known to &plusmn;10% (the half-width of its 95% interval) and has reached 10% of its value at T;
before that the ratio divides by noise or by a transient of a few steps.</p>{{end}}
{{end}}
</body></html>
`))

// writeIndex writes dir/index.html over the presets' reports.
func writeIndex(dir string, scale Scale, reports []presetReport, now func() time.Time) (string, error) {
	if now == nil {
		now = time.Now
	}
	if err := ensureDir(dir); err != nil {
		return "", err
	}
	type view struct {
		presetReport
		HasBounds, HasPoP bool
		// Plots names the plots written, in the order shown.
		Plots []string
	}
	var views []view
	for _, r := range reports {
		v := view{presetReport: r}
		for _, c := range r.Curves {
			v.HasBounds = v.HasBounds || c.Upper != nil || c.Lower != nil
		}
		for _, name := range []string{"regret", "loss", "diff", "pop", "bounds"} {
			if slices.Contains(r.Files, name+".svg") {
				v.Plots = append(v.Plots, name)
			}
		}
		v.HasPoP = slices.Contains(v.Plots, "pop")
		views = append(views, v)
	}
	path := filepath.Join(dir, "index.html")
	return path, writeFile(path, func(w io.Writer) error {
		return indexTmpl.Execute(w, map[string]any{"Scale": scale, "Quick": scale == Quick, "Date": now().UTC().Format(time.RFC3339), "Presets": views})
	})
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
// algorithm swept over budgets: (a) how the paired regret difference at
// the horizon changes from the smallest to the largest budget, and (b)
// how the price of privacy changes with t at each budget, from its peak
// (over t >= 1000) to the horizon.
func (r *Report) Observations() []string {
	var out []string
	for _, sw := range r.sweeps() {
		lo, hi := r.Summary.Results[sw.entries[0]], r.Summary.Results[sw.entries[len(sw.entries)-1]]
		verdict := "not yet within noise of 0"
		tq := sim.TQuantile(r.Summary.Runs)
		if math.Abs(*hi.DiffMean) <= tq**hi.DiffSE {
			verdict = "within noise of 0"
		}
		out = append(out, fmt.Sprintf("(a) %s, Reg_priv - Reg_ref at T=%d: %.4g ± %.2g at %s, down to %.4g ± %.2g at %s (%s).",
			sw.key, r.Summary.Horizon, *lo.DiffMean, tq**lo.DiffSE, lo.Privacy, *hi.DiffMean, tq**hi.DiffSE, hi.Privacy, verdict))
		var parts []string
		for _, j := range sw.entries {
			pop := r.Curves[j].PoP
			peak, at := math.Inf(-1), int64(0)
			for c, t := range r.Checkpoints {
				if t >= 1000 && pop[c] > peak {
					peak, at = pop[c], t
				}
			}
			if at > 0 {
				parts = append(parts, fmt.Sprintf("%s: %.3g at t=%d to %.3g at T", r.Summary.Results[j].Privacy, peak, at, pop[len(pop)-1]))
			}
		}
		if len(parts) > 0 {
			out = append(out, fmt.Sprintf("(b) %s, price of privacy from its peak to the horizon: %s.", sw.key, strings.Join(parts, "; ")))
		}
	}
	return append(out, r.rankings()...)
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
			parts = append(parts, fmt.Sprintf("%s %.4g [%.4g, %.4g]", spec, x.RegretMean, x.RegretCI95[0], x.RegretCI95[1]))
		}
		out = append(out, fmt.Sprintf("(c) at %s, regret at T=%d from lowest: %s.", b, r.Summary.Horizon, strings.Join(parts, "; ")))
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
