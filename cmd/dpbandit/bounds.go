package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/dpbandit/dpbandit/experiment"
	"github.com/dpbandit/dpbandit/privacy"
)

func bounds(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bounds", stdout)
	envSpec := fs.String("env", "bernoulli:0.75,0.625,0.5,0.375,0.25", "finite-armed environment `spec` (bernoulli or gaussian, rewards in [0,1])")
	horizon := fs.Int64("horizon", 1_000_000, "horizon `T`, in [2, 2^50]")
	rho := fs.String("rho", "", "zCDP budgets, comma `list` (--rho or --eps is required: there is no default budget)")
	eps := fs.String("eps", "", "pure eps-DP budgets, comma `list` (converted to rho = eps^2/2 for the zCDP bounds; --rho or --eps is required)")
	beta := fs.Float64("beta", 4, "optimism `beta` of AdaC-UCB / AdaP-UCB (Theorems 10, 11 need beta > 3)")
	conf := fs.Float64("confidence", 0.05, "DP-SE confidence `beta` of Lemma 4.1")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parse(fs, args); err != nil {
		return err
	}
	var budgets []privacy.Budget
	for _, l := range []struct {
		field, s string
		mk       func(float64) (privacy.Budget, error)
	}{{"rho", *rho, privacy.NewZCDP}, {"eps", *eps, privacy.NewPure}} {
		if l.s == "" {
			continue
		}
		xs, err := floatList(l.field, l.s)
		if err != nil {
			return err
		}
		for _, x := range xs {
			b, err := l.mk(x)
			if err != nil {
				return experiment.BudgetError(l.field, err)
			}
			budgets = append(budgets, b)
		}
	}
	rows, err := experiment.Bounds(*envSpec, *horizon, budgets, *beta, *conf)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	}
	opt := func(x *float64) string {
		if x == nil {
			return "-"
		}
		return fmt.Sprintf("%.5g", *x)
	}
	capped := false
	fmt.Fprintf(stdout, "%s, T=%d, beta=%g, DP-SE confidence %g\n", *envSpec, *horizon, *beta, *conf)
	tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "budget\trho\tThm 10 instance upper\tThm 11 minimax upper\tTable II instance upper\tThm 17 minimax lower\tDP-SE instance upper (000 L4.1)\tDP-SE pulls per arm")
	for _, r := range rows {
		capped = capped || len(r.Capped) > 0
		pulls := make([]string, len(r.DPSEPulls))
		for i, p := range r.DPSEPulls {
			pulls[i] = fmt.Sprintf("%.0f", p)
		}
		fmt.Fprintf(tw, "%s\t%.4g\t%s\t%s\t%s\t%s\t%.5g\t%s\n", r.Privacy, r.Rho, opt(r.Theorem10), opt(r.Theorem11),
			opt(r.TableII), opt(r.Theorem17), r.DPSERegret, strings.Join(pulls, ","))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "instance: for these means; minimax: over every instance of these K arms at T (seed 001 for the theorems and Table II)")
	if capped {
		fmt.Fprintln(stdout, "(bounds above T times the largest gap, the most any policy can regret, are shown capped there; --json names them)")
	}
	return nil
}
