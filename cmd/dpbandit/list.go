package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/dpbandit/dpbandit/catalog"
	"github.com/dpbandit/dpbandit/experiment"
)

func list(args []string, stdout io.Writer) error {
	if len(args) == 1 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
		fmt.Fprintln(stdout, "usage: dpbandit list\n\nLists the algorithms by problem family, with their parameters and accepted ranges, and the presets.")
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
	return tw.Flush()
}
