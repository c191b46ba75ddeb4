package experiment

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/dpbandit/dpbandit/catalog"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/dpbandit/dpbandit/audit"
	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/privacy"
)

// AuditConfig configures an empirical audit of one algorithm.
type AuditConfig struct {
	// Algo is the algorithm spec, e.g. "adac-ucb:beta=1".
	Algo string
	// Component, instead of Algo, names a mechanism audited on its own
	// (AuditComponents).
	Component string
	// Budget is the claimed budget the algorithm is run with.
	Budget privacy.Budget
	// Delta is the delta at which eps is claimed and bounded.
	Delta float64
	// Runs is the number of trials per neighbouring table.
	Runs int
	// EdgeRuns is the number of trials per table at the parameter edges
	// that AuditAll visits, and for the algorithms whose audit has no
	// power (Algorithm.WeakAudit), where more trials only cost time; 0
	// means Runs/5.
	EdgeRuns int
	// Confidence of the lower bound eps_lo.
	Confidence float64
	// Arms and Horizon size the neighbouring tables (audit.Hard).
	Arms    int
	Horizon int64
	// Break, if set, audits a deliberately broken variant instead:
	// "scale" divides the noise by 10, "redraw" re-draws the noise at every
	// index evaluation (algorithms that support it).
	Break string
	// Seed determines every trial.
	Seed    uint64
	Workers int
}

// DefaultAudit returns the defaults of `dpbandit audit`: rho = 0.1 (pure-DP
// algorithms at eps = sqrt(2 rho)), delta = 1e-3, 10^5 trials per table at
// 95% confidence, 10 arms, T = 2^20.
func DefaultAudit() AuditConfig {
	b, _ := privacy.NewZCDP(0.1)
	return AuditConfig{Budget: b, Delta: 1e-3, Runs: 100000, Confidence: 0.95, Arms: 10, Horizon: 1 << 20, Seed: 1}
}

// AuditResult is one audited entry, as `dpbandit audit --json` prints it.
type AuditResult struct {
	Algorithm string         `json:"algorithm"`
	Label     string         `json:"label"`
	Privacy   privacy.Budget `json:"privacy"`
	// Params are the algorithm's parameters at the audited point.
	Params map[string]any `json:"params"`
	Broken string         `json:"broken,omitempty"`
	// NoPower, when set, says why the audit's tables cannot show this
	// algorithm's leak (catalog.Algorithm.WeakAudit): a broken variant
	// may then pass.
	NoPower string `json:"no_power,omitempty"`
	// EpsLo is the audit's lower confidence bound on eps; EpsClaimed the
	// eps the algorithm claims at Delta (rho-zCDP converted by
	// privacy.ZCDPToApprox; Laplace-based algorithms claim eps, or
	// sqrt(2 rho) for a zCDP budget).
	EpsLo      float64 `json:"eps_lo"`
	EpsClaimed float64 `json:"eps_claimed"`
	Delta      float64 `json:"delta"`
	Runs       int     `json:"runs"`
	Confidence float64 `json:"confidence"`
	// Passed reports EpsLo <= EpsClaimed.
	Passed bool `json:"passed"`
	// Expected reports whether Passed is the verdict expected: a sound
	// policy passes, a broken variant fails (`dpbandit audit` exits 3
	// otherwise).
	Expected bool    `json:"expected"`
	EventP   float64 `json:"event_p"`
	EventQ   float64 `json:"event_q"`
}

// Verdict is the audit's verdict as the tables and the report show it:
// "pass" or "FAIL", a pass of an audit without power saying so, and
// ", unexpected" after a verdict that is not the expected one.
func (r AuditResult) Verdict() string {
	v := "pass"
	switch {
	case !r.Passed:
		v = "FAIL"
	case r.NoPower != "":
		v = "pass (no power)"
	}
	if !r.Expected {
		v += ", unexpected"
	}
	return v
}

// claimedEps returns the eps an algorithm claims at delta under budget b.
func claimedEps(a catalog.Algorithm, b privacy.Budget, delta float64) (float64, error) {
	if a.PureDP {
		rho, err := b.ToZCDP()
		if b.Notion == privacy.Pure || b.Notion == privacy.Approx {
			return b.Eps, nil
		}
		return math.Sqrt(2 * rho), err
	}
	return b.ToApprox(delta)
}

// AuditComponents names the mechanisms that are audited on their own:
// the sparse policies' parts, whose own audits have no power
// (catalog.Algorithm.WeakAudit), and the private off-policy estimates of
// dpbandit evaluate (ope.Private). Each runs at the audit's budget: the
// sparse vector technique and the peeling screen's noisy max at pure eps
// (sqrt(2 rho) for a rho-zCDP budget), a Wishart node at (eps, delta)
// (rho converted at the audit's delta), the estimates at the budget
// itself (a zCDP claim checked at the audit's delta).
var AuditComponents = []string{"sparse-vector", "noisy-max", "wishart-node", "ope-ips", "ope-snips", "ope-dr"}

// auditComponent audits one of AuditComponents (audit.SparseVectorTrial,
// NoisyMaxTrial, WishartTrial, OPETrial); the broken variant "scale" divides the
// noise by 10 (Sigma2 for the Wishart node).
func auditComponent(ctx context.Context, c AuditConfig) (*AuditResult, error) {
	if c.Break != "" && c.Break != "scale" {
		return nil, fieldErr("break", "a component's broken variant is scale, got %q", c.Break)
	}
	var wrap func(noise.Noise) noise.Noise
	if c.Break == "scale" {
		wrap = func(n noise.Noise) noise.Noise { return audit.Scaled{Noise: n, Factor: 0.1} }
	}
	pure := c.Budget
	if c.Budget.Notion == privacy.ZCDP {
		eps, err := privacy.Local(c.Budget) // sqrt(2 rho), rounded down
		if err != nil {
			return nil, &FieldError{Field: "rho", Err: err}
		}
		pure, _ = privacy.NewPure(eps.Eps)
	}
	var tr audit.Trial
	delta := 0.0
	switch c.Component {
	case "sparse-vector":
		tr = audit.SparseVectorTrial(pure, c.Seed, wrap)
	case "noisy-max":
		tr = audit.NoisyMaxTrial(pure.Eps, c.Seed, wrap)
	case "wishart-node":
		eps := c.Budget.Eps
		if c.Budget.Notion == privacy.ZCDP {
			var err error
			if eps, err = privacy.ZCDPToApprox(c.Budget.Rho, c.Delta); err != nil {
				return nil, &FieldError{Field: "rho", Err: err}
			}
		}
		w, err := mechanism.NewWishart(eps, c.Delta, 1, 2, 2)
		if err != nil {
			return nil, fieldErr("eps", "%w", err)
		}
		if c.Break == "scale" {
			w.Sigma2 /= 10
		}
		if tr, err = audit.WishartTrial(w, c.Seed); err != nil {
			return nil, err
		}
		pure, _ = privacy.NewApprox(eps, c.Delta)
		delta = c.Delta
	case "ope-ips", "ope-snips", "ope-dr":
		var err error
		if tr, err = audit.OPETrial(strings.TrimPrefix(c.Component, "ope-"), c.Budget, c.Seed, wrap); err != nil {
			return nil, fieldErr("rho", "%w", err)
		}
		pure = c.Budget
		if c.Budget.Notion != privacy.Pure {
			eps, err := c.Budget.ToApprox(c.Delta)
			if err != nil {
				return nil, &FieldError{Field: "rho", Err: err}
			}
			pure, _ = privacy.NewApprox(eps, c.Delta)
			delta = c.Delta
		}
	default:
		return nil, fieldErr("component", "unknown component %q (known: %s)", c.Component, strings.Join(AuditComponents, ", "))
	}
	r, err := audit.Empirical(ctx, tr, audit.Options{Runs: c.Runs, Delta: delta, Confidence: c.Confidence, Workers: c.Workers})
	if err != nil {
		return nil, err
	}
	passed := r.EpsLo <= pure.Eps
	label := c.Component + " " + pure.Label(4)
	if c.Break != "" {
		label += " [broken: " + c.Break + "]"
	}
	return &AuditResult{
		Algorithm: c.Component, Label: label, Privacy: pure, Broken: c.Break,
		EpsLo: r.EpsLo, EpsClaimed: pure.Eps, Delta: delta, Runs: r.Runs, Confidence: c.Confidence,
		Passed: passed, Expected: passed == (c.Break == ""), EventP: r.P, EventQ: r.Q,
	}, nil
}

// Audit runs the empirical audit of one algorithm (audit.Empirical on the
// neighbouring tables audit.Hard, with audit.PolicyTrial), or of one of
// AuditComponents when c.Component is set.
func Audit(ctx context.Context, c AuditConfig) (*AuditResult, error) {
	if c.Component != "" {
		return auditComponent(ctx, c)
	}
	a, err := catalog.Parse(c.Algo)
	if err != nil {
		return nil, &FieldError{Field: "algo", Err: err}
	}
	if !a.Private {
		return nil, fieldErr("algo", "%s is not private: there is no claim to audit", a.Name)
	}
	if !(c.Delta > 0 && c.Delta < 1) {
		return nil, fieldErr("delta", "must lie in (0,1), got %v", c.Delta)
	}
	if c.Arms < 2 || c.Horizon < 2 {
		return nil, fieldErr("arms", "the audit tables need at least 2 arms and 2 steps")
	}
	switch {
	case a.Approx && c.Budget.Notion == privacy.ZCDP:
		eps, err := privacy.ZCDPToApprox(c.Budget.Rho, c.Delta)
		if err != nil {
			return nil, &FieldError{Field: "rho", Err: err}
		}
		c.Budget, _ = privacy.NewApprox(eps, c.Delta)
	case a.Approx && c.Budget.Notion == privacy.Pure:
		// An (eps, delta) algorithm given eps runs at (eps, delta), the
		// delta at which the audit checks the claim.
		c.Budget, _ = privacy.NewApprox(c.Budget.Eps, c.Delta)
	}
	claimed, err := claimedEps(a.Algorithm, c.Budget, c.Delta)
	if err != nil {
		return nil, &FieldError{Field: "rho", Err: err}
	}
	var wrap func(noise.Noise) noise.Noise
	switch c.Break {
	case "":
	case "scale":
		wrap = func(n noise.Noise) noise.Noise { return audit.Scaled{Noise: n, Factor: 0.1} }
	case "redraw":
		if a.Redraw == nil {
			return nil, fieldErr("break", "%s has no redraw variant", a.Name)
		}
	default:
		return nil, fieldErr("break", "unknown variant %q (known: scale, redraw)", c.Break)
	}
	nb := familyOf(a.Kind).Neighbours(c.Arms, c.Horizon)
	if a.AuditTables != nil {
		if nb, err = a.AuditTables(a.Values, c.Budget, c.Arms, c.Horizon); err != nil {
			return nil, fieldErr("algo", "%s: %w", a.Canonical, err)
		}
	}
	tr, err := familyOf(a.Kind).Trial(a, c, nb, wrap)
	if err != nil {
		return nil, fieldErr("algo", "%s with %s: %w", a.Canonical, c.Budget, err)
	}
	r, err := audit.Empirical(ctx, tr, audit.Options{Runs: c.Runs, Delta: c.Delta, Confidence: c.Confidence, Workers: c.Workers})
	if err != nil {
		return nil, err
	}
	passed := r.EpsLo <= claimed
	label := a.Canonical + " " + c.Budget.Label(4)
	if c.Break != "" {
		label += " [broken: " + c.Break + "]"
	}
	return &AuditResult{
		Algorithm: a.Name, Label: label, Privacy: c.Budget, Params: a.Named(), Broken: c.Break, NoPower: a.WeakAudit,
		EpsLo: r.EpsLo, EpsClaimed: claimed, Delta: c.Delta, Runs: r.Runs, Confidence: c.Confidence,
		Passed: passed, Expected: passed == (c.Break == ""), EventP: r.P, EventQ: r.Q,
	}, nil
}

// AuditAll audits every private algorithm of the registry with c's
// settings at each of its parameter points (Algorithm.Points: the
// defaults and both ends of every parameter's accepted range; the edges,
// and the algorithms whose audit has no power, with c.EdgeRuns trials),
// and, as a check that the audit has power, at
// the defaults their variants with the noise divided by 10 and (where one
// exists) the variant that re-draws its noise at every index evaluation;
// then each of AuditComponents and its noise/10 variant. It writes audit.csv, audit.json, audit.svg/png and index.html into out
// when out is set.
func AuditAll(ctx context.Context, c AuditConfig, out string, progress func(label string)) ([]AuditResult, error) {
	var results []AuditResult
	for _, a := range catalog.All() {
		if !a.Private {
			continue
		}
		type job struct{ point, brk string }
		jobs := []job{{a.Name, ""}}
		if a.WeakAudit == "" {
			jobs = append(jobs, job{a.Name, "scale"})
		}
		if a.Redraw != nil {
			jobs = append(jobs, job{a.Name, "redraw"})
		}
		for _, p := range a.Points()[1:] {
			jobs = append(jobs, job{p, ""})
		}
		for _, j := range jobs {
			cc := c
			cc.Algo, cc.Break = j.point, j.brk
			if j.point != a.Name || a.WeakAudit != "" {
				cc.Runs = c.EdgeRuns
				if cc.Runs == 0 {
					cc.Runs = max(c.Runs/5, 1000)
				}
			}
			if progress != nil {
				progress(j.point + " " + j.brk)
			}
			r, err := Audit(ctx, cc)
			if err != nil {
				return results, err
			}
			results = append(results, *r)
		}
	}
	for _, name := range AuditComponents {
		for _, brk := range []string{"", "scale"} {
			cc := c
			cc.Component, cc.Break = name, brk
			if progress != nil {
				progress(name + " " + brk)
			}
			r, err := Audit(ctx, cc)
			if err != nil {
				return results, err
			}
			results = append(results, *r)
		}
	}
	if out != "" {
		if err := writeAudit(out, results); err != nil {
			return results, err
		}
	}
	return results, nil
}

var auditTmpl = template.Must(template.New("audit").Funcs(template.FuncMap{
	"num": func(x float64) string { return strconv.FormatFloat(x, 'g', 4, 64) },
}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>dpbandit privacy audit</title>
<style>body{font-family:system-ui,sans-serif;max-width:1000px;margin:2em auto;padding:0 1em}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}td:first-child{text-align:left}
.fail{color:#b00;font-weight:bold}</style></head><body>
<h1>Empirical privacy audit</h1>
<p>Each policy runs on two reward tables that differ in one user's rewards (the first reward of arm 0:
1 or 0; every other reward 1/2). A distinguishing event on the actions is chosen from half of the runs;
the other half bounds eps from below with Clopper-Pearson intervals. A policy passes when eps_lo does not
exceed its claimed eps. DP-SE, the linear and contextual policies, the local randomisers and the components use
pairs of their own (docs/auditing.md). Each algorithm is audited at its default parameters and at both ends of every
parameter's accepted range (with the edge trials: a fifth of the trials unless --edge-runs says otherwise). A pass
speaks for the pair and the output the audit looks at (the first release the differing reward enters), not for
every release; the verdict "unexpected" marks a sound policy that failed or a broken variant that passed. The sparse policies' own audits have no power
(their noise drowns one differing reward), so their mechanisms are audited on their own: the sparse vector
technique, the peeling screen's noisy max and a Wishart node, each on the neighbouring inputs where it is most
exposed. The broken variants (noise divided by 10; noise re-drawn at every index evaluation) must fail: they
show the audit has power.</p>
<table><tr><th>policy</th><th>claimed eps</th><th>eps_lo</th><th>delta</th><th>runs</th><th>confidence</th><th>verdict</th></tr>
{{range .}}<tr><td>{{.Label}}</td><td>{{num .EpsClaimed}}</td><td>{{num .EpsLo}}</td><td>{{num .Delta}}</td><td>{{.Runs}}</td><td>{{num .Confidence}}</td>
<td>{{if and .Passed .Expected}}{{.Verdict}}{{else}}<span class="fail">{{.Verdict}}</span>{{end}}</td></tr>
{{end}}</table>
<img src="audit.svg" alt="claimed eps and eps_lo per policy">
<p>Files: <a href="audit.csv">audit.csv</a>, <a href="audit.json">audit.json</a>.</p>
</body></html>
`))

func writeAudit(dir string, rs []AuditResult) error {
	if err := ensureDir(dir); err != nil {
		return err
	}
	b, err := json.MarshalIndent(rs, "", "  ")
	if err != nil {
		return err
	}
	if err := writeBytes(filepath.Join(dir, "audit.json"), append(b, '\n')); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(dir, "audit.csv"), func(out io.Writer) error { return auditCSV(out, rs) }); err != nil {
		return err
	}
	if err := plotAudit(dir, rs); err != nil {
		return err
	}
	return writeFile(filepath.Join(dir, "index.html"), func(w io.Writer) error { return auditTmpl.Execute(w, rs) })
}

// auditCSV writes the rows of audit.csv.
func auditCSV(out io.Writer, rs []AuditResult) error {
	w := csv.NewWriter(out)
	_ = w.Write([]string{"policy", "broken", "claimed_eps", "eps_lo", "delta", "runs", "confidence", "passed", "expected", "no_power"})
	num := func(x float64) string { return strconv.FormatFloat(x, 'g', 6, 64) }
	for _, r := range rs {
		_ = w.Write([]string{r.Label, r.Broken, num(r.EpsClaimed), num(r.EpsLo), num(r.Delta), strconv.Itoa(r.Runs), num(r.Confidence),
			strconv.FormatBool(r.Passed), strconv.FormatBool(r.Expected), r.NoPower})
	}
	w.Flush()
	return w.Error()
}

// plotAudit draws claimed eps and eps_lo side by side for each audited
// point, as horizontal bars (one row per point, labels readable however
// many there are).
func plotAudit(dir string, rs []AuditResult) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("plot audit: %v", r)
		}
	}()
	p := plot.New()
	p.Title.Text = "Empirical privacy audit: claimed eps vs eps_lo"
	p.X.Label.Text = "eps"
	n := len(rs)
	claimed, lo := make(plotter.Values, n), make(plotter.Values, n)
	names := make([]string, n)
	top := 0.0
	for i, r := range rs {
		// The first result at the top.
		j := n - 1 - i
		claimed[j], lo[j] = r.EpsClaimed, r.EpsLo
		names[j] = strings.Fields(r.Label)[0] + map[string]string{"": "", "scale": " (noise / 10)", "redraw": " (noise re-drawn)"}[r.Broken]
		top = max(top, r.EpsClaimed, r.EpsLo)
	}
	// Room on the right for the legend.
	p.X.Min, p.X.Max = 0, top*1.3
	w := vg.Points(5)
	bc, err := plotter.NewBarChart(claimed, w)
	if err != nil {
		return err
	}
	bc.Color, bc.Offset, bc.Horizontal = plotutil.Color(2), w/2, true
	bc.LineStyle.Width = 0
	bl, err := plotter.NewBarChart(lo, w)
	if err != nil {
		return err
	}
	bl.Color, bl.Offset, bl.Horizontal = plotutil.Color(0), -w/2, true
	bl.LineStyle.Width = 0
	p.Add(bc, bl, plotter.NewGrid())
	p.Legend.Add("claimed eps", bc)
	p.Legend.Add("eps_lo (audit)", bl)
	p.Legend.Top = true
	p.NominalY(names...)
	return savePlot(p, 9*vg.Inch, vg.Inch+vg.Length(n)*vg.Points(14), dir, "audit")
}
