// Package evaluation is Personalizer's evaluations (its Evaluations
// operations) of an experiment at work (service/engine): a
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
// IPS, SNIPS, DR, the importance weights capped at Clip and
// each unit's events bounded by max_rewards_per_unit, so that the
// release is rho_e-zCDP for the replacement of a unit's events). It is
// debited from the experiment's evaluation ledger (the store's
// evaluations rows, deleted ones included), whose cap is
// MaxPerExperiment x rho_e: past it, an evaluation is refused (Conflict)
// and nothing is drawn; and from the ledger of every unit it reads,
// under the server's cap, the units that cannot afford it left out
// (units.go). The number of events evaluated, which events
// had a reward, and the decisions (actions and propensities) are
// released exactly, as the exported log's are not protected either.
//
// The package sees an experiment only through Experiment (what
// *engine.Experiment exports for it: engine/durable.go), never its
// lock: Create, Get, List, Delete and WriteLog are the Personalizer
// surface's operations (service/personalizer) and the log export's
// (service/api).
package evaluation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/ope"
	"github.com/dpbandit/dpbandit/service/define"
	"github.com/dpbandit/dpbandit/service/engine"
	"github.com/dpbandit/dpbandit/service/fault"
	"github.com/dpbandit/dpbandit/service/rank"
	"github.com/dpbandit/dpbandit/service/store"
)

const (
	// Clip is M, the cap on the importance weights pi/pscore
	// of a private evaluation (ope.Options.Clip): the releases'
	// sensitivities are M times the reward range over n.
	Clip = 20.0
	// MaxPerExperiment is the cap of an experiment's evaluation ledger, in
	// evaluations at the experiment's rho (deleted ones count).
	MaxPerExperiment = 10
	// maxPolicies bounds an evaluation's custom policies.
	maxPolicies = 10
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

// Request is what a client asks of an evaluation
// (Personalizer's EvaluationContract).
type Request struct {
	Name string
	// Start and End bound the decision times of the events evaluated,
	// [Start, End); the zero Start is the earliest time (0001-01-01).
	Start, End time.Time
	// Policies are the custom targets, each a name and its arguments
	// (a target's name above).
	Policies []Policy
	// OfflineExperimentation is Personalizer's enableOfflineExperimentation:
	// recorded; no search of learning settings is made.
	OfflineExperimentation bool
}

// Policy is a target as a client names it (Personalizer's
// PolicyContract).
type Policy struct {
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
	// EventsOverCap their events, left out (units.go).
	Units         int `json:"units"`
	UnitsOverCap  int `json:"units_over_cap"`
	EventsOverCap int `json:"events_over_cap"`
	// Policies are the targets' results: the online, baseline and
	// uniform policies first, then the custom ones in the request's
	// order.
	Policies []PolicyResult `json:"policies"`
	// Privacy is what the evaluation spent and how its releases were
	// calibrated.
	Privacy Privacy `json:"privacy"`
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

// Privacy is an evaluation's spend and calibration.
type Privacy struct {
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

// Error is an evaluation operation refused: Kind is its
// fault kind (errors.As finds a *fault.Error behind it, so fault.Of
// reads it), Code its Personalizer error code (InvalidEvaluationContract
// naming Field, EvaluationNotFound, NoLogsExistInDateRange,
// OperationNotAllowed).
type Error struct {
	Kind  fault.Kind
	Code  string
	Field string
	Msg   string
}

func (e *Error) Error() string {
	if e.Field != "" {
		return e.Field + ": " + e.Msg
	}
	return e.Msg
}

// Unwrap returns the error as its fault kind.
func (e *Error) Unwrap() error { return &fault.Error{Kind: e.Kind, Msg: e.Error()} }

// contractError is a request refused before anything is read or spent.
func contractError(field, f string, a ...any) error {
	return &Error{Kind: fault.Invalid, Code: "InvalidEvaluationContract", Field: field, Msg: fmt.Sprintf(f, a...)}
}

// evalTarget is a parsed target: its name, arguments, source and policy.
type evalTarget struct {
	name, args, source string
	pol                ope.Policy
}

// parseTarget reads a target's arguments; theta is the released
// estimate "current" plays by (nil: not read yet).
func parseTarget(p Policy, theta func() ([]float64, error)) (evalTarget, error) {
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
func checkRequest(r Request) error {
	switch {
	case r.Name == "" || len(r.Name) > 256:
		return contractError("name", "is required, of 1 to 256 characters")
	case !r.End.After(r.Start):
		return contractError("endTime", "%s is not after startTime %s", r.End.Format(time.RFC3339), r.Start.Format(time.RFC3339))
	case len(r.Policies) > maxPolicies:
		return contractError("policies", "at most %d custom policies, got %d (each one splits the evaluation's budget further)", maxPolicies, len(r.Policies))
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

// Experiment is what an evaluation uses of an experiment at work:
// *engine.Experiment is one (engine/durable.go).
type Experiment interface {
	// Key is the experiment's key ("tenant/id"), Definition its
	// definition.
	Key() string
	Definition() define.Definition
	// Durable waits until every change the experiment submitted is
	// committed, so that its stored log holds every acknowledged reward.
	Durable(ctx context.Context) error
	// rank.Learner reads the learner's released estimate (the model
	// GET's theta, rank.Estimate).
	rank.Learner
	// Evaluating returns what an evaluation uses of the service around
	// the experiment: its store, ledger, clock and entropy.
	Evaluating() engine.Evaluating
}

// subject is the experiment of one operation with what it uses of the
// service, read once.
type subject struct {
	x   Experiment
	key string
	env engine.Evaluating
}

func subjectOf(x Experiment) *subject {
	return &subject{x: x, key: x.Key(), env: x.Evaluating()}
}

// Create evaluates the request's targets on the experiment's log and
// stores the evaluation under id, its releases drawn once from the
// service's secure noise; it returns the evaluation as stored.
func Create(ctx context.Context, x Experiment, id string, r Request) (Evaluation, error) {
	s := subjectOf(x)
	return s.create(ctx, id, r, noise.Secure{Rand: s.env.Entropy}) // (nil: crypto/rand's)
}

func (s *subject) create(ctx context.Context, id string, r Request, nz noise.Noise) (Evaluation, error) {
	def := s.x.Definition()
	if def.Surface != define.SurfacePersonalizer {
		return Evaluation{}, fault.Errorf(fault.NotFound, "experiment %q is not a personalizer experiment", def.ID)
	}
	if err := checkRequest(r); err != nil {
		return Evaluation{}, err
	}
	targets, err := s.targets(ctx, r.Policies)
	if err != nil {
		return Evaluation{}, err
	}
	if !s.env.KeepLog {
		return Evaluation{}, &Error{Kind: fault.Conflict, Code: "OperationNotAllowed",
			Msg: "an evaluation reads the experiment's log, which the service keeps only with --keep-log (without it, the rewards of released episodes are deleted)"}
	}
	limit := MaxPerExperiment * def.NanoRho
	spent, err := s.env.Store.EvaluationSpend(ctx, s.key)
	if err != nil {
		return Evaluation{}, fault.Errorf(fault.Unavailable, "store: %v", err)
	}
	if spent+def.NanoRho > limit {
		return Evaluation{}, overBudget(def, spent, limit)
	}
	if err := s.x.Durable(ctx); err != nil {
		return Evaluation{}, err
	}
	lg, err := s.log(ctx, def, r.Start, r.End)
	if err != nil {
		return Evaluation{}, err
	}
	units, err := s.reserveUnits(lg, def.NanoRho)
	if err != nil {
		return Evaluation{}, err
	}
	ev, kept, err := s.release(ctx, id, r, lg, targets, nz, units, spent, limit)
	units.end(kept)
	return ev, err
}

// release releases the evaluation of lg, whose units' debits
// are reserved, and stores it with them; kept reports whether the
// debits stay (the evaluation is stored, or may be: the store failed
// otherwise than by refusing it before its commit).
func (s *subject) release(ctx context.Context, id string, r Request, lg *evalLog, targets []evalTarget, nz noise.Noise,
	units *unitDebits, spent, limit int64) (Evaluation, bool, error) {
	def := lg.def
	ev, err := evaluate(ctx, lg, targets, nz)
	if err != nil {
		return Evaluation{}, false, err
	}
	ev.ID, ev.Name, ev.Start, ev.End, ev.OfflineExperimentation = id, r.Name, r.Start.UTC(), r.End.UTC(), r.OfflineExperimentation
	for _, p := range ev.Policies {
		for i := range p.Releases { // what each release is of, as ope's ledger keys name releases
			p.Releases[i].Key = fmt.Sprintf("experiment=%s evaluation=%s policy=%s", s.key, id, p.Arguments)
		}
	}
	ev.Created = s.env.Now().UTC()
	ev.Privacy.SpentNanoRho, ev.Privacy.CapNanoRho = spent+def.NanoRho, limit
	ev.Units, ev.UnitsOverCap, ev.EventsOverCap = len(units.units), units.overUnits, units.overEvents
	ev.Privacy.UnitsNanoRho, ev.Privacy.UnitCapNanoRho = int64(len(units.units))*def.NanoRho, units.l.Cap()
	raw, err := json.Marshal(ev)
	if err != nil {
		return Evaluation{}, false, fault.Errorf(fault.Internal, "encoding the evaluation: %v", err)
	}
	row := store.EvaluationRow{Exp: s.key, ID: id, Created: ev.Created.UnixNano(), Nano: def.NanoRho, Result: string(raw),
		Units: units.units, Unreserved: s.env.Unreserved}
	ok, err := s.env.Store.AddEvaluation(ctx, row, limit)
	switch {
	case errors.Is(err, store.ErrExists):
		return Evaluation{}, false, fault.Errorf(fault.Conflict, "evaluation %q exists", id)
	case errors.Is(err, store.ErrFenced):
		return Evaluation{}, false, fault.Errorf(fault.Unavailable, "%v", err)
	case err != nil:
		return Evaluation{}, true, fault.Errorf(fault.Unavailable, "store: %v", err)
	case !ok: // another evaluation spent the rest meanwhile: this one's draws are dropped unseen
		spent, _ = s.env.Store.EvaluationSpend(ctx, s.key)
		return Evaluation{}, false, overBudget(def, spent, limit)
	}
	return ev, true, nil
}

// overBudget is the refusal of an evaluation past the ledger's cap
// (Conflict, Personalizer's OperationNotAllowed).
func overBudget(def define.Definition, spent, limit int64) error {
	return &Error{Kind: fault.Conflict, Code: "OperationNotAllowed", Msg: fmt.Sprintf(
		"the experiment's evaluation budget is spent: its evaluations spent %g rho of their cap of %g (%d evaluations at the experiment's rho of %g, deleted ones included); an evaluation costs every unit of its range that rho again",
		float64(spent)/1e9, float64(limit)/1e9, MaxPerExperiment, float64(def.NanoRho)/1e9)}
}

// targets returns the targets of an evaluation: the online, baseline
// and uniform policies, then the custom ones.
func (s *subject) targets(ctx context.Context, custom []Policy) ([]evalTarget, error) {
	out := []evalTarget{
		{"Online Policy", "online", SourceOnline, ope.Logging{}},
		{"Baseline", "baseline", SourceBaseline, ope.Always(0)},
		{"Random Policy", "uniform", SourceRandom, ope.Uniform{}},
	}
	var theta []float64
	current := func() ([]float64, error) {
		if theta == nil {
			w, err := rank.Estimate(ctx, s.x)
			if err != nil {
				return nil, err
			}
			theta = w
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

// Get returns a stored evaluation of the experiment (NotFound: none of
// that id).
func Get(ctx context.Context, x Experiment, id string) (Evaluation, error) {
	row, err := x.Evaluating().Store.Evaluation(ctx, x.Key(), id)
	if err != nil {
		return Evaluation{}, fault.Errorf(fault.Unavailable, "store: %v", err)
	}
	if row == nil {
		return Evaluation{}, notFound(id)
	}
	return decodeEvaluation(*row)
}

// List returns the experiment's stored evaluations, oldest first.
func List(ctx context.Context, x Experiment) ([]Evaluation, error) {
	rows, err := x.Evaluating().Store.EvaluationList(ctx, x.Key())
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

// Delete deletes an evaluation's result; its spend stays in the
// experiment's evaluation ledger. Deleting a deleted evaluation changes
// nothing; one that never was is NotFound.
func Delete(ctx context.Context, x Experiment, id string) error {
	found, err := x.Evaluating().Store.DeleteEvaluation(ctx, x.Key(), id)
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
	return &Error{Kind: fault.NotFound, Code: "EvaluationNotFound", Msg: fmt.Sprintf("no evaluation %q", id)}
}

func decodeEvaluation(row store.EvaluationRow) (Evaluation, error) {
	var ev Evaluation
	if err := json.Unmarshal([]byte(row.Result), &ev); err != nil {
		return Evaluation{}, fault.Errorf(fault.Internal, "evaluation %q: its stored result does not read: %v", row.ID, err)
	}
	return ev, nil
}
