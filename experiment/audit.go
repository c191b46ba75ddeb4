package experiment

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/dpbandit/dpbandit/audit"
	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/catalog"
	"github.com/dpbandit/dpbandit/contextual"
	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/olo"
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
	// Releases audits the algorithm through its noisy releases
	// (audit.ReleaseTrial: every value it draws noise for, on a pair
	// that moves them by their whole sensitivity) instead of through its
	// decisions; see ReleaseAudited for the algorithms it applies to.
	Releases bool
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
	// View is what the audit observes: "decisions" (the policy's
	// choices, audit.PolicyTrial and its kin), "releases" (its noisy
	// releases, audit.ReleaseTrial) or "component" (a mechanism on its
	// own, AuditComponents).
	View string `json:"view"`
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
	noPower := sawNothing(c, r, "component")
	if c.Break != "" {
		label += " [broken: " + c.Break + "]"
	}
	return &AuditResult{
		Algorithm: c.Component, Label: label, Privacy: pure, Broken: c.Break, View: "component", NoPower: noPower,
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
		if nb, err = a.AuditTables(a.Args(), c.Budget, c.Arms, c.Horizon); err != nil {
			return nil, fieldErr("algo", "%s: %w", a.Canonical, err)
		}
	}
	view, noPower := "decisions", a.WeakAudit
	var tr audit.Trial
	if c.Releases {
		view, noPower = "releases", ""
		tr, err = releaseTrial(a, c, nb, wrap)
	} else {
		tr, err = familyOf(a.Kind).Trial(a, c, nb, wrap)
	}
	if err != nil {
		var fe *FieldError
		if errors.As(err, &fe) {
			return nil, err
		}
		return nil, fieldErr("algo", "%s with %s: %w", a.Canonical, c.Budget, err)
	}
	r, err := audit.Empirical(ctx, tr, audit.Options{Runs: c.Runs, Delta: c.Delta, Confidence: c.Confidence, Workers: c.Workers, Ordered: c.Releases})
	if err != nil {
		return nil, err
	}
	passed := r.EpsLo <= claimed
	label := a.Canonical + " " + c.Budget.Label(4)
	if c.Releases {
		label += " [releases]"
	}
	if c.Break != "" {
		label += " [broken: " + c.Break + "]"
	}
	if noPower == "" {
		noPower = sawNothing(c, r, view)
	}
	return &AuditResult{
		Algorithm: a.Name, Label: label, Privacy: c.Budget, Params: a.Named(), Broken: c.Break, View: view, NoPower: noPower,
		EpsLo: r.EpsLo, EpsClaimed: claimed, Delta: c.Delta, Runs: r.Runs, Confidence: c.Confidence,
		Passed: passed, Expected: passed == (c.Break == ""), EventP: r.P, EventQ: r.Q,
	}, nil
}

// sawNothing is the NoPower of a sound audit that proved nothing (eps_lo
// = 0): such a pass cannot tell a sound mechanism from a broken one.
func sawNothing(c AuditConfig, r audit.Result, view string) string {
	if c.Break != "" || r.EpsLo > 0 {
		return ""
	}
	return fmt.Sprintf("eps_lo = 0 at %d runs: the %s showed nothing of the differing input at this point", r.Runs, view)
}

// ReleaseAudited reports whether an algorithm can be audited through its
// noisy releases (AuditConfig.Releases, audit.ReleaseTrial): the
// private finite-armed, linear, contextual and online algorithms, whose
// every draw of noise is a Laplace or Gaussian release of a statistic
// of the data that their claim covers (or padding that sees no data).
// The sparse policies are not (a sparse vector pass's and a noisy max's
// noisy answers are not releases: their mechanisms are audited as
// AuditComponents), nor the local randomisers of the robust family
// (audited through the clients' reports already).
func ReleaseAudited(a catalog.Algorithm) bool {
	switch a.Kind {
	case catalog.Finite, catalog.Linear, catalog.Contextual, catalog.Online:
		return a.Private
	}
	return false
}

// releaseSteps is the horizon of an online learner or a contextual
// policy audited through its releases: a tree over 32 steps has 6
// levels, the last node holding the first loss released at t = 32.
const releaseSteps = 32

// contextualSteps is the horizon of a contextual policy audited through
// its releases, as through its decisions (audit.ContextualTrial): its
// episodes end as the design matrix grows, so a horizon as short as the
// learners' can end before the first reward is released.
const contextualSteps = 1000

// releaseTrial builds the audit.ReleaseTrial of algorithm a: on the
// neighbouring inputs of its family (audit.OLODrive for the online
// learners; for the bandits the tables nb with the target's first reward
// at the two ends of the range). The mechanisms take their float path;
// one that makes no release there that the pair moves (SCRiBLE draws
// its noise on zeros and adds it after) is audited on its deployment
// path, where every release goes through the noise source.
func releaseTrial(a catalog.Spec, c AuditConfig, nb audit.Neighbours, wrap func(noise.Noise) noise.Noise) (audit.Trial, error) {
	if !ReleaseAudited(a.Algorithm) {
		return nil, fieldErr("releases", "%s cannot be audited through its releases: its noisy values are not all releases (audit its mechanisms with --component, or its decisions)", a.Name)
	}
	var drive audit.Drive
	var err error
	b := nb.Bounds
	if b == (mechanism.Bounds{}) {
		b = mechanism.Unit
	}
	nb.First = [2]float64{b.Hi, b.Lo}
	switch a.Kind {
	case catalog.Online:
		drive, err = audit.OLODrive(func(s olo.Setting) (olo.Learner, error) { return a.NewLearner(c.Budget, s) }, a.Set, c.Arms, releaseSteps, c.Seed)
	case catalog.Contextual:
		drive, err = audit.ContextualDrive(func(s contextual.Setting) (contextual.Policy, error) { return a.NewContextual(c.Budget, s) }, nb, contextualSteps)
	default:
		build := func(s bandit.Setting) (bandit.Policy, error) { return a.NewPolicy(c.Budget, s) }
		if c.Break == "redraw" {
			build = func(s bandit.Setting) (bandit.Policy, error) { return a.Redraw(a.Args(), c.Budget, s) }
		}
		drive, err = audit.BanditDrive(build, nb, c.Seed)
	}
	if err != nil {
		return nil, err
	}
	tr, err := audit.ReleaseTrial(drive, false, c.Seed, wrap)
	if errors.Is(err, audit.ErrNoRelease) {
		tr, err = audit.ReleaseTrial(drive, true, c.Seed, wrap)
	}
	return tr, err
}

// AuditAll audits every private algorithm of the registry with c's
// settings at each of its parameter points (Algorithm.Points: the
// defaults and both ends of every parameter's accepted range; the edges,
// and the algorithms whose audit of the decisions has no power, with
// c.EdgeRuns trials), through its decisions and, where ReleaseAudited
// and the decisions cannot show the pair (catalog.Algorithm.WeakAudit)
// or showed nothing at that point (eps_lo = 0), through its releases
// (with c.Runs trials). As a check that each audit has power, it audits
// at the defaults the variants with the noise divided by 10 (through the
// decisions where those have power, else through the releases) and
// (where one exists) the variant that re-draws its noise at every index
// evaluation; then each of AuditComponents and its noise/10 variant. A sound row that shows nothing (eps_lo = 0) is marked
// without power (NoPower), and is unexpected unless its lack of power is
// documented (catalog.Algorithm.WeakAudit) or the same point is audited
// with power another way (its releases with eps_lo > 0, or its own
// noise/10 variant failing). It writes audit.csv, audit.json,
// audit.svg/png and index.html into out when out is set.
func AuditAll(ctx context.Context, c AuditConfig, out string, progress func(label string)) ([]AuditResult, error) {
	var results []AuditResult
	var keys []auditKey
	run := func(cc AuditConfig, k auditKey, name string) error {
		if progress != nil {
			progress(strings.TrimSpace(name + " " + cc.Break))
		}
		r, err := Audit(ctx, cc)
		if err != nil {
			return err
		}
		results, keys = append(results, *r), append(keys, k)
		return nil
	}
	silent := map[string]bool{} // points whose releases hold nothing of the pair
	edgeRuns := c.EdgeRuns
	if edgeRuns == 0 {
		edgeRuns = max(c.Runs/5, 1000)
	}
	for _, a := range catalog.All() {
		if !a.Private {
			continue
		}
		rel := ReleaseAudited(a)
		base := c
		if eps, delta, ok := runsAt(a); ok {
			base.Budget, _ = privacy.NewPure(eps)
			base.Delta = delta
		}
		for i, p := range a.Points() {
			cc := base
			cc.Algo = p
			if i > 0 || a.WeakAudit != "" {
				cc.Runs = edgeRuns
			}
			if err := run(cc, auditKey{p, false}, p); err != nil {
				return results, err
			}
			blind := results[len(results)-1].EpsLo == 0
			if i == 0 && a.WeakAudit == "" {
				cc.Break = "scale"
				if err := run(cc, auditKey{p, false}, p); err != nil {
					return results, err
				}
			}
			if i == 0 && a.Redraw != nil {
				cc.Break = "redraw"
				if err := run(cc, auditKey{p, false}, p); err != nil {
					return results, err
				}
			}
			// The releases, where the decisions cannot show the pair
			// (with the noise/10 variant at the defaults, to show the
			// power they lack), or showed nothing at this point.
			if !rel || (a.WeakAudit == "" && !blind) {
				continue
			}
			cc.Runs, cc.Releases = c.Runs, true
			for _, brk := range []string{"", "scale"} {
				if cc.Break = brk; brk != "" && (i > 0 || a.WeakAudit == "") {
					break
				}
				err := run(cc, auditKey{p, true}, p+" [releases]")
				if errors.Is(err, audit.ErrNoRelease) {
					// Nothing released holds the differing reward, so
					// nothing can show it: the decisions' blindness is
					// expected.
					silent[p] = true
					break
				}
				if err != nil {
					return results, err
				}
			}
		}
	}
	for _, name := range AuditComponents {
		for _, brk := range []string{"", "scale"} {
			cc := c
			cc.Component, cc.Break = name, brk
			if err := run(cc, auditKey{"component " + name, false}, name); err != nil {
				return results, err
			}
		}
	}
	markPower(results, keys, silent)
	if out != "" {
		if err := writeAudit(out, results); err != nil {
			return results, err
		}
	}
	return results, nil
}

// runsAt returns the (eps, delta) budget an (eps, delta)-only algorithm
// (catalog.Algorithm.Approx) runs at in the presets: the smallest eps and
// delta of the first preset whose quick configuration runs it with eps
// and delta lists (private-lasso: eps = 1, delta = 10^-5, the sparse
// preset's). AuditAll audits such an algorithm there rather than at the
// (eps, delta) its rho implies, a budget no experiment gives it.
func runsAt(a catalog.Algorithm) (eps, delta float64, ok bool) {
	if !a.Approx {
		return 0, 0, false
	}
	for _, p := range Presets() {
		pc := p.Config(Quick)
		if len(pc.Eps) == 0 || len(pc.Delta) == 0 || !slices.ContainsFunc(pc.Algos, func(s string) bool {
			return s == a.Name || strings.HasPrefix(s, a.Name+":")
		}) {
			continue
		}
		return slices.Min(pc.Eps), slices.Min(pc.Delta), true
	}
	return 0, 0, false
}

// auditKey identifies the point and the view of an audited row, for
// markPower.
type auditKey struct {
	point    string
	releases bool
}

// markPower marks the sound rows of AuditAll that passed without power
// (eps_lo = 0): expected when the lack of power is documented (the
// decisions of an algorithm with catalog.Algorithm.WeakAudit), when no
// release of the point holds the differing reward (silent), or when the
// same point is audited with power another way (its own noise/10
// variant fails, or its releases show the pair, eps_lo > 0); otherwise
// unexpected. keys[i] is the point and view of results[i].
func markPower(results []AuditResult, keys []auditKey, silent map[string]bool) {
	for i, r := range results {
		if r.Broken != "" || !r.Passed || r.EpsLo > 0 || (r.View == "decisions" && catalogWeak(r.Algorithm)) {
			continue
		}
		if silent[keys[i].point] {
			results[i].NoPower += "; none of its releases over the audit's horizon holds the differing reward"
			continue
		}
		covered := false
		for j, s := range results {
			switch {
			case keys[j].point != keys[i].point:
			case s.Broken == "scale" && keys[j].releases == keys[i].releases && !s.Passed:
				covered = true // its own noise/10 variant fails
			case keys[j].releases && !keys[i].releases && s.Broken == "" && s.EpsLo > 0:
				covered = true // its releases show the differing reward
			}
		}
		if !covered {
			results[i].Expected = false
			results[i].NoPower += "; no other audit of this point has power"
		}
	}
}

// catalogWeak reports whether the algorithm's lack of power is
// documented (catalog.Algorithm.WeakAudit).
func catalogWeak(name string) bool {
	a, err := catalog.Lookup(name)
	return err == nil && a.WeakAudit != ""
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
every release; the verdict "unexpected" marks a sound policy that failed, a broken variant that passed, or a row without power that
no other audit of its point covers. Where the decisions drown the differing datum (the tree learners, EXP2, SCRiBLE, DP-PE, TS-GDP) or showed
nothing at a point, the policy is audited through its releases ([releases]: every value it draws noise for, the privacy loss of those
the pair moves), with its noise/10 variant. A pass that proved nothing (eps_lo = 0), or of an audit blind by design, reads
"pass (no power)". The sparse policies' own audits have no power
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
	_ = w.Write([]string{"policy", "view", "broken", "claimed_eps", "eps_lo", "delta", "runs", "confidence", "passed", "expected", "no_power"})
	num := func(x float64) string { return strconv.FormatFloat(x, 'g', 6, 64) }
	for _, r := range rs {
		_ = w.Write([]string{r.Label, r.View, r.Broken, num(r.EpsClaimed), num(r.EpsLo), num(r.Delta), strconv.Itoa(r.Runs), num(r.Confidence),
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
		names[j] = strings.Fields(r.Label)[0] + map[string]string{"releases": " [releases]"}[r.View] +
			map[string]string{"": "", "scale": " (noise / 10)", "redraw": " (noise re-drawn)"}[r.Broken]
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
