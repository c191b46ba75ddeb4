package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/dpbandit/dpbandit/service/define"
	"github.com/dpbandit/dpbandit/service/fault"
	"github.com/dpbandit/dpbandit/service/store"
)

// Imports' part in the engine (package importer holds the rest: which
// logged events are used, the reward table and the replay, the report).
//
// An import is a session under the experiment's lock (RunImport) whose
// decisions are taken as live ones (newDecision: the policy's, then
// exploration's) and whose rewards go through settle, as live ones: the
// unit's contribution limit and ledger (the cap), the same debit, the
// same releases on the tape. The operations are ordinary decisions and
// rewards, marked as imported in their stored reasons, so that a restart
// replays them as it replays live ones and counts them again in the
// imported totals (countImported); their changes are committed together,
// in one transaction (store.Change's Group): a crash leaves all of the
// import or nothing of it.

// ImportTotals is what imports brought an experiment (in State, over
// every import; in an import's report, that import's).
type ImportTotals struct {
	// Events counts the logged events used: decisions taken by the
	// import and given their logged rewards, learned or not.
	Events int64 `json:"events"`
	// Learned counts those the policy learned; the others were ignored
	// for the reasons below, as live rewards are.
	Learned           int64 `json:"learned"`
	ContributionLimit int64 `json:"ignored_contribution_limit"`
	UnitBudget        int64 `json:"ignored_unit_budget"`
	Exploration       int64 `json:"ignored_exploration"`
	Overflow          int64 `json:"ignored_overflow"`
	// NoLoggedReward counts the decisions whose arm had no logged
	// reward left (each ends its import; it expired, learning nothing).
	NoLoggedReward int64 `json:"decisions_without_logged_reward"`
	// NotMatched counts, in a contextual experiment's replay, the logged
	// events on which the policy chose another action than the logged
	// one: their decisions expired, learning nothing.
	NotMatched int64 `json:"not_matched"`
	// NanoRho is what the learned rewards debited their units, in
	// nano-rho (1e-9 rho), as live rewards debit.
	NanoRho int64 `json:"nano_rho_debited"`
}

// add counts an imported event, settled with status and reason (the
// reason before importReason marked it), that debited nano.
func (t *ImportTotals) add(status, reason string, nano int64) {
	if status == store.Expired {
		if reason == string(NotMatched) {
			t.NotMatched++
		} else {
			t.NoLoggedReward++
		}
		return
	}
	t.Events++
	t.NanoRho += nano
	switch reason {
	case "":
		t.Learned++
	case "contribution_limit":
		t.ContributionLimit++
	case "unit_budget":
		t.UnitBudget++
	case "exploration":
		t.Exploration++
	default:
		t.Overflow++
	}
}

// An ImportMiss is why an imported decision gets no logged reward: it
// expires at once, learning nothing, and its stored reason says why.
type ImportMiss string

const (
	// NoLoggedReward: the decision's arm has no logged reward left (the
	// end of a reward table).
	NoLoggedReward ImportMiss = "no_logged_reward"
	// NotMatched: in a replay, the policy chose another action than the
	// logged one.
	NotMatched ImportMiss = "not_matched"
)

// importReason is the stored reason of a learned imported event; the
// others' is importReason + ":" + admit's reason or the ImportMiss.
const importReason = "imported"

// Logged is a logged event as an import's decision reads it: its event
// id and unit and, for a contextual experiment, its context as
// CheckContext returned it (the compact JSON and the decision set), or
// a Personalizer experiment's rank request as read for a live rank
// (define.Definition.ReadRankContext, LoggedUnit), with Shared, the part
// of it the store may keep once (store.Shared; nil: none).
type Logged struct {
	ID, Unit string
	Context  string
	Set      [][]float64
	Shared   *store.Shared
}

// LoggedUnit sets the unit of a logged Personalizer rank l from its
// contextFeatures (features) when the experiment has a unit_feature, as
// a live rank's unit is found; a record that names another unit, or
// lacks the feature, is refused (fault.Invalid).
func (x *Experiment) LoggedUnit(l *Logged, features []json.RawMessage) error {
	return x.loggedUnit(l, features)
}

// importRun is an import under way: its changes, committed together at
// its end, and the reason of the next decision that expires.
type importRun struct {
	changes []*store.Change
	expired string
}

// noteImported marks an imported event settled with status (reason,
// admit's: "" when learned; nano its debit) and counts it, before the
// operation's change is made (a snapshot in it counts it). The caller
// holds x.mu, in an import.
func (x *Experiment) noteImported(rec *record, status, reason string, nano int64) {
	if status == store.Expired {
		reason = x.imp.expired
	}
	rec.Reason = importReason
	if reason != "" {
		rec.Reason += ":" + reason
	}
	x.imported.add(status, reason, nano)
}

// isImported reports whether a stored reason is an imported event's,
// and returns admit's reason.
func isImported(reason string) (string, bool) {
	if reason == importReason {
		return "", true
	}
	r, ok := strings.CutPrefix(reason, importReason+":")
	return r, ok
}

// countImported adds to the imported totals the events of a history
// settled after operation from (a snapshot's, which counts those
// before), when they are an import's.
func (x *Experiment) countImported(h *store.History, from int64) {
	for _, e := range h.Events {
		if reason, ok := isImported(e.Reason); ok && max(e.Seq, e.RSeq) > from {
			x.imported.add(e.Status, reason, e.Debit)
		}
	}
}

// ImportSummary is what an import session did: the totals of the events
// it settled, the distinct units their rewards debited, and the
// operations it added (decisions and rewards).
type ImportSummary struct {
	ImportTotals
	UnitsDebited int
	Operations   int64
}

// ImportSession is an import under way (RunImport). Its methods run
// under the experiment's lock, and only within RunImport's callback.
type ImportSession struct {
	x       *Experiment
	pending *record // the decision taken and not yet settled
	sum     ImportSummary
	units   map[string]bool
}

// errUnsettled is an import session used out of turn: a decision taken
// before the last was settled, or settled twice, or left unsettled.
var errUnsettled = errors.New("import: each decision is settled (Reward or Expire) once, before the next")

// RunImport runs an import session, run, under the experiment's lock
// (see above) and returns once its operations are durable. run takes
// decisions (Decide) and settles each one (Reward or Expire) before the
// next; their changes are committed together, once run returns nil. A
// stopped (Unavailable), archived (Gone) or identified (identify.go)
// experiment refuses the import before run. An error of run once it has
// taken a decision stops the experiment, as a failed policy does: memory
// is ahead of the store, which holds nothing of the import, and only a
// restart, which replays the store, is safe.
func (x *Experiment) RunImport(ctx context.Context, run func(*ImportSession) error) (ImportSummary, error) {
	sum, durable, err := x.runImport(run)
	if err == nil && durable != nil {
		err = x.env.Writer.Wait(ctx, durable)
	}
	return sum, err
}

func (x *Experiment) runImport(run func(*ImportSession) error) (ImportSummary, chan struct{}, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.failed != nil {
		return ImportSummary{}, nil, x.stopped()
	}
	if x.def.Status == store.Archived {
		return ImportSummary{}, nil, fault.Errorf(fault.Gone, "experiment %q is archived", x.def.ID)
	}
	if w := x.identified(); w != nil {
		return ImportSummary{}, nil, x.stoppedIdentifying(w)
	}
	last, seq0 := x.last, x.seq
	x.imp = &importRun{}
	s := &ImportSession{x: x, units: map[string]bool{}}
	err := run(s)
	if err == nil && s.pending != nil {
		err = errUnsettled
	}
	changes := x.imp.changes
	x.imp, s.x = nil, nil
	if err != nil {
		if x.seq == seq0 {
			return s.sum, nil, err // nothing changed (run only read)
		}
		// Memory is ahead of the store, which holds nothing of the
		// import: only a restart, which replays the store, is safe.
		x.last = last
		if x.failed == nil {
			err = x.fail(fmt.Errorf("import: %w", err))
		}
		return s.sum, nil, err
	}
	s.sum.UnitsDebited, s.sum.Operations = len(s.units), x.seq-seq0
	if len(changes) == 0 {
		return s.sum, nil, nil
	}
	head := changes[0]
	head.Group = changes[1:]
	if err := x.env.Writer.Submit(head); err != nil {
		return s.sum, nil, fault.Errorf(fault.Unavailable, "%v", err)
	}
	return s.sum, changes[len(changes)-1].Durable, nil
}

// Event reports whether the event id is stored (decided), and whether
// an import decided it: an import decides only ids that are not.
func (s *ImportSession) Event(id string) (stored, imported bool, err error) {
	rec, err := s.x.event(id)
	if rec == nil || err != nil {
		return false, false, err
	}
	_, imported = isImported(rec.Reason)
	return true, imported, nil
}

// Identified reports whether a best-arm identification's stopping rule
// has fired (identify.go): the experiment takes no more decisions.
func (s *ImportSession) Identified() bool { return s.x.identified() != nil }

// Decide takes a decision on l's context, as a live one is taken (the
// policy's, then exploration's), and returns its arm. It is named l's
// ID and Unit, or, when name is not nil, name's answer given its arm (a
// reward table's decision is its arm's next logged event); the id must
// not be stored (Event).
func (s *ImportSession) Decide(l Logged, name func(arm int) (id, unit string)) (int, error) {
	if s.pending != nil {
		return 0, errUnsettled
	}
	if name == nil {
		name = func(int) (string, string) { return l.ID, l.Unit }
	}
	var facts *rankFacts
	if s.x.def.Surface == define.SurfacePersonalizer {
		facts = &rankFacts{shared: l.Shared}
	}
	rec, err := s.x.newDecision(name, l.Context, facts, l.Set)
	if err != nil {
		return 0, err
	}
	s.pending = rec
	return rec.Arm, nil
}

// Reward gives the decision taken its logged reward r, through settle as
// a live reward (learned, or ignored for its unit's limits). A reward
// outside the declared reward_range is refused (fault.OutOfRange): the
// policy's noise is scaled to that range.
func (s *ImportSession) Reward(r float64) error {
	if b := s.x.bounds; !(r >= b.Lo && r <= b.Hi) {
		return fault.Errorf(fault.OutOfRange, "reward %v lies outside the declared reward_range [%v, %v]", r, b.Lo, b.Hi)
	}
	return s.settle(r, store.Learned, "")
}

// Expire settles the decision taken without a reward, for why: it
// expires at once, learning nothing.
func (s *ImportSession) Expire(why ImportMiss) error {
	return s.settle(0, store.Expired, string(why))
}

// settle settles the pending decision with r and status (reason: the
// ImportMiss of an expired one) and counts it in the session's totals
// (the experiment's are counted in settle: noteImported).
func (s *ImportSession) settle(r float64, status, reason string) error {
	rec, x := s.pending, s.x
	if rec == nil {
		return errUnsettled
	}
	s.pending = nil
	x.imp.expired = reason
	if err := x.settle(rec, r, status); err != nil {
		return err
	}
	reason, _ = isImported(rec.Reason)
	nano := x.imp.changes[len(x.imp.changes)-1].Debit
	s.sum.add(rec.Status, reason, nano)
	if nano > 0 {
		s.units[rec.Unit] = true
	}
	return nil
}
