// Package experiment turns a configuration (a YAML file, command-line
// flags or an embedded preset) into simulations, and writes their results:
// summary.json, regret.csv and plots, and an index.html report over
// several experiments.
//
// It sits on top of the library: packages sim, env, mab and privacy do not
// depend on it.
package experiment

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/dpbandit/dpbandit/catalog"
	"github.com/dpbandit/dpbandit/internal/liberr"
	"github.com/dpbandit/dpbandit/privacy"
	"github.com/dpbandit/dpbandit/sim"
)

// Config describes one experiment. The YAML keys are the field tags; the
// command-line flags of `dpbandit run` have the same names.
type Config struct {
	// Name titles the experiment in plots and reports.
	Name string `yaml:"name" json:"name,omitempty"`
	// Env is the environment spec, e.g. "bernoulli:0.75,0.625,0.5,0.375,0.25".
	Env string `yaml:"env" json:"env"`
	// Algos are algorithm specs, e.g. "adac-ucb:beta=4".
	Algos []string `yaml:"algos" json:"algos"`
	// Horizon is T.
	Horizon int64 `yaml:"horizon" json:"horizon"`
	// Runs is the number of independent runs.
	Runs int `yaml:"runs" json:"runs"`
	// Seed determines every random draw of the experiment.
	Seed uint64 `yaml:"seed" json:"seed"`
	// Rho lists zCDP budgets to sweep.
	Rho []float64 `yaml:"rho" json:"rho,omitempty"`
	// Eps lists eps values: pure DP alone, (eps,delta)-DP with Delta,
	// Renyi DP with Alpha.
	Eps []float64 `yaml:"eps" json:"eps,omitempty"`
	// Delta lists delta values paired with every eps.
	Delta []float64 `yaml:"delta" json:"delta,omitempty"`
	// Alpha lists Renyi orders paired with every eps.
	Alpha []float64 `yaml:"alpha" json:"alpha,omitempty"`
	// Workers is the number of parallel workers (0: all cores). It never
	// changes results.
	Workers int `yaml:"workers" json:"-"`
	// Mode is "batched" (default), "step" or "iid"; see sim.Mode.
	Mode string `yaml:"mode" json:"mode,omitempty"`
	// Delay delays rewards by a number of decisions ("5") or a geometric
	// number of mean MEAN ("geom:MEAN"); see sim.Delay. Policies then run
	// through bandit.Delayed (contextual.Delayed), the decision service's
	// rule for pending rewards. Finite-armed, linear and linear contextual
	// bandits; empty means none.
	Delay string `yaml:"delay" json:"delay,omitempty"`
	// Reference names the algorithm spec that private results are paired
	// with; by default each private algorithm's non-private counterpart,
	// or else the first non-private algorithm.
	Reference string `yaml:"reference" json:"reference,omitempty"`
	// Checkpoints is the number of log-spaced checkpoints (default 100).
	Checkpoints int `yaml:"checkpoints" json:"checkpoints,omitempty"`
	// Noise is "fast" (default: seeded floating-point noise, reproducible)
	// or "secure" (noise.Secure: discrete noise on a grid from the
	// operating system's entropy, as a deployment runs; not reproducible).
	Noise string `yaml:"noise" json:"noise,omitempty"`
	// Out is the output directory of `dpbandit run` (default
	// results/run); Quiet turns its progress bar off. Neither changes
	// results.
	Out   string `yaml:"out" json:"-"`
	Quiet bool   `yaml:"quiet" json:"-"`
	// MaxMemory, in MiB, bounds the memory the experiment may need, as
	// the families estimate it before allocating (default 4096).
	MaxMemory int64 `yaml:"max_memory" json:"-"`
}

// MaxHorizon is the largest horizon T an experiment or a bound takes
// (2^50: counts and sums of rewards stay exact in float64).
const MaxHorizon = 1 << 50

// MaxName is the most characters Name may have: it titles the plots.
const MaxName = 200

// Defaults returns the defaults that a config file or flags override.
func Defaults() Config {
	return Config{Horizon: 100000, Runs: 100, Seed: 1, Checkpoints: 100, Mode: "batched", Noise: "fast", Out: "results/run", MaxMemory: 4096}
}

// FieldError is a configuration error that names its field.
type FieldError struct {
	Field string
	Err   error
}

// Error is the field's name and the message: a library error's without
// package names (its Message), which the field's name stands in for.
func (e *FieldError) Error() string { return e.Field + ": " + liberr.Message(e.Err) }

func (e *FieldError) Unwrap() error { return e.Err }

// BudgetError files a budget's error under the parameter it names
// (privacy.ParamError), or else under field.
func BudgetError(field string, err error) error {
	var pe *privacy.ParamError
	if errors.As(err, &pe) {
		return &FieldError{Field: pe.Param, Err: errors.New(pe.Reason())}
	}
	return &FieldError{Field: field, Err: err}
}

func fieldErr(field string, format string, a ...any) error {
	return &FieldError{Field: field, Err: liberr.Errorf(format, a...)}
}

// Budgets expands the budget lists into the budgets to sweep: every rho as
// zCDP; every eps as pure DP, or crossed with every delta as
// (eps,delta)-DP, or with every alpha as Renyi DP.
func (c Config) Budgets() ([]privacy.Budget, error) {
	if len(c.Delta) > 0 && len(c.Alpha) > 0 {
		return nil, fieldErr("delta", "give delta (for (eps,delta)-DP) or alpha (for Renyi DP), not both")
	}
	if len(c.Eps) == 0 && (len(c.Delta) > 0 || len(c.Alpha) > 0) {
		return nil, fieldErr("eps", "delta and alpha need eps values")
	}
	for _, l := range []struct {
		name string
		xs   []float64
	}{{"rho", c.Rho}, {"eps", c.Eps}, {"delta", c.Delta}, {"alpha", c.Alpha}} {
		for i, x := range l.xs {
			if slices.Contains(l.xs[:i], x) {
				return nil, fieldErr(l.name, "%v is listed twice", x)
			}
		}
	}
	var out []privacy.Budget
	var first error
	// add keeps b, or the first error, filed under the parameter that
	// package privacy names in it.
	add := func(b privacy.Budget, err error) {
		if err == nil {
			out = append(out, b)
			return
		}
		if first == nil {
			first = BudgetError("budget", err)
		}
	}
	for _, r := range c.Rho {
		add(privacy.Given{Rho: &r}.Budget())
	}
	for _, e := range c.Eps {
		for _, d := range c.Delta {
			add(privacy.Given{Eps: &e, Delta: &d}.Budget())
		}
		for _, a := range c.Alpha {
			add(privacy.Given{Eps: &e, Alpha: &a}.Budget())
		}
		if len(c.Delta) == 0 && len(c.Alpha) == 0 {
			add(privacy.Given{Eps: &e}.Budget())
		}
	}
	return out, first
}

// Validate checks every field and returns the first error, naming its
// field. It builds each (algorithm, budget) entry once on the world, as
// Run does before its runs, so that a config it accepts fails at run time
// only for lack of memory or on an interruption.
func (c Config) Validate() error {
	_, err := c.Plan(sim.Shard{})
	return err
}

// ValidateShard is Validate for one shard of the runs (sim.Shard; the
// zero Shard is all of them): the memory estimate counts the results of
// the shard's runs only.
func (c Config) ValidateShard(s sim.Shard) error {
	_, err := c.Plan(s)
	return err
}

// Plan is ValidateShard, returning the checked config as a plan to run
// (Plan.Run): its world parsed (a data file read once), its algorithm
// specs and budgets parsed once into the entries the runs build.
func (c Config) Plan(s sim.Shard) (*Plan, error) {
	w, es, err := c.validPlan(shardRuns(c.Runs, s))
	if err != nil {
		return nil, err
	}
	return &Plan{config: c, shard: s, world: w, entries: es}, nil
}

// shardRuns is the number of runs r < runs with r mod s.Count = s.Index
// (all of them for the zero Shard).
func shardRuns(runs int, s sim.Shard) int {
	if s.Count < 1 || s.Index < 0 || s.Index >= s.Count {
		return runs
	}
	return (runs - s.Index + s.Count - 1) / s.Count
}

// parsed is a config's world, algorithm specs, budgets and reference
// (nil: none), each parsed once (validWorld).
type parsed struct {
	world   World
	algos   []catalog.Spec
	budgets []privacy.Budget
	ref     *catalog.Spec
}

// validWorld is Validate, returning what it parsed; held is the number
// of runs whose results the process keeps (a shard's share).
func (c Config) validWorld(held int) (parsed, error) {
	if c.Env == "" {
		return parsed{}, fieldErr("env", "missing (e.g. bernoulli:0.75,0.625,0.5,0.375,0.25)")
	}
	w, err := parseWorld(c.Env, c.Seed)
	if err != nil {
		return parsed{}, &FieldError{Field: "env", Err: err}
	}
	return c.validOn(w, held)
}

// validOn is validWorld on a world already parsed from c.Env.
func (c Config) validOn(w World, held int) (parsed, error) {
	var err error
	if len(c.Algos) == 0 {
		return parsed{}, fieldErr("algo", "at least one algorithm is needed (see `dpbandit list`)")
	}
	algos := make([]catalog.Spec, len(c.Algos))
	for i, a := range c.Algos {
		if algos[i], err = catalog.Parse(a); err != nil {
			return parsed{}, &FieldError{Field: "algo", Err: err}
		}
		// Before anything asks the algorithm's family about w (its
		// memory footprint, its checks), w must be one of its worlds.
		if !familyOf(algos[i].Kind).Runs(w) {
			return parsed{}, &FieldError{Field: "algo", Err: wrongFamily(algos[i], w)}
		}
	}
	if c.Horizon < 1 || c.Horizon > MaxHorizon {
		return parsed{}, fieldErr("horizon", "must lie in [1, 2^50], got %d", c.Horizon)
	}
	if n := utf8.RuneCountInString(c.Name); n > MaxName {
		return parsed{}, fieldErr("name", "%d characters long; at most %d (it titles the plots)", n, MaxName)
	}
	if c.Runs < 1 || c.Runs > 1_000_000 {
		return parsed{}, fieldErr("runs", "must lie in [1, 10^6], got %d", c.Runs)
	}
	if c.Workers < 0 {
		return parsed{}, fieldErr("workers", "must be non-negative, got %d", c.Workers)
	}
	if c.Checkpoints < 2 || c.Checkpoints > 10000 {
		return parsed{}, fieldErr("checkpoints", "must lie in [2, 10000], got %d", c.Checkpoints)
	}
	if c.Noise != "fast" && c.Noise != "secure" && c.Noise != "" {
		return parsed{}, fieldErr("noise", "unknown noise %q (known: fast, secure)", c.Noise)
	}
	if _, err := sim.ParseMode(c.Mode); err != nil {
		return parsed{}, &FieldError{Field: "mode", Err: err}
	}
	if d, err := c.delay(); err != nil {
		return parsed{}, &FieldError{Field: "delay", Err: err}
	} else if b := w.Bounds(); d.Defaults && !(d.Default >= b.Lo && d.Default <= b.Hi) {
		return parsed{}, fieldErr("delay", "default=%v lies outside the rewards' range [%v, %v]", d.Default, b.Lo, b.Hi)
	}
	for _, a := range algos {
		if c.Delay != "" && a.Policy == nil && a.Kind != catalog.Contextual {
			return parsed{}, fieldErr("delay", "applies to finite-armed, linear and linear contextual bandits; %s is for %s", a.Name, a.Kind)
		}
		// Only the plans' simulator has modes; the others step one
		// decision at a time with independent rewards already.
		if c.Mode != "" && c.Mode != "batched" && a.Policy == nil {
			return parsed{}, fieldErr("mode", "applies to finite-armed and linear bandits (their plans); %s is for %s", a.Name, a.Kind)
		}
	}
	bs, err := c.Budgets()
	if err != nil {
		return parsed{}, err
	}
	out := parsed{world: w, algos: algos, budgets: bs}
	private, policies := false, 0
	for _, s := range algos {
		private = private || s.Private
		policies++
		if s.Private {
			policies += max(len(bs), 1) - 1
		}
	}
	if c.Reference != "" {
		ref, err := catalog.Parse(c.Reference)
		if err != nil {
			return parsed{}, &FieldError{Field: "reference", Err: err}
		}
		out.ref = &ref
		if !private {
			return parsed{}, fieldErr("reference", "no algorithm of the experiment is private, so nothing is compared with %s: drop it or add a private algorithm", ref.Canonical)
		}
		if !slices.ContainsFunc(algos, func(s catalog.Spec) bool { return s.Identity == ref.Identity && !s.Private }) {
			return parsed{}, fieldErr("reference", "%s is not among the non-private algorithms of the experiment (%s)", ref.Canonical, strings.Join(c.Algos, ", "))
		}
	}
	if len(bs) > 0 && !private {
		field := "rho"
		if len(c.Rho) == 0 {
			field = "eps"
		}
		return parsed{}, fieldErr(field, "no algorithm of the experiment is private, so the budget would be ignored: drop it or add a private algorithm")
	}
	return out, c.checkMemory(w, algos, policies, held)
}

// checkMemory refuses an experiment whose estimated memory exceeds
// MaxMemory: per worker, one run's own state and its policies; and the
// results kept (resultBytes) of the held runs of every entry.
func (c Config) checkMemory(w World, algos []catalog.Spec, entries, held int) error {
	if c.MaxMemory < 1 {
		return fieldErr("max-memory", "must be a positive number of MiB, got %d", c.MaxMemory)
	}
	workers := c.Workers
	if workers == 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, c.Runs)
	shared, perRun, perPolicy := footprintOn(w, c.Horizon, algos)
	checkpoints := len(sim.LogGrid(c.Horizon, c.Checkpoints))
	results := resultBytes(entries, held, checkpoints) + maxFigureBytes // and the figure being drawn
	need := float64(shared) + float64(workers)*(float64(perRun)+float64(entries)*float64(perPolicy)) + results
	if mib := need / (1 << 20); mib > float64(c.MaxMemory) {
		data := ""
		if shared > 0 {
			data = fmt.Sprintf("%.1f MiB of data + ", float64(shared)/(1<<20))
		}
		return fieldErr("max-memory", "the experiment needs about %.0f MiB (%s%d workers x (%.1f MiB per run + %d policies x %.1f MiB) + %.0f MiB of results and plots: %d entries x %d runs x %d checkpoints), above the limit of %d MiB: shrink the instance, use fewer workers, runs, checkpoints or budgets, split the runs with --shard, or raise the limit",
			mib, data, workers, float64(perRun)/(1<<20), entries, float64(perPolicy)/(1<<20), results/(1<<20), entries, held, checkpoints, c.MaxMemory)
	}
	return nil
}

// resultBytes estimates from above the memory of the results of runs
// runs of entries entries at checkpoints checkpoints: each run's record
// (its regret curve and a few numbers) while the runs go on, one entry's
// curves again while its statistics are computed (the paired
// differences), and each entry's statistics at every checkpoint (a dozen
// curves: mean, deviation, interval, quantiles, difference, bounds).
func resultBytes(entries, runs, checkpoints int) float64 {
	record := 8*float64(checkpoints) + 128
	return float64(entries+1)*float64(runs)*record + float64(entries)*float64(checkpoints)*8*12
}

// delay parses Delay (empty: none).
func (c Config) delay() (sim.Delay, error) {
	if c.Delay == "" {
		return sim.Delay{}, nil
	}
	return sim.ParseDelay(c.Delay)
}
