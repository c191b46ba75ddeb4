package api

import (
	"context"
	"fmt"
	"html/template"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/dpbandit/dpbandit/service/engine"
	"github.com/dpbandit/dpbandit/service/outcome"
)

// palette colours arms in the dashboard's plots.
var palette = []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"}

// card is one experiment on the dashboard: only released statistics and
// public counts.
type card struct {
	outcome.State
	Budget   string
	Plot     template.HTML
	Units    int
	MaxUnit  float64 // the most any unit spent here
	Bound    float64 // m^2 rho, what any unit may spend here
	Rows     []armRow
	Fraction []string
}

type armRow struct {
	Arm      int
	Pulls    int64
	Share    float64
	Released bool
	Mean     float64
	Noise    float64
	Samples  int64
	Color    string
}

var dashboard = template.Must(template.New("d").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>dpbandit service</title>
<style>
body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:1000px;color:#222;padding:0 1em}
h1{font-size:1.5em;margin-bottom:.2em} h2{font-size:1.2em;margin:0 0 .3em}
.card{border:1px solid #ccc;border-radius:6px;padding:1em 1.2em;margin:1.2em 0}
table{border-collapse:collapse;margin:.5em 0} td,th{padding:.2em .8em;border-bottom:1px solid #eee;text-align:right}
th{background:#f6f6f6} td:first-child,th:first-child{text-align:left}
.muted{color:#666;font-size:.9em} .kv span{margin-right:1.5em;white-space:nowrap}
.sw{display:inline-block;width:.8em;height:.8em;border-radius:2px;margin-right:.4em;vertical-align:-1px}
</style></head><body>
{{if .Session}}<form method="post" action="/logout" style="float:right;margin-top:.4em"><button type="submit">Log out</button></form>{{end}}
<h1>dpbandit decision service</h1>
<p class="muted">Tenant <b>{{.Tenant}}</b> · {{len .Cards}} experiment(s) · {{.Now}} · Only released (noisy) statistics and public counts appear here: never raw rewards.</p>
{{if not .Cards}}<p>No experiment yet. Create one with <code>POST /v1/experiments</code> (see docs/service.md).</p>{{end}}
{{range .Cards}}<div class="card">
<h2>{{.ID}} <span class="muted">{{.Algorithm}}</span></h2>
<div class="kv"><span>budget <b>{{.Budget}}</b></span><span>arms {{.Arms}}</span><span>reward range [{{index .RewardRange 0}}, {{index .RewardRange 1}}]</span><span>policy version {{.PolicyVersion}}</span><span>episodes {{.Episodes}}</span></div>
<div class="kv"><span>decisions {{.Decisions}}</span><span>overflow {{.Overflow}}</span><span>explored {{.Explored}}</span><span>rewards {{.Rewards}}</span><span>learned {{.Learned}}</span><span>ignored {{.Ignored}}</span><span>defaulted {{.Defaulted}}</span><span>expired {{.Expired}}</span><span>pending {{.Pending}}</span><span>awaiting {{.Awaiting}}</span><span>releases {{.Releases}}</span></div>
<table><tr><th>arm</th><th>pulls</th><th>share</th><th>released mean</th><th>noise scale</th><th>episode size</th></tr>
{{range .Rows}}<tr><td><span class="sw" style="background:{{.Color}}"></span>{{.Arm}}</td><td>{{.Pulls}}</td><td>{{printf "%.1f%%" .Share}}</td>
{{if .Released}}<td>{{printf "%.4f" .Mean}}</td><td>{{printf "%.4g" .Noise}}</td><td>{{.Samples}}</td>{{else}}<td>–</td><td>–</td><td>–</td>{{end}}</tr>{{end}}
</table>
{{.Plot}}
<div class="kv muted"><span>ledger: {{.Units}} unit(s) learned from</span><span>largest spend of a unit here {{printf "%.6g" .MaxUnit}} rho</span><span>bound m&sup2;&rho; = {{printf "%.6g" .Bound}} rho (m = {{.MaxRewardsPerUnit}} reward(s) per unit)</span></div>
</div>{{end}}
</body></html>`))

// loginPage asks a browser for an admin token, once: the dashboard then
// uses the session cookie (auth.go). Its argument is a message to show.
var loginPage = template.Must(template.New("login").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>dpbandit service: log in</title>
<style>body{font:14px/1.45 system-ui,sans-serif;margin:4em auto;max-width:28em;color:#222;padding:0 1em}
input{font:inherit;padding:.3em;width:100%;box-sizing:border-box;margin:.3em 0} .err{color:#b00}</style></head><body>
<h1>dpbandit decision service</h1>
{{if .}}<p class="err">{{.}}</p>{{end}}
<form method="post" action="/login"><label>Admin token <input type="password" name="token" autocomplete="current-password" autofocus></label>
<input type="submit" value="Log in"></form>
<p>The browser keeps a session cookie for 12 hours (HttpOnly, SameSite=Strict); the token itself is not stored.</p>
</body></html>`))

func (a *server) handleDashboard(w http.ResponseWriter, r *http.Request, t Token) (any, error) {
	var cards []card
	for _, x := range a.b.List(t.Tenant) {
		c, err := a.card(r.Context(), x)
		if err != nil {
			return nil, err
		}
		cards = append(cards, c)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'self'; frame-ancestors 'none'")
	return nil, dashboard.Execute(w, map[string]any{"Tenant": t.Tenant, "Cards": cards, "Now": a.cfg.Now().UTC().Format(time.RFC1123),
		"Session": a.cfg.Tokens != nil})
}

func (a *server) card(ctx context.Context, x *engine.Experiment) (card, error) {
	st, err := x.State(ctx)
	if err != nil {
		return card{}, err
	}
	c := card{State: st}
	b := c.Privacy
	switch {
	case b.Rho != nil:
		c.Budget = fmt.Sprintf("rho = %g (zCDP)", *b.Rho)
	case b.Delta != nil:
		c.Budget = fmt.Sprintf("(eps, delta) = (%g, %g)", *b.Eps, *b.Delta)
	case b.Eps != nil:
		c.Budget = fmt.Sprintf("eps = %g", *b.Eps)
	}
	rel := map[int]int{}
	for i, r := range c.Released {
		rel[r.Arm] = i
	}
	for a, n := range c.Pulls {
		row := armRow{Arm: a, Pulls: n, Color: palette[a%len(palette)]}
		if c.Decisions > 0 {
			row.Share = 100 * float64(n) / float64(c.Decisions)
		}
		if i, ok := rel[a]; ok {
			r := c.Released[i]
			row.Released, row.Mean, row.Noise, row.Samples = true, r.Mean, r.Noise, r.Samples
		}
		c.Rows = append(c.Rows, row)
	}
	units, most, err := a.b.UnitStats(ctx, x)
	if err != nil {
		return c, err
	}
	def := x.Definition()
	c.MaxUnit = float64(most*most*def.NanoRho) / 1e9
	m := def.MaxRewardsPerUnit
	c.Bound = float64(m*m*def.NanoRho) / 1e9
	c.Units = int(units)
	series := x.Series()
	if c.Decisions > 0 {
		series = append(series, outcome.Sample{Decisions: c.Decisions, Pulls: c.Pulls})
	}
	c.Plot = pullsPlot(series, c.Arms)
	return c, nil
}

// pullsPlot draws each arm's share of the decisions against the number
// of decisions (log scale) as an SVG.
func pullsPlot(series []outcome.Sample, arms int) template.HTML {
	const w, h, left, bottom, top, right = 640.0, 220.0, 50.0, 36.0, 12.0, 12.0
	if len(series) < 2 {
		return ""
	}
	lmax := math.Log10(float64(series[len(series)-1].Decisions))
	if lmax <= 0 {
		return ""
	}
	x := func(n int64) float64 { return left + (w-left-right)*math.Log10(float64(n))/lmax }
	y := func(f float64) float64 { return top + (h-top-bottom)*(1-f) }
	var sb strings.Builder
	fmt.Fprintf(&sb, `<svg width="%g" height="%g" viewBox="0 0 %g %g" role="img" aria-label="share of decisions per arm"><style>text{font:11px sans-serif;fill:#444}</style>`, w, h, w, h)
	for _, f := range []float64{0, 0.25, 0.5, 0.75, 1} {
		fmt.Fprintf(&sb, `<line x1="%g" x2="%g" y1="%.1f" y2="%.1f" stroke="#e5e5e5"/><text x="%g" y="%.1f" text-anchor="end">%g%%</text>`, left, w-right, y(f), y(f), left-4, y(f)+4, f*100)
	}
	for p := 0; float64(p) <= lmax; p++ {
		n := int64(math.Pow(10, float64(p)))
		fmt.Fprintf(&sb, `<line x1="%.1f" x2="%.1f" y1="%g" y2="%g" stroke="#e5e5e5"/><text x="%.1f" y="%g" text-anchor="middle">%d</text>`, x(n), x(n), top, h-bottom, x(n), h-bottom+14, n)
	}
	fmt.Fprintf(&sb, `<text x="%g" y="%g" text-anchor="middle">decisions (log scale); share of decisions per arm</text>`, (left+w-right)/2, h-4)
	for a := range arms {
		var pts []string
		for _, s := range series {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(s.Decisions), y(float64(s.Pulls[a])/float64(s.Decisions))))
		}
		fmt.Fprintf(&sb, `<polyline fill="none" stroke="%s" stroke-width="1.8" points="%s"/>`, palette[a%len(palette)], strings.Join(pts, " "))
	}
	sb.WriteString(`</svg>`)
	return template.HTML(sb.String())
}
