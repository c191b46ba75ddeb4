package experiment

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Scale selects the size of a preset: Quick finishes in seconds, Paper
// uses the horizon and number of runs of the source paper.
type Scale string

// The scales of `dpbandit reproduce --scale`.
const (
	Quick Scale = "quick"
	Paper Scale = "paper"
)

// ParseScale returns the scale named s.
func ParseScale(s string) (Scale, error) {
	switch Scale(s) {
	case Quick, Paper:
		return Scale(s), nil
	}
	return "", fmt.Errorf("unknown scale %q (known: quick, paper)", s)
}

// Preset is an embedded experiment that reproduces a result of a paper.
type Preset struct {
	// Name is the preset's folder name and its name on the command line.
	Name string
	// Source says what it reproduces, e.g. "001 Figure 4 (left)".
	Source string
	// Description says what is compared and what the paper claims.
	Description string
	// Config returns the experiment at a scale.
	Config func(Scale) Config
}

// fig4Means are the Bernoulli means of seed 001's finite-armed experiment
// (from Sajed and Sheffet 2019).
const fig4Env = "bernoulli:0.75,0.625,0.5,0.375,0.25"

// Presets returns the registered presets, in report order.
func Presets() []Preset {
	return []Preset{
		{
			Name:   "finite-armed",
			Source: "Azize and Basu (seed 001), Section VII-A and Figure 4 (left)",
			Description: "AdaC-UCB (beta = 1, as in the paper) against its non-private counterpart, UCB with " +
				"arm-dependent doubling and forgetting, on 5 Bernoulli arms with means {0.75, 0.625, 0.5, 0.375, 0.25}, " +
				"over a log grid of rho from 10^-3 to 10^2. The paper claims that the regret difference " +
				"goes to 0 as rho grows and that the price of privacy falls with T at fixed rho.",
			Config: func(s Scale) Config {
				c := Defaults()
				c.Name = "Finite-armed: AdaC-UCB vs UCB with doubling (001 Fig. 4 left)"
				c.Env = fig4Env
				c.Algos = []string{"adac-ucb:beta=1", "ucb-doubling:beta=1"}
				c.Rho = []float64{0.001, 0.01, 0.1, 1, 10, 100}
				c.Seed = 2024
				c.Runs = 100
				c.Horizon = 1_000_000
				if s == Paper {
					c.Horizon = 10_000_000
				}
				return c
			},
		},
	}
}

// ReproduceOptions configures Reproduce.
type ReproduceOptions struct {
	Scale Scale
	// Out is the directory that receives one folder per preset and index.html.
	Out string
	// Only, if non-empty, restricts the run to these preset names.
	Only []string
	// Workers is the number of parallel workers (0: all cores).
	Workers int
	// Progress, if set, is told which preset runs and how far it is.
	Progress func(preset string, done, total int)
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Reproduce runs the presets and writes their results and an index.html
// report linking them. It returns the report's path.
func Reproduce(ctx context.Context, o ReproduceOptions) (string, error) {
	presets := Presets()
	for _, name := range o.Only {
		if !slices.ContainsFunc(presets, func(p Preset) bool { return p.Name == name }) {
			return "", fmt.Errorf("unknown preset %q (see `dpbandit list`)", name)
		}
	}
	var reports []presetReport
	for _, p := range presets {
		if len(o.Only) > 0 && !slices.Contains(o.Only, p.Name) {
			continue
		}
		c := p.Config(o.Scale)
		c.Workers = o.Workers
		opt := Options{Out: filepath.Join(o.Out, p.Name), Now: o.Now}
		if o.Progress != nil {
			opt.Progress = func(done, total int) { o.Progress(p.Name, done, total) }
		}
		rep, err := Run(ctx, c, opt)
		if rep != nil {
			reports = append(reports, presetReport{p, rep})
		}
		if err != nil {
			if rep != nil {
				_, _ = writeIndex(o.Out, o.Scale, reports, o.Now)
			}
			return "", fmt.Errorf("preset %s: %w", p.Name, err)
		}
	}
	return writeIndex(o.Out, o.Scale, reports, o.Now)
}

type presetReport struct {
	Preset
	*Report
}

// Observations states, for every algorithm swept over budgets, the paired
// difference at the smallest and the largest budget and the price of
// privacy at the horizon: the numbers behind the papers' claims.
func (r *Report) Observations() []string {
	var out []string
	type ext struct{ lo, hi int }
	byAlgo := map[string]*ext{}
	var order []string
	for j, res := range r.Summary.Results {
		if res.DiffMean == nil {
			continue
		}
		key := res.Algorithm + " " + paramString(res.Params) + " vs " + res.DiffVs
		e := byAlgo[key]
		if e == nil {
			byAlgo[key] = &ext{j, j}
			order = append(order, key)
			continue
		}
		if budgetValue(res.Privacy) < budgetValue(r.Summary.Results[e.lo].Privacy) {
			e.lo = j
		}
		if budgetValue(res.Privacy) > budgetValue(r.Summary.Results[e.hi].Privacy) {
			e.hi = j
		}
	}
	for _, k := range order {
		e := byAlgo[k]
		lo, hi := r.Summary.Results[e.lo], r.Summary.Results[e.hi]
		out = append(out, fmt.Sprintf("%s at T=%d: Reg_priv - Reg_ref = %.4g ± %.2g at %s, %.4g ± %.2g at %s.",
			k, r.Summary.Horizon, *lo.DiffMean, 1.96**lo.DiffSE, lo.Privacy, *hi.DiffMean, 1.96**hi.DiffSE, hi.Privacy))
		if j := e.lo; r.Curves[j].PoP != nil {
			out = append(out, fmt.Sprintf("Price of privacy at %s: %s.", r.Summary.Results[j].Privacy, popTrend(r.Checkpoints, r.Curves[j].PoP)))
		}
	}
	return out
}

// popTrend reports the price of privacy at a few decades of t.
func popTrend(ts []int64, pop []float64) string {
	var parts []string
	next := int64(1000)
	for c, t := range ts {
		if t >= next || c == len(ts)-1 {
			if pop[c] == pop[c] {
				parts = append(parts, fmt.Sprintf("%.3g at t=%d", pop[c], t))
			}
			for next <= t {
				next *= 10
			}
		}
	}
	return strings.Join(parts, ", ")
}

// ensureDir creates dir.
func ensureDir(dir string) error { return os.MkdirAll(dir, 0o755) }
