package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/dpbandit/dpbandit/experiment"
)

func merge(ctx context.Context, args []string, stdout, _ io.Writer) error {
	fs := newFlagsArgs("merge", "DIR...\n\nEach DIR is the --out of shards (holding their shard-I-of-N folders), or one shard's folder:\n"+
		"its partial.json (dpbandit run --shard), or one folder per preset (dpbandit reproduce --shard).", stdout)
	out := fs.String("out", "results/merged", "output `dir`")
	force := forceFlag(fs)
	// Flags may follow the directories: parse, take one directory, repeat.
	var dirs []string
	for rest := args; ; {
		if err := parseArgs(fs, rest); err != nil {
			return err
		}
		if fs.NArg() == 0 {
			break
		}
		dirs, rest = append(dirs, fs.Arg(0)), fs.Args()[1:]
	}
	if len(dirs) == 0 {
		return usageError{errors.New("merge needs the directories of the shards (see dpbandit merge -h)")}
	}
	dest, err := experiment.PrepareOut(*out, *force)
	if err != nil {
		return err
	}
	onForcedExit(ctx, dest.Abort) // merging does not stop on Ctrl-C: main's watchdog stops it
	m, err := experiment.Merge(dirs, dest.Temp, nil)
	if err := settle(dest, err == nil, err); err != nil {
		return err
	}
	for _, rep := range m.Reports {
		if len(m.Reports) > 1 {
			fmt.Fprintf(stdout, "\n%s\n", rep.Config.Name)
		}
		printTable(stdout, rep)
	}
	path := m.Path
	if rel, rerr := filepath.Rel(dest.Temp, path); rerr == nil {
		path = filepath.Join(dest.Dir, rel)
	}
	fmt.Fprintf(stdout, "merged %d shards into %s\n", m.Shards, path)
	return nil
}
