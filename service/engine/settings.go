package engine

import (
	"context"
	"fmt"
	"math"

	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/service/define"
	"github.com/dpbandit/dpbandit/service/fault"
	"github.com/dpbandit/dpbandit/service/policy"
	"github.com/dpbandit/dpbandit/service/reason"
	"github.com/dpbandit/dpbandit/service/store"
	"github.com/dpbandit/dpbandit/service/tape"
)

// Settings. A Personalizer experiment's settings change after its
// creation (configurations/service, configurations/policy, model DELETE,
// logs DELETE): each change is a define.Setting appended to the
// definition, written to the store's experiment row with the change
// (store.Change.Definition), and numbered as an operation of its own, so
// that a restart, or the replica that takes the experiment over, replays
// each operation under the settings it was made under (advance). A
// reset (a model reset, or a new learner) builds the learner anew at its
// operation: the events pending then are settled without being learned
// (reason.ModelReset), their privacy already spent or never spent, and
// the ledger is never refunded.

// settings is what an experiment's settings make of its definition.
type settings struct {
	// eff is the definition with the settings applied so far (the
	// learner's algorithm, the exploration, the window, the default
	// reward); cur what they add to it.
	eff define.Definition
	cur define.Current
}

// effectiveAt sets the settings as they stand for operation next.
func (x *Experiment) effectiveAt(next int64) {
	x.set.eff, x.set.cur = x.def.Effective(next)
}

// advance applies, in a replay, the settings made before operation next
// that are not applied yet: a reset rebuilds the learner, and the events
// decided up to it and not settled by then are retired.
func (x *Experiment) advance(next int64) error {
	for x.set.cur.Applied < len(x.def.Settings) && x.def.Settings[x.set.cur.Applied].From < next {
		s := x.def.Settings[x.set.cur.Applied]
		if s.From <= x.seq && s.From != 0 {
			return fmt.Errorf("%w: setting at operation %d is out of order (at %d)", tape.ErrDiverged, s.From, x.seq)
		}
		x.seq = max(x.seq, s.From)
		x.set.eff, x.set.cur = x.def.Effective(s.From + 1)
		x.setMode(x.set.cur.Mode, s.Reset)
		if s.Reset {
			pol, err := policy.Build(x.set.eff, x.tape)
			if err != nil {
				return fmt.Errorf("%w: reset at operation %d: %v", tape.ErrDiverged, s.From, err)
			}
			x.pol = pol
			for _, rec := range x.events {
				if rec.Seq <= s.From && (rec.RSeq == 0 || rec.RSeq > s.From) {
					rec.tk = bandit.Ticket{Arm: rec.Arm}
				}
			}
		}
	}
	return nil
}

// retired reports whether a pending event was decided before the last
// reset: its reward is acknowledged and not learned. The caller holds
// x.mu.
func (x *Experiment) retired(rec *record) bool {
	return rec.Status == store.Pending && rec.Seq <= x.set.cur.LastReset
}

// settleRetired settles a retired event's reward r (status Learned, or
// Defaulted and Expired when its window passed): Ignored, or Expired,
// with reason.ModelReset; no learner sees it, no operation is numbered
// for it and nothing is debited. The caller holds x.mu.
func (x *Experiment) settleRetired(rec *record, r float64, status string) error {
	rec.Status, rec.Reason, rec.At = store.Expired, reason.ModelReset, x.env.Now().UnixNano()
	x.apprenticeReward(rec, r, false)
	if status == store.Learned {
		rec.Status = store.Ignored
		if x.env.KeepLog {
			rec.Reward = &r
		}
	}
	c := x.bare()
	ev := rec.Event
	c.Update, c.Durable = &ev, make(chan struct{})
	rec.durable = c.Durable
	x.countReward(rec)
	x.keep(rec)
	x.counted(c, rec.Status, reason.ModelReset)
	if err := x.env.Writer.Submit(c); err != nil {
		return fault.Errorf(fault.Unavailable, "%v", err)
	}
	x.last = c.Durable
	return nil
}

// Settings returns the experiment's definition with its settings
// applied, and what they add.
func (x *Experiment) Settings() (define.Definition, define.Current) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.pol == nil { // it failed to load: its settings as stored
		return x.def.Effective(math.MaxInt64)
	}
	return x.set.eff, x.set.cur
}

// Configure makes a change of the experiment's settings (a Personalizer
// experiment's): s is checked (define.Definition.With: a
// *define.SettingError names the field refused), numbered as the next
// operation, stored with the definition and applied; it returns once it
// is durable. A reset builds the learner anew: the events pending are
// retired (their rewards acknowledged, not learned), the units' ledger
// keeps every debit.
func (x *Experiment) Configure(ctx context.Context, s define.Setting) error {
	durable, err := x.configure(s)
	if err == nil {
		err = x.env.Writer.Wait(ctx, durable)
	}
	return err
}

func (x *Experiment) configure(s define.Setting) (chan struct{}, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.failed != nil {
		return nil, x.stopped()
	}
	if x.def.Surface != define.SurfacePersonalizer {
		return nil, fault.Errorf(fault.NotFound, "experiment %q is not a personalizer experiment: its settings are fixed", x.def.ID)
	}
	if x.def.Status == store.Archived {
		return nil, fault.Errorf(fault.Gone, "experiment %q is archived", x.def.ID)
	}
	s.From, s.At = x.seq+1, x.env.Now().UnixNano()
	if s.Algorithm != "" {
		s.Reset = true
	}
	nd, err := x.def.With(s)
	if err != nil {
		return nil, err // a *define.SettingError
	}
	eff, cur := nd.Effective(s.From + 1)
	var pol policy.Decider
	if s.Reset {
		if pol, err = policy.Build(eff, x.tape); err != nil {
			return nil, &define.SettingError{Field: "arguments", Message: err.Error()}
		}
	}
	row, err := nd.Row()
	if err != nil {
		return nil, err
	}
	// Applied first, so that a snapshot the change takes holds it.
	x.seq = s.From
	x.def.Settings = nd.Settings // (only: the other fields are read without the lock, Definition.Key)
	x.set.eff, x.set.cur = eff, cur
	x.setMode(cur.Mode, s.Reset)
	if pol != nil {
		x.pol = pol
		for _, rec := range x.queue {
			if rec.Status == store.Pending {
				rec.tk = bandit.Ticket{Arm: rec.Arm}
			}
		}
		clear(x.slots)
	}
	c := x.bare()
	c.Definition, c.Durable = row.Definition, make(chan struct{})
	if s.LogsDeleted {
		x.forgetLog(c)
	}
	if err := x.env.Writer.Submit(c); err != nil {
		return nil, fault.Errorf(fault.Unavailable, "%v", err)
	}
	x.last = c.Durable
	return c.Durable, nil
}

// forgetLog adds to c the deletion of the stored rewards that a release
// covers: those of the events decided before the last release (a
// contextual learner's episode ends, and releases, only once its
// rewards are in), but none that no release covers yet (unfreed), which
// a restart's replay still needs; with a snapshot that replaces any
// holding them. Without --keep-log those are the only rewards stored:
// the others were deleted at their release already. The caller holds
// x.mu.
func (x *Experiment) forgetLog(c *store.Change) {
	if hi := x.coveredBefore(); hi >= 1 { // (rules.Covered)
		c.Forget = store.Span{Lo: 1, Hi: hi}
		x.snapshotInto(c, true)
	}
}

// bare returns a change that writes no release and no random word (an
// activation, a retired event's reward, a setting): the tape still holds
// the last operation's, which the change of that operation wrote;
// change() would write them again, and a replay would find them unused.
func (x *Experiment) bare() *store.Change {
	return &store.Change{Exp: x.def.Key(), RelBase: x.nrel, DrawBase: x.draws}
}
