package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/dpbandit/dpbandit/catalog"
	"github.com/dpbandit/dpbandit/env"
	"github.com/dpbandit/dpbandit/experiment"
)

func list(_ context.Context, args []string, stdout, _ io.Writer) error {
	if len(args) == 1 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
		fmt.Fprintln(stdout, "usage: dpbandit list\n\nLists the algorithms by problem family, with their parameters and accepted ranges, the presets and the shipped data sets.")
		return nil
	}
	if len(args) > 0 {
		return usageError{fmt.Errorf("list takes no arguments, got %q", args[0])}
	}
	tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
	byKind := map[catalog.Kind][]catalog.Algorithm{}
	for _, a := range catalog.All() { // sorted by name
		byKind[a.Kind] = append(byKind[a.Kind], a)
	}
	for i, f := range experiment.Families() {
		if i > 0 {
			fmt.Fprintln(tw)
		}
		fmt.Fprintf(tw, "%s (environments: %s)\n", strings.ToUpper(f.Kind().String()), strings.Join(f.Envs(), ", "))
		fmt.Fprintln(tw, "ALGORITHM\tPRIVATE\tPARAMETERS\tDESCRIPTION")
		for _, a := range byKind[f.Kind()] {
			priv := "no"
			switch {
			case a.Local:
				priv = "local (ldp)"
			case a.Private:
				priv = "yes"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", a.Name, priv, a.ParamList(), a.Summary)
		}
	}
	fmt.Fprintln(tw, "\nPRESET\tSOURCE")
	for _, p := range experiment.Presets() {
		fmt.Fprintf(tw, "%s\t%s\n", p.Name, p.Source)
	}
	fmt.Fprintln(tw, "\nDATA SET (--env dataset:NAME)\tROWS\tFEATURES\tCLASSES\tSOURCE (licences: NOTICE)")
	for _, d := range env.Shipped() {
		source, _, _ := strings.Cut(d.Source, ";") // the reference, not the Debian file it was converted from
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\n", d.Name, d.Rows, d.Features, len(d.Classes), source)
	}
	fmt.Fprintln(tw, "your own CSV: --env csv:FILE,lo=L,hi=H (docs/cli.md, Data sets)")
	return tw.Flush()
}
