package experiment

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/dpbandit/dpbandit/catalog"
	"github.com/dpbandit/dpbandit/env"
	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/privacy"
	"github.com/dpbandit/dpbandit/sim"
)

// entry is one (algorithm, budget) pair of an experiment.
type entry struct {
	algo   catalog.Spec
	budget privacy.Budget
	label  string
	ref    int // index of the entry it is paired with, or -1
	// wrap, if set, replaces the noise source the simulator hands the
	// policy (the privacy tests record releases with it).
	wrap func(noise.Noise) noise.Noise
}

// noise returns the noise source the entry's policy draws from.
func (e entry) noise(nz noise.Noise) noise.Noise {
	if e.wrap == nil {
		return nz
	}
	return e.wrap(nz)
}

// simEntries returns the simulator's entries of es: each builds its
// algorithm with build at the entry's budget, on the setting's noise
// (noiseOf points at it) wrapped as the entry says.
func simEntries[S, P any](es []entry, noiseOf func(*S) *noise.Noise, build func(catalog.Spec, privacy.Budget, S) (P, error)) []sim.Of[S, P] {
	out := make([]sim.Of[S, P], len(es))
	for i, e := range es {
		out[i] = sim.Of[S, P]{Name: e.label, NoiseKey: noiseKey(e.algo.Identity), New: func(s S) (P, error) {
			nz := noiseOf(&s)
			*nz = e.noise(*nz)
			return build(e.algo, e.budget, s)
		}}
	}
	return out
}

// validPlan validates the config, parses its world and plans its
// entries; held is the number of runs whose results are kept (a shard's
// share of c.Runs).
func (c Config) validPlan(held int) (World, []entry, error) {
	p, err := c.validWorld(held)
	if err != nil {
		return nil, nil, err
	}
	es, err := c.plan(p)
	return p.world, es, err
}

// plan expands the parsed config into entries and checks that each can
// be built.
func (c Config) plan(p parsed) ([]entry, error) {
	var out []entry
	seen := map[string]bool{}
	for _, a := range p.algos {
		var err error
		bs := []privacy.Budget{privacy.None()}
		if a.Private {
			if len(p.budgets) == 0 {
				return nil, fieldErr("rho", "%s is private: give a budget (rho, or eps with delta or alpha)", a.Name)
			}
			bs = p.budgets
		}
		if a.Local {
			bs = slices.Clone(bs)
			for i, b := range bs {
				if bs[i], err = a.LocalBudget(b, c.Horizon); err != nil {
					return nil, fieldErr("algo", "%s: %w", a.Canonical, err)
				}
			}
		}
		for _, b := range bs {
			e := entry{algo: a, budget: b, label: a.Canonical, ref: -1}
			if b.IsPrivate() {
				e.label += " " + b.String()
			}
			if seen[e.label] {
				return nil, fieldErr("algo", "%s is listed twice", e.label)
			}
			seen[e.label] = true
			if err := checkOn(p.world, a, b, c.Horizon); err != nil {
				return nil, fieldErr("algo", "%s: %w", e.label, err)
			}
			out = append(out, e)
		}
	}
	roundLabels(out)
	for i := range out {
		if !out[i].budget.IsPrivate() {
			continue
		}
		out[i].ref = reference(p.ref, out, out[i])
	}
	return out, nil
}

// reference picks the entry a private entry is paired with: the configured
// reference (want, parsed once), else its counterpart (with the same parameters if listed),
// else the first non-private entry that learns (not a Baseline); -1 if
// there is none.
func reference(want *catalog.Spec, es []entry, e entry) int {
	if want != nil {
		for j, o := range es {
			if o.algo.Identity == want.Identity && !o.budget.IsPrivate() {
				return j
			}
		}
		return -1
	}
	first, byName := -1, -1
	for j, o := range es {
		if o.budget.IsPrivate() {
			continue
		}
		if first < 0 && !o.algo.Baseline {
			first = j
		}
		if o.algo.Name == e.algo.Counterpart {
			if sameValues(o.algo.Values, e.algo.Values) {
				return j
			}
			if byName < 0 {
				byName = j
			}
		}
	}
	if byName >= 0 {
		return byName
	}
	return first
}

// pairingNote says, for a private entry e paired by default with ref,
// why their difference is not the price of privacy alone: "" when ref is
// e's counterpart with the same parameters.
func pairingNote(e, ref entry) string {
	switch {
	case ref.algo.Name != e.algo.Counterpart:
		return fmt.Sprintf("%s is paired with %s, not its counterpart %s (none is listed): the difference compares two algorithms", e.label, ref.label, e.algo.Counterpart)
	case !sameValues(ref.algo.Values, e.algo.Values):
		return fmt.Sprintf("%s is paired with its counterpart %s of other parameters (none of the same is listed): the difference mixes privacy with the parameters' change", e.label, ref.label)
	}
	return ""
}

func sameValues(a, b map[string]float64) bool {
	for k, v := range a {
		if w, ok := b[k]; ok && w != v {
			return false
		}
	}
	return true
}

// noiseKey derives an entry's random streams from its algorithm spec, so
// that one algorithm at several budgets shares common random numbers.
func noiseKey(spec string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(spec))
	return h.Sum64()
}

// Options tells Run where to write and whom to tell about progress.
type Options struct {
	// Out is the output directory; "" writes nothing.
	Out string
	// Progress, if set, is called after each completed run.
	Progress func(done, total int)
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Writing, if set, is called once the runs are over (all done, or
	// stopped by ctx or an error), before their results are summarised
	// and written: from then on ctx stops nothing but the plots, which
	// are skipped (Report.PlotsSkipped) if it is cancelled.
	Writing func()
	// Shard, if set, computes only the shard's runs and writes them to
	// Out/partial.json (see Partial) instead of the full outputs;
	// `dpbandit merge` combines the shards.
	Shard sim.Shard
	// preset and scale name the preset a shard belongs to (Reproduce).
	preset string
	scale  Scale
}

// Report is the outcome of an experiment: the summary that summary.json
// holds and the curves that regret.csv and the plots show.
type Report struct {
	Config      Config
	Summary     Summary
	Checkpoints []int64
	Curves      []Curve
	// Files lists the files Write wrote, by name.
	Files []string
	// PlotsSkipped is set when an interruption came before the plots
	// were written: Files lists summary.json and regret.csv only.
	PlotsSkipped bool
}

// roundLabels rounds the budgets in the entries' labels to the fewest
// significant digits (at least 4) that keep every label distinct, so
// that a legend reads eps=1.414, not eps=1.4142135623730951; the exact
// budget stays in each result's privacy field.
func roundLabels(es []entry) {
	for _, digits := range []int{4, 6, 8, 10, 12, 14, 16, -1} {
		labels := make([]string, len(es))
		seen := map[string]bool{}
		unique := true
		for i, e := range es {
			labels[i] = e.algo.Canonical
			if e.budget.IsPrivate() {
				labels[i] += " " + e.budget.Label(digits)
			}
			unique = unique && !seen[labels[i]]
			seen[labels[i]] = true
		}
		if unique {
			for i := range es {
				es[i].label = labels[i]
			}
			return
		}
	}
}

// Curve is one entry's statistics at every checkpoint.
type Curve struct {
	Label string
	// Spec is the entry's canonical algorithm spec (the parameters set,
	// choices by name), which plots group budgets by.
	Spec   string
	Budget privacy.Budget
	Regret sim.Stats
	// DiffMean and DiffSE are the paired difference to the reference
	// entry and its standard error; PoP the price of privacy. Nil
	// without a reference.
	DiffMean, DiffSE, PoP []float64
	// Ref is the reference's index in Curves, or -1.
	Ref int
	// Upper and Lower are the paper's upper bound for this algorithm and
	// the minimax lower bound at each checkpoint; nil where none applies,
	// NaN at checkpoints where it is undefined.
	Upper, Lower []float64
}

// Run runs the experiment and, when o.Out is set, writes summary.json,
// regret.csv and the plots there. If ctx is cancelled it keeps the runs
// completed so far, writes them (marked interrupted) and returns ctx's
// error with the report; cancelled once the runs are over, it writes
// them all but skips the plots (Report.PlotsSkipped) and returns ctx's
// error.
func Run(ctx context.Context, c Config, o Options) (*Report, error) {
	p, err := c.Plan(o.Shard)
	if err != nil {
		return nil, err
	}
	return p.Run(ctx, o)
}

// Plan is a config checked and expanded once (Config.Plan): its world
// parsed, its algorithm specs and budgets parsed, and the (algorithm,
// budget) entries the runs build. Running it parses and checks nothing
// again.
type Plan struct {
	config  Config
	shard   sim.Shard
	world   World
	entries []entry
}

// Run is the package's Run on the plan's config and shard (o.Shard is
// the plan's).
func (p *Plan) Run(ctx context.Context, o Options) (*Report, error) {
	c, w, entries := p.config, p.world, p.entries
	o.Shard = p.shard
	now := o.Now
	if now == nil {
		now = time.Now
	}
	var progress func(int)
	if o.Progress != nil {
		progress = func(done int) { o.Progress(done, c.Runs) }
	}
	if o.Shard.Count > c.Runs {
		return nil, fieldErr("shard", "%d shards for %d runs: use at most one shard per run", o.Shard.Count, c.Runs)
	}
	if o.Shard != (sim.Shard{}) && o.Out == "" {
		return nil, fieldErr("out", "a shard writes its runs to a directory: name one")
	}
	start := now()
	res, runErr := c.simulate(ctx, w, entries, o.Shard, now, progress)
	if o.Writing != nil {
		o.Writing()
	}
	if res == nil || len(res.Runs) == 0 {
		if runErr == nil {
			runErr = errors.New("no run completed")
		}
		return nil, runErr
	}
	wall := now().Sub(start).Seconds()
	rep := summarize(c, w, entries, res, wall)
	rep.Summary.Interrupted = runErr != nil
	if o.Shard != (sim.Shard{}) {
		if err := writePartial(o.Out, c, o.Shard, entries, res, wall, runErr != nil, o.preset, string(o.scale)); err != nil {
			return rep, err
		}
		rep.Files = []string{PartialFile}
		return rep, runErr
	}
	if o.Out != "" {
		if err := rep.write(ctx, o.Out); err != nil {
			return rep, err
		}
		if rep.PlotsSkipped && runErr == nil {
			runErr = ctx.Err()
		}
	}
	return rep, runErr
}

// simulate runs the entries on the world.
func (c Config) simulate(ctx context.Context, w World, entries []entry, shard sim.Shard, now func() time.Time, progress func(int)) (*sim.Result, error) {
	ck := sim.LogGrid(c.Horizon, c.Checkpoints)
	delay, _ := c.delay()
	steps := sim.Steps{Horizon: c.Horizon, Runs: c.Runs, Seed: c.Seed, Workers: c.Workers, Checkpoints: ck,
		Secure: c.Noise == "secure", Progress: progress, Now: now, Shard: shard, Delay: delay}
	return simulateOn(ctx, w, c, entries, steps)
}

// summarize computes the statistics of every entry.
func summarize(c Config, w World, es []entry, res *sim.Result, wall float64) *Report {
	rep := &Report{Config: c, Checkpoints: res.Checkpoints}
	last := len(res.Checkpoints) - 1
	rep.Summary = Summary{Name: c.Name, Env: w.String(), Horizon: c.Horizon, Runs: len(res.Runs),
		Seed: c.Seed, Mode: c.Mode, Delay: c.Delay, Noise: c.Noise, WallSeconds: wall, Bounds: w.Bounds()}
	if cw, ok := w.(contextualWorld); ok {
		if ds, ok := cw.Contexts.(*env.Dataset); ok {
			if l, err := ds.HindsightLoss(); err == nil {
				rep.Summary.HindsightLoss = &l
			}
			rep.Summary.ClippedFeatures = ds.Clipped
			rep.Summary.DataRows, rep.Summary.Classes, rep.Summary.ClassCounts = ds.Rows(), ds.Classes, ds.ClassCounts()
		}
	}
	for j, e := range es {
		st := sim.Summarize(res.Regret(j))
		// The normal interval of the mean, clipped to the regret's
		// support: below 0 where regret cannot be negative.
		for c, t := range res.Checkpoints {
			lo, _ := w.regretRange(t)
			st.CILo[c] = max(st.CILo[c], lo)
		}
		cv := Curve{Label: e.label, Spec: e.algo.Canonical, Budget: e.budget, Regret: st, Ref: e.ref}
		r := Result{measured: measured{
			Algorithm: e.algo.Name, Label: e.label, Params: e.algo.Named(), Privacy: e.budget,
			RegretMean: st.Mean[last], RegretStd: st.Std[last],
			RegretCI95: [2]float64{st.CILo[last], st.CIHi[last]},
			RegretQ05:  st.Q05[last], RegretQ95: st.Q95[last],
			EpisodesMean: mean(res.Episodes(j)),
		}, Metrics: metricMeans(res.Records[j]), compared: compared{WallSeconds: res.Seconds[j]}}
		if e.ref >= 0 {
			cv.DiffMean, cv.DiffSE = sim.Paired(res.Regret(j), res.Regret(e.ref))
			cv.PoP = sim.PriceOfPrivacy(st.Mean, sim.Summarize(res.Regret(e.ref)).Mean)
			r.DiffVs = es[e.ref].label
			if c.Reference == "" {
				r.DiffNote = pairingNote(e, es[e.ref])
			}
			r.DiffMean, r.DiffSE = ptr(cv.DiffMean[last]), ptr(cv.DiffSE[last])
			r.PoP = ptr(cv.PoP[last])
		}
		cv.Upper, cv.Lower = curvesOn(w, e, c.Horizon, res.Checkpoints)
		if cv.Upper != nil {
			r.Bound = ptr(cv.Upper[last])
		}
		if cv.Lower != nil {
			r.LowerBound = ptr(cv.Lower[last])
		}
		rep.Curves = append(rep.Curves, cv)
		rep.Summary.Results = append(rep.Summary.Results, r)
	}
	return rep
}

func mean(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}

// ptr returns &x, or nil for NaN and infinities, which JSON cannot hold.
func ptr(x float64) *float64 {
	if x != x || x > 1e308 || x < -1e308 {
		return nil
	}
	return &x
}

// Write writes summary.json, regret.csv and the plots into dir.
func (r *Report) Write(dir string) error {
	return r.write(context.Background(), dir)
}

// write is Write, but skips the plots (PlotsSkipped) when ctx is
// cancelled before they are done: they are drawn into a folder beside
// dir, moved into it once complete, and abandoned on cancellation, so
// that the results of finished runs are never held back by a figure.
func (r *Report) write(ctx context.Context, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	r.Files, r.PlotsSkipped = nil, false
	for _, w := range []func(string) error{r.writeSummary, r.writeCSV} {
		if err := w(dir); err != nil {
			return fmt.Errorf("writing results to %s: %w", dir, err)
		}
	}
	r.Files = []string{"summary.json", "regret.csv"}
	drawn := *r // the drawing's own copy, whose Files it appends to
	drawn.Files = nil
	if ctx.Done() == nil { // never cancelled
		if err := drawn.writePlots(dir); err != nil {
			return fmt.Errorf("writing results to %s: %w", dir, err)
		}
		r.Files = append(r.Files, drawn.Files...)
		return nil
	}
	if ctx.Err() != nil {
		r.PlotsSkipped = true
		return nil
	}
	plots, err := os.MkdirTemp(filepath.Dir(dir), "."+filepath.Base(dir)+".plots-")
	if err != nil {
		return fmt.Errorf("writing results to %s: %w", dir, err)
	}
	defer os.RemoveAll(plots)
	done := make(chan error, 1)
	go func() { done <- drawn.writePlots(plots) }()
	select {
	case <-ctx.Done():
		r.PlotsSkipped = true
		return nil
	case err := <-done:
		if err != nil {
			return fmt.Errorf("writing results to %s: %w", dir, err)
		}
	}
	entries, err := os.ReadDir(plots)
	if err != nil {
		return fmt.Errorf("writing results to %s: %w", dir, err)
	}
	for _, e := range entries {
		if err := os.Rename(filepath.Join(plots, e.Name()), filepath.Join(dir, e.Name())); err != nil {
			return fmt.Errorf("writing results to %s: %w", dir, err)
		}
	}
	r.Files = append(r.Files, drawn.Files...)
	return nil
}

// MetricTauSE is the key of a Result's Metrics that holds the standard
// error of the mean stopping time (sim.MetricTau) of a best-arm
// identification.
const MetricTauSE = "tau_se"

// stdErr returns the standard error of the mean of x (two values at least).
func stdErr(x []float64) float64 {
	m, s := mean(x), 0.0
	for _, v := range x {
		s += (v - m) * (v - m)
	}
	return math.Sqrt(s / float64(len(x)-1) / float64(len(x)))
}

// metricMeans returns the mean over runs of every metric that all runs
// have (nil when there is none).
func metricMeans(recs []sim.Record) map[string]float64 {
	if len(recs) == 0 {
		return nil
	}
	var out map[string]float64
	for name := range recs[0].Metrics {
		x := make([]float64, 0, len(recs))
		for _, r := range recs {
			v, ok := r.Metrics[name]
			if !ok {
				break
			}
			x = append(x, v)
		}
		if len(x) == len(recs) {
			if out == nil {
				out = map[string]float64{}
			}
			out[name] = mean(x)
			if name == sim.MetricTau && len(x) > 1 {
				out[MetricTauSE] = stdErr(x)
			}
		}
	}
	return out
}
