// Command dpbandit runs differentially private bandit experiments.
//
// Usage:
//
//	dpbandit                      run the quick reproduction into ./results
//	dpbandit run [flags]          run one experiment (flags or --config FILE)
//	dpbandit reproduce [flags]    run every embedded preset and write a report
//	dpbandit list                 list the algorithms and presets
//	dpbandit bounds [flags]       evaluate the papers' finite-armed regret bounds
//	dpbandit verify [FILE]        exact privacy of a finite policy given as tables
//	dpbandit audit [flags]        empirical privacy audit of the private policies
//	dpbandit merge DIR... --out D combine the shards of a run or reproduction
//	dpbandit serve [flags]        the private decision service
//	dpbandit loadtest [flags]     load a running service, report throughput and latency
//
// Run `dpbandit COMMAND -h` for a command's flags. Bad flags or configs
// print a one-line error naming the field and exit with status 2, before
// any computation; an audit whose verdict is not the expected one exits
// with status 3; an interrupted run (Ctrl-C or SIGTERM) keeps the runs it
// finished, writes them, and exits with status 130.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"golang.org/x/term"

	"github.com/dpbandit/dpbandit/audit"
	"github.com/dpbandit/dpbandit/catalog"
	"github.com/dpbandit/dpbandit/experiment"
	"github.com/dpbandit/dpbandit/privacy"
	"github.com/dpbandit/dpbandit/sim"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	serving := len(os.Args) > 1 && os.Args[1] == "serve"
	go func() {
		if serving {
			return // serve shuts down gracefully by itself
		}
		// Long steps check for cancellation cooperatively; whatever has
		// not stopped 0.9 s after the signal (a long constructor, say)
		// is stopped here. Files are written atomically, so none is left
		// half-written.
		<-ctx.Done()
		time.Sleep(900 * time.Millisecond)
		fmt.Fprintln(os.Stderr, "dpbandit: interrupted")
		os.Exit(exitInterrupted)
	}()
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Exit statuses.
const (
	exitOK          = 0
	exitFailure     = 1
	exitUsage       = 2
	exitAudit       = 3
	exitInterrupted = 130
)

// auditError marks an audit whose verdict is not the expected one (exit
// status 3).
type auditError struct{ error }

// usageError marks errors in the command line or config (exit status 2).
type usageError struct{ error }

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmd, rest := "", args
	if len(args) > 0 {
		cmd, rest = args[0], args[1:]
	}
	var err error
	switch cmd {
	case "":
		fmt.Fprintln(stdout, "dpbandit: running the quick reproduction of every preset into ./results (about 10 s; `dpbandit help` lists the commands)")
		err = reproduce(ctx, []string{"--scale", "quick", "--out", "results"}, stdout, stderr)
	case "run":
		err = runCmd(ctx, rest, stdout, stderr)
	case "reproduce":
		err = reproduce(ctx, rest, stdout, stderr)
	case "list":
		err = list(rest, stdout)
	case "bounds":
		err = bounds(rest, stdout, stderr)
	case "verify":
		err = verify(rest, stdout, stderr)
	case "audit":
		err = auditCmd(ctx, rest, stdout, stderr)
	case "merge":
		err = merge(rest, stdout)
	case "serve":
		err = serveCmd(ctx, rest, stdout, stderr)
	case "loadtest":
		err = loadtestCmd(ctx, rest, stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return exitOK
	case "version", "--version", "-version":
		fmt.Fprintln(stdout, version())
		return exitOK
	default:
		err = usageError{fmt.Errorf("unknown command %q (commands: run, reproduce, merge, list, bounds, verify, audit, serve, loadtest; see dpbandit help)", cmd)}
	}
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.Is(err, context.Canceled):
		fmt.Fprintln(stderr, "dpbandit: interrupted; the runs finished so far (if any) were written")
		return exitInterrupted
	}
	var ue usageError
	var fe *experiment.FieldError
	var ae auditError
	msg := err.Error()
	if !errors.As(err, &fe) { // a field error names its field and is plain already
		msg = experiment.Plain(msg)
	}
	fmt.Fprintln(stderr, "dpbandit: "+msg)
	switch {
	case errors.As(err, &ue) || errors.As(err, &fe):
		return exitUsage
	case errors.As(err, &ae):
		return exitAudit
	}
	return exitFailure
}

const usage = `dpbandit: differentially private online learning and bandits

Commands:
  dpbandit                    run the quick reproduction of every preset into ./results
  dpbandit run [flags]        run one experiment, from flags or --config FILE (YAML)
  dpbandit reproduce [flags]  run the embedded presets and write results/index.html
  dpbandit list               list the algorithms and presets
  dpbandit bounds [flags]     evaluate the papers' finite-armed regret bounds
  dpbandit verify [FILE]      exact View/Table/Interactive DP of a finite policy (default: 001 Prop. 1(e))
  dpbandit audit [flags]      empirical privacy audit of a private policy (--all: of every one)
  dpbandit merge DIR... --out DIR
                              combine the shards (--shard I/N) of a run or reproduction
  dpbandit serve [flags]      run the private decision service (HTTP API under /v1)
  dpbandit loadtest [flags]   drive a running service and report throughput and latency

Example:
  dpbandit run --algo adac-ucb:beta=4 --algo ucb-doubling:beta=4 \
    --env bernoulli:0.75,0.625,0.5,0.375,0.25 --horizon 1000000 --runs 100 \
    --rho 0.01,0.1,1,10 --seed 7 --out results/adac

Run 'dpbandit COMMAND -h' for the flags of a command.

Exit status: 0 done; 1 failure while computing or writing; 2 bad command
line or config (reported before any computation); 3 an audit's verdict is
not the expected one; 130 interrupted (Ctrl-C, SIGTERM).
`

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
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}}
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
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.help()
			return err
		}
		return usageError{fmt.Errorf("%v (see %s -h)", err, fs.Name())}
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

func runCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("run", stdout)
	config := fs.String("config", "", "YAML config `file` (flags given too override it)")
	// Every other flag is a config key: its text goes through the same
	// checks as a config file's value (experiment.Config.Set).
	values := map[string][]string{}
	field := func(name, key, def, usage string) {
		fs.Var(&fieldFlag{key: key, def: def, values: values}, name, usage)
	}
	d := experiment.Defaults()
	field("algo", "algos", "", "algorithm `spec`, repeatable: name or name:key=value:... (see dpbandit list)")
	field("env", "env", "", "environment `spec`, e.g. bernoulli:0.75,0.625,0.5,0.375,0.25")
	field("horizon", "horizon", fmt.Sprint(d.Horizon), "horizon `T`")
	field("runs", "runs", fmt.Sprint(d.Runs), "number of independent `runs`")
	field("seed", "seed", fmt.Sprint(d.Seed), "random `seed`; results depend on nothing else")
	field("rho", "rho", "", "zCDP budgets, comma `list` (a list sweeps)")
	field("eps", "eps", "", "eps `list`: pure DP, or (eps,delta)-DP with --delta, or Renyi with --alpha")
	field("delta", "delta", "", "delta `list` for (eps,delta)-DP")
	field("alpha", "alpha", "", "Renyi order `list`")
	field("workers", "workers", "0", "parallel `workers` (0: all cores); never changes results")
	field("mode", "mode", d.Mode, "`mode`: batched, step (unroll plans) or iid (independent per-step rewards)")
	field("delay", "delay", "", "reward `delay`: a number of decisions, or geom:MEAN (finite-armed, linear and linear contextual bandits)")
	field("reference", "reference", "", "algorithm `spec` to pair private results with (default: counterpart)")
	field("checkpoints", "checkpoints", fmt.Sprint(d.Checkpoints), "`number` of log-spaced checkpoints")
	field("noise", "noise", d.Noise, "privacy `noise`: fast (seeded, reproducible) or secure (discrete, OS entropy, as deployed)")
	field("name", "name", "", "experiment `title` for plots")
	field("out", "out", d.Out, "output `dir`")
	fs.Var(&fieldFlag{key: "quiet", values: values, bool: true}, "quiet", "no progress bar")
	field("max-memory", "max_memory", fmt.Sprint(d.MaxMemory), "refuse experiments estimated to need more than this many `MiB`")
	shardFlag, shards := shardFlags(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	shard, err := shardOf(*shardFlag, *shards)
	if err != nil {
		return err
	}
	c := d
	if *config != "" {
		var err error
		if c, err = experiment.LoadConfig(*config); err != nil {
			return usageError{err}
		}
	}
	if err := c.Set(experiment.FlagFields(values)); err != nil {
		return err
	}
	if err := c.Validate(); err != nil {
		return err
	}
	if shard.Count > 0 {
		c.Out = filepath.Join(c.Out, experiment.ShardDir(shard))
	}
	if err := experiment.PrepareOut(c.Out); err != nil {
		return err
	}
	bar := newProgress(stderr, c.Quiet, "runs")
	rep, err := experiment.Run(ctx, c, experiment.Options{Out: c.Out, Progress: bar.update, Shard: shard})
	bar.finish()
	if rep != nil {
		if shard.Count > 0 {
			fmt.Fprintf(stdout, "SHARD %d/%d: %d of %d runs; `dpbandit merge` the shards for the experiment's results\n", shard.Index, shard.Count, rep.Summary.Runs, c.Runs)
		}
		if rep.Summary.Interrupted {
			fmt.Fprintf(stdout, "PARTIAL: interrupted after %d of %d runs; the table and files cover those runs\n", rep.Summary.Runs, c.Runs)
		}
		printTable(stdout, rep)
	}
	if err == nil || errors.Is(err, context.Canceled) && rep != nil {
		fmt.Fprintf(stdout, "results in %s: %s\n", c.Out, strings.Join(rep.Files, ", "))
	}
	return err
}

func printTable(w io.Writer, rep *experiment.Report) {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "entry\tregret at T=%d\t95%% CI\tdiff vs reference (± 95%%)\tPoP\n", rep.Summary.Horizon)
	for _, r := range rep.Summary.Results {
		diff, pop := "", ""
		if r.DiffMean != nil && r.DiffSE != nil {
			diff = fmt.Sprintf("%.4g ± %.2g", *r.DiffMean, 1.96**r.DiffSE)
		}
		if r.PoP != nil {
			pop = fmt.Sprintf("%.3g", *r.PoP)
		}
		fmt.Fprintf(tw, "%s\t%.4g\t[%.4g, %.4g]\t%s\t%s\n", r.Label, r.RegretMean, r.RegretCI95[0], r.RegretCI95[1], diff, pop)
	}
	tw.Flush()
}

func reproduce(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("reproduce", stdout)
	scale := fs.String("scale", "quick", "`scale`: quick (seconds) or paper (the papers' T and runs)")
	out := fs.String("out", "results", "output `dir`")
	only := fs.String("preset", "", "comma `list` of presets to run (default: all)")
	workers := fs.Int("workers", 0, "parallel `workers` (0: all cores)")
	quiet := fs.Bool("quiet", false, "no progress bar")
	shardFlag, shards := shardFlags(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	shard, err := shardOf(*shardFlag, *shards)
	if err != nil {
		return err
	}
	sc, err := experiment.ParseScale(*scale)
	if err != nil {
		return &experiment.FieldError{Field: "scale", Err: err}
	}
	if *workers < 0 {
		return &experiment.FieldError{Field: "workers", Err: fmt.Errorf("must be non-negative, got %d", *workers)}
	}
	var names []string
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == "preset" })
	if given {
		if names, err = splitList("preset", *only); err != nil {
			return err
		}
		if err := experiment.CheckPresets(names); err != nil {
			return err
		}
	}
	if shard.Count > 0 {
		*out = filepath.Join(*out, experiment.ShardDir(shard))
	}
	if err := experiment.PrepareOut(*out); err != nil {
		return err
	}
	bar := newProgress(stderr, *quiet, "runs")
	start := time.Now()
	path, err := experiment.Reproduce(ctx, experiment.ReproduceOptions{
		Scale: sc, Out: *out, Only: names, Workers: *workers, Shard: shard,
		Progress: func(p string, done, total int) { bar.label = p; bar.update(done, total) },
	})
	bar.finish()
	if err != nil {
		return err
	}
	if shard.Count > 0 {
		fmt.Fprintf(stdout, "shard %d/%d of the reproduction (%s scale) finished in %.1fs; partial results in %s; `dpbandit merge` the shards\n",
			shard.Index, shard.Count, sc, time.Since(start).Seconds(), path)
		return nil
	}
	fmt.Fprintf(stdout, "reproduction (%s scale) finished in %.1fs; report: %s\n", sc, time.Since(start).Seconds(), path)
	return nil
}

// shardFlags adds --shard and --shards.
func shardFlags(fs *flags) (shard *string, shards *int) {
	shard = fs.String("shard", "", "compute only shard `I/N` of the runs (runs r with r mod N = I) and write OUT/shard-I-of-N/partial.json; "+
		"env: from JOB_COMPLETION_INDEX (Kubernetes) or SLURM_ARRAY_TASK_ID (Slurm)")
	shards = fs.Int("shards", 0, "with --shard env on Kubernetes: the number of shards (default: DPBANDIT_SHARDS)")
	return shard, shards
}

// shardOf parses the --shard flag.
func shardOf(s string, count int) (sim.Shard, error) {
	switch s {
	case "":
		return sim.Shard{}, nil
	case "env":
		return experiment.ShardFromEnv(os.Getenv, count)
	}
	return experiment.ParseShard(s)
}

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
	path, err := experiment.Merge(dirs, *out, nil)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "merged %d shards into %s\n", len(dirs), path)
	return nil
}

func bounds(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bounds", stdout)
	envSpec := fs.String("env", "bernoulli:0.75,0.625,0.5,0.375,0.25", "environment `spec` (rewards in [0,1])")
	horizon := fs.Int64("horizon", 1_000_000, "horizon `T`")
	rho := fs.String("rho", "", "zCDP budgets, comma `list`")
	eps := fs.String("eps", "", "pure eps-DP budgets, comma `list` (converted to rho = eps^2/2 for the zCDP bounds)")
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
	fmt.Fprintf(stdout, "%s, T=%d, beta=%g, DP-SE confidence %g\n", *envSpec, *horizon, *beta, *conf)
	tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "budget\trho\tThm 10 (001)\tThm 11 (001)\tTable II conv.\tThm 17 lower\tDP-SE regret (000 L4.1)\tDP-SE pulls per arm")
	for _, r := range rows {
		pulls := make([]string, len(r.DPSEPulls))
		for i, p := range r.DPSEPulls {
			pulls[i] = fmt.Sprintf("%.0f", p)
		}
		fmt.Fprintf(tw, "%s\t%.4g\t%s\t%s\t%s\t%s\t%.5g\t%s\n", r.Privacy, r.Rho, opt(r.Theorem10), opt(r.Theorem11),
			opt(r.TableII), opt(r.Theorem17), r.DPSERegret, strings.Join(pulls, ","))
	}
	return tw.Flush()
}

func verify(args []string, stdout, stderr io.Writer) error {
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

func auditCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("audit", stdout)
	d := experiment.DefaultAudit()
	algo := fs.String("algo", "", "private algorithm `spec` to audit (see dpbandit list)")
	all := fs.Bool("all", false, "audit every private algorithm and the broken variants; write a report to --out")
	rho := fs.Float64("rho", 0, "zCDP budget `rho` (default 0.1; pure-DP algorithms then use eps = sqrt(2 rho))")
	eps := fs.Float64("eps", 0, "pure eps-DP budget `eps` instead of rho")
	delta := fs.Float64("delta", d.Delta, "`delta` at which eps is claimed and bounded")
	runs := fs.Int("runs", d.Runs, "trials per neighbouring table")
	edgeRuns := fs.Int("edge-runs", 0, "with --all: trials per table at the parameter edges and for the policies whose audit has no power (0: runs/5)")
	conf := fs.Float64("confidence", d.Confidence, "`confidence` of the lower bound")
	brk := fs.String("break", "", "audit a deliberately broken `variant`: scale (noise/10) or redraw")
	seed := fs.Uint64("seed", d.Seed, "random `seed`")
	workers := fs.Int("workers", 0, "parallel `workers` (0: all cores)")
	out := fs.String("out", "results/audit", "output `dir` for --all")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parse(fs, args); err != nil {
		return err
	}
	c := d
	c.Delta, c.Runs, c.EdgeRuns, c.Confidence, c.Break, c.Seed, c.Workers = *delta, *runs, *edgeRuns, *conf, *brk, *seed, *workers
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var err error
	switch {
	case given["rho"] && given["eps"]:
		return &experiment.FieldError{Field: "rho", Err: errors.New("give rho or eps, not both")}
	case given["rho"]:
		c.Budget, err = privacy.NewZCDP(*rho)
	case given["eps"]:
		c.Budget, err = privacy.NewPure(*eps)
	}
	if err != nil {
		return experiment.BudgetError("budget", err)
	}
	if c.Workers < 0 {
		return &experiment.FieldError{Field: "workers", Err: fmt.Errorf("must be non-negative, got %d", c.Workers)}
	}
	if c.Runs < 4 || c.Runs > maxAuditRuns {
		return &experiment.FieldError{Field: "runs", Err: fmt.Errorf("must lie in [4, 10^7], got %d", c.Runs)}
	}
	if c.EdgeRuns != 0 && (c.EdgeRuns < 4 || c.EdgeRuns > maxAuditRuns) {
		return &experiment.FieldError{Field: "edge-runs", Err: fmt.Errorf("must be 0 or lie in [4, 10^7], got %d", c.EdgeRuns)}
	}
	if *all {
		if err := experiment.PrepareOut(*out); err != nil {
			return err
		}
	}
	if !(c.Confidence > 0 && c.Confidence < 1) {
		return &experiment.FieldError{Field: "confidence", Err: fmt.Errorf("must lie in (0,1), got %v", c.Confidence)}
	}
	var results []experiment.AuditResult
	switch {
	case *all:
		results, err = experiment.AuditAll(ctx, c, *out, func(l string) {
			if !*asJSON {
				fmt.Fprintf(stderr, "auditing %s\n", l)
			}
		})
	case *algo == "":
		return &experiment.FieldError{Field: "algo", Err: errors.New("name a private algorithm, or give --all")}
	default:
		c.Algo = *algo
		var r *experiment.AuditResult
		if r, err = experiment.Audit(ctx, c); r != nil {
			results = append(results, *r)
		}
	}
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if len(results) == 1 && !*all {
			return enc.Encode(results[0])
		}
		return enc.Encode(results)
	}
	tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "policy\tclaimed eps\teps_lo\tdelta\truns\tconfidence\tverdict")
	for _, r := range results {
		v := "pass"
		if !r.Passed {
			v = "FAIL"
		}
		fmt.Fprintf(tw, "%s\t%.4g\t%.4g\t%g\t%d\t%g\t%s\n", r.Label, r.EpsClaimed, r.EpsLo, r.Delta, r.Runs, r.Confidence, v)
	}
	tw.Flush()
	if *all {
		fmt.Fprintf(stdout, "report: %s\n", filepath.Join(*out, "index.html"))
	}
	// A policy must pass and a broken variant must fail.
	var bad []string
	for _, r := range results {
		if r.Passed != (r.Broken == "") {
			bad = append(bad, r.Label)
		}
	}
	if len(bad) > 0 {
		return auditError{fmt.Errorf("unexpected verdict for %s", strings.Join(bad, "; "))}
	}
	return nil
}

// maxAuditRuns bounds the trials per table of an audit: 10^7 take about
// an hour for the slowest policies and a few hundred MB.
const maxAuditRuns = 10_000_000

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
		fmt.Fprintf(tw, "%s (environments: %s)\n", strings.ToUpper(f.Kind().String()), strings.Join(f.Kinds(), ", "))
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

// progress draws a progress bar on a terminal.
type progress struct {
	w     io.Writer
	on    bool
	label string
	start time.Time
	last  time.Time
}

func newProgress(w io.Writer, quiet bool, label string) *progress {
	on := false
	if f, ok := w.(*os.File); ok && !quiet {
		on = term.IsTerminal(int(f.Fd()))
	}
	return &progress{w: w, on: on, label: label, start: time.Now()}
}

func (p *progress) update(done, total int) {
	if !p.on || (time.Since(p.last) < 100*time.Millisecond && done < total) {
		return
	}
	p.last = time.Now()
	const width = 30
	fill := width * done / max(total, 1)
	fmt.Fprintf(p.w, "\r%-14s [%s%s] %d/%d runs %5.1fs", p.label, strings.Repeat("=", fill), strings.Repeat(" ", width-fill), done, total, time.Since(p.start).Seconds())
}

func (p *progress) finish() {
	if p.on {
		fmt.Fprintln(p.w)
	}
}

// version describes the build: the module's version and, for a build
// from a checkout, its VCS revision and time (debug.ReadBuildInfo).
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "dpbandit (no build information)"
	}
	v := "dpbandit " + bi.Main.Version
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	if r := settings["vcs.revision"]; r != "" {
		v += " revision " + r
		if settings["vcs.modified"] == "true" {
			v += " (modified)"
		}
		if t := settings["vcs.time"]; t != "" {
			v += " of " + t
		}
	}
	return v + " built with " + bi.GoVersion
}
