// Package importer imports a log of rewarded decisions into an
// experiment: a warm start from a log (docs/service.md, Imports).
//
// An import runs a finite-armed experiment's policy over a log of
// rewarded decisions, exactly as live traffic would run it, with the log
// as the environment: the policy decides (its plan's arm, and exploration
// as configured), and the decision is given the reward of the next
// logged event of that arm not yet used, in the log's order, under that
// event's id and unit. This is the reward-table model of a stochastic
// bandit (Lattimore and Szepesvari, Bandit Algorithms, 2020, section
// 4.6): the rewards of each arm are a stack of independent draws, and
// the s-th pull of an arm reads the s-th of its stack, so that playing a
// policy on the logged stacks is a run of it on the bandit the log was
// drawn from, whichever policy logged it. The import ends when the
// policy asks for an arm whose logged rewards are used up (that last
// decision is stored without a reward: it expires at once, and its event
// id, Marker, marks the log as imported) or when every logged reward is
// used.
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
// The engine runs the import under the experiment's lock
// (engine.Experiment.RunImport): its decisions and rewards are the
// experiment's ordinary operations, each reward settled as a live one
// (the unit's contribution limit and ledger, the same debit, the same
// releases), committed together in one transaction, so that a crash
// leaves all of the import or nothing of it and a restart replays it as
// it replays live traffic. This package chooses which logged events are
// used and which reward each decision gets, and reports what changed.
package importer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"

	"github.com/dpbandit/dpbandit/service/define"
	"github.com/dpbandit/dpbandit/service/fault"
	"github.com/dpbandit/dpbandit/service/store"
)

// Event is a logged event to import: its event id and unit, the arm
// played, its reward, and its line in the log (for the report); for a
// contextual experiment, its context as the engine's CheckContext
// returned it (the compact JSON and the decision set), or, for a
// Personalizer experiment, as RankLogged read its rank request, with
// Shared, the part of it the store may keep once (store.Shared; nil:
// none).
type Event struct {
	ID, Unit string
	Arm      int
	Reward   float64
	Line     int
	Context  string
	Set      [][]float64
	Shared   *store.Shared
	// ranked is set by RankLogged.
	ranked bool
}

// Session is an import under way in the engine, under the experiment's
// lock (engine.Experiment.RunImport): its decisions are taken as live
// ones (the policy's, then exploration's) and its rewards settled as live
// ones (the unit's contribution limit and ledger, the same debit, the
// same releases), marked as imported (Reason). Each decision is settled,
// by Reward or Expire, before the next.
type Session interface {
	// Event reports whether the event id is stored (decided), and
	// whether an import decided it: a decision's id must not be.
	Event(id string) (stored, imported bool, err error)
	// Identified reports whether a best-arm identification's stopping
	// rule has fired: the experiment takes no more decisions.
	Identified() bool
	// Decide takes a decision on l's context (l nil: none) and returns
	// its arm. It is named l's ID and Unit or, when name is not nil,
	// name's answer given its arm.
	Decide(l *Event, name func(arm int) (id, unit string)) (int, error)
	// Reward gives the decision taken the reward r; a reward outside
	// the reward_range is refused (fault.OutOfRange).
	Reward(r float64) (Settled, error)
	// Expire settles the decision taken without a reward, for why.
	Expire(why Miss) (Settled, error)
}

// Settled is how an imported decision was settled: its status and reason
// (as Totals.Add takes them) and its unit's debit, in nano-rho.
type Settled struct {
	Status, Reason string
	Debit          int64
}

// Target is an experiment to import into (an *engine.Experiment): its
// definition, and RunImport, which runs run as a Session, commits its
// operations together, in one transaction, and returns the number of
// operations (decisions and rewards) it added once they are durable.
type Target interface {
	Definition() define.Definition
	RunImport(ctx context.Context, run func(Session) error) (int64, error)
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

// maxReported bounds the skipped events a Result lists (all are
// counted).
const maxReported = 10

// Result is what an import changed.
type Result struct {
	Totals
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

func (r *Result) skip(l *Event, reason string) {
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

// Marker is the event id of a log's marker decision: a digest of its
// event ids, in order.
func Marker(logged []Event) string {
	h := sha256.New()
	for _, l := range logged {
		h.Write([]byte(l.ID))
		h.Write([]byte{0})
	}
	return "import-" + hex.EncodeToString(h.Sum(nil)[:16])
}

// Import imports a log into x (see above) and returns once it is
// durable: by its reward table into a finite-armed or linear experiment,
// by replay into a contextual one (a Personalizer experiment's too). The
// log is checked whole before anything changes: an arm outside the
// experiment's, a reward outside its reward_range or, for a contextual
// experiment, an event without its decision set (a Personalizer
// experiment's: its rank, RankLogged) refuses the import (fault.Invalid,
// fault.OutOfRange), naming the line. A log imported before (its Marker
// is stored) changes nothing. An import that fails midway (the policy
// failed, or the store could not be read) stops the experiment, as a
// failed policy does (engine.Experiment.RunImport). With an error, the
// Result counts only the events given (Logged): none of what the import
// counted is known to be stored (the API answers the error alone).
func Import(ctx context.Context, x Target, logged []Event) (Result, error) {
	res := Result{Logged: len(logged)}
	def := x.Definition()
	for i := range logged {
		if err := check(&def, &logged[i]); err != nil {
			return res, err
		}
	}
	marker := Marker(logged)
	units := map[string]bool{}
	ops, err := x.RunImport(ctx, func(s Session) error {
		done, _, err := s.Event(marker)
		if err != nil {
			return err
		}
		use, err := usable(s, logged, &res)
		switch {
		case err != nil:
			return err
		case done:
			// This very log was imported (its marker is stored):
			// nothing to do. Its records are counted as they are
			// (usable): those the import used already imported, a live
			// id or a repeated one as such, and those it did not reach
			// unused.
			res.Unused = len(use)
			return nil
		}
		r := run{s: s, res: &res, units: units}
		if def.Dim > 0 {
			return r.replay(logged, use)
		}
		return r.readTable(def.Arms, logged, use, marker)
	})
	if err != nil {
		// Nothing the run counted is known to be stored: a failed run
		// stored nothing, and a failed wait (the writer failed, or ctx
		// ended) cannot say that it did.
		return Result{Logged: len(logged)}, err
	}
	res.UnitsDebited, res.Operations = len(units), ops
	return res, nil
}

// check returns why a logged event cannot be imported into an experiment
// of definition def (nil when it can).
func check(def *define.Definition, l *Event) error {
	pz := def.Surface == define.SurfacePersonalizer
	switch {
	case l.ID == "" || l.Unit == "":
		return fault.Errorf(fault.Invalid, "line %d: the event has no event id or unit", l.Line)
	case l.Arm < 0 || l.Arm >= def.Arms:
		return fault.Errorf(fault.Invalid, "line %d: action %d outside the experiment's %d arms", l.Line, l.Arm, def.Arms)
	case !(l.Reward >= def.RewardRange[0] && l.Reward <= def.RewardRange[1]):
		return fault.Errorf(fault.OutOfRange, "line %d: reward %v lies outside the declared reward_range [%v, %v]", l.Line, l.Reward, def.RewardRange[0], def.RewardRange[1])
	case pz && (!l.ranked || len(l.Set) == 0 || l.Arm >= len(l.Set)):
		return fault.Errorf(fault.Invalid, "line %d: a personalizer experiment needs each event's rank request (RankLogged: a dsjson record's c and c._multi)", l.Line)
	case !pz && def.Dim > 0 && len(l.Set) != def.Arms:
		return fault.Errorf(fault.Invalid, "line %d: a contextual experiment needs each event's decision set (%d vectors of dimension %d)", l.Line, def.Arms, def.Dim)
	}
	return nil
}

// usable returns the indices of the logged events to import, in the
// log's order, counting in res those skipped: an id repeated in the log,
// or already stored (imported, or decided live).
func usable(s Session, logged []Event, res *Result) ([]int, error) {
	seen := make(map[string]bool, len(logged))
	var use []int
	for i := range logged {
		l := &logged[i]
		if seen[l.ID] {
			res.skip(l, "duplicate")
			continue
		}
		seen[l.ID] = true
		stored, imported, err := s.Event(l.ID)
		switch {
		case err != nil:
			return nil, err
		case imported:
			res.skip(l, "already_imported")
		case stored:
			res.skip(l, "live_event_id")
		default:
			use = append(use, i)
		}
	}
	return use, nil
}

// run is an import's walk over its log: its session, its result, and
// the units its rewards debited.
type run struct {
	s     Session
	res   *Result
	units map[string]bool
}

// count counts in the result a decision of unit settled as st.
func (r *run) count(unit string, st Settled, err error) error {
	if err != nil {
		return err
	}
	r.res.Add(st.Status, st.Reason, st.Debit)
	if st.Debit > 0 {
		r.units[unit] = true
	}
	return nil
}

// readTable runs a finite-armed policy on the logged events use as a
// reward table (see above), until the policy asks for an arm whose
// stack is empty (that decision, named marker, expires) or every stack
// is used.
func (r *run) readTable(arms int, logged []Event, use []int, marker string) error {
	stacks := make([][]int, arms)
	for _, i := range use {
		stacks[logged[i].Arm] = append(stacks[logged[i].Arm], i)
	}
	for left := len(use); left > 0; {
		if r.s.Identified() { // a best-arm identification stopped: it takes no more decisions
			r.res.Unused = left
			return nil
		}
		used := -1
		arm, err := r.s.Decide(nil, func(arm int) (string, string) {
			if st := stacks[arm]; len(st) > 0 {
				used, stacks[arm] = st[0], st[1:]
				return logged[used].ID, logged[used].Unit
			}
			return marker, marker
		})
		if err != nil {
			return err
		}
		if used < 0 {
			r.res.StoppedAtArm, r.res.Marker, r.res.Unused = &arm, marker, left
			st, err := r.s.Expire(NoLoggedReward)
			return r.count(marker, st, err)
		}
		left--
		st, err := r.s.Reward(logged[used].Reward)
		if err := r.count(logged[used].Unit, st, err); err != nil {
			return err
		}
	}
	return nil
}

// replay replays the logged events use, in order, to a contextual
// policy (see above): each is decided on its decision set, and rewarded
// when the policy chose the logged action. Both walks stop, leaving the
// rest unused, once a best-arm identification's stopping rule fires.
func (r *run) replay(logged []Event, use []int) error {
	for j, i := range use {
		if r.s.Identified() { // (as readTable)
			r.res.Unused = len(use) - j
			return nil
		}
		l := &logged[i]
		arm, err := r.s.Decide(l, nil)
		if err != nil {
			return err
		}
		var st Settled
		if arm == l.Arm {
			st, err = r.s.Reward(l.Reward)
		} else {
			st, err = r.s.Expire(NotMatched)
		}
		if err := r.count(l.Unit, st, err); err != nil {
			return err
		}
	}
	return nil
}
