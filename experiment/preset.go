package experiment

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dpbandit/dpbandit/privacy"
	"github.com/dpbandit/dpbandit/sim"
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
	// Sweep, if set, runs Config once per point, on the point's
	// environment, each into the folder Name/Tag; Combine, if set, then
	// draws plots across the points' reports into Name and returns their
	// file names.
	Sweep   func(Scale) []SweepPoint
	Combine func(reps []*Report, dir string) ([]string, error)
}

// SweepPoint is one environment of a preset's sweep, with the
// algorithms to run on it when they differ from Config's.
type SweepPoint struct {
	Tag, Env string
	Algos    []string
}

// part is one experiment of a preset: the preset itself or a point of
// its sweep, with the folder it writes (relative to the reproduction's).
type part struct {
	dir    string
	config Config
}

// parts expands a preset at a scale into its experiments.
func (p Preset) parts(s Scale) []part {
	c := p.Config(s)
	if p.Sweep == nil {
		return []part{{p.Name, c}}
	}
	var out []part
	for _, pt := range p.Sweep(s) {
		c := c
		c.Env = pt.Env
		if pt.Algos != nil {
			c.Algos = pt.Algos
		}
		c.Name += " (" + pt.Tag + ")"
		out = append(out, part{filepath.Join(p.Name, pt.Tag), c})
	}
	return out
}

// combine runs the preset's Combine over its parts' reports and records
// the files on the last one.
func (p Preset) combine(reports []presetReport, parts int, out string) error {
	if p.Combine == nil || parts < 2 || len(reports) < parts {
		return nil
	}
	mine := reports[len(reports)-parts:]
	var reps []*Report
	for _, r := range mine {
		reps = append(reps, r.Report)
	}
	files, err := p.Combine(reps, filepath.Join(out, p.Name))
	for _, f := range files {
		mine[len(mine)-1].Extra = append(mine[len(mine)-1].Extra, p.Name+"/"+f)
	}
	return err
}

// fig4Means are the Bernoulli means of seed 001's finite-armed experiment
// (from Sajed and Sheffet 2019).
const fig4Env = "bernoulli:0.75,0.625,0.5,0.375,0.25"

// Presets returns the registered presets, in report order.
func Presets() []Preset {
	return []Preset{
		{
			Name:   "fig4-left",
			Source: "Azize and Basu (seed 001), Section VII-A and Figure 4 (left)",
			Description: "AdaC-UCB (beta = 1, as in the paper) against its non-private counterpart, UCB with " +
				"arm-dependent doubling and forgetting, on 5 Bernoulli arms with means {0.75, 0.625, 0.5, 0.375, 0.25}, " +
				"over a half-decade grid of rho from 10^-3 to 10^2. The paper claims (a) that the regret difference " +
				"goes to 0 as rho grows and (b) that the price of privacy falls with T at fixed rho.",
			Config: func(s Scale) Config {
				c := Defaults()
				c.Name = "001 Fig. 4 (left): AdaC-UCB vs UCB with doubling"
				c.Env = fig4Env
				c.Algos = []string{"adac-ucb:beta=1", "ucb-doubling:beta=1"}
				c.Rho = logGrid(-3, 2, 2)
				c.Seed = 2024
				c.Runs = 100
				c.Horizon = 1_000_000
				if s == Paper {
					c.Horizon = 10_000_000
				}
				return c
			},
		},
		{
			Name:   "finite-armed-compare",
			Source: "Seeds 000 (Section 4) and 001 (Appendix C, Table II): all finite-armed algorithms at matched budgets",
			Description: "AdaC-UCB (rho-zCDP), AdaP-UCB and DP-SE (pure eps-DP at eps = sqrt(2 rho), since eps-DP implies " +
				"(eps^2/2)-zCDP, so every private algorithm has the same rho), each paired with its non-private counterpart, " +
				"with UCB1, KL-UCB and Thompson sampling as references, on the instance of Figure 4. beta = 4 > 3, so " +
				"Theorem 10 (AdaC-UCB), the converted bound of Table II (AdaP-UCB) and Lemma 4.1 (DP-SE) apply; bounds.svg " +
				"draws them with the minimax lower bound of Theorem 17.",
			Config: func(s Scale) Config {
				c := Defaults()
				c.Name = "Finite-armed algorithms at matched rho"
				c.Env = fig4Env
				c.Algos = []string{"adac-ucb:beta=4", "adap-ucb:beta=4", "dp-se", "ucb-doubling:beta=4", "se", "ucb1", "kl-ucb", "thompson"}
				c.Rho = []float64{0.01, 0.1, 1, 10}
				c.Seed = 2025
				c.Runs, c.Horizon = 50, 100_000
				if s == Paper {
					c.Runs, c.Horizon = 100, 1_000_000
				}
				return c
			},
		},
		{
			Name:   "fig4-middle",
			Source: "Azize and Basu (seed 001), Section VII-A and Figure 4 (middle)",
			Description: "AdaC-GOPE against GOPE on K = 10 actions drawn uniformly on the unit sphere of R^3, theta* uniform " +
				"on the sphere (drawn once from the seed and shared by all runs), delta = 0.001, reward noise N(0,1) clipped to " +
				"[-1, 1], G-optimal designs by Frank-Wolfe, over a half-decade grid of rho from 10^-3 to 10^2. The paper claims " +
				"(a) that the regret difference goes to 0 as rho grows and (b) that the price of privacy falls with T.",
			Config: func(s Scale) Config {
				c := Defaults()
				c.Name = "001 Fig. 4 (middle): AdaC-GOPE vs GOPE"
				c.Env = "linear-sphere:k=10,d=3"
				c.Algos = []string{"adac-gope", "gope"}
				c.Rho = logGrid(-3, 2, 2)
				c.Seed = 2026
				c.Runs, c.Horizon = 50, 100_000
				if s == Paper {
					c.Runs, c.Horizon = 100, 10_000_000
				}
				return c
			},
		},
		{
			Name:   "fig5",
			Source: "Azize and Basu (seed 001), Appendix H and Figure 5",
			Description: "AdaC-GOPE (noise on V^-1/2 sum a r, scaled by g_l) against AdaR-GOPE-Var (noise on each support " +
				"action's reward sum), both paired with GOPE, on the instance of Figure 4 (middle). The paper claims that " +
				"AdaC-GOPE has lower regret, most visibly at small rho: its noise does not grow with the size of the design's support.",
			Config: func(s Scale) Config {
				c := Defaults()
				c.Name = "001 Fig. 5: AdaC-GOPE vs AdaR-GOPE-Var"
				c.Env = "linear-sphere:k=10,d=3"
				c.Algos = []string{"adac-gope", "adar-gope-var", "gope"}
				c.Rho = logGrid(-3, 2, 1)
				c.Seed = 2026
				c.Runs, c.Horizon = 50, 100_000
				if s == Paper {
					c.Runs, c.Horizon = 100, 10_000_000
				}
				return c
			},
		},
		{
			Name:   "linear-compare",
			Source: "Seeds 000 (Section 5, Algorithm 4) and 001 (Algorithm 2): private linear bandits at matched budgets",
			Description: "DP-PE (Hanna et al.; pure eps-DP at eps = sqrt(2 rho)) against AdaC-GOPE (rho-zCDP), both paired " +
				"with GOPE, on the instance of Figure 4 (middle). DP-PE's margin gamma_i is taken verbatim from seed 000, " +
				"whose extraction looks garbled; expect it to explore for long.",
			Config: func(s Scale) Config {
				c := Defaults()
				c.Name = "Private linear bandits at matched rho"
				c.Env = "linear-sphere:k=10,d=3"
				c.Algos = []string{"adac-gope", "dp-pe", "gope"}
				c.Rho = []float64{0.01, 0.1, 1, 10}
				c.Seed = 2026
				c.Runs, c.Horizon = 30, 100_000
				if s == Paper {
					c.Runs, c.Horizon = 100, 1_000_000
				}
				return c
			},
		},
		{
			Name:   "fig4-right",
			Source: "Azize and Basu (seed 001), Section VII-A and Figure 4 (right)",
			Description: "AdaC-OFUL against RS-OFUL with C = 1, lambda = 0.1, delta = 0.001: each step 10 actions drawn from " +
				"N((1/sqrt 3) 1, I/10) in R^3 (rescaled to norm 1 when above, as the privacy proof needs), theta* uniform on the " +
				"sphere, reward noise N(0,1) clipped to [-1, 1], over a decade grid of rho from 10^-3 to 10^2. The decision sets " +
				"are public; only rewards are protected. The paper claims (a) that the regret difference goes to 0 as rho " +
				"grows and (b) that the price of privacy falls with T.",
			Config: func(s Scale) Config {
				c := Defaults()
				c.Name = "001 Fig. 4 (right): AdaC-OFUL vs RS-OFUL"
				c.Env = "contextual-gauss:k=10,d=3"
				c.Algos = []string{"adac-oful", "rs-oful"}
				c.Rho = logGrid(-3, 2, 1)
				c.Seed = 2027
				c.Runs, c.Horizon = 30, 10_000
				if s == Paper {
					c.Runs, c.Horizon = 100, 10_000_000
				}
				return c
			},
		},
		{
			Name:   "olo-experts",
			Source: "Agarwal and Singh (seed 003), Section 3, Corollary 3.2 (prediction with expert advice)",
			Description: "Private FTRL over the simplex (exponential weights on TreeBasedAgg's noisy loss sums) against Hedge, " +
				"N = 10 experts with i.i.d. Bernoulli losses, over a log grid of eps. The paper's bound is " +
				"O(sqrt(T log N) + N log^2 T log N / eps): privacy is free once the second term falls below the first, and the " +
				"private-minus-non-private regret is roughly constant in T at fixed eps (the additive noise term).",
			Config: func(s Scale) Config {
				c := Defaults()
				c.Name = "003 Cor. 3.2: private FTRL (experts) vs Hedge"
				c.Env = "experts-iid:n=10"
				c.Algos = []string{"dp-ftrl-experts", "hedge"}
				c.Eps = logGrid(-2, 2, 1)
				c.Seed = 2028
				oloScale(&c, s)
				return c
			},
		},
		{
			Name:   "olo-ball",
			Source: "Agarwal and Singh (seed 003), Corollary 3.2 case 2 (OLO over the sphere)",
			Description: "Private FTRL with the squared-norm regulariser against its non-private version, over the unit ball " +
				"of R^5 and over the cube [-1,1]^5, with oblivious i.i.d. losses around a fixed direction, over a log grid of " +
				"eps. Their bounds are O(sqrt(T) + N log^2 T/eps) and O(sqrt(NT) + N log^2 T/eps).",
			Config: func(s Scale) Config {
				c := Defaults()
				c.Name = "003 Cor. 3.2: private FTRL over the ball"
				c.Env = "ball:d=5"
				c.Algos = []string{"dp-ftrl-ball", "ftrl-ball"}
				c.Eps = logGrid(-2, 2, 1)
				c.Seed = 2030
				oloScale(&c, s)
				return c
			},
		},
		{
			Name:   "olo-cube",
			Source: "Agarwal and Singh (seed 003), Corollary 3.2 case 3 (OLO over the cube)",
			Description: "Private FTRL with the squared-norm regulariser against its non-private version over the cube " +
				"[-1,1]^5, losses in the L1 ball around a fixed direction, over a log grid of eps. The bound is " +
				"O(sqrt(NT) + N log^2 T/eps).",
			Config: func(s Scale) Config {
				c := Defaults()
				c.Name = "003 Cor. 3.2: private FTRL over the cube"
				c.Env = "cube:d=5"
				c.Algos = []string{"dp-ftrl-cube", "ftrl-cube"}
				c.Eps = logGrid(-2, 2, 1)
				c.Seed = 2031
				oloScale(&c, s)
				return c
			},
		},
		{
			Name:   "olo-bandit",
			Source: "Agarwal and Singh (seed 003), Section 4, Algorithms 4 and 5, Theorem 4.1",
			Description: "Private EXP2 (the reduction of Algorithm 4: each observed loss perturbed by Lap(1/eps)) against EXP2, " +
				"N = 10 arms with i.i.d. Bernoulli losses, over a log grid of eps, with Theorem 4.1's learning rate and " +
				"exploration. Its bound is O(sqrt(N T log T log N)/eps).",
			Config: func(s Scale) Config {
				c := Defaults()
				c.Name = "003 Thm 4.1: private EXP2 vs EXP2"
				c.Env = "experts-iid:n=10"
				c.Algos = []string{"dp-exp2", "exp2"}
				c.Eps = logGrid(-2, 2, 1)
				c.Seed = 2029
				oloScale(&c, s)
				return c
			},
		},
		{
			Name:   "olo-bandit-ball",
			Source: "Agarwal and Singh (seed 003), Section 4.2, Algorithm 4 around SCRiBLE, Theorem 4.5",
			Description: "Private SCRiBLE (the reduction of Algorithm 4: each observed loss <l, y> perturbed by <Z, y>, " +
				"Z ~ Lap^N(2 sqrt(N)/eps)) against SCRiBLE, bandit linear optimisation on the unit ball of R^5 with the " +
				"barrier -ln(1 - |x|^2), i.i.d. losses in the unit ball, over a log grid of eps, with Theorem 4.5's " +
				"learning rate. Its bound is O(sqrt(T log T) N sqrt(1 + N ||Y||_1^2/eps^2)).",
			Config: func(s Scale) Config {
				c := Defaults()
				c.Name = "003 Thm 4.5: private SCRiBLE vs SCRiBLE (ball)"
				c.Env = "ball:d=5"
				c.Algos = []string{"dp-scrible", "scrible"}
				c.Eps = logGrid(-1, 2, 1)
				c.Seed = 2030
				oloScale(&c, s)
				return c
			},
		},
		robustPreset(),
		sparsePreset(),
	}
}

// oloScale sets the sizes of the online learning presets: T = 10^4 and 20
// runs (quick), T = 10^5 and 50 runs (paper).
func oloScale(c *Config, s Scale) {
	c.Runs, c.Horizon = 20, 10_000
	if s == Paper {
		c.Runs, c.Horizon = 50, 100_000
	}
}

// logGrid returns 10^lo, ..., 10^hi with perDecade points per decade.
func logGrid(lo, hi, perDecade int) []float64 {
	var out []float64
	for i := lo * perDecade; i <= hi*perDecade; i++ {
		x := math.Pow(10, float64(i)/float64(perDecade))
		x, _ = strconv.ParseFloat(strconv.FormatFloat(x, 'g', 4, 64), 64) // 4 digits
		out = append(out, x)
	}
	return out
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
	// Shard, if set, computes only the shard's runs of every preset and
	// writes Out/PRESET/partial.json (no report); `dpbandit merge`
	// combines the shards.
	Shard sim.Shard
}

// Reproduce runs the presets and writes their results and an index.html
// report linking them. It returns the report's path (the output
// directory for a shard).
func Reproduce(ctx context.Context, o ReproduceOptions) (string, error) {
	presets := Presets()
	if err := CheckPresets(o.Only); err != nil {
		return "", err
	}
	var reports []presetReport
	for _, p := range presets {
		if len(o.Only) > 0 && !slices.Contains(o.Only, p.Name) {
			continue
		}
		parts := p.parts(o.Scale)
		for _, pt := range parts {
			c := pt.config
			c.Workers = o.Workers
			opt := Options{Out: filepath.Join(o.Out, pt.dir), Now: o.Now, Shard: o.Shard, preset: pt.dir, scale: o.Scale}
			if o.Progress != nil {
				name := filepath.ToSlash(pt.dir)
				opt.Progress = func(done, total int) { o.Progress(name, done, total) }
			}
			rep, err := Run(ctx, c, opt)
			if rep != nil {
				reports = append(reports, presetReport{Preset: p, Report: rep, Dir: filepath.ToSlash(pt.dir)})
			}
			if err != nil {
				if rep != nil {
					_, _ = writeIndex(o.Out, o.Scale, reports, o.Now)
				}
				return "", fmt.Errorf("preset %s: %w", pt.dir, err)
			}
		}
		if o.Shard == (sim.Shard{}) {
			if err := p.combine(reports, len(parts), o.Out); err != nil {
				return "", fmt.Errorf("preset %s: %w", p.Name, err)
			}
		}
	}
	if o.Shard != (sim.Shard{}) {
		return o.Out, nil
	}
	return writeIndex(o.Out, o.Scale, reports, o.Now)
}

// presetReport is the report of one part of a preset, in the folder Dir
// of the reproduction, with the preset's combined plots (Extra, paths
// relative to the reproduction) on its last part.
type presetReport struct {
	Preset
	*Report
	Dir   string
	Extra []string
}

// sweep is one algorithm spec swept over budgets against one reference.
type sweep struct {
	key     string
	entries []int // indices in Results, by increasing budget
}

// sweeps groups the paired entries by algorithm spec and reference.
func (r *Report) sweeps() []sweep {
	var out []sweep
	for j, res := range r.Summary.Results {
		if res.DiffMean == nil {
			continue
		}
		key := res.Label[:len(res.Label)-len(res.Privacy.String())-1] + " vs " + res.DiffVs
		i := slices.IndexFunc(out, func(s sweep) bool { return s.key == key })
		if i < 0 {
			out = append(out, sweep{key: key})
			i = len(out) - 1
		}
		out[i].entries = append(out[i].entries, j)
	}
	for _, s := range out {
		slices.SortStableFunc(s.entries, func(a, b int) int {
			return cmpFloat(budgetValue(r.Summary.Results[a].Privacy), budgetValue(r.Summary.Results[b].Privacy))
		})
	}
	return out
}

// Observations states the numbers behind the papers' two claims for every
// algorithm swept over budgets: (a) how the paired regret difference at
// the horizon changes from the smallest to the largest budget, and (b)
// how the price of privacy changes with t at each budget, from its peak
// (over t >= 1000) to the horizon.
func (r *Report) Observations() []string {
	var out []string
	for _, sw := range r.sweeps() {
		lo, hi := r.Summary.Results[sw.entries[0]], r.Summary.Results[sw.entries[len(sw.entries)-1]]
		verdict := "not yet within noise of 0"
		if math.Abs(*hi.DiffMean) <= 1.96**hi.DiffSE {
			verdict = "within noise of 0"
		}
		out = append(out, fmt.Sprintf("(a) %s, Reg_priv - Reg_ref at T=%d: %.4g ± %.2g at %s, down to %.4g ± %.2g at %s (%s).",
			sw.key, r.Summary.Horizon, *lo.DiffMean, 1.96**lo.DiffSE, lo.Privacy, *hi.DiffMean, 1.96**hi.DiffSE, hi.Privacy, verdict))
		var parts []string
		for _, j := range sw.entries {
			pop := r.Curves[j].PoP
			peak, at := math.Inf(-1), int64(0)
			for c, t := range r.Checkpoints {
				if t >= 1000 && pop[c] > peak {
					peak, at = pop[c], t
				}
			}
			if at > 0 {
				parts = append(parts, fmt.Sprintf("%s: %.3g at t=%d to %.3g at T", r.Summary.Results[j].Privacy, peak, at, pop[len(pop)-1]))
			}
		}
		if len(parts) > 0 {
			out = append(out, fmt.Sprintf("(b) %s, price of privacy from its peak to the horizon: %s.", sw.key, strings.Join(parts, "; ")))
		}
	}
	return append(out, r.rankings()...)
}

// rankings compares, at the smallest and the largest budget, the regret of
// every private algorithm run at that budget, when there are several.
func (r *Report) rankings() []string {
	var budgets []privacy.Budget
	for _, res := range r.Summary.Results {
		if res.Privacy.IsPrivate() && !slices.Contains(budgets, res.Privacy) {
			budgets = append(budgets, res.Privacy)
		}
	}
	if len(budgets) == 0 {
		return nil
	}
	slices.SortFunc(budgets, func(a, b privacy.Budget) int { return cmpFloat(budgetValue(a), budgetValue(b)) })
	var out []string
	for _, b := range []privacy.Budget{budgets[0], budgets[len(budgets)-1]} {
		var rs []Result
		for _, res := range r.Summary.Results {
			if res.Privacy == b {
				rs = append(rs, res)
			}
		}
		if len(rs) < 2 {
			continue
		}
		slices.SortFunc(rs, func(x, y Result) int { return cmpFloat(x.RegretMean, y.RegretMean) })
		var parts []string
		for _, x := range rs {
			spec := strings.TrimSuffix(x.Label, " "+x.Privacy.String()) // the algorithm with its parameters
			parts = append(parts, fmt.Sprintf("%s %.4g [%.4g, %.4g]", spec, x.RegretMean, x.RegretCI95[0], x.RegretCI95[1]))
		}
		out = append(out, fmt.Sprintf("(c) at %s, regret at T=%d from lowest: %s.", b, r.Summary.Horizon, strings.Join(parts, "; ")))
		if b == budgets[len(budgets)-1] {
			break
		}
	}
	return out
}

// PoPTable is the price of privacy of every paired entry at the decades
// t = 10^3, 10^4, ... and at the horizon.
type PoPTable struct {
	Times []int64
	Rows  []PoPRow
}

// PoPRow is one entry of a PoPTable.
type PoPRow struct {
	Label  string
	Values []float64
}

// PoPTable returns the price of privacy of the paired entries by decade.
func (r *Report) PoPTable() PoPTable {
	var tab PoPTable
	var cols []int
	next := int64(1000)
	for c, t := range r.Checkpoints {
		if (t >= next && t >= 1000) || c == len(r.Checkpoints)-1 {
			cols = append(cols, c)
			tab.Times = append(tab.Times, t)
			for next <= t {
				next *= 10
			}
		}
	}
	for j, cv := range r.Curves {
		if cv.PoP == nil {
			continue
		}
		row := PoPRow{Label: r.Summary.Results[j].Label}
		for _, c := range cols {
			row.Values = append(row.Values, cv.PoP[c])
		}
		tab.Rows = append(tab.Rows, row)
	}
	return tab
}

// CheckPresets reports an error naming the first unknown preset.
func CheckPresets(names []string) error {
	presets := Presets()
	for _, name := range names {
		if !slices.ContainsFunc(presets, func(p Preset) bool { return p.Name == name }) {
			var known []string
			for _, p := range presets {
				known = append(known, p.Name)
			}
			return fieldErr("preset", "unknown preset %q (known: %s)", name, strings.Join(known, ", "))
		}
	}
	return nil
}

// ensureDir creates dir.
func ensureDir(dir string) error { return os.MkdirAll(dir, 0o755) }
