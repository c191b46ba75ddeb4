package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/dpbandit/dpbandit/experiment"
)

func merge(args []string, stdout io.Writer) error {
	fs := newFlagsArgs("merge", "DIR...\n\nEach DIR is the --out of shards (holding their shard-I-of-N folders), or one shard's folder:\n"+
		"its partial.json (dpbandit run --shard), or one folder per preset (dpbandit reproduce --shard).", stdout)
	out := fs.String("out", "results/merged", "output `dir`")
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
	if err := experiment.PrepareOut(*out); err != nil {
		return err
	}
	path, shards, err := experiment.Merge(dirs, *out, nil)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "merged %d shards into %s\n", shards, path)
	return nil
}
