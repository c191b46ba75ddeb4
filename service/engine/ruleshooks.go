package engine

import (
	"time"

	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/service/define"
	"github.com/dpbandit/dpbandit/service/policy"
	"github.com/dpbandit/dpbandit/service/rules"
	"github.com/dpbandit/dpbandit/service/store"
)

// The engine's side of the serving rules (service/rules: apprentice
// mode, logging only, log retention; their design is written there):
// what runs under x.mu and touches the tape, the learner, the records or
// the store. The rules' state is the Experiment's appr and ret.

// ApprenticeChoice returns the learner's greedy choice that apprentice
// mode's test keeps for the decision eventID (ok false: none, as for a
// settled decision, one not taken in apprentice mode or an unknown id).
// It takes the experiment's lock, and reads the store for an event no
// longer in memory.
func (x *Experiment) ApprenticeChoice(eventID string) (g rules.Greedy, ok bool, err error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	rec, err := x.event(eventID)
	if rec != nil {
		g, ok = x.appr.Greedy[rec.Seq]
	}
	return g, ok, err
}

// setMode starts (or stops) the apprentice test when the learning mode
// changes, and starts it over when the learner does (reset).
func (x *Experiment) setMode(mode string, reset bool) {
	x.appr.SetMode(mode == define.ModeApprentice, reset)
}

// takeApprentice is take in apprentice mode: the served action drawn
// from the baseline b (the index of the decision's baseline in set:
// define.Baseline) with exploration, the learner made to take it (a
// decision set of that action alone), its greedy choice kept for the
// test, and the test's open block released after a release of the
// learner once it is due. The caller holds x.mu.
func (x *Experiment) takeApprentice(set [][]float64, b int) (bandit.Ticket, float64, int, error) {
	k := len(set)
	arm := rules.Explore(k, b, x.set.eff.Exploration, x.tape.Uint64)
	released := x.tape.Released()
	tk, err := x.pol.Decide([][]float64{set[arm]})
	if err != nil {
		return tk, 0, b, err
	}
	tk.Arm = arm
	g, err := rules.GreedyOf(x.pol.Policy(), set)
	if err != nil {
		return tk, 0, b, err
	}
	x.appr.Decided(x.seq, g)
	if x.tape.Released() > released && x.appr.Due() {
		if err := x.releaseBlock(); err != nil {
			return tk, 0, b, err
		}
	}
	return tk, x.set.eff.PropensityOf(arm, b, k), b, nil
}

// releaseBlock releases the test's open block on the tape (the Gaussian
// mechanism at the experiment's rho: drawn once, replayed after a
// restart) and passes the released value to the test. The caller holds
// x.mu, within an operation on the tape.
func (x *Experiment) releaseBlock() error {
	sigma := rules.Sigma(x.def.NanoRho)
	v, err := x.tape.AddGaussian(x.appr.BlockSum, sigma, rules.Clip)
	if err != nil {
		return err
	}
	x.appr.Released(v, sigma, x.seq)
	return nil
}

// apprenticeReward settles rec's greedy choice and counts its reward r
// in the test's open block when it enters it (learn: it was learned),
// with the propensities of the settings it was decided under. The
// caller holds x.mu.
func (x *Experiment) apprenticeReward(rec *record, r float64, learn bool) {
	if g, ok := x.appr.Settle(rec.Seq, learn); ok {
		at, _ := x.def.Effective(rec.Seq)
		x.appr.Count(g, rec.Arm, rec.PolicyArm, r, at.PropensityOf)
	}
}

// pruneGreedy forgets, after a replay, the greedy choices of the events
// settled without an operation (an expiry without a default, a retired
// event's reward), which the replay did not see. The caller holds x.mu,
// or owns x.
func (x *Experiment) pruneGreedy() {
	if len(x.appr.Greedy) == 0 {
		return
	}
	pending := map[int64]bool{}
	for _, rec := range x.events {
		if rec.Status == store.Pending {
			pending[rec.Seq] = true
		}
	}
	x.appr.Prune(func(seq int64) bool { return pending[seq] })
}

// takeLogging is take in logging only mode: the baseline b (its index
// in set) with exploration, in no plan. The caller holds x.mu.
func (x *Experiment) takeLogging(set [][]float64, b int) (bandit.Ticket, float64, int, error) {
	arm := rules.Explore(len(set), b, x.set.eff.Exploration, x.tape.Uint64)
	return bandit.Ticket{Arm: arm}, x.set.eff.PropensityOf(arm, b, len(set)), b, nil
}

// loggedOnly reports whether rec was decided in logging only mode
// (define.Definition.LoggingOnlyAt). The caller holds x.mu.
func (x *Experiment) loggedOnly(rec *record) bool { return x.def.LoggingOnlyAt(rec.Seq) }

// retentionDays returns the client's log retention in days, when the
// sweep enforces one (0: none). The caller holds x.mu.
func (x *Experiment) retentionDays() int {
	if x.def.Surface != define.SurfacePersonalizer || !x.env.KeepLog || x.set.cur.LogRetentionDays <= 0 {
		return 0
	}
	if _, pooled := policy.PoolsOf(x.pol); pooled {
		return 0 // (no Personalizer learner is: its cover is forgetCovered's)
	}
	return x.set.cur.LogRetentionDays
}

// retain is the log retention's sweep at time now (rules.Sweep): it
// returns the channel of the change that deletes the rewards now past
// the retention, with a snapshot (nil: none). The caller holds x.mu.
func (x *Experiment) retain(now time.Time) chan struct{} {
	days := x.retentionDays()
	if days == 0 || x.imp != nil {
		return nil
	}
	span, ok := x.ret.Due(now, x.seq, days, x.coveredBefore())
	if !ok {
		return nil
	}
	c := x.bare()
	c.Forget, c.Durable = span, make(chan struct{})
	x.snapshotInto(c, true)
	if err := x.submit(c); err != nil {
		return nil // the writer failed: the service stops taking writes
	}
	x.last = c.Durable
	return c.Durable
}

// coveredBefore returns the last operation up to which every stored
// reward is covered by a release (rules.Covered). The caller holds x.mu.
func (x *Experiment) coveredBefore() int64 {
	c := rules.Cover{Seq: x.seq, LoggingOnly: rules.LoggingOnlySince(x.def.Settings), Learned: x.n.Learned != 0, Unfreed: x.unfreed}
	if len(x.recent) > 0 {
		c.Released = x.recent[len(x.recent)-1].Seq - 1
	}
	return rules.Covered(c)
}

// LogCutoff returns the decision time (unix nanoseconds) before which
// the exported log shows no event, as of now: now less the client's
// log retention (0: none; rules.RetentionCutoff).
func (x *Experiment) LogCutoff(now time.Time) int64 {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.def.Surface != define.SurfacePersonalizer || x.set.cur.LogRetentionDays <= 0 {
		return 0
	}
	return rules.RetentionCutoff(now, x.set.cur.LogRetentionDays)
}
