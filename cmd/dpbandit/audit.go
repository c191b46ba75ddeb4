package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/dpbandit/dpbandit/experiment"
	"github.com/dpbandit/dpbandit/privacy"
)

// auditArgs is the command line of dpbandit audit, parsed and checked.
type auditArgs struct {
	c                     experiment.AuditConfig
	algo, component, out  string
	all, releases, asJSON bool
	force                 bool
}

func auditCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	a, err := parseAudit(args, stdout)
	if err != nil {
		return err
	}
	results, err := a.run(ctx, stderr)
	if err != nil {
		return err
	}
	if err := a.print(stdout, results); err != nil {
		return err
	}
	return unexpected(results)
}

// parseAudit reads audit's flags and checks them, each error naming its
// flag.
func parseAudit(args []string, stdout io.Writer) (*auditArgs, error) {
	fs := newFlags("audit", stdout)
	d := experiment.DefaultAudit()
	algo := fs.String("algo", "", "private algorithm `spec` to audit (see dpbandit list)")
	component := fs.String("component", "", "audit a mechanism on its own: `name` in "+strings.Join(experiment.AuditComponents, ", ")+" (the sparse policies' parts; evaluate's private estimates)")
	all := fs.Bool("all", false, "audit every private algorithm and the broken variants; write a report to --out")
	rho := fs.Float64("rho", 0, "zCDP budget `rho` (default 0.1; pure-DP algorithms then use eps = sqrt(2 rho))")
	eps := fs.Float64("eps", 0, "pure eps-DP budget `eps` instead of rho")
	delta := fs.Float64("delta", d.Delta, "`delta` at which eps is claimed and bounded")
	runs := fs.Int("runs", d.Runs, "trials per neighbouring table")
	edgeRuns := fs.Int("edge-runs", 0, "with --all: trials per table at the parameter edges and for the policies whose audit has no power (0: runs/5)")
	conf := fs.Float64("confidence", d.Confidence, "`confidence` of the lower bound")
	brk := fs.String("break", "", "audit a deliberately broken `variant`: scale (noise/10) or redraw")
	releases := fs.Bool("releases", false, "with --algo: audit the algorithm's noisy releases (every value it draws noise for) instead of its decisions")
	seed := fs.Uint64("seed", d.Seed, "random `seed`")
	workers := fs.Int("workers", 0, "parallel `workers` (0: all cores)")
	out := fs.String("out", "results/audit", "output `dir` for --all")
	asJSON := fs.Bool("json", false, "print JSON")
	force := forceFlag(fs)
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	a := &auditArgs{c: d, algo: *algo, component: *component, out: *out, all: *all, releases: *releases, asJSON: *asJSON, force: *force}
	c := &a.c
	c.Delta, c.Runs, c.EdgeRuns, c.Confidence, c.Break, c.Seed, c.Workers = *delta, *runs, *edgeRuns, *conf, *brk, *seed, *workers
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	for _, f := range []string{"algo", "component", "break", "releases", "out", "edge-runs"} {
		switch withAll := f == "out" || f == "edge-runs"; {
		case given[f] && *all && !withAll:
			return nil, &experiment.FieldError{Field: f, Err: errors.New("--all audits every private algorithm, component and broken variant; give one or the other")}
		case given[f] && !*all && withAll:
			return nil, &experiment.FieldError{Field: f, Err: errors.New("applies only with --all")}
		}
	}
	var g privacy.Given
	if given["rho"] {
		g.Rho = rho
	}
	if given["eps"] {
		g.Eps = eps
	}
	var err error
	switch {
	case given["rho"] && given["eps"]:
		return nil, &experiment.FieldError{Field: "rho", Err: errors.New("give rho or eps, not both")}
	case given["rho"] || given["eps"]:
		c.Budget, err = g.Budget()
	}
	if err != nil {
		return nil, experiment.BudgetError("budget", err)
	}
	return a, a.check()
}

// check refuses numbers out of range and, without --all, a command that
// names no single thing to audit.
func (a *auditArgs) check() error {
	c := a.c
	switch {
	case c.Workers < 0:
		return &experiment.FieldError{Field: "workers", Err: fmt.Errorf("must be non-negative, got %d", c.Workers)}
	case c.Runs < 4 || c.Runs > maxAuditRuns:
		return &experiment.FieldError{Field: "runs", Err: fmt.Errorf("must lie in [4, 10^7], got %d", c.Runs)}
	case c.EdgeRuns != 0 && (c.EdgeRuns < 4 || c.EdgeRuns > maxAuditRuns):
		return &experiment.FieldError{Field: "edge-runs", Err: fmt.Errorf("must be 0 or lie in [4, 10^7], got %d", c.EdgeRuns)}
	case !(c.Confidence > 0 && c.Confidence < 1):
		return &experiment.FieldError{Field: "confidence", Err: fmt.Errorf("must lie in (0,1), got %v", c.Confidence)}
	case a.all:
		return nil
	case a.algo != "" && a.component != "":
		return &experiment.FieldError{Field: "component", Err: errors.New("give --algo or --component, not both")}
	case a.releases && a.algo == "":
		return &experiment.FieldError{Field: "releases", Err: errors.New("audits an algorithm's releases: give --algo")}
	case a.algo == "" && a.component == "":
		return &experiment.FieldError{Field: "algo", Err: errors.New("name a private algorithm (--algo) or a mechanism (--component), or give --all")}
	}
	return nil
}

// run audits what the arguments name: everything into --out (--all), or
// one algorithm or component.
func (a *auditArgs) run(ctx context.Context, stderr io.Writer) ([]experiment.AuditResult, error) {
	if a.all {
		dest, err := experiment.PrepareOut(a.out, a.force)
		if err != nil {
			return nil, err
		}
		results, err := experiment.AuditAll(ctx, a.c, dest.Temp, func(l string) {
			if !a.asJSON {
				fmt.Fprintf(stderr, "auditing %s\n", l)
			}
		})
		return results, settle(dest, err == nil, err)
	}
	c := a.c
	c.Algo, c.Component, c.Releases = a.algo, a.component, a.releases
	r, err := experiment.Audit(ctx, c)
	if r == nil {
		return nil, err
	}
	return []experiment.AuditResult{*r}, err
}

// print writes the results as JSON (--json) or as a table.
func (a *auditArgs) print(stdout io.Writer, results []experiment.AuditResult) error {
	if a.asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if len(results) == 1 && !a.all {
			return enc.Encode(results[0])
		}
		return enc.Encode(results)
	}
	tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "policy\tclaimed eps\teps_lo\tdelta\truns\tconfidence\tverdict")
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%.4g\t%.4g\t%g\t%d\t%g\t%s\n", r.Label, r.EpsClaimed, r.EpsLo, r.Delta, r.Runs, r.Confidence, r.Verdict())
	}
	tw.Flush()
	if a.all {
		fmt.Fprintf(stdout, "report: %s\n", filepath.Join(a.out, "index.html"))
	}
	return nil
}

// unexpected is the auditError of the results whose verdict is not the
// expected one (a policy must pass, a broken variant fail), nil if none.
func unexpected(results []experiment.AuditResult) error {
	var bad []string
	for _, r := range results {
		if r.Expected {
			continue
		}
		why := r.Label
		switch {
		case r.Broken != "" && r.NoPower != "":
			why += " (expected: this audit has no power for " + r.Algorithm + ": " + r.NoPower + ")"
		case r.Broken != "":
			why += fmt.Sprintf(" (a broken variant passed at %d runs: the audit may lack power there; give more --runs)", r.Runs)
		}
		bad = append(bad, why)
	}
	if len(bad) > 0 {
		return auditError{fmt.Errorf("unexpected verdict for %s", strings.Join(bad, "; "))}
	}
	return nil
}

// maxAuditRuns bounds the trials per table of an audit: 10^7 take about
// an hour for the slowest policies and a few hundred MB.
const maxAuditRuns = 10_000_000
