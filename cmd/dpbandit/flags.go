package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/dpbandit/dpbandit/experiment"
	"github.com/dpbandit/dpbandit/sim"
)

// flags is a command's flag set with its help text.
type flags struct {
	*flag.FlagSet
	help func()
}

// newFlags returns a flag set that reports errors instead of exiting,
// and prints its help (for -h) on w.
func newFlags(name string, w io.Writer) *flags {
	return newFlagsArgs(name, "", w)
}

// newFlagsArgs is newFlags for a command that takes arguments after its
// flags, described by args (e.g. "[FILE]").
func newFlagsArgs(name, args string, w io.Writer) *flags {
	fs := flag.NewFlagSet("dpbandit "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors become one line; help is printed by parseArgs
	fs.Usage = func() {}
	return &flags{fs, func() {
		fmt.Fprintf(w, "usage: dpbandit %s [flags] %s\n\nflags:\n", name, args)
		fs.VisitAll(func(f *flag.Flag) { // the flag package names their types
			if p, ok := f.Value.(*plainNumber); ok {
				f.Value = p.Getter
			}
		})
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}}
}

// service declares the flags of a command that speaks to a running
// service (import, loadtest): its base URL and the admin bearer token.
func (fs *flags) service() (base, token *string) {
	return fs.String("url", "http://127.0.0.1:8080", "the service's base `URL`"),
		fs.String("token", "", "admin bearer `token` (when the service has a token file)")
}

// parse parses flags: one-line usage errors, help on -h.
func parse(fs *flags, args []string) error {
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected argument %q (see %s -h)", fs.Arg(0), fs.Name())}
	}
	return nil
}

// parseArgs is parse for a command that takes arguments.
func parseArgs(fs *flags, args []string) error {
	var bad error
	plainNumbers(fs.FlagSet, &bad)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.help()
			return err
		}
		if bad != nil {
			return bad
		}
		return usageError{fmt.Errorf("%v (see %s -h)", err, fs.Name())}
	}
	return nil
}

// plainNumbers wraps the numeric flags of fs so that a value they refuse
// is reported in *bad as a FieldError naming the flag and what it needs
// (the flag package says only "parse error").
func plainNumbers(fs *flag.FlagSet, bad *error) {
	fs.VisitAll(func(f *flag.Flag) {
		g, ok := f.Value.(flag.Getter)
		if !ok {
			return
		}
		want := ""
		switch g.Get().(type) {
		case uint64, uint:
			want = "a whole number from 0 to 2^64 - 1"
		case int, int64:
			want = "a whole number"
		case float64:
			want = "a number"
		default:
			return
		}
		f.Value = &plainNumber{Getter: g, name: f.Name, want: want, bad: bad}
	})
}

// plainNumber is a numeric flag whose refusals are FieldErrors.
type plainNumber struct {
	flag.Getter
	name, want string
	bad        *error
}

// String is the value's text ("0" for the zero plainNumber, which the
// flag package makes to tell a default from a zero value).
func (p *plainNumber) String() string {
	if p.Getter == nil {
		return "0"
	}
	return p.Getter.String()
}

// Set sets the value, or records why it is refused.
func (p *plainNumber) Set(s string) error {
	if err := p.Getter.Set(s); err != nil {
		*p.bad = &experiment.FieldError{Field: p.name, Err: fmt.Errorf("needs %s, got %q", p.want, s)}
		return *p.bad
	}
	return nil
}

// fieldFlag is a flag that records its text under a config key, for
// experiment.Config.Set to check (def is the default shown by -h).
type fieldFlag struct {
	key, def string
	values   map[string][]string
	bool     bool
}

func (f *fieldFlag) String() string { return f.def }

// Set records the flag's text (a repeated flag records each).
func (f *fieldFlag) Set(s string) error {
	f.values[f.key] = append(f.values[f.key], s)
	return nil
}

// IsBoolFlag makes a boolean flag take no value.
func (f *fieldFlag) IsBoolFlag() bool { return f.bool }

// splitList splits a comma list, "a, b" as "a,b"; an empty list or item
// is an error.
func splitList(field, s string) ([]string, error) {
	var out []string
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			return nil, &experiment.FieldError{Field: field, Err: fmt.Errorf("needs a comma list of names without empty items, got %q", s)}
		}
		out = append(out, f)
	}
	return out, nil
}

// floatList parses "0.01,0.1,1".
func floatList(field, s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		x, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, &experiment.FieldError{Field: field, Err: fmt.Errorf("needs a number, got %q", strings.TrimSpace(f))}
		}
		out = append(out, x)
	}
	return out, nil
}

// shardFlags adds --shard and --shards; what it returns reads them into
// the shard of the runs to compute, once parsed.
func shardFlags(fs *flags) func() (sim.Shard, error) {
	shard := fs.String("shard", "", "compute only shard `I/N` of the runs (runs r with r mod N = I) and write OUT/shard-I-of-N/partial.json; "+
		"env: from JOB_COMPLETION_INDEX (Kubernetes) or SLURM_ARRAY_TASK_ID (Slurm)")
	shards := fs.Int("shards", 0, "with --shard env on Kubernetes: the number of shards (default: DPBANDIT_SHARDS)")
	return func() (sim.Shard, error) { return shardOf(*shard, *shards) }
}

// shardOf parses the --shard flag.
func shardOf(s string, count int) (sim.Shard, error) {
	if count != 0 && s != "env" {
		return sim.Shard{}, &experiment.FieldError{Field: "shards", Err: errors.New("is for --shard env (Kubernetes), where it gives the number of shards")}
	}
	switch s {
	case "":
		return sim.Shard{}, nil
	case "env":
		return experiment.ShardFromEnv(os.Getenv, count)
	}
	return experiment.ParseShard(s)
}

// forceFlag adds --force: replace an earlier result in --out.
func forceFlag(fs *flags) *bool {
	return fs.Bool("force", false, "replace an earlier dpbandit result in --out (never a folder of other files)")
}

// settle puts a command's output in place when it produced a result
// (keep), or removes it, and returns err, or else the error of putting it
// in place (which replaces an interruption's: nothing was kept).
func settle(out *experiment.Out, keep bool, err error) error {
	if !keep {
		out.Abort()
		return err
	}
	if cerr := out.Commit(); cerr != nil {
		out.Abort()
		if errors.Is(err, context.Canceled) {
			err = nil
		}
		// %v: a folder that changed while the command computed is a
		// failure to write (exit 1), not a bad --out (exit 2).
		return errors.Join(err, fmt.Errorf("putting the results in %s: %v", out.Dir, cerr))
	}
	return err
}

// given reports whether the flag name was given on the command line.
func (fs *flags) given(name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
