package engine

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/ope"
	"github.com/dpbandit/dpbandit/privacy"
	"github.com/dpbandit/dpbandit/service/define"
	"github.com/dpbandit/dpbandit/service/fault"
	"github.com/dpbandit/dpbandit/service/store"
)

// Personalizer's evaluations (its Evaluations operations): a
// counterfactual evaluation of target policies over a time range of the
// experiment's own log, on package ope's estimators (IPS, SNIPS and DR,
// as `dpbandit evaluate` computes them: ope.EvaluateAll), released
// privately by ope.Private, once, and stored (store.Evaluations): every
// read returns the stored release, after a restart and from any
// replica; nothing is computed again. docs/personalizer.md, Evaluations.
//
// The log. The settled events of the range [Start, End) (by decision
// time) with a reward, learned or not, or the default reward
// (evalReward; events never activated are left out), single-slot ranks
// only (a slate's slots are counted in Slots and left out: each slot's
// propensity is conditional on the slots before it), streamed from the
// store at each pass (evalLog). Each event is written as a line of
// ope's JSON-lines log: its eligible actions'
// hashed vectors as the decision set (define.ReadRank, as the learner
// saw them), the logging policy's distribution over them as action_prob
// (define.Definition.Distribution, the exported log's), the action and
// its pscore, the reward and the unit. A rank's eligible actions vary
// from event to event (1 to 50); ope takes a fixed K, so every event is
// padded to K = define.MaxRankActions (the experiment's declared arms)
// with zero vectors of logging probability 0, which no target plays.
//
// The targets (a policy's arguments). Each is a fixed policy of the
// event's eligible actions (eligibleOnly, over package ope's own
// policies):
//
//   - "online" (or "logging"): the logging policy itself, its exploration
//     included (ope.Logging; its IPS weights are all 1);
//   - "baseline" (or "arm:0"): the first eligible action, Personalizer's
//     baseline (ope.Always(0));
//   - "uniform" (or "random"): every eligible action with probability
//     1/k (ope.Uniform over the event's k);
//   - "current": the greedy choice of the learner's released estimate
//     at the evaluation's creation (the model GET's theta; ope.Linear,
//     ties split evenly).
//
// Adaptive targets (a learner replayed on the log, as `dpbandit
// evaluate` replays algorithms) need a uniformly logged log and are not
// offered; nor are Vowpal Wabbit's command lines.
//
// Privacy. Every evaluation is released privately: the service runs
// private experiments only. An evaluation spends rho_e, the zCDP of one
// learned reward of the experiment (its Definition.NanoRho), split
// evenly over its targets' three releases (privacy.Split; ope.Private:
// IPS, SNIPS, DR, the importance weights capped at EvaluationClip and
// each unit's events bounded by max_rewards_per_unit, so that the
// release is rho_e-zCDP for the replacement of a unit's events). It is
// debited from the experiment's evaluation ledger (the store's
// evaluations rows, deleted ones included), whose cap is
// MaxEvaluations x rho_e: past it, an evaluation is refused (Conflict)
// and nothing is drawn; and from the ledger of every unit it reads,
// under the server's cap, the units that cannot afford it left out
// (evalunits.go). The number of events evaluated, which events
// had a reward, and the decisions (actions and propensities) are
// released exactly, as the exported log's are not protected either.
const (
	// EvaluationClip is M, the cap on the importance weights pi/pscore
	// of a private evaluation (ope.Options.Clip): the releases'
	// sensitivities are M times the reward range over n.
	EvaluationClip = 20.0
	// MaxEvaluations is the cap of an experiment's evaluation ledger, in
	// evaluations at the experiment's rho (deleted ones count).
	MaxEvaluations = 10
	// maxEvaluationPolicies bounds an evaluation's custom policies.
	maxEvaluationPolicies = 10
	// evalEstimators are the estimators released for each target, in
	// their order of release.
	evalEstimators = "ips snips dr"
)

// Evaluation sources (Personalizer's PolicySource).
const (
	SourceOnline   = "Online"
	SourceBaseline = "Baseline"
	SourceRandom   = "Random"
	SourceCustom   = "Custom"
)

// EvaluationRequest is what a client asks of an evaluation
// (Personalizer's EvaluationContract).
type EvaluationRequest struct {
	Name string
	// Start and End bound the decision times of the events evaluated,
	// [Start, End); the zero Start is the earliest time (0001-01-01).
	Start, End time.Time
	// Policies are the custom targets, each a name and its arguments
	// (a target's name above).
	Policies []EvaluationPolicy
	// OfflineExperimentation is Personalizer's enableOfflineExperimentation:
	// recorded; no search of learning settings is made.
	OfflineExperimentation bool
}

// EvaluationPolicy is a target as a client names it (Personalizer's
// PolicyContract).
type EvaluationPolicy struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Evaluation is an evaluation as stored and shown: its request, the
// log it read and every target's releases.
type Evaluation struct {
	ID      string    `json:"id"`
	Name    string    `json:"name"`
	Start   time.Time `json:"start"`
	End     time.Time `json:"end"`
	Created time.Time `json:"created"`
	// Events counts the events evaluated; Slots the slates' slot events
	// of the range left out, Unlogged those without their logging
	// distribution (none on this surface).
	Events   int `json:"events"`
	Slots    int `json:"slot_events_left_out,omitempty"`
	Unlogged int `json:"events_without_distribution,omitempty"`
	// Units counts the units whose events it read, each debited
	// Privacy.NanoRho in its ledger; UnitsOverCap the units whose
	// ledgers could not afford that under the server's cap, and
	// EventsOverCap their events, left out (evalunits.go).
	Units         int `json:"units"`
	UnitsOverCap  int `json:"units_over_cap"`
	EventsOverCap int `json:"events_over_cap"`
	// Policies are the targets' results: the online, baseline and
	// uniform policies first, then the custom ones in the request's
	// order.
	Policies []PolicyResult `json:"policies"`
	// Privacy is what the evaluation spent and how its releases were
	// calibrated.
	Privacy EvaluationPrivacy `json:"privacy"`
	// OfflineExperimentation is the request's flag, recorded.
	OfflineExperimentation bool `json:"offline_experimentation"`
}

// PolicyResult is one target's released estimates.
type PolicyResult struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
	Source    string `json:"source"`
	// NonZero counts the events whose logged action the target plays
	// with a positive probability (decisions only).
	NonZero int `json:"non_zero_probability"`
	// ESS is the effective sample size of the capped weights (decisions
	// only).
	ESS float64 `json:"effective_sample_size"`
	// Releases are ope.Private's releases of IPS, SNIPS and DR.
	Releases []ope.Release `json:"releases"`
	// CI95 is the half-width of a 95% normal interval around the IPS
	// release that holds whatever the data: 1.96 sqrt(M R^2 / n +
	// sigma^2), M R^2 / n bounding the variance of the mean of the
	// capped terms w r (E (w r)^2 <= R^2 M E w and E w <= 1 under the
	// logging policy, as w <= M; R = max(|lo|, |hi|)), sigma the
	// release's noise.
	CI95 float64 `json:"ci95_half_width"`
}

// EvaluationPrivacy is an evaluation's spend and calibration.
type EvaluationPrivacy struct {
	// Rho is the evaluation's zCDP (its NanoRho, in nano-rho), each of
	// its releases' Rho / (3 x targets).
	Rho     float64 `json:"rho"`
	NanoRho int64   `json:"nano_rho"`
	// Clip is the weights' cap M; MaxEventsPerUnit the bound on a
	// unit's events (the release is calibrated to a unit's).
	Clip             float64 `json:"clip"`
	MaxEventsPerUnit int     `json:"max_events_per_unit"`
	// SpentNanoRho is the experiment's evaluation ledger with this
	// evaluation's debit, as read when it started (an evaluation
	// created meanwhile on the same experiment is not counted; the
	// store's check of the cap, at the debit, counts it); CapNanoRho
	// its cap.
	SpentNanoRho int64 `json:"evaluations_spent_nano_rho"`
	CapNanoRho   int64 `json:"evaluations_cap_nano_rho"`
	// UnitsNanoRho is what it debited its units' ledgers (NanoRho for
	// each unit read); UnitCapNanoRho the server's cap on a unit's
	// ledger (0: none).
	UnitsNanoRho   int64 `json:"units_debited_nano_rho"`
	UnitCapNanoRho int64 `json:"unit_cap_nano_rho"`
}

// EvaluationError is an evaluation operation refused: Kind is its
// fault kind (errors.As finds a *fault.Error behind it, so fault.Of
// reads it), Code its Personalizer error code (InvalidEvaluationContract
// naming Field, EvaluationNotFound, NoLogsExistInDateRange,
// OperationNotAllowed).
type EvaluationError struct {
	Kind  fault.Kind
	Code  string
	Field string
	Msg   string
}

func (e *EvaluationError) Error() string {
	if e.Field != "" {
		return e.Field + ": " + e.Msg
	}
	return e.Msg
}

// Unwrap returns the error as its fault kind.
func (e *EvaluationError) Unwrap() error { return &fault.Error{Kind: e.Kind, Msg: e.Error()} }

// contractError is a request refused before anything is read or spent.
func contractError(field, f string, a ...any) error {
	return &EvaluationError{Kind: fault.Invalid, Code: "InvalidEvaluationContract", Field: field, Msg: fmt.Sprintf(f, a...)}
}

// evalTarget is a parsed target: its name, arguments, source and policy.
type evalTarget struct {
	name, args, source string
	pol                ope.Policy
}

// parseTarget reads a target's arguments; theta is the released
// estimate "current" plays by (nil: not read yet).
func parseTarget(p EvaluationPolicy, theta func() ([]float64, error)) (evalTarget, error) {
	t := evalTarget{name: p.Name, args: p.Arguments, source: SourceCustom}
	switch strings.TrimSpace(p.Arguments) {
	case "online", "logging":
		t.pol = ope.Logging{}
	case "baseline", "arm:0":
		t.pol = ope.Always(0)
	case "uniform", "random":
		t.pol = ope.Uniform{}
	case "current":
		w, err := theta()
		if fault.Of(err) == fault.NotFound { // a learner without an estimate
			return t, contractError("policies", "policy %q: current: %v", p.Name, err)
		}
		if err != nil {
			return t, err
		}
		t.pol = ope.Linear{Weights: [][]float64{w}}
	default:
		return t, contractError("policies", "policy %q: arguments %q is not a target this service evaluates: give \"online\", \"baseline\", \"uniform\" or \"current\" (docs/personalizer.md, Evaluations)", p.Name, p.Arguments)
	}
	return t, nil
}

// checkRequest refuses a request that cannot be evaluated.
func checkRequest(r EvaluationRequest) error {
	switch {
	case r.Name == "" || len(r.Name) > 256:
		return contractError("name", "is required, of 1 to 256 characters")
	case !r.End.After(r.Start):
		return contractError("endTime", "%s is not after startTime %s", r.End.Format(time.RFC3339), r.Start.Format(time.RFC3339))
	case len(r.Policies) > maxEvaluationPolicies:
		return contractError("policies", "at most %d custom policies, got %d (each one splits the evaluation's budget further)", maxEvaluationPolicies, len(r.Policies))
	}
	for i, p := range r.Policies {
		if p.Name == "" || len(p.Name) > 256 {
			return contractError("policies", "policy %d: name is required, of 1 to 256 characters", i)
		}
		if len(p.Arguments) > 1024 {
			return contractError("policies", "policy %q: arguments of at most 1024 characters", p.Name)
		}
	}
	return nil
}

// CreateEvaluation evaluates the request's targets on the experiment's
// log and stores the evaluation under id, its releases drawn once from
// the service's secure noise; it returns the evaluation as stored.
func (x *Experiment) CreateEvaluation(ctx context.Context, id string, r EvaluationRequest) (Evaluation, error) {
	return x.createEvaluation(ctx, id, r, noise.Secure{Rand: x.env.Entropy}) // (nil: crypto/rand's)
}

func (x *Experiment) createEvaluation(ctx context.Context, id string, r EvaluationRequest, nz noise.Noise) (Evaluation, error) {
	def := x.Definition()
	if def.Surface != define.SurfacePersonalizer {
		return Evaluation{}, fault.Errorf(fault.NotFound, "experiment %q is not a personalizer experiment", def.ID)
	}
	if err := checkRequest(r); err != nil {
		return Evaluation{}, err
	}
	targets, err := x.evalTargets(ctx, r.Policies)
	if err != nil {
		return Evaluation{}, err
	}
	if !x.env.KeepLog {
		return Evaluation{}, &EvaluationError{Kind: fault.Conflict, Code: "OperationNotAllowed",
			Msg: "an evaluation reads the experiment's log, which the service keeps only with --keep-log (without it, the rewards of released episodes are deleted)"}
	}
	limit := MaxEvaluations * def.NanoRho
	spent, err := x.env.Store.EvaluationSpend(ctx, x.key)
	if err != nil {
		return Evaluation{}, fault.Errorf(fault.Unavailable, "store: %v", err)
	}
	if spent+def.NanoRho > limit {
		return Evaluation{}, overBudget(def, spent, limit)
	}
	if err := x.durable(ctx); err != nil {
		return Evaluation{}, err
	}
	lg, err := x.evaluationLog(ctx, def, r.Start, r.End)
	if err != nil {
		return Evaluation{}, err
	}
	units, err := x.reserveUnits(lg, def.NanoRho)
	if err != nil {
		return Evaluation{}, err
	}
	ev, kept, err := x.releaseEvaluation(ctx, id, r, lg, targets, nz, units, spent, limit)
	units.end(kept)
	return ev, err
}

// releaseEvaluation releases the evaluation of lg, whose units' debits
// are reserved, and stores it with them; kept reports whether the
// debits stay (the evaluation is stored, or may be: the store failed
// otherwise than by refusing it before its commit).
func (x *Experiment) releaseEvaluation(ctx context.Context, id string, r EvaluationRequest, lg *evalLog, targets []evalTarget, nz noise.Noise,
	units *unitDebits, spent, limit int64) (Evaluation, bool, error) {
	def := lg.def
	ev, err := evaluate(ctx, lg, targets, nz)
	if err != nil {
		return Evaluation{}, false, err
	}
	ev.ID, ev.Name, ev.Start, ev.End, ev.OfflineExperimentation = id, r.Name, r.Start.UTC(), r.End.UTC(), r.OfflineExperimentation
	for _, p := range ev.Policies {
		for i := range p.Releases { // what each release is of, as ope's ledger keys name releases
			p.Releases[i].Key = fmt.Sprintf("experiment=%s evaluation=%s policy=%s", x.key, id, p.Arguments)
		}
	}
	ev.Created = x.env.Now().UTC()
	ev.Privacy.SpentNanoRho, ev.Privacy.CapNanoRho = spent+def.NanoRho, limit
	ev.Units, ev.UnitsOverCap, ev.EventsOverCap = len(units.units), units.overUnits, units.overEvents
	ev.Privacy.UnitsNanoRho, ev.Privacy.UnitCapNanoRho = int64(len(units.units))*def.NanoRho, units.l.Cap()
	raw, err := json.Marshal(ev)
	if err != nil {
		return Evaluation{}, false, fault.Errorf(fault.Internal, "encoding the evaluation: %v", err)
	}
	row := store.EvaluationRow{Exp: x.key, ID: id, Created: ev.Created.UnixNano(), Nano: def.NanoRho, Result: string(raw),
		Units: units.units, Unreserved: x.env.Unreserved}
	ok, err := x.env.Store.AddEvaluation(ctx, row, limit)
	switch {
	case errors.Is(err, store.ErrExists):
		return Evaluation{}, false, fault.Errorf(fault.Conflict, "evaluation %q exists", id)
	case errors.Is(err, store.ErrFenced):
		return Evaluation{}, false, fault.Errorf(fault.Unavailable, "%v", err)
	case err != nil:
		return Evaluation{}, true, fault.Errorf(fault.Unavailable, "store: %v", err)
	case !ok: // another evaluation spent the rest meanwhile: this one's draws are dropped unseen
		spent, _ = x.env.Store.EvaluationSpend(ctx, x.key)
		return Evaluation{}, false, overBudget(def, spent, limit)
	}
	return ev, true, nil
}

// overBudget is the refusal of an evaluation past the ledger's cap
// (Conflict, Personalizer's OperationNotAllowed).
func overBudget(def define.Definition, spent, limit int64) error {
	return &EvaluationError{Kind: fault.Conflict, Code: "OperationNotAllowed", Msg: fmt.Sprintf(
		"the experiment's evaluation budget is spent: its evaluations spent %g rho of their cap of %g (%d evaluations at the experiment's rho of %g, deleted ones included); an evaluation costs every unit of its range that rho again",
		float64(spent)/1e9, float64(limit)/1e9, MaxEvaluations, float64(def.NanoRho)/1e9)}
}

// evalTargets returns the targets of an evaluation: the online, baseline
// and uniform policies, then the custom ones.
func (x *Experiment) evalTargets(ctx context.Context, custom []EvaluationPolicy) ([]evalTarget, error) {
	out := []evalTarget{
		{"Online Policy", "online", SourceOnline, ope.Logging{}},
		{"Baseline", "baseline", SourceBaseline, ope.Always(0)},
		{"Random Policy", "uniform", SourceRandom, ope.Uniform{}},
	}
	var theta []float64
	current := func() ([]float64, error) {
		if theta == nil {
			m, err := x.Model(ctx)
			if err != nil {
				return nil, err
			}
			theta = m.Theta
		}
		return theta, nil
	}
	for _, p := range custom {
		t, err := parseTarget(p, current)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// durable waits until every change the experiment submitted is
// committed, so that its log holds every acknowledged reward.
func (x *Experiment) durable(ctx context.Context) error {
	x.mu.Lock()
	last := x.last
	x.mu.Unlock()
	if last == nil {
		return nil
	}
	return x.env.Writer.Wait(ctx, last)
}

// evalLog is an evaluation's log, streamed from the store at each pass
// over it (ope.EvaluateAll reads it twice, nonZero once), never held
// whole: the events the first pass found, by seq, with each one's
// number of eligible actions (what the targets read, eligibleOnly).
// A later pass that finds other events (the log deleted meanwhile)
// fails, rather than let the passes disagree.
type evalLog struct {
	x          *Experiment
	def        define.Definition
	start, end int64
	seqs       []int64
	eligible   []int
	unitOf     []string        // each event's unit (the first pass's, until reserveUnits)
	over       map[string]bool // the units left out (reserveUnits), their events skipped
	slots      int
	unlogged   int
	changed    atomic.Bool // a pass found other events than the first
}

// evaluationLog reads which events of [start, end) the evaluation reads
// (see the comment at the top).
func (x *Experiment) evaluationLog(ctx context.Context, def define.Definition, start, end time.Time) (*evalLog, error) {
	lg := &evalLog{x: x, def: def, start: unixNanoIn(start), end: unixNanoIn(end)}
	err := lg.scan(ctx, true, func(e store.Event, set [][]float64) error {
		lg.seqs = append(lg.seqs, e.Seq)
		lg.eligible = append(lg.eligible, len(set))
		lg.unitOf = append(lg.unitOf, e.Unit)
		return nil
	})
	if err != nil {
		return nil, fault.Errorf(fault.Unavailable, "reading the log: %v", err)
	}
	if len(lg.seqs) == 0 {
		return nil, &EvaluationError{Kind: fault.Invalid, Code: "NoLogsExistInDateRange", Field: "startTime",
			Msg: fmt.Sprintf("no event with a reward (learned, ignored or the default) was decided in [%s, %s)", start.UTC().Format(time.RFC3339Nano), end.UTC().Format(time.RFC3339Nano))}
	}
	return lg, nil
}

// unixNanoIn returns t in unix nanoseconds, saturated at int64's bounds
// (1677 and 2262), where t.UnixNano() wraps: a range to 2300 read no
// event (TestPersonalizerEvaluationFarRange).
func unixNanoIn(t time.Time) int64 {
	switch {
	case t.Before(time.Unix(0, math.MinInt64)):
		return math.MinInt64
	case t.After(time.Unix(0, math.MaxInt64)):
		return math.MaxInt64
	}
	return t.UnixNano()
}

// scan calls emit with every event the evaluation reads, in order, its
// reward set (evalReward), and its eligible actions' vectors; count
// counts the events left out (the first pass).
func (lg *evalLog) scan(ctx context.Context, count bool, emit func(e store.Event, set [][]float64) error) error {
	return lg.x.env.Store.Log(ctx, lg.x.key, func(e store.Event) error {
		if e.Decided < lg.start || e.Decided >= lg.end {
			return nil
		}
		r, ok := evalReward(lg.def, e)
		if !ok {
			return nil
		}
		e.Reward = &r
		rs, err := define.ReadRank([]byte(e.Context), lg.def.HashBits)
		switch {
		case err != nil:
			return fmt.Errorf("event %q: its stored rank does not read: %v", e.ID, err)
		case rs.Request.Slot != nil:
			if count {
				lg.slots++
			}
			return nil
		case e.PolicyArm < 0:
			if count {
				lg.unlogged++
			}
			return nil
		case lg.over[e.Unit]: // its ledger could not afford the evaluation (reserveUnits)
			return nil
		}
		return emit(e, rs.Set)
	})
}

// errLogChanged stops a pass that found other events than the first.
var errLogChanged = errors.New("the log changed during the evaluation")

// open returns the log as ope's JSON lines, written from the store as
// they are read, by a goroutine that ends with the pass (or once the
// reader is closed: its next write fails).
func (lg *evalLog) open(ctx context.Context) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(lg.write(ctx, pw, nil)) }() // nil: EOF
	return pr
}

// write writes the log's lines to w (appendEvalFields), each begun by
// head's fields (nil: none), checking that the pass finds the events
// the first found.
func (lg *evalLog) write(ctx context.Context, w io.Writer, head func(b []byte, e store.Event) []byte) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	var line []byte
	i := 0
	err := lg.scan(ctx, false, func(e store.Event, set [][]float64) error {
		if i >= len(lg.seqs) || e.Seq != lg.seqs[i] {
			return errLogChanged
		}
		i++
		line = append(line[:0], '{')
		if head != nil {
			line = head(line, e)
		}
		line = appendEvalFields(line, e, set, lg.def.Distribution(e), lg.def.Arms)
		_, err := bw.Write(line)
		return err
	})
	if err == nil && i != len(lg.seqs) {
		err = errLogChanged
	}
	if err == nil {
		err = bw.Flush()
	}
	if errors.Is(err, errLogChanged) {
		lg.changed.Store(true)
	}
	return err
}

// failed is the error of a computation on the log that failed with
// err: Unavailable (retry) if the log changed under it.
func (lg *evalLog) failed(err error) error {
	if lg.changed.Load() {
		return fault.Errorf(fault.Unavailable, "%v (its log was deleted meanwhile?): retry", errLogChanged)
	}
	return fault.Errorf(fault.Internal, "evaluating the log: %v", err)
}

// evalReward returns the reward an evaluation reads for a settled
// event: its reward, learned or not (a reward ignored for exploration,
// a unit's contribution limit or budget, an overflow or a model reset
// was observed all the same: leaving those out would bias every
// estimate), or, for an event whose window passed without one, the
// default reward it was decided under, if any. Events never activated
// (deferred, reasonNotActivated) were not shown: left out.
func evalReward(def define.Definition, e store.Event) (float64, bool) {
	switch {
	case e.Reason == reasonNotActivated:
		return 0, false
	case e.Reward != nil:
		return *e.Reward, true
	case e.Status == store.Expired:
		if at, _ := def.Effective(e.Seq); at.DefaultReward != nil {
			return *at.DefaultReward, true
		}
	}
	return 0, false
}

// appendEvalFields appends an event's fields of ope's JSON lines, after
// the line's opening brace, and closes it: its action, reward, pscore,
// unit, the distribution and the decision set padded to k actions with
// zeros. Numbers are written to the last bit (strconv's shortest form),
// so that ope reads back the same floats.
func appendEvalFields(b []byte, e store.Event, set [][]float64, dist []float64, k int) []byte {
	num := func(b []byte, v float64) []byte { return strconv.AppendFloat(b, v, 'g', -1, 64) }
	b = append(b, `"action":`...)
	b = strconv.AppendInt(b, int64(e.Arm), 10)
	b = append(b, `,"reward":`...)
	b = num(b, *e.Reward)
	b = append(b, `,"pscore":`...)
	b = num(b, e.PScore)
	b = append(b, `,"unit_id":`...)
	u, _ := json.Marshal(e.Unit)
	b = append(b, u...)
	b = append(b, `,"action_prob":[`...)
	for a := range k {
		if a > 0 {
			b = append(b, ',')
		}
		if a < len(dist) {
			b = num(b, dist[a])
		} else {
			b = append(b, '0')
		}
	}
	b = append(b, `],"context":[`...)
	dim := len(set[0])
	for a := range k {
		if a > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		for j := range dim {
			if j > 0 {
				b = append(b, ',')
			}
			if a < len(set) {
				b = num(b, set[a][j])
			} else {
				b = append(b, '0')
			}
		}
		b = append(b, ']')
	}
	return append(b, "]}\n"...)
}

// WriteEvaluationLog writes the log an evaluation of [start, end) reads
// (the comment at the top), every event a line of ope's JSON lines that
// `dpbandit evaluate --arms 50` reads, with the export's names of the
// event (event_id, status, learned, timestamp, policy_version,
// position), which ope ignores: the log a client evaluates again to
// compare. It reads the log twice (which events, then the lines); with
// no event in the range it writes nothing.
func (x *Experiment) WriteEvaluationLog(ctx context.Context, start, end time.Time, w io.Writer) error {
	def := x.Definition()
	switch {
	case def.Surface != define.SurfacePersonalizer:
		return fault.Errorf(fault.Invalid, "format=evaluation is the log of a personalizer experiment's evaluations; %q is not one", def.ID)
	case !x.env.KeepLog:
		return fault.Errorf(fault.Conflict, "the log is kept only with --keep-log: rewards of released episodes are deleted")
	}
	if err := x.durable(ctx); err != nil {
		return err
	}
	lg, err := x.evaluationLog(ctx, def, start, end)
	var ee *EvaluationError
	if errors.As(err, &ee) && ee.Code == "NoLogsExistInDateRange" {
		return nil
	}
	if err != nil {
		return err
	}
	err = lg.write(ctx, w, func(b []byte, e store.Event) []byte {
		id, _ := json.Marshal(e.ID)
		return fmt.Appendf(b, `"event_id":%s,"status":%q,"learned":%t,"timestamp":%q,"policy_version":%d,"position":0,`,
			id, e.Status, e.Status == store.Learned || e.Status == store.Defaulted, time.Unix(0, e.Decided).UTC().Format(time.RFC3339Nano), e.Plan)
	})
	if errors.Is(err, errLogChanged) {
		return fault.Errorf(fault.Unavailable, "%v: retry", err)
	}
	return err
}

// eligibleOnly is a target restricted to each event's eligible actions:
// the first eligible[e.Record] of the padded K, the padding given
// probability 0.
type eligibleOnly struct {
	pol      ope.Policy
	eligible []int
}

// Probs runs the target on the event's eligible actions.
func (p eligibleOnly) Probs(e *ope.Event, out []float64) error {
	if e.Record >= len(p.eligible) {
		return fmt.Errorf("record %d is past the evaluation's %d events", e.Record, len(p.eligible))
	}
	k := p.eligible[e.Record]
	sub := *e
	if e.Actions != nil {
		sub.Actions = e.Actions[:k]
	}
	if e.Probs != nil {
		sub.Probs = e.Probs[:k]
	}
	clear(out[k:])
	return p.pol.Probs(&sub, out[:k])
}

// evalOptions are the options of an evaluation of def's log.
func evalOptions(def define.Definition) ope.Options {
	return ope.Options{
		Arms:             def.Arms,
		Clip:             EvaluationClip,
		Rewards:          &mechanism.Bounds{Lo: def.RewardRange[0], Hi: def.RewardRange[1]},
		MaxEventsPerUnit: int(def.MaxRewardsPerUnit),
	}
}

// evaluate runs ope's estimators for every target on the log in one
// pass (ope.EvaluateAll) and releases each target's IPS, SNIPS and DR
// with ope.Private, in the targets' order and evalEstimators', at the
// budget rho_e / (3 x targets) each.
func evaluate(ctx context.Context, lg *evalLog, targets []evalTarget, nz noise.Noise) (Evaluation, error) {
	def := lg.def
	res, err := evaluateRaw(ctx, lg, targets)
	if err != nil {
		return Evaluation{}, err
	}
	nonZero, err := nonZero(ctx, lg, targets)
	if err != nil {
		return Evaluation{}, err
	}
	rho := float64(def.NanoRho) / 1e9
	b, err := privacy.NewZCDP(rho)
	if err == nil {
		b, err = privacy.Split(b, len(targets)*len(strings.Fields(evalEstimators)))
	}
	if err != nil {
		return Evaluation{}, fault.Errorf(fault.Internal, "the evaluation's budget: %v", err)
	}
	o := evalOptions(def)
	ev := Evaluation{Events: res[0].Events, Slots: lg.slots, Unlogged: lg.unlogged,
		Privacy: EvaluationPrivacy{Rho: rho, NanoRho: def.NanoRho, Clip: o.Clip, MaxEventsPerUnit: o.MaxEventsPerUnit}}
	n := float64(res[0].Events)
	r := max(math.Abs(o.Rewards.Lo), math.Abs(o.Rewards.Hi))
	for i, t := range targets {
		pr := PolicyResult{Name: t.name, Arguments: t.args, Source: t.source, ESS: res[i].ESS, NonZero: nonZero[i]}
		for _, est := range strings.Fields(evalEstimators) {
			rel, err := ope.Private(res[i], est, b, nz)
			if err != nil {
				return Evaluation{}, fault.Errorf(fault.Internal, "the %s release of %q: %v", est, t.name, err)
			}
			pr.Releases = append(pr.Releases, rel)
		}
		sigma := pr.Releases[0].Scale
		pr.CI95 = 1.96 * math.Sqrt(o.Clip*r*r/n+sigma*sigma)
		ev.Policies = append(ev.Policies, pr)
	}
	return ev, nil
}

// evaluateRaw is ope.EvaluateAll of the targets on the log: the
// estimates before any release, which only the releases leave.
func evaluateRaw(ctx context.Context, lg *evalLog, targets []evalTarget) ([]*ope.Result, error) {
	pols := make([]ope.Policy, len(targets))
	for i, t := range targets {
		pols[i] = eligibleOnly{t.pol, lg.eligible}
	}
	open := func() (io.ReadCloser, error) { return lg.open(ctx), nil }
	res, err := ope.EvaluateAll(open, pols, evalOptions(lg.def))
	var me *ope.ModelError
	switch {
	case errors.As(err, &me):
		return nil, fault.Errorf(fault.Invalid, "%s", me.Message())
	case err != nil:
		return nil, lg.failed(err)
	}
	return res, nil
}

// nonZero counts, for each target, the events whose logged action it
// plays with a positive probability (one pass over the log).
func nonZero(ctx context.Context, lg *evalLog, targets []evalTarget) ([]int, error) {
	rc := lg.open(ctx)
	defer rc.Close()
	rd, err := ope.NewReader(rc, lg.def.Arms)
	if err != nil {
		return nil, lg.failed(err)
	}
	out := make([]int, len(targets))
	p := make([]float64, lg.def.Arms)
	for {
		e, err := rd.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, lg.failed(err)
		}
		for i, t := range targets {
			if err := (eligibleOnly{t.pol, lg.eligible}).Probs(&e, p); err != nil {
				return nil, lg.failed(err)
			}
			if p[e.Action] > 0 {
				out[i]++
			}
		}
	}
}

// Evaluation returns a stored evaluation (NotFound: none of that id).
func (x *Experiment) Evaluation(ctx context.Context, id string) (Evaluation, error) {
	row, err := x.env.Store.Evaluation(ctx, x.key, id)
	if err != nil {
		return Evaluation{}, fault.Errorf(fault.Unavailable, "store: %v", err)
	}
	if row == nil {
		return Evaluation{}, notFound(id)
	}
	return decodeEvaluation(*row)
}

// Evaluations returns the experiment's stored evaluations, oldest first.
func (x *Experiment) Evaluations(ctx context.Context) ([]Evaluation, error) {
	rows, err := x.env.Store.EvaluationList(ctx, x.key)
	if err != nil {
		return nil, fault.Errorf(fault.Unavailable, "store: %v", err)
	}
	out := make([]Evaluation, 0, len(rows))
	for _, row := range rows {
		ev, err := decodeEvaluation(row)
		if err != nil {
			return nil, err
		}
		out = append(out, ev)
	}
	return out, nil
}

// DeleteEvaluation deletes an evaluation's result; its spend stays in
// the experiment's evaluation ledger. Deleting a deleted evaluation
// changes nothing; one that never was is NotFound.
func (x *Experiment) DeleteEvaluation(ctx context.Context, id string) error {
	found, err := x.env.Store.DeleteEvaluation(ctx, x.key, id)
	switch {
	case errors.Is(err, store.ErrFenced):
		return fault.Errorf(fault.Unavailable, "%v", err)
	case err != nil:
		return fault.Errorf(fault.Unavailable, "store: %v", err)
	case !found:
		return notFound(id)
	}
	return nil
}

// notFound is an evaluation id the experiment does not have
// (Personalizer's EvaluationNotFound).
func notFound(id string) error {
	return &EvaluationError{Kind: fault.NotFound, Code: "EvaluationNotFound", Msg: fmt.Sprintf("no evaluation %q", id)}
}

func decodeEvaluation(row store.EvaluationRow) (Evaluation, error) {
	var ev Evaluation
	if err := json.Unmarshal([]byte(row.Result), &ev); err != nil {
		return Evaluation{}, fault.Errorf(fault.Internal, "evaluation %q: its stored result does not read: %v", row.ID, err)
	}
	return ev, nil
}
