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
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/catalog"
	"github.com/dpbandit/dpbandit/contextual"
	"github.com/dpbandit/dpbandit/experiment"
	"github.com/dpbandit/dpbandit/internal/regfile"
	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/ope"
	"github.com/dpbandit/dpbandit/privacy"
)

// evaluation is what `dpbandit evaluate --json` prints.
type evaluation struct {
	Log     string             `json:"log"`
	Targets []targetEvaluation `json:"targets,omitempty"`
	Replays []replayEvaluation `json:"replays,omitempty"`
	// Ledger is the release ledger's state after the releases.
	Ledger *ope.LedgerState `json:"ledger,omitempty"`
}

type targetEvaluation struct {
	Policy string `json:"policy"`
	// Skipped counts the decisions without a reward, shown under a
	// budget too (never silent): whether a reward came is not protected
	// (docs/evaluation.md). It hides Result's, which is the same.
	Skipped int `json:"skipped_without_reward"`
	// Result is the exact evaluation; nil under a budget, where only
	// the private release is shown.
	*ope.Result
	Private *ope.Release `json:"private,omitempty"`
	Reused  bool         `json:"private_reused,omitempty"`
}

type replayEvaluation struct {
	Algorithm string `json:"algorithm"`
	*ope.ReplayResult
}

func evaluateCmd(_ context.Context, args []string, stdout, _ io.Writer) error {
	return evaluateError(evaluate(args, stdout))
}

// evaluateArgs are evaluate's command line: the flags as given, and
// what validate derives from them.
type evaluateArgs struct {
	path                   string   // the log
	policies, algos        []string // --policy, --algo
	arms                   int
	clip, lo, hi           float64
	rho, eps, delta, total float64
	private, ledger        string
	format                 string
	hashBits               int
	maxPerUnit             int
	seed                   uint64
	maxMemory              int64 // MiB
	asJSON                 bool
	set                    map[string]bool // the flags given

	// Set by validate.
	bounds mechanism.Bounds
	budget privacy.Budget
	capRho *float64 // --total, when given: 0 allows no release
	opts   ope.Options
}

// parseEvaluateArgs reads evaluate's command line (flags before and
// after LOG).
func parseEvaluateArgs(args []string, stdout io.Writer) (*evaluateArgs, error) {
	fs := newFlagsArgs("evaluate", `LOG

Off-policy evaluation of target policies on a log of bandit feedback
(docs/evaluation.md): JSON lines or CSV with the Open Bandit Pipeline's
fields action, reward, pscore and optionally context and action_prob, as
GET /v1/experiments/ID/log of dpbandit serve exports; Vowpal Wabbit's and
Personalizer's dsjson; the Open Bandit Dataset's CSV.`, stdout)
	a := &evaluateArgs{set: map[string]bool{}}
	fs.Func("policy", "fixed target `policy`, repeatable: uniform, arm:K, logging, linear:FILE[,softmax=T][,eps=E], dist:FILE (a row of probabilities per logged record) (default uniform)", func(s string) error {
		a.policies = append(a.policies, s)
		return nil
	})
	fs.Func("algo", "adaptive target: algorithm `spec` replayed on a uniformly logged log, repeatable (finite-armed without contexts, contextual with them)", func(s string) error {
		a.algos = append(a.algos, s)
		return nil
	})
	fs.IntVar(&a.arms, "arms", 0, "number of actions `K` (default: from action_prob or the decision sets)")
	fs.Float64Var(&a.clip, "clip", 0, "cap the importance weights at `M` >= 1 (0: no cap; a private release of a --policy needs one)")
	fs.Float64Var(&a.lo, "lo", 0, "declared reward range: low end `L` (rewards below are clipped)")
	fs.Float64Var(&a.hi, "hi", 1, "declared reward range: high end `H` (rewards above are clipped)")
	fs.Float64Var(&a.rho, "rho", 0, "release an estimate privately under `rho`-zCDP (and replay private algorithms at it)")
	fs.Float64Var(&a.eps, "eps", 0, "release an estimate privately under pure `eps`-DP, or (eps,delta)-DP with --delta")
	fs.StringVar(&a.private, "private", "ips", "`estimator` released under --rho/--eps, each target spending the budget: "+strings.Join(ope.PrivateEstimators, ", "))
	fs.Float64Var(&a.delta, "delta", 0, "`delta` of an (eps,delta) budget")
	fs.StringVar(&a.ledger, "ledger", "", "release ledger `file` (default LOG.releases.json): a release is drawn once per log and parameters")
	fs.Float64Var(&a.total, "total", 0, "cap, in zCDP `rho`, on what the ledger's releases spend together, recorded in it: it binds later runs and can be lowered, not raised; 0 allows no release (pure eps counts eps^2/2)")
	fs.StringVar(&a.format, "format", "", "the log's `format`: "+strings.Join(ope.Formats, ", ")+" (default: from its content)")
	fs.IntVar(&a.hashBits, "hash-bits", 0, fmt.Sprintf("dsjson and obp: features hashed into 2^`b` dimensions (package featurehash; 0: %d for dsjson, %d for obp)", ope.DefaultDSJSONBits, ope.DefaultOBPBits))
	fs.IntVar(&a.maxPerUnit, "max-events-per-unit", 0, "keep at most `N` events with a reward of each unit_id (the first, in the log's order), and calibrate a private release to a unit's N events (0: no bound; a unit's k events then get group privacy, k^2 rho)")
	fs.Uint64Var(&a.seed, "seed", 1, "seed of the replayed algorithms' own draws (a release's noise is always the secure source)")
	fs.Int64Var(&a.maxMemory, "max-memory", 4096, "bound, in `MiB`, on the reward model's memory (16 d^2 bytes for d features, 64 bytes an action), and a replayed algorithm's, checked before they are allocated")
	fs.BoolVar(&a.asJSON, "json", false, "print JSON")
	if err := parseArgs(fs, args); err != nil {
		return nil, err
	}
	if fs.NArg() == 0 {
		return nil, usageError{errors.New("evaluate needs a LOG file (see dpbandit evaluate -h)")}
	}
	a.path = fs.Arg(0)
	if err := parse(fs, fs.Args()[1:]); err != nil { // flags after LOG
		return nil, err
	}
	fs.Visit(func(f *flag.Flag) { a.set[f.Name] = true })
	if len(a.policies) == 0 && len(a.algos) == 0 {
		a.policies = []string{"uniform"}
	}
	return a, nil
}

// validate refuses, before any file is read, flags that do not go
// together or that a release could not honour, and derives the reward
// range, the budget and the evaluation's options.
func (a *evaluateArgs) validate() error {
	var err error
	if a.bounds, err = mechanism.NewBounds(a.lo, a.hi); err != nil {
		return usageError{fmt.Errorf("lo, hi: %v", err)}
	}
	if a.budget, err = oneBudget(a.set, a.rho, a.eps, a.delta); err != nil {
		return err
	}
	if a.set["total"] {
		a.capRho = &a.total
	}
	private := a.budget.IsPrivate()
	if !private {
		for _, f := range []string{"total", "ledger", "private"} {
			if a.set[f] {
				return &experiment.FieldError{Field: f, Err: errors.New("is for private releases, which need a budget (--rho or --eps)")}
			}
		}
	}
	if a.capRho != nil && !(*a.capRho >= 0 && !math.IsInf(*a.capRho, 1)) {
		return &experiment.FieldError{Field: "total", Err: fmt.Errorf("a ledger's total is a finite rho >= 0 (0 allows no release), got %v", a.total)}
	}
	if a.maxMemory < 1 || a.maxMemory > 1<<40 {
		return &experiment.FieldError{Field: "max-memory", Err: fmt.Errorf("must lie in [1, 2^40] MiB, got %d", a.maxMemory)}
	}
	reading, err := ope.NewReading(a.format, a.hashBits)
	if err != nil {
		return err
	}
	a.opts = ope.Options{Arms: a.arms, Clip: a.clip, Rewards: &a.bounds, MaxMemory: a.maxMemory << 20, MaxEventsPerUnit: a.maxPerUnit, Reading: reading}
	if err := a.opts.Validate(); err != nil {
		return err
	}
	if !slices.Contains(ope.PrivateEstimators, a.private) {
		return usageError{fmt.Errorf("private: no private release of %q (known: %s)", a.private, strings.Join(ope.PrivateEstimators, ", "))}
	}
	if private && a.clip == 0 && len(a.policies) > 0 {
		return usageError{errors.New("clip: a private release needs a weight cap --clip M (the noise is calibrated to it)")}
	}
	if private && a.arms <= 0 && len(a.policies) > 0 {
		return usageError{errors.New("arms: a private release needs the number of actions --arms K declared (read from the log, K depends on one event)")}
	}
	if a.ledger == "" {
		a.ledger = a.path + ".releases.json"
	}
	return nil
}

// evaluate is evaluateCmd, its errors not yet filed under their flags.
func evaluate(args []string, stdout io.Writer) error {
	a, err := parseEvaluateArgs(args, stdout)
	if err != nil {
		return err
	}
	if err := a.validate(); err != nil {
		return err
	}
	// A release is about real people's data: its noise is never seeded
	// (a known seed would let anyone subtract it).
	var nz noise.Noise = noise.Secure{}
	var targets []ope.Policy
	for _, s := range a.policies {
		p, err := ope.ParsePolicy(s)
		if err != nil {
			return err
		}
		if c, ok := p.(io.Closer); ok {
			defer c.Close()
		}
		targets = append(targets, p)
	}
	specs := make([]catalog.Spec, len(a.algos))
	for i, s := range a.algos {
		if specs[i], err = catalog.Parse(s); err != nil {
			return usageError{fmt.Errorf("algo: %v", err)}
		}
	}
	info, err := statLog(a.path)
	if err != nil {
		return err
	}
	open := func() (io.ReadCloser, error) { return openLog(a.path, info) }
	releasing := a.budget.IsPrivate() && len(targets) > 0
	if releasing {
		// Every event takes a byte at least: the log's size bounds the
		// number of events, and with it the sensitivities.
		if err := ope.CheckPrivate(a.private, a.budget, a.opts, int(min(info.Size(), math.MaxInt32)), nz); err != nil {
			return budgetFieldError(a.budget, err)
		}
		// The ledger (or its lock, PATH.lock) is created where it is
		// named: a missing folder is a flag error, before any work.
		if err := creatable(a.ledger + ".lock"); err != nil {
			return &experiment.FieldError{Field: "ledger", Err: err}
		}
	}
	// The learners are built first, so that a bad --algo fails before
	// any private release.
	learners, err := a.learners(open, specs, nz)
	if err != nil {
		return err
	}
	out := evaluation{Log: a.path}
	if len(targets) > 0 {
		if out.Targets, out.Ledger, err = a.evaluateTargets(open, targets, nz); err != nil {
			return err
		}
	}
	for i, l := range learners {
		res, err := ope.ReplayWith(open, a.opts, l)
		if err != nil {
			return logError(a.path, err)
		}
		label := a.algos[i]
		if specs[i].Private {
			label += " " + a.budget.String()
		}
		out.Replays = append(out.Replays, replayEvaluation{Algorithm: label, ReplayResult: res})
	}
	if a.asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	printEvaluation(stdout, out, a.bounds, a.ledger)
	return nil
}

// learners builds the replayed algorithms, surveying the log once for
// all of them.
func (a *evaluateArgs) learners(open func() (io.ReadCloser, error), specs []catalog.Spec, nz noise.Noise) ([]ope.Learner, error) {
	if len(specs) == 0 {
		return nil, nil
	}
	first, k, n, err := ope.SurveyWith(open, a.opts)
	if err != nil {
		return nil, logError(a.path, err)
	}
	learners := make([]ope.Learner, len(specs))
	for i, s := range specs {
		if err := ope.CheckMemory(ope.DecisionDim(&first, k), k, a.opts.MaxMemory); err != nil {
			return nil, err
		}
		if learners[i], err = replayLearner(s, &first, k, n, a.budget, a.bounds, nz, a.seed); err != nil {
			return nil, err
		}
	}
	return learners, nil
}

// evaluateTargets evaluates the fixed targets in one evaluation and,
// under a budget, releases each one's estimate through the ledger (all
// or none), returning the ledger's state after.
func (a *evaluateArgs) evaluateTargets(open func() (io.ReadCloser, error), targets []ope.Policy, nz noise.Noise) ([]targetEvaluation, *ope.LedgerState, error) {
	results, err := ope.EvaluateAll(open, targets, a.opts)
	if err != nil {
		return nil, nil, logError(a.path, err)
	}
	out := make([]targetEvaluation, len(targets))
	for i, res := range results {
		out[i] = targetEvaluation{Policy: a.policies[i], Skipped: res.Skipped, Result: res}
	}
	if !a.budget.IsPrivate() {
		return out, nil, nil
	}
	f, err := open()
	if err != nil {
		return nil, nil, err
	}
	digest, err := ope.LogDigest(f)
	f.Close()
	if err != nil {
		return nil, nil, err
	}
	reqs := make([]ope.Request, len(targets))
	for i, p := range targets {
		spec := ope.ReleaseSpec{LogDigest: digest, Policy: a.policies[i], Target: p, Estimator: a.private,
			Clip: a.clip, Rewards: a.bounds, Arms: a.arms, Budget: a.budget, MaxEventsPerUnit: a.maxPerUnit, Reading: a.opts.Reading.String()}
		res := results[i]
		reqs[i] = ope.Request{Key: spec.Key(), Draw: func() (ope.Release, error) { return ope.Private(res, a.private, a.budget, nz) }}
	}
	// All the targets' releases or none (ope.Ledger.ReleaseAll).
	book := ope.Ledger{Path: a.ledger, Total: a.capRho}
	rels, reused, err := book.ReleaseAll(reqs)
	if err != nil {
		return nil, nil, err
	}
	for i := range rels {
		// Under a budget only the release is shown: the output is
		// what may be published.
		out[i].Private, out[i].Reused, out[i].Result = &rels[i], reused[i], nil
	}
	st, err := book.Read()
	if err != nil {
		return nil, nil, err
	}
	return out, &st, nil
}

// fmtMeans formats a model's means briefly.
func fmtMeans(q []float64) string {
	s := make([]string, len(q))
	for i, v := range q {
		s[i] = fmt.Sprintf("%.3f", v)
	}
	return "[" + strings.Join(s, " ") + "]"
}

// statLog checks that the log is a regular file (regfile.Open) and
// returns its state, which every later pass must find unchanged.
func statLog(path string) (os.FileInfo, error) {
	f, err := regfile.Open(path)
	var pe *os.PathError
	if errors.As(err, &pe) {
		return nil, usageError{fmt.Errorf("%s: %v", path, pe.Err)}
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Stat()
}

// errLogChanged is a log whose size or time changed between two passes:
// the passes would not see the same events.
var errLogChanged = errors.New("the log changed while evaluate read it (its size or modification time): evaluate a file that is no longer written")

// openLog opens the log for a pass, and refuses it if it is no longer
// the file statLog saw.
func openLog(path string, first os.FileInfo) (io.ReadCloser, error) {
	f, err := regfile.Open(path)
	if err != nil {
		return nil, err
	}
	info, err := f.Stat()
	if err == nil && (!os.SameFile(info, first) || info.Size() != first.Size() || !info.ModTime().Equal(first.ModTime())) {
		err = fmt.Errorf("%s: %w", path, errLogChanged)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// evaluateError files evaluate's errors of bad input under their flag
// or file (exit 2), from the ope package's typed errors.
func evaluateError(err error) error {
	var oe *ope.OptionError
	var nr *regfile.NotRegularError
	var me *ope.MemoryError
	var te *ope.TotalError
	var over *ope.OverTotalError
	var model *ope.ModelError
	switch {
	case errors.As(err, &model):
		return usageError{fmt.Errorf("the direct method's reward model cannot be fit on this log: %s", model.Reason)}
	case errors.As(err, &over):
		return fmt.Errorf("ledger: its releases have spent rho=%.6g of its total rho=%.6g; the releases asked would cost rho=%.6g more: none was made", over.Spent, over.Total, over.Cost)
	case errors.As(err, &oe):
		return &experiment.FieldError{Field: oe.Field, Err: errors.New(oe.Reason)}
	case errors.As(err, &nr):
		return usageError{nr}
	case errors.As(err, &me):
		what := fmt.Sprintf("%d actions", me.Arms)
		if me.Dim > 0 {
			what = fmt.Sprintf("a model of %d features over %d actions", me.Dim, me.Arms)
		}
		return &experiment.FieldError{Field: "max-memory", Err: fmt.Errorf("%s need about %.0f MiB, above the limit of %.0f MiB: fewer context features or actions, or raise --max-memory", what, me.Need/(1<<20), me.Limit/(1<<20))}
	case errors.As(err, &te):
		return &experiment.FieldError{Field: "ledger", Err: fmt.Errorf("%s: total_rho must be a finite rho >= 0 (0 allows no release), got %v", te.File, te.Total)}
	case errors.Is(err, errLogChanged):
		return usageError{err}
	}
	return err
}

// oneBudget builds evaluate's budget from the flags given (set) as run
// builds its budgets (experiment.Config.Budgets: a rho or eps of 0 and a
// delta without eps are refused), and refuses more than one.
func oneBudget(set map[string]bool, rho, eps, delta float64) (privacy.Budget, error) {
	var c experiment.Config
	for _, f := range []struct {
		name string
		v    float64
		to   *[]float64
	}{{"rho", rho, &c.Rho}, {"eps", eps, &c.Eps}, {"delta", delta, &c.Delta}} {
		if set[f.name] {
			*f.to = []float64{f.v}
		}
	}
	bs, err := c.Budgets()
	switch {
	case err != nil:
		return privacy.None(), err
	case len(bs) > 1:
		return privacy.None(), usageError{errors.New("rho, eps: give one budget")}
	case len(bs) == 1:
		return bs[0], nil
	}
	return privacy.None(), nil
}

// budgetFieldError files an error of calibrating b's noise under b's
// parameter (privacy.ParamError's, or else eps or rho).
func budgetFieldError(b privacy.Budget, err error) error {
	field := "eps"
	if b.Notion == privacy.ZCDP {
		field = "rho"
	}
	return experiment.BudgetError(field, err)
}

// optionError files an *ope.OptionError under its field (exit 2).
func optionError(err error) error {
	var oe *ope.OptionError
	if errors.As(err, &oe) {
		return &experiment.FieldError{Field: oe.Field, Err: errors.New(oe.Reason)}
	}
	return err
}

// logError makes a bad log a usage error (exit 2), naming the file.
func logError(path string, err error) error {
	var le *ope.LogError
	var lens *ope.LengthError
	switch {
	case errors.As(err, &lens):
		return &experiment.FieldError{Field: "policy", Err: fmt.Errorf("dist:%s has %d rows, the log %s %d records: one row of target probabilities per logged record", lens.Path, lens.Rows, path, lens.Records)}
	case errors.As(err, &le) || errors.Is(err, ope.ErrNoEvents):
		return usageError{fmt.Errorf("%s: %w", path, err)}
	}
	return err
}

// replayLearner builds an algorithm for replay on a log of k actions
// whose first event is first, at the horizon n, its number of events
// with a reward (ope.Survey): finite-armed on a log without contexts,
// contextual (of the log's dimension) on one with them.
func replayLearner(a catalog.Spec, first *ope.Event, k, n int, b privacy.Budget, bounds mechanism.Bounds, nz noise.Noise, seed uint64) (ope.Learner, error) {
	if !a.Private {
		b = privacy.None()
	}
	if a.Baseline {
		return nil, usageError{fmt.Errorf("algo: %s learns nothing: evaluate it as a fixed policy (--policy %s)", a.Name, a.Name)}
	}
	d := ope.DecisionDim(first, k)
	switch {
	case d == 0 && a.Kind == catalog.Finite:
		p, err := a.NewPolicy(b, bandit.Setting{Arms: k, Horizon: int64(n), Bounds: bounds, Rand: noise.Stream(seed), Noise: nz})
		if err != nil {
			return nil, usageError{fmt.Errorf("algo: %v", err)}
		}
		return ope.BanditLearner(p), nil
	case d > 0 && a.Kind == catalog.Contextual:
		p, err := a.NewContextual(b, contextual.Setting{Dim: d, Horizon: int64(n), Bounds: bounds, Noise: nz, Rand: noise.Stream(seed)})
		if err != nil {
			return nil, usageError{fmt.Errorf("algo: %v", err)}
		}
		c, ok := p.(contextual.Concurrent)
		if !ok {
			return nil, usageError{fmt.Errorf("algo: %s cannot be replayed (it cannot withdraw a decision the log did not take)", a.Name)}
		}
		return ope.ContextualLearner(c, k), nil
	case d == 0 && a.Kind == catalog.Contextual:
		return nil, usageError{fmt.Errorf("algo: %s needs contexts; the log has none (replay a finite-armed algorithm)", a.Name)}
	case a.Kind == catalog.Finite:
		return nil, usageError{fmt.Errorf("algo: %s is not a contextual algorithm; the log has contexts", a.Name)}
	}
	has := "none"
	if d > 0 {
		has = "contexts"
	}
	return nil, usageError{fmt.Errorf("algo: %s is for %s, which replay does not cover: it replays finite-armed algorithms on a log without contexts and linear contextual ones on a log with them (this log has %s)", a.Name, a.Kind, has)}
}

func printEvaluation(w io.Writer, ev evaluation, bounds mechanism.Bounds, ledger string) {
	for _, t := range ev.Targets {
		if p := t.Private; p != nil {
			when := "released now"
			if t.Reused {
				when = "as released before"
			}
			fmt.Fprintf(w, "target %s on %s: %d events with a reward (%d without, skipped), rewards in %s\n", t.Policy, ev.Log, p.Events, t.Skipped, bounds)
			fmt.Fprintf(w, "  private %s (%s): %s, %s noise of scale %.4g for sensitivity %.4g (%s; ledger %s)\n",
				strings.ToUpper(p.Estimator), p.Budget, num(p.Value), p.Mechanism, p.Scale, p.Sensitivity, when, ledger)
			if p.Estimator == "snips" {
				fmt.Fprintf(w, "    released mean weighted reward %s and mean weight %s (one release; the value is their ratio)\n", num(p.Released[0]), num(p.Released[1]))
			}
			if m := p.Model; m != nil {
				fmt.Fprintf(w, "    reward model released first: action means %s, %s noise of scale %.4g for sensitivity %.4g; the model and the estimate each at %s\n",
					fmtMeans(m.Means), m.Mechanism, m.Scale, m.Sensitivity, m.Budget)
			}
			continue
		}
		r := t.Result
		fmt.Fprintf(w, "target %s on %s: %d events with a reward (%d without, skipped), %d actions, rewards in %s (%d clipped)\n",
			t.Policy, ev.Log, r.Events, r.Skipped, r.Arms, bounds, r.RewardsClipped)
		if r.DroppedOverUnitCap > 0 {
			fmt.Fprintf(w, "  %d events dropped: their unit had --max-events-per-unit events before them\n", r.DroppedOverUnitCap)
		}
		fmt.Fprintf(w, "  effective sample size %.1f, largest weight %.4g, %d weights capped (IPS bias at most %.3g)\n",
			r.ESS, r.MaxWeight, r.Clipped, r.ClipBias)
		if r.Uncovered > 0 {
			fmt.Fprintf(w, "  the target puts %.3g%% of its probability on actions the logging policy never takes: IPS and DR see none of their rewards (a bias of up to that share of the reward range's width)\n", 100*r.Uncovered)
		}
		if r.Events < 2 {
			fmt.Fprintln(w, "  one event: no estimator has a standard error (it needs two events), so none has an interval")
		}
		if r.ESS == 0 {
			fmt.Fprintln(w, "  the log never takes an action this target plays: IPS and DR are 0 and DM the model's guess by construction, SNIPS is undefined")
		}
		tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  estimator\tvalue\tSE\t95% CI")
		for _, e := range r.Estimate {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", e.Name, num(e.Value), num(e.SE), interval(e))
		}
		tw.Flush()
	}
	if l := ev.Ledger; l != nil {
		fmt.Fprintf(w, "ledger %s: %d releases, rho=%.4g spent in all (zCDP adds)", ledger, l.Releases, l.Spent)
		if l.Total != nil {
			fmt.Fprintf(w, " of its total rho=%.4g", *l.Total)
		}
		fmt.Fprintln(w)
		fmt.Fprintln(w, "exact estimates are not shown under a budget (run without --rho/--eps to see them, as the log's holder)")
	}
	for _, r := range ev.Replays {
		fmt.Fprintf(w, "replay %s on %s (not private): %s (SE %s, 95%% CI %s) on %d matched events of %d\n",
			r.Algorithm, ev.Log, num(r.Value.Value), num(r.Value.SE), interval(r.Value), r.Matched, r.Events)
	}
	if len(ev.Targets) > 0 && ev.Ledger == nil {
		fmt.Fprintln(w, strings.TrimSpace(`
DM fits a ridge reward model (no interval: its error is the model's bias);
IPS, SNIPS and DR weight by pi/pscore; intervals are normal, 1.96 SE; -
marks a number the log leaves undefined.`))
	}
}

// num formats a number of an evaluation, "-" when it is undefined, to
// 4 decimals, or 4 significant digits from 10^6 on (a release under a
// huge cap is noise of that size: 300 digits would say nothing more).
func num(x float64) string {
	switch {
	case math.IsNaN(x) || math.IsInf(x, 0):
		return "-"
	case math.Abs(x) >= 1e6:
		return fmt.Sprintf("%.4g", x)
	}
	return fmt.Sprintf("%.4f", x)
}

// interval formats an estimate's 95% interval, "-" when it has none.
func interval(e ope.Estimate) string {
	if math.IsNaN(e.Lo) || math.IsNaN(e.Hi) {
		return "-"
	}
	return "[" + num(e.Lo) + ", " + num(e.Hi) + "]"
}
