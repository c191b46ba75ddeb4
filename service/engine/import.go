package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/dpbandit/dpbandit/service/fault"
	"github.com/dpbandit/dpbandit/service/store"
)

// Imports: a warm start from a log (docs/service.md, Imports).
//
// An import runs a finite-armed experiment's policy over a log of
// rewarded decisions, exactly as live traffic would run it, with the log
// as the environment: the policy decides (its plan's arm, and exploration
// as configured: take), and the decision is given the reward of the
// next logged event of that arm not yet used, in the log's order, under
// that event's id and unit. This is the reward-table model of a
// stochastic bandit (Lattimore and Szepesvari, Bandit Algorithms, 2020,
// section 4.6): the rewards of each arm are a stack of independent draws,
// and the s-th pull of an arm reads the s-th of its stack, so that
// playing a policy on the logged stacks is a run of it on the bandit the
// log was drawn from, whichever policy logged it. The import ends when
// the policy asks for an arm whose logged rewards are used up (that last
// decision is stored without a reward: it expires at once, and its event
// id marks the log as imported) or when every logged reward is used.
//
// A contextual experiment's policy decides from each event's context, so
// the log cannot be reordered: it is replayed in order instead (Li, Chu,
// Langford and Wang, WSDM 2011, Algorithm 1, the replay method): the
// policy decides on each logged event's decision set, and the logged
// reward is given when the policy chose the logged action; otherwise the
// decision gets no reward (it expires at once, "not_matched"), and the
// event is used up either way. On a log of a uniformly random logging
// policy (pscore 1/K) the rewarded decisions are a run of the policy on
// the contexts' distribution, as Li et al. prove; a non-uniform logging
// policy biases the contexts the policy learns from towards those where
// the logger chose as it does (the import's answer names the log's
// propensities' range).
//
// Each reward goes through settle, as a live one: its unit's
// contribution limit and ledger (the cap), the same debit, the same
// releases on the tape. The operations are ordinary decisions and
// rewards, so that a restart replays them as it replays live ones; their
// changes are committed together, in one transaction (store.Change's
// Group): a crash leaves all of the import or nothing of it.

// Logged is a logged event to import: its event id and unit, the arm
// played, its reward, and its line in the log (for the report); for a
// contextual experiment, its context as CheckContext returned it (the
// compact JSON and the decision set).
type Logged struct {
	ID, Unit string
	Arm      int
	Reward   float64
	Line     int
	Context  string
	Set      [][]float64
	// facts are a Personalizer event's rank's (RankLogged; nil: none).
	facts *rankFacts
}

// ImportTotals is what imports brought an experiment (in State, over
// every import; in an ImportResult, that import's).
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
// reason before importedReason marked it), that debited nano.
func (t *ImportTotals) add(status, reason string, nano int64) {
	if status == store.Expired {
		if reason == reasonNotMatched {
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

// Skipped is a logged event an import left out, and why: "duplicate" (its
// id came earlier in the log), "already_imported" (an earlier import
// used it) or "live_event_id" (a live decision has its id: the log is
// not the service's to overwrite).
type Skipped struct {
	Line    int    `json:"line"`
	EventID string `json:"event_id"`
	Reason  string `json:"reason"`
}

// maxReported bounds the skipped events an ImportResult lists (all are
// counted).
const maxReported = 10

// ImportResult is what an import changed.
type ImportResult struct {
	ImportTotals
	// Logged counts the events given; Unused those the import did not
	// reach (the policy asked for an arm whose logged rewards were used
	// up first: StoppedAtArm); they may be used by a later import, once
	// live traffic has moved the policy on.
	Logged       int  `json:"logged_events"`
	Unused       int  `json:"unused_events"`
	StoppedAtArm *int `json:"stopped_at_arm,omitempty"`
	// Duplicates, AlreadyImported and LiveIDs count the skipped events
	// by reason; Skipped lists the first few.
	Duplicates      int       `json:"skipped_duplicates"`
	AlreadyImported int       `json:"skipped_already_imported"`
	LiveIDs         int       `json:"skipped_live_event_ids"`
	Skipped         []Skipped `json:"skipped,omitempty"`
	// UnitsDebited counts the distinct units the import debited.
	UnitsDebited int `json:"units_debited"`
	// Operations counts the operations it added (decisions and rewards).
	Operations int64 `json:"operations"`
	// Marker is the event id of the import's last decision, without a
	// logged reward ("" when every logged reward was used): derived from
	// the log's event ids, it marks the log as imported.
	Marker string `json:"marker_event_id,omitempty"`
}

func (r *ImportResult) skip(l Logged, reason string) {
	switch reason {
	case "duplicate":
		r.Duplicates++
	case "already_imported":
		r.AlreadyImported++
	default:
		r.LiveIDs++
	}
	if len(r.Skipped) < maxReported {
		r.Skipped = append(r.Skipped, Skipped{l.Line, l.ID, reason})
	}
}

// Reasons of imported events, stored in their Reason: importReason for
// a learned one, importReason + ":" + the reason for the others.
const (
	importReason     = "imported"
	reasonNoLogged   = "no_logged_reward"
	reasonNotMatched = "not_matched"
	importMarkPrefix = "import-"
)

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

// importMarker is the event id of a log's marker decision: a digest of
// its event ids, in order.
func importMarker(logged []Logged) string {
	h := sha256.New()
	for _, l := range logged {
		h.Write([]byte(l.ID))
		h.Write([]byte{0})
	}
	return importMarkPrefix + hex.EncodeToString(h.Sum(nil)[:16])
}

// Import imports a log (see above) and returns once it is durable: by
// its reward table into a finite-armed or linear experiment, by replay
// into a contextual one (a Personalizer experiment's: pzimport.go). The log
// is checked whole before anything changes: an arm outside the
// experiment's, a reward outside its reward_range or, for a contextual
// experiment, an event without its decision set (a Personalizer
// experiment's: its rank, RankLogged) refuses the import
// (Invalid, OutOfRange), naming the line. An import that fails midway
// (the policy failed, or the store could not be read) stops the
// experiment, as a failed policy does: a restart replays the store,
// which holds nothing of it.
func (x *Experiment) Import(ctx context.Context, logged []Logged) (ImportResult, error) {
	res, durable, err := x.startImport(logged)
	if err == nil && durable != nil {
		err = x.env.Writer.Wait(ctx, durable)
	}
	return res, err
}

func (x *Experiment) startImport(logged []Logged) (ImportResult, chan struct{}, error) {
	res := ImportResult{Logged: len(logged)}
	contextual := x.def.Dim > 0
	for i := range logged {
		l := &logged[i]
		switch {
		case l.ID == "" || l.Unit == "":
			return res, nil, fault.Errorf(fault.Invalid, "line %d: the event has no event id or unit", l.Line)
		case l.Arm < 0 || l.Arm >= x.def.Arms:
			return res, nil, fault.Errorf(fault.Invalid, "line %d: action %d outside the experiment's %d arms", l.Line, l.Arm, x.def.Arms)
		case !(l.Reward >= x.bounds.Lo && l.Reward <= x.bounds.Hi):
			return res, nil, fault.Errorf(fault.OutOfRange, "line %d: reward %v lies outside the declared reward_range [%v, %v]", l.Line, l.Reward, x.bounds.Lo, x.bounds.Hi)
		case x.importSetError(l) != nil:
			return res, nil, x.importSetError(l)
		}
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.failed != nil {
		return res, nil, x.stopped()
	}
	if x.def.Status == store.Archived {
		return res, nil, fault.Errorf(fault.Gone, "experiment %q is archived", x.def.ID)
	}
	if w := x.identified(); w != nil {
		return res, nil, x.stoppedIdentifying(w)
	}
	marker := importMarker(logged)
	if rec, err := x.event(marker); err != nil || rec != nil {
		if err != nil {
			return res, nil, err
		}
		// This very log was imported (its marker is stored): nothing to
		// do. Its records are counted as they are (usable): those the
		// import used already imported, a live id or a repeated one as
		// such, and those it did not reach unused.
		use, err := x.usable(logged, &res)
		res.Unused = len(use)
		return res, nil, err
	}
	use, err := x.usable(logged, &res)
	if err != nil {
		return res, nil, err
	}
	last, seq0 := x.last, x.seq
	x.imp = &importRun{}
	units := map[string]bool{}
	// give settles an imported decision: with the reward r when it is
	// the logged one's (status Learned), else without (Expired, reason).
	give := func(rec *record, r float64, status, reason string) error {
		x.imp.expired = reason
		if err := x.settle(rec, r, status); err != nil {
			return err
		}
		reason, _ = isImported(rec.Reason)
		nano := x.imp.changes[len(x.imp.changes)-1].Debit
		res.add(rec.Status, reason, nano) // (x.imported is counted in settle)
		if nano > 0 {
			units[rec.Unit] = true
		}
		return nil
	}
	if contextual {
		err = x.replayLog(logged, use, &res, give)
	} else {
		err = x.readTable(logged, use, marker, &res, give)
	}
	changes := x.imp.changes
	x.imp = nil
	if err != nil {
		// Memory is ahead of the store, which holds nothing of the
		// import: only a restart, which replays the store, is safe.
		x.last = last
		if x.failed == nil {
			err = x.fail(fmt.Errorf("import: %w", err))
		}
		return res, nil, err
	}
	res.UnitsDebited, res.Operations = len(units), x.seq-seq0
	if len(changes) == 0 {
		return res, nil, nil
	}
	head := changes[0]
	head.Group = changes[1:]
	if err := x.env.Writer.Submit(head); err != nil {
		return res, nil, fault.Errorf(fault.Unavailable, "%v", err)
	}
	return res, changes[len(changes)-1].Durable, nil
}

// usable returns the indices of the logged events to import, in the
// log's order, counting in res those skipped: an id repeated in the log,
// or already stored (imported, or decided live). The caller holds x.mu.
func (x *Experiment) usable(logged []Logged, res *ImportResult) ([]int, error) {
	seen := make(map[string]bool, len(logged))
	var use []int
	for i, l := range logged {
		if seen[l.ID] {
			res.skip(l, "duplicate")
			continue
		}
		seen[l.ID] = true
		rec, err := x.event(l.ID)
		if err != nil {
			return nil, err
		}
		if rec != nil {
			if _, ok := isImported(rec.Reason); ok {
				res.skip(l, "already_imported")
			} else {
				res.skip(l, "live_event_id")
			}
			continue
		}
		use = append(use, i)
	}
	return use, nil
}

// readTable runs a finite-armed policy on the logged events use as a
// reward table (see above), until the policy asks for an arm whose
// stack is empty (that decision, named marker, expires) or every stack
// is used. The caller holds x.mu, in an import.
func (x *Experiment) readTable(logged []Logged, use []int, marker string, res *ImportResult, give func(*record, float64, string, string) error) error {
	stacks := make([][]int, x.def.Arms)
	for _, i := range use {
		stacks[logged[i].Arm] = append(stacks[logged[i].Arm], i)
	}
	for left := len(use); left > 0; {
		if x.identified() != nil { // a best-arm identification stopped: it takes no more decisions
			res.Unused = left
			return nil
		}
		used := -1
		rec, err := x.newDecision(func(arm int) (string, string) {
			if s := stacks[arm]; len(s) > 0 {
				used, stacks[arm] = s[0], s[1:]
				return logged[used].ID, logged[used].Unit
			}
			return marker, marker
		}, "", nil, nil)
		if err != nil {
			return err
		}
		if used < 0 {
			arm := rec.Arm
			res.StoppedAtArm, res.Marker, res.Unused = &arm, marker, left
			return give(rec, 0, store.Expired, reasonNoLogged)
		}
		left--
		if err := give(rec, logged[used].Reward, store.Learned, ""); err != nil {
			return err
		}
	}
	return nil
}

// replayLog replays the logged events use, in order, to a contextual
// policy (see above): each is decided on its decision set, and rewarded
// when the policy chose the logged action. The caller holds x.mu, in an
// import. Both walks stop, leaving the rest unused, once a best-arm
// identification's stopping rule fires (identify.go).
func (x *Experiment) replayLog(logged []Logged, use []int, res *ImportResult, give func(*record, float64, string, string) error) error {
	for j, i := range use {
		if x.identified() != nil { // (as readTable)
			res.Unused = len(use) - j
			return nil
		}
		l := &logged[i]
		rec, err := x.newDecision(func(int) (string, string) { return l.ID, l.Unit }, l.Context, l.facts, l.Set)
		if err != nil {
			return err
		}
		if rec.Arm == l.Arm {
			err = give(rec, l.Reward, store.Learned, "")
		} else {
			err = give(rec, 0, store.Expired, reasonNotMatched)
		}
		if err != nil {
			return err
		}
	}
	return nil
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
