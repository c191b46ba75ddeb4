package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/dpbandit/dpbandit/experiment"
	"github.com/dpbandit/dpbandit/loadgen"
)

// loadtestCmd drives a running service with loadgen's closed-loop
// clients and prints throughput, latency quantiles and the decisions'
// pseudo-regret.
func loadtestCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("loadtest", stdout)
	base, token := fs.service()
	means := fs.String("means", "0.75,0.625,0.5,0.375,0.25", "Bernoulli arm `means` of the simulated environment")
	algo := fs.String("algo", "adac-ucb", "algorithm `spec` of the experiment")
	rho := fs.Float64("rho", 0.5, "zCDP budget `rho`")
	id := fs.String("experiment", "", "experiment `id` to create (default loadtest-TIME)")
	conc := fs.Int("concurrency", 32, "concurrent `clients`")
	dur := fs.Duration("duration", 30*time.Second, "run for this `duration`")
	total := fs.Int64("decisions", 0, "stop after this many decision+reward `pairs` (0: run for --duration)")
	units := fs.Int64("units", 0, "`number` of distinct unit ids, cycled through (0: one unit per event)")
	seed := fs.Uint64("seed", 1, "`seed` of the simulated rewards")
	quiet := fs.Bool("quiet", false, "no progress line")
	site := fs.Bool("personalizer", false, "drive a simulated site through the Personalizer surface (rank and reward) instead of --means")
	actions := fs.Int("actions", loadgen.DefaultSite().Actions, "with --personalizer: `articles` of each rank call")
	features := fs.Int("features", loadgen.DefaultSite().Features, "with --personalizer: `features` of each article")
	key := fs.String("key", "", "with --personalizer: the Ocp-Apim-Subscription-Key (default: the experiment's id, the key without a token file)")
	if err := parse(fs, args); err != nil {
		return err
	}
	ms, err := floatList("means", *means)
	if err != nil {
		return usageError{err}
	}
	if *id == "" {
		*id = strings.ReplaceAll("loadtest-"+time.Now().UTC().Format("20060102T150405.000"), ".", "-")
	}
	cfg := loadgen.Config{URL: *base, Token: *token, Means: ms, Algorithm: *algo, Rho: *rho, Experiment: *id,
		Concurrency: *conc, Duration: *dur, Pairs: *total, Units: *units, Seed: *seed}
	what := fmt.Sprintf("%s, %d arms", *algo, len(ms))
	if *site {
		cfg.Means, cfg.Site = nil, &loadgen.Site{Actions: *actions, Features: *features, Key: *key}
		if !fs.given("algo") {
			cfg.Algorithm = "" // the surface's default learner
		}
		what = fmt.Sprintf("Personalizer surface, %d articles of %d features", *actions, *features)
	}
	if !*quiet {
		cfg.Progress = func(el time.Duration, pairs, errs int64) {
			fmt.Fprintf(stderr, "\r%5.1f s: %d pairs, %.0f pairs/s, %d errors   ", el.Seconds(), pairs, float64(pairs)/el.Seconds(), errs)
		}
	}
	if err := cfg.Validate(); err != nil { // before any request
		var ce *loadgen.ConfigError
		if errors.As(err, &ce) {
			return &experiment.FieldError{Field: ce.Field, Err: errors.New(ce.Reason)}
		}
		return usageError{err}
	}
	fmt.Fprintf(stdout, "experiment %s: %s, rho %g; %d clients\n", *id, what, *rho, *conc)
	rep, err := loadgen.Run(ctx, cfg)
	if err != nil {
		return err
	}
	if !*quiet {
		fmt.Fprintln(stderr)
	}
	el := rep.Elapsed.Seconds()
	fmt.Fprintf(stdout, "%d decision+reward pairs in %.2f s: %.0f pairs/s (%.0f requests/s), %d errors, %d retries after a 503, %d rewards late (409: settled without them)\n",
		rep.Pairs, el, float64(rep.Pairs)/el, float64(rep.Requests)/el, rep.Errors, rep.Retries, rep.Late)
	for _, l := range []struct {
		name string
		q    [3]time.Duration
	}{{"decisions", rep.Decisions}, {"rewards", rep.Rewards}} {
		fmt.Fprintf(stdout, "%-9s latency p50 %s  p99 %s  p999 %s\n", l.name, l.q[0], l.q[1], l.q[2])
	}
	fmt.Fprintf(stdout, "pseudo-regret of the decisions: %.1f; the experiment learned %d rewards and ignored %d (GET /v1/experiments/%s says why not)\n", rep.Regret, rep.Learned, rep.Ignored, *id)
	return rep.Err()
}
