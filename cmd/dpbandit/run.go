package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/dpbandit/dpbandit/experiment"
	"github.com/dpbandit/dpbandit/sim"
)

func runCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("run", stdout)
	var configs []string
	fs.Func("config", "YAML config `file`, once (flags given too override it)", func(s string) error {
		configs = append(configs, s)
		return nil
	})
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
	field("delay", "delay", "", "reward `delay`: a number of decisions, or geom:MEAN, then ,miss=P (never sent), ,default=R (for rewards that do not come in the window; contextual: once overdue, or with ,late=1 at the window's end), ,window=W (decisions, default 10000) and ,late=1 (contextual: the service's rule since rules 5, an overdue reward learned when it comes) (finite-armed, linear and linear contextual bandits)")
	field("reference", "reference", "", "algorithm `spec` to pair private results with (default: counterpart)")
	field("checkpoints", "checkpoints", fmt.Sprint(d.Checkpoints), "`number` of log-spaced checkpoints")
	field("noise", "noise", d.Noise, "privacy `noise`: fast (seeded, reproducible) or secure (discrete, OS entropy, as deployed)")
	field("name", "name", "", "experiment `title` for plots")
	field("out", "out", d.Out, "output `dir`")
	fs.Var(&fieldFlag{key: "quiet", values: values, bool: true}, "quiet", "no progress bar")
	field("max-memory", "max_memory", fmt.Sprint(d.MaxMemory), "refuse experiments estimated to need more than this many `MiB`")
	readShard := shardFlags(fs)
	force := forceFlag(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	shard, err := readShard()
	if err != nil {
		return err
	}
	c := d
	switch len(configs) {
	case 0:
	case 1:
		if c, err = experiment.LoadConfig(configs[0]); err != nil {
			return usageError{err} // named as the file wrote it

		}
	default:
		return &experiment.FieldError{Field: "config", Err: fmt.Errorf("given twice (%s, %s): one config file per run; flags override its keys", configs[0], configs[1])}
	}
	if err := c.Set(experiment.FlagFields(values)); err != nil {
		return asWritten(err, values, len(configs) > 0)
	}
	plan, err := c.Plan(shard) // parsed once: a data file, the specs, the budgets
	if err != nil {
		return asWritten(err, values, len(configs) > 0)
	}
	if shard.Count > 0 {
		c.Out = filepath.Join(c.Out, experiment.ShardDir(shard))
	}
	out, err := experiment.PrepareOut(c.Out, *force)
	if err != nil {
		return err
	}
	onForcedExit(ctx, out.Abort)
	defer limitMemory(c.MaxMemory)()
	bar := newProgress(stderr, c.Quiet, "runs")
	rep, err := plan.Run(ctx, experiment.Options{Out: out.Temp, Progress: bar.update, Writing: func() { holdExit(ctx) }})
	bar.finish()
	err = settle(out, rep != nil && (err == nil || errors.Is(err, context.Canceled)), err)
	if errors.Is(err, context.Canceled) {
		err = interruption{err, "no run had finished: nothing was written"}
		if out.Committed {
			err = interruption{err, fmt.Sprintf("the %d finished runs were written to %s", rep.Summary.Runs, c.Out)}
		}
	}
	if rep == nil {
		return err
	}
	reportRun(stdout, rep, c, shard, out.Committed)
	return err
}

// reportRun prints a run's outcome: the shard's share, a partial run's
// extent, the table, and where the files are when they were committed
// (written into c.Out).
func reportRun(stdout io.Writer, rep *experiment.Report, c experiment.Config, shard sim.Shard, committed bool) {
	if shard.Count > 0 {
		fmt.Fprintf(stdout, "SHARD %d/%d: %d of %d runs; `dpbandit merge` the shards for the experiment's results\n", shard.Index, shard.Count, rep.Summary.Runs, c.Runs)
	}
	switch {
	case rep.Summary.Interrupted && committed:
		fmt.Fprintf(stdout, "PARTIAL: interrupted after %d of %d runs; the table and the files in %s cover those runs\n", rep.Summary.Runs, c.Runs, c.Out)
	case rep.Summary.Interrupted:
		fmt.Fprintf(stdout, "PARTIAL: stopped after %d of %d runs; the table covers those runs; nothing was written\n", rep.Summary.Runs, c.Runs)
	}
	printTable(stdout, rep)
	if committed {
		fmt.Fprintf(stdout, "results in %s: %s\n", c.Out, strings.Join(rep.Files, ", "))
		if rep.PlotsSkipped {
			fmt.Fprintf(stdout, "interrupted while writing: %d of %d runs written, plots skipped\n", rep.Summary.Runs, c.Runs)
		}
	}
}

// asWritten names a FieldError's field as the user wrote it: the flag
// (--max-memory, --algo) when one set it or no config file was given, or
// else the config file's key (max_memory, algos). values holds the flags
// given, by config key.
func asWritten(err error, values map[string][]string, file bool) error {
	var fe *experiment.FieldError
	if !errors.As(err, &fe) {
		return err
	}
	key, flagName := experiment.ConfigKey(fe.Field)
	if key == "" {
		return err // not a config key (out, shard)
	}
	if _, byFlag := values[key]; byFlag || !file {
		fe.Field = flagName
	} else {
		fe.Field = key
	}
	return err
}

func printTable(w io.Writer, rep *experiment.Report) {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	// On a data set, the progressive validation loss too.
	loss := len(rep.Summary.Results) > 0
	for _, r := range rep.Summary.Results {
		_, ok := r.Metrics["loss"]
		loss = loss && ok
	}
	head := "entry\tregret at T=%d\t95%% CI\tdiff vs reference (± 95%%)\tPoP"
	if loss {
		head += "\tloss"
	}
	// For a best-arm identification, its stopping time and errors.
	identify := false
	for _, r := range rep.Summary.Results {
		_, ok := r.Metrics[sim.MetricTau]
		identify = identify || ok
	}
	if identify {
		head += "\tstopping time (± s.e.)\tstopped\twrong arm [95%% CI]"
	}
	fmt.Fprintf(tw, head+"\n", rep.Summary.Horizon)
	for _, r := range rep.Summary.Results {
		diff, pop := "", ""
		if r.DiffMean != nil && r.DiffSE != nil {
			diff = fmt.Sprintf("%.4g ± %.2g", *r.DiffMean, sim.TQuantile(rep.Summary.Runs)**r.DiffSE)
		}
		if r.PoP != nil {
			pop = fmt.Sprintf("%.3g", *r.PoP)
		}
		fmt.Fprintf(tw, "%s\t%.4g\t[%.4g, %.4g]\t%s\t%s", r.Label, r.RegretMean, r.RegretCI95[0], r.RegretCI95[1], diff, pop)
		if loss {
			fmt.Fprintf(tw, "\t%.4f", r.Metrics["loss"])
		}
		if tau, ok := r.Metrics[sim.MetricTau]; ok {
			n := rep.Summary.Runs
			wrong := int(math.Round(r.Metrics[sim.MetricError] * float64(n)))
			lo, hi := sim.ClopperPearson(wrong, n, 0.05)
			fmt.Fprintf(tw, "\t%.0f ± %.0f\t%.3g\t%d/%d [%.2g, %.2g]", tau, r.Metrics[experiment.MetricTauSE], r.Metrics[sim.MetricStopped], wrong, n, lo, hi)
		} else if identify {
			fmt.Fprint(tw, "\t\t\t")
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	if h := rep.Summary.HindsightLoss; h != nil {
		fmt.Fprintf(w, "regret counts mistakes (reward 1 for the true class); loss = 1 - average reward; the least-squares linear policy fit on all rows has loss %.4f\n", *h)
	}
	for _, r := range rep.Summary.Results {
		if r.DiffNote != "" {
			fmt.Fprintf(w, "note: %s (--reference chooses)\n", r.DiffNote)
		}
	}
	if n := rep.Summary.ClippedFeatures; n > 0 {
		fmt.Fprintf(w, "%d feature values lay outside their declared ranges and were clipped to them (declare the ranges the data can take: lo=, hi=, ranges=)\n", n)
	}
}
