package experiment

import (
	"fmt"
	"html/template"
	"io"
	"path/filepath"
	"slices"
	"time"
)

var indexTmpl = template.Must(template.New("index").Funcs(template.FuncMap{
	"num": func(x float64) string { return fmt.Sprintf("%.4g", x) },
	"opt": func(x *float64) string {
		if x == nil {
			return ""
		}
		return fmt.Sprintf("%.4g", *x)
	},
	"pm": func(m, se *float64) string {
		if m == nil || se == nil {
			return ""
		}
		return fmt.Sprintf("%.4g ± %.2g", *m, 1.96**se)
	},
}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>dpbandit reproduction ({{.Scale}})</title>
<style>
body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;font-size:90%;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}
td:first-child,th:first-child{text-align:left}img{max-width:100%;border:1px solid #eee;margin:4px 0}
.note{color:#555;font-size:90%}
</style></head><body>
<h1>dpbandit reproduction</h1>
<p class="note">Scale <b>{{.Scale}}</b>, written {{.Date}}. Regret is pseudo-regret at the horizon T;
± is a 95% interval. Differences are paired (common random numbers: in each run every policy
faces the same reward sequence of each arm).</p>
{{range .Presets}}
<h2 id="{{.Dir}}">{{.Dir}}</h2>
<p><b>Source:</b> {{.Source}}</p>
<p>{{.Description}}</p>
<p class="note">{{.Summary.Env}}, T = {{.Summary.Horizon}}, {{.Summary.Runs}} runs, seed {{.Summary.Seed}},
{{printf "%.1f" .Summary.WallSeconds}} s.{{if .Summary.Interrupted}} <b>Interrupted: partial results.</b>{{end}}
Files: <a href="{{.Dir}}/summary.json">summary.json</a>, <a href="{{.Dir}}/regret.csv">regret.csv</a>.</p>
{{with .Report.Observations}}<ul>{{range .}}<li>{{.}}</li>{{end}}</ul>{{end}}
<table><tr><th>entry</th><th>regret</th><th>95% CI</th><th>diff vs reference</th><th>PoP</th><th>episodes</th><th>lower bound</th><th>upper bound</th></tr>
{{range .Summary.Results}}<tr><td>{{.Label}}</td><td>{{num .RegretMean}}</td><td>[{{num (index .RegretCI95 0)}}, {{num (index .RegretCI95 1)}}]</td>
<td>{{pm .DiffMean .DiffSE}}</td><td>{{opt .PoP}}</td><td>{{if .EpisodesMean}}{{num .EpisodesMean}}{{end}}</td><td>{{opt .LowerBound}}</td><td>{{opt .Bound}}</td></tr>
{{end}}</table>
{{if .HasBounds}}<p class="note">A blank bound cell means no theorem applies there: the minimax lower bound (001, Theorem 17)
is stated for rho &le; 1 (pure budgets counted as eps&sup2;/2) and rewards in [0, 1]; upper bounds exist for
AdaC-UCB and AdaP-UCB with beta &gt; 3 (001, Theorem 10 and Table II), DP-SE (000, Lemma 4.1) and the online learners
with explicit bounds (003).</p>{{end}}
{{with .Report.PoPTable}}{{if .Rows}}<p>Price of privacy (Reg_priv - Reg_ref)/Reg_ref over time:</p>
<table><tr><th>entry</th>{{range .Times}}<th>t={{.}}</th>{{end}}</tr>
{{range .Rows}}<tr><td>{{.Label}}</td>{{range .Values}}<td>{{num .}}</td>{{end}}</tr>{{end}}</table>{{end}}{{end}}
{{$n := .Dir}}{{range .Plots}}<img src="{{$n}}/{{.}}.svg" alt="{{.}} plot of {{$n}}">
{{end}}{{range .Extra}}<img src="{{.}}" alt="{{.}}">
{{end}}{{if .HasPoP}}<p class="note">The price of privacy is drawn from the first checkpoint at which the reference's
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
		for _, name := range []string{"regret", "diff", "pop", "bounds"} {
			if slices.Contains(r.Files, name+".svg") {
				v.Plots = append(v.Plots, name)
			}
		}
		v.HasPoP = slices.Contains(v.Plots, "pop")
		views = append(views, v)
	}
	path := filepath.Join(dir, "index.html")
	return path, writeFile(path, func(w io.Writer) error {
		return indexTmpl.Execute(w, map[string]any{"Scale": scale, "Date": now().UTC().Format(time.RFC3339), "Presets": views})
	})
}
