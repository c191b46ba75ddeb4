package experiment

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"os"
	"time"

	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/contextual"
	"github.com/dpbandit/dpbandit/env"
	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/olo"
	"github.com/dpbandit/dpbandit/privacy"
	"github.com/dpbandit/dpbandit/sim"
	"github.com/dpbandit/dpbandit/theory"
)

// entry is one (algorithm, budget) pair of an experiment.
type entry struct {
	algo   AlgoSpec
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

// world is the environment of an experiment: a K-armed (or finite linear)
// instance, or a generator of contextual decision sets.
type world struct {
	inst env.Instance
	ctx  *env.Contextual
	loss *olo.Losses
}

// parseWorld parses an environment spec of any kind.
func parseWorld(spec string, seed uint64) (world, error) {
	if olo.IsLosses(spec) {
		l, err := olo.ParseLosses(spec, seed)
		return world{loss: l}, err
	}
	if env.IsContextual(spec) {
		c, err := env.ParseContextual(spec, seed)
		return world{ctx: c}, err
	}
	i, err := env.Parse(spec, seed)
	return world{inst: i}, err
}

func (w world) String() string {
	if w.loss != nil {
		return w.loss.String()
	}
	if w.ctx != nil {
		return w.ctx.String()
	}
	return w.inst.String()
}

func (w world) bounds() mechanism.Bounds {
	if w.loss != nil {
		return mechanism.Unit
	}
	if w.ctx != nil {
		return w.ctx.Bounds()
	}
	return w.inst.Bounds()
}

// gaps returns the instance's gaps, nil for a contextual world.
func (w world) gaps() []float64 {
	if w.ctx != nil || w.loss != nil {
		return nil
	}
	return env.Gaps(w.inst.Means())
}

// check builds the algorithm once, so that a budget it cannot use, or an
// environment of the wrong kind, is reported before any run.
func (w world) check(a AlgoSpec, b privacy.Budget, T int64) error {
	nz := noise.NewFast(0)
	if w.loss != nil {
		if a.OLO == nil {
			return fmt.Errorf("%s is not an online learner (see the learners in dpbandit list)", a.Name)
		}
		_, err := w.learner(a, b, T)
		return err
	}
	if a.OLO != nil {
		return fmt.Errorf("%s needs a loss sequence (experts-iid, experts-switching, ball or cube)", a.Name)
	}
	if w.ctx != nil {
		if a.Contextual == nil {
			return fmt.Errorf("%s is not a contextual algorithm (contextual ones: oful, rs-oful, adac-oful)", a.Name)
		}
		_, err := a.Contextual(a.Values, b, contextual.Setting{Dim: w.ctx.Dim(), Horizon: T, Bounds: w.ctx.Bounds(), Noise: nz})
		return err
	}
	if a.Build == nil {
		return fmt.Errorf("%s needs a contextual environment (contextual-gauss:...)", a.Name)
	}
	st := bandit.Setting{Arms: w.inst.Arms(), Horizon: T, Bounds: w.inst.Bounds(), Rand: noise.Stream(0), Noise: nz}
	if l, ok := w.inst.(bandit.Linear); ok {
		st.Actions = l.Actions()
	}
	_, err := a.Build(a.Values, b, st)
	return err
}

// plan expands the config into entries and checks that each can be built.
func (c Config) plan(w world) ([]entry, error) {
	budgets, err := c.Budgets()
	if err != nil {
		return nil, err
	}
	var out []entry
	seen := map[string]bool{}
	for _, s := range c.Algos {
		a, err := ParseAlgo(s)
		if err != nil {
			return nil, &FieldError{Field: "algo", Err: err}
		}
		bs := []privacy.Budget{privacy.None()}
		if a.Private {
			if len(budgets) == 0 {
				return nil, fieldErr("rho", "%s is private: give a budget (rho, or eps with delta or alpha)", a.Name)
			}
			bs = budgets
		}
		for _, b := range bs {
			e := entry{algo: a, budget: b, label: a.Spec, ref: -1}
			if b.IsPrivate() {
				e.label += " " + b.String()
			}
			if seen[e.label] {
				return nil, fieldErr("algo", "%s is listed twice", e.label)
			}
			seen[e.label] = true
			if err := w.check(a, b, c.Horizon); err != nil {
				return nil, fieldErr("algo", "%s: %v", e.label, err)
			}
			out = append(out, e)
		}
	}
	for i := range out {
		if !out[i].budget.IsPrivate() {
			continue
		}
		out[i].ref = reference(c.Reference, out, out[i])
	}
	return out, nil
}

// reference picks the entry a private entry is paired with: the configured
// reference, else its counterpart (with the same parameters if listed),
// else the first non-private entry; -1 if there is none.
func reference(configured string, es []entry, e entry) int {
	if configured != "" {
		want, _ := ParseAlgo(configured)
		for j, o := range es {
			if o.algo.Spec == want.Spec && !o.budget.IsPrivate() {
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
		if first < 0 {
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
}

// Report is the outcome of an experiment: the summary that summary.json
// holds and the curves that regret.csv and the plots show.
type Report struct {
	Config      Config
	Summary     Summary
	Checkpoints []int64
	Curves      []Curve
}

// Curve is one entry's statistics at every checkpoint.
type Curve struct {
	Label  string
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
// error with the report.
func Run(ctx context.Context, c Config, o Options) (*Report, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	w, _ := parseWorld(c.Env, c.Seed)
	entries, err := c.plan(w)
	if err != nil {
		return nil, err
	}
	now := o.Now
	if now == nil {
		now = time.Now
	}
	var progress func(int)
	if o.Progress != nil {
		progress = func(done int) { o.Progress(done, c.Runs) }
	}
	start := now()
	res, runErr := c.simulate(ctx, w, entries, now, progress)
	if res == nil || len(res.Runs) == 0 {
		if runErr == nil {
			runErr = errors.New("no run completed")
		}
		return nil, runErr
	}
	rep := summarize(c, w, entries, res, now().Sub(start).Seconds())
	rep.Summary.Interrupted = runErr != nil
	if o.Out != "" {
		if err := rep.Write(o.Out); err != nil {
			return rep, err
		}
	}
	return rep, runErr
}

// simulate runs the entries on the world: plan by plan on a K-armed
// instance, step by step on a contextual one.
func (c Config) simulate(ctx context.Context, w world, entries []entry, now func() time.Time, progress func(int)) (*sim.Result, error) {
	ck := sim.LogGrid(c.Horizon, c.Checkpoints)
	steps := sim.Steps{Horizon: c.Horizon, Runs: c.Runs, Seed: c.Seed, Workers: c.Workers, Checkpoints: ck,
		Secure: c.Noise == "secure", Progress: progress, Now: now}
	if w.loss != nil {
		oe := make([]sim.OLOEntry, len(entries))
		for i, e := range entries {
			oe[i] = sim.OLOEntry{Name: e.label, NoiseKey: noiseKey(e.algo.Spec), New: func(s olo.Setting) (olo.Learner, error) {
				s.Noise = e.noise(s.Noise)
				return e.algo.OLO(e.algo.Values, e.budget, s)
			}}
		}
		return sim.RunOLO(ctx, sim.OLOConfig{Env: w.loss, Steps: steps}, oe)
	}
	if w.ctx != nil {
		ce := make([]sim.ContextualEntry, len(entries))
		for i, e := range entries {
			ce[i] = sim.ContextualEntry{Name: e.label, NoiseKey: noiseKey(e.algo.Spec), New: func(s contextual.Setting) (contextual.Policy, error) {
				s.Noise = e.noise(s.Noise)
				return e.algo.Contextual(e.algo.Values, e.budget, s)
			}}
		}
		return sim.RunContextual(ctx, sim.ContextualConfig{Env: w.ctx, Steps: steps}, ce)
	}
	mode, _ := sim.ParseMode(c.Mode)
	se := make([]sim.Entry, len(entries))
	for i, e := range entries {
		se[i] = sim.Entry{Name: e.label, NoiseKey: noiseKey(e.algo.Spec), New: func(s bandit.Setting) (bandit.Policy, error) {
			s.Noise = e.noise(s.Noise)
			return e.algo.Build(e.algo.Values, e.budget, s)
		}}
	}
	return sim.Run(ctx, sim.Config{Env: w.inst, Horizon: c.Horizon, Runs: c.Runs, Seed: c.Seed, Workers: c.Workers,
		Checkpoints: ck, Mode: mode, Now: now, Secure: c.Noise == "secure", Progress: progress}, se)
}

// learner builds one instance of an online learner for the world's loss
// sequence, on a fixed stream (for checks and bounds).
func (w world) learner(a AlgoSpec, b privacy.Budget, T int64) (olo.Learner, error) {
	return a.OLO(a.Values, b, olo.Setting{N: w.loss.N, T: T, Set: w.loss.Set(), Rand: noise.Stream(0), Noise: noise.NewFast(0)})
}

// oloBound evaluates the learner's explicit regret bound (olo.Bounder) at
// every checkpoint, or returns nil if it has none.
func (w world) oloBound(e entry, T int64, ts []int64) []float64 {
	l, err := w.learner(e.algo, e.budget, T)
	b, ok := l.(olo.Bounder)
	if err != nil || !ok {
		return nil
	}
	out := make([]float64, len(ts))
	for i, t := range ts {
		out[i] = b.Bound(t)
	}
	return out
}

// summarize computes the statistics of every entry.
func summarize(c Config, w world, es []entry, res *sim.Result, wall float64) *Report {
	rep := &Report{Config: c, Checkpoints: res.Checkpoints}
	last := len(res.Checkpoints) - 1
	gaps := w.gaps()
	rep.Summary = Summary{Name: c.Name, Env: w.String(), Horizon: c.Horizon, Runs: len(res.Runs),
		Seed: c.Seed, Mode: c.Mode, Noise: c.Noise, WallSeconds: wall, Bounds: w.bounds()}
	for j, e := range es {
		st := sim.Summarize(res.Regret[j])
		cv := Curve{Label: e.label, Budget: e.budget, Regret: st, Ref: e.ref}
		r := Result{
			Algorithm: e.algo.Name, Label: e.label, Params: e.algo.Values, Privacy: e.budget,
			RegretMean: st.Mean[last], RegretStd: st.Std[last],
			RegretCI95: [2]float64{st.CILo[last], st.CIHi[last]},
			RegretQ05:  st.Q05[last], RegretQ95: st.Q95[last],
			EpisodesMean: mean(res.Episodes[j]), WallSeconds: res.Seconds[j],
		}
		if e.ref >= 0 {
			cv.DiffMean, cv.DiffSE = sim.Paired(res.Regret[j], res.Regret[e.ref])
			cv.PoP = sim.PriceOfPrivacy(st.Mean, sim.Summarize(res.Regret[e.ref]).Mean)
			r.DiffVs = es[e.ref].label
			r.DiffMean, r.DiffSE = ptr(cv.DiffMean[last]), ptr(cv.DiffSE[last])
			r.PoP = ptr(cv.PoP[last])
		}
		if w.loss != nil {
			cv.Upper = w.oloBound(e, c.Horizon, res.Checkpoints)
		}
		if gaps != nil && w.bounds() == mechanism.Unit {
			cv.Upper, cv.Lower = boundCurves(e, gaps, res.Checkpoints)
		}
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

// boundCurves evaluates the entry's upper bound and the minimax lower
// bound of Theorem 17 (seed 001) at every checkpoint. The lower bound
// applies to zCDP budgets with rho <= 1 (pure budgets converted to
// eps^2/2) and to non-private entries; both need rewards in [0,1].
func boundCurves(e entry, gaps []float64, ts []int64) (upper, lower []float64) {
	rho := math.Inf(1)
	lowerOK := true
	if e.budget.IsPrivate() {
		r, err := e.budget.ToZCDP()
		rho, lowerOK = r, err == nil && r <= 1
	}
	if e.algo.Bound != nil {
		if _, ok := e.algo.Bound(e.algo.Values, e.budget, gaps, ts[len(ts)-1]); ok {
			upper = make([]float64, len(ts))
			for c, t := range ts {
				v, ok := e.algo.Bound(e.algo.Values, e.budget, gaps, t)
				upper[c] = v
				if !ok || t < 2 {
					upper[c] = math.NaN()
				}
			}
		}
	}
	if lowerOK {
		lower = make([]float64, len(ts))
		for c, t := range ts {
			v, err := theory.FiniteArmedLower(len(gaps), t, rho)
			lower[c] = v
			if err != nil {
				lower[c] = math.NaN()
			}
		}
	}
	return upper, lower
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
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, w := range []func(string) error{r.writeSummary, r.writeCSV, r.writePlots} {
		if err := w(dir); err != nil {
			return fmt.Errorf("writing results to %s: %w", dir, err)
		}
	}
	return nil
}
