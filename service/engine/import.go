package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/dpbandit/dpbandit/service/define"
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
// Each reward goes through settle, as a live one: its unit's
// contribution limit and ledger (the cap), the same debit, the same
// releases on the tape. The operations are ordinary decisions and
// rewards, so that a restart replays them as it replays live ones; their
// changes are committed together, in one transaction (store.Change's
// Group): a crash leaves all of the import or nothing of it.

// Logged is a logged event to import: its event id and unit, the arm
// played, its reward, and its line in the log (for the report).
type Logged struct {
	ID, Unit string
	Arm      int
	Reward   float64
	Line     int
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
	// NanoRho is what the learned rewards debited their units, in
	// nano-rho (1e-9 rho), as live rewards debit.
	NanoRho int64 `json:"nano_rho_debited"`
}

// add counts an imported event, settled with status and reason (the
// reason before importedReason marked it), that debited nano.
func (t *ImportTotals) add(status, reason string, nano int64) {
	if status == store.Expired {
		t.NoLoggedReward++
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
	importMarkPrefix = "import-"
)

// importedReason is the stored reason of an imported event settled with
// status, for reason (admit's: "" when learned).
func importedReason(status, reason string) string {
	if status == store.Expired {
		reason = reasonNoLogged
	}
	if reason == "" {
		return importReason
	}
	return importReason + ":" + reason
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

// Import imports a log (see above) and returns once it is durable. The
// experiment must be finite-armed (not contextual, not Personalizer's).
// The log is checked whole before anything changes: an arm outside the
// experiment's or a reward outside its reward_range refuses the import
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
	if x.def.Dim > 0 || x.def.Surface == define.SurfacePersonalizer {
		return res, nil, fault.Errorf(fault.Invalid, "experiment %q is contextual: imports take finite-armed experiments (a contextual policy's decisions depend on contexts, which a log's order cannot replay as the reward table does)", x.def.ID)
	}
	for _, l := range logged {
		switch {
		case l.ID == "" || l.Unit == "":
			return res, nil, fault.Errorf(fault.Invalid, "line %d: the event has no event id or unit", l.Line)
		case l.Arm < 0 || l.Arm >= x.def.Arms:
			return res, nil, fault.Errorf(fault.Invalid, "line %d: action %d outside the experiment's %d arms", l.Line, l.Arm, x.def.Arms)
		case !(l.Reward >= x.bounds.Lo && l.Reward <= x.bounds.Hi):
			return res, nil, fault.Errorf(fault.OutOfRange, "line %d: reward %v lies outside the declared reward_range [%v, %v]", l.Line, l.Reward, x.bounds.Lo, x.bounds.Hi)
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
	marker := importMarker(logged)
	if rec, err := x.event(marker); err != nil || rec != nil {
		// This very log was imported (its marker is stored): nothing to do.
		for _, l := range logged {
			res.skip(l, "already_imported")
		}
		return res, nil, err
	}
	stacks := make([][]int, x.def.Arms)
	seen := make(map[string]bool, len(logged))
	left := 0
	for i, l := range logged {
		if seen[l.ID] {
			res.skip(l, "duplicate")
			continue
		}
		seen[l.ID] = true
		rec, err := x.event(l.ID)
		if err != nil {
			return res, nil, err
		}
		if rec != nil {
			if _, ok := isImported(rec.Reason); ok {
				res.skip(l, "already_imported")
			} else {
				res.skip(l, "live_event_id")
			}
			continue
		}
		stacks[l.Arm] = append(stacks[l.Arm], i)
		left++
	}
	var group []*store.Change
	last, seq0 := x.last, x.seq
	x.group = &group
	units := map[string]bool{}
	err := func() error {
		for left > 0 {
			used := -1
			rec, err := x.newDecision(func(arm int) (string, string) {
				if s := stacks[arm]; len(s) > 0 {
					used, stacks[arm] = s[0], s[1:]
					return logged[used].ID, logged[used].Unit
				}
				return marker, marker
			}, "", nil)
			if err != nil {
				return err
			}
			r, status := 0.0, store.Learned
			if used < 0 {
				status = store.Expired
			} else {
				r = logged[used].Reward
				left--
			}
			if err := x.settle(rec, r, status); err != nil {
				return err
			}
			reason, _ := isImported(rec.Reason)
			nano := group[len(group)-1].Debit
			res.add(rec.Status, reason, nano) // (x.imported is counted in settle)
			if nano > 0 {
				units[rec.Unit] = true
			}
			if used < 0 {
				arm := rec.Arm
				res.StoppedAtArm, res.Marker, res.Unused = &arm, marker, left
				break
			}
		}
		return nil
	}()
	x.group = nil
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
	if len(group) == 0 {
		return res, nil, nil
	}
	head := group[0]
	head.Group = group[1:]
	if err := x.env.Writer.Submit(head); err != nil {
		return res, nil, fault.Errorf(fault.Unavailable, "%v", err)
	}
	return res, group[len(group)-1].Durable, nil
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
