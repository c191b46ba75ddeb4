package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/dpbandit/dpbandit/audit"
)

func verify(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagsArgs("verify", "[FILE]\n\nFILE is a finite policy as JSON (see docs/auditing.md); without it, the policy of\nProposition 1(e) of seed 001 is checked.", stdout)
	eps := fs.Float64("eps", 0.95, "`eps` to check (Proposition 1(e)'s)")
	delta := fs.Float64("delta", 0.17, "`delta` to check (Proposition 1(e)'s)")
	alpha := fs.Float64("alpha", 0, "also compute the Renyi divergence of this `order` (> 1)")
	asJSON := fs.Bool("json", false, "print one JSON object")
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 1 {
		return usageError{fmt.Errorf("verify takes at most one policy file, got %d arguments", fs.NArg())}
	}
	p := audit.Proposition1e()
	if fs.NArg() == 1 {
		f, err := os.Open(fs.Arg(0))
		if err != nil {
			return usageError{err}
		}
		p, err = audit.ParsePolicy(f)
		f.Close()
		if err != nil {
			return usageError{err}
		}
	}
	v, err := audit.Verify(p, *eps, *delta, *alpha)
	if err != nil {
		return usageError{err}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	fmt.Fprintf(stdout, "policy: %s (K=%d, T=%d)\n", p.Name, p.Arms, p.Horizon)
	tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "definition\t(%g, %g)-DP\tdelta at eps=%g\tsmallest eps at delta=%g", *eps, *delta, *eps, *delta)
	if *alpha > 1 {
		fmt.Fprintf(tw, "\tRenyi D_%g", *alpha)
	}
	fmt.Fprintln(tw)
	row := func(name string, c *audit.Check) {
		yes, me, re := "no", "none (infinite)", "infinite"
		if c.Satisfied {
			yes = "yes"
		}
		if c.MinEpsAtDelta != nil {
			me = fmt.Sprintf("%.4f", *c.MinEpsAtDelta)
		}
		fmt.Fprintf(tw, "%s\t%s\t%.4f\t%s", name, yes, c.DeltaAtEps, me)
		if *alpha > 1 {
			if c.Renyi != nil {
				re = fmt.Sprintf("%.4f", *c.Renyi)
			}
			fmt.Fprintf(tw, "\t%s", re)
		}
		fmt.Fprintln(tw)
	}
	row("view", &v.View)
	row("table", &v.Table)
	if v.Interactive != nil {
		row("interactive", v.Interactive)
	}
	tw.Flush()
	if v.Interactive == nil {
		fmt.Fprintf(stdout, "interactive: not computed (%s)\n", v.InteractiveNote)
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stdout, "The paper (001, proof of Proposition 1(e)) states: (0.95, 0.17)-View DP, not (0.95, 0.17)-Table DP; smallest eps at delta = 0.17 under Table DP: 0.98.")
	}
	return nil
}
