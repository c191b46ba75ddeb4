package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/service/define"
	"github.com/dpbandit/dpbandit/service/fault"
	"github.com/dpbandit/dpbandit/service/importer"
	"github.com/dpbandit/dpbandit/service/internal/bloom"
	"github.com/dpbandit/dpbandit/service/ledger"
	"github.com/dpbandit/dpbandit/service/outcome"
	"github.com/dpbandit/dpbandit/service/policy"
	"github.com/dpbandit/dpbandit/service/reason"
	"github.com/dpbandit/dpbandit/service/rules"
	"github.com/dpbandit/dpbandit/service/store"
	"github.com/dpbandit/dpbandit/service/tape"
)

// Experiment is one experiment in memory: its policy, rebuilt from the store
// at start, and what the API shows. Every change goes through mu, and
// reaches the store (the writer) in the order it was made.
type Experiment struct {
	env    *Env
	def    define.Definition
	key    string // def.Key(), made once
	bounds mechanism.Bounds

	// mu covers one whole operation, and every field below: the
	// policy's change and its releases on the tape, the ledger's
	// reservation (ledger.Ledger's own lock is taken inside this one,
	// never around it), the fold bookkeeping and the change's submit to
	// the writer, so that the experiment's changes reach the writer, and
	// the store, in the order they were made. It is never held while
	// waiting for a commit (Writer.Wait).
	mu sync.Mutex
	// failed stops the experiment alone (Unavailable) once its policy failed:
	// its state may be half-changed, and only a restart, which replays
	// the store, is safe. Other experiments go on.
	failed error
	// last is the durable channel of the last change submitted: what the
	// state shows is answered once it is closed, so that no client sees a
	// release that a crash could still lose (and a restart re-draw).
	last    chan struct{}
	pol     policy.Decider
	tape    *tape.Tape
	seq     int64              // operations that changed the policy
	events  map[string]*record // by event_id: the pending events and the Config.KeepEvents last settled ones
	settled []*record          // the settled events still in events, oldest first
	// ids holds the event ids, for Experiment.event: those before the
	// snapshot the experiment was loaded from are read in the
	// background (until then, an id not in memory is looked up in the
	// store).
	ids     *bloom.Set
	keepN   int               // settled events kept in memory (Config.KeepEvents)
	queue   []*record         // pending events, in decision order
	slots   map[int64]*record // pending learning events, by ticket Seq
	units   *ledger.Cache     // learned rewards per unit (ledger/cache.go)
	unfreed store.Span        // the learned events whose reward is stored and not yet released lie in it
	// pooledAt maps, under the pooled rule, the tickets of the learned
	// rewards that went through a pool and that no release covers yet
	// to their events' seqs: after a release, they are the only stored
	// rewards that no release covers (bandit.Pooled.Covered).
	pooledAt map[int64]int64
	pulls    []int64
	nrel     int64           // releases recorded
	recent   []store.Release // the last recentReleases releases
	draws    int64           // random words recorded
	n        outcome.Counts
	// snapSeq is the operation of the last snapshot; snapEvery the
	// operations between snapshots (0: the policy has none).
	snapSeq, snapEvery int64
	// foldSeq is the operation up to which the experiment is folded, or
	// will be once foldCh, the next fold's channel, closes (fold.go).
	foldSeq int64
	foldCh  chan struct{}
	// lastFold is the last fold's channel (nil before the first).
	lastFold chan struct{}
	// unindexed holds the decisions since the last fold.
	unindexed store.Span
	owed      ledger.Debts // the learned rewards' debits since the last fold
	// imp is the import under way (importhooks.go), whose changes commit
	// together; nil otherwise.
	imp *importRun
	// imported totals what imports brought (importhooks.go).
	imported importer.Totals
	// the metrics updated on every request, looked up once
	mDecisions, mLearned prometheus.Counter
	// series samples pulls per arm on a geometric grid of decision counts,
	// for the dashboard.
	series []outcome.Sample
	// set is the definition with its settings applied (settings.go).
	set settings
	// appr is apprentice mode's test (rules.Apprentice, ruleshooks.go).
	appr rules.Apprentice
	// ret is the log retention's sweep (rules.Sweep, ruleshooks.go).
	ret rules.Sweep
}

// record is an event, the reward it was given (kept in memory for
// retries, also once deleted from the store), and the channel closed
// once it is durable.
type record struct {
	store.Event
	durable chan struct{}
	indexed chan struct{} // closed once its decision's id is in the event-id index (fold.go)
	tk      bandit.Ticket // the decision's ticket (its Seq is not stored: replay gives it again)
	late    bool          // a reward came after the event was resolved
	// asked is whether its context asks to defer its activation, once
	// read (deferred): 0 not yet, 1 no, 2 yes
	asked int8
}

// keep notes that e is settled, and forgets from memory the oldest
// settled events beyond keepN (Config.KeepEvents) once they are durable
// (they are in the store), so that memory does not grow with the
// history (only the id filter does, by a few bytes an event). The caller
// holds x.mu.
func (x *Experiment) keep(rec *record) {
	for len(x.queue) > 0 && x.queue[0].Status != store.Pending {
		x.queue[0] = nil
		x.queue = x.queue[1:] // the window's queue holds pending events only
	}
	x.settled = append(x.settled, rec)
	x.trim()
}

// trim forgets the oldest settled events beyond keepN that are durable
// and indexed. The caller holds x.mu.
func (x *Experiment) trim() {
	for len(x.settled) > x.keepN {
		old := x.settled[0]
		if !folded(old.durable) || !folded(old.indexed) {
			return // not yet in the store, or not found there by its id: kept until it is
		}
		delete(x.events, old.ID)
		x.settled[0] = nil
		x.settled = x.settled[1:]
	}
}

// event returns the event of an event id: from memory, or, for an id
// the filter may have seen, from the store (a settled event no longer
// kept: idempotent retries of old events). nil if there is none. The
// caller holds x.mu.
func (x *Experiment) event(id string) (*record, error) {
	if rec, ok := x.events[id]; ok {
		return rec, nil
	}
	if !x.ids.MayContain(id) {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), store.LookupTimeout)
	defer cancel()
	ev, err := x.env.Store.Event(ctx, x.def.Key(), id)
	if err != nil || ev == nil {
		if err != nil {
			err = fault.Errorf(fault.Unavailable, "store: %v", err)
		}
		return nil, err
	}
	done := make(chan struct{})
	close(done)
	return &record{Event: *ev, durable: done}, nil
}

// count records a decision in the public counts and the dashboard's
// series (outcome.Decided, outcome.Sampled).
func (x *Experiment) count(rec *record) {
	outcome.Decided(&x.n, rec.Event)
	x.pulls[rec.Arm]++
	x.series = outcome.Sampled(x.series, x.n.Decisions, x.pulls)
}

// countReward records what became of an event's reward (outcome.Settled);
// a pending one waits in the window's queue.
func (x *Experiment) countReward(rec *record) {
	if rec.Status == store.Pending {
		x.queue = append(x.queue, rec)
		if rec.tk.Learns() {
			x.slots[rec.tk.Seq] = rec
		}
		return
	}
	outcome.Settled(&x.n, rec.Status)
}

// released reports whether the policy holds no unreleased reward and
// forgets released ones: the stored rewards may then be deleted.
func (x *Experiment) released() bool {
	n, forgets := x.unreleased()
	return forgets && n == 0
}

// learned notes, under the pooled rule, that the reward of event seq
// (ticket tk) was learned, and stored when stored is set (covered).
func (x *Experiment) learned(tk bandit.Ticket, seq int64, stored bool) {
	p, ok := policy.PoolsOf(x.pol)
	if !ok || !x.forgets() {
		return
	}
	if stored {
		x.unfreed.Add(seq)
	}
	if p.Waiting(tk.Seq) {
		x.pooledAt[tk.Seq] = seq
	}
}

// covered reports, under the pooled rule and after an operation, whether
// a release in it covered rewards (ok), and then returns the span of the
// stored rewards to delete but for keep, the events whose rewards went
// through a pool and no release covers yet, in order: after a release
// they are the only stored rewards no release covers. The span left
// holds those. Every operation that can release (a decision, a reward,
// a default) calls it, live and in replay, so that a release is never
// taken for a later operation's.
func (x *Experiment) covered() (forget store.Span, keep []int64, ok bool) {
	p, pooled := policy.PoolsOf(x.pol)
	if !pooled || !x.forgets() {
		return store.Span{}, nil, false
	}
	released, drained := p.Covered()
	for _, t := range drained {
		delete(x.pooledAt, t)
	}
	if !released {
		return store.Span{}, nil, false
	}
	for _, s := range x.pooledAt {
		keep = append(keep, s)
	}
	slices.Sort(keep)
	forget, x.unfreed = x.unfreed, store.Span{}
	for _, s := range keep {
		x.unfreed.Add(s)
	}
	return forget, keep, true
}

// forgetCovered adds to c, the change of an operation just run under the
// pooled rule, the deletion of the rewards a release in it covered, and
// a snapshot that replaces any holding them (in a pool or an episode's
// sum): data minimisation. Nothing is deleted with --keep-log.
func (x *Experiment) forgetCovered(c *store.Change) {
	if forget, keep, ok := x.covered(); ok && !forget.Empty() && !x.env.KeepLog {
		c.Forget, c.Keep = forget, keep
		x.snapshotInto(c, true)
	}
}

// unreleased returns how many learned rewards no release covers yet, and
// whether the policy forgets released ones (policy.Unreleased).
func (x *Experiment) unreleased() (int64, bool) { return policy.Unreleased(x.pol) }

// change returns the writes of the operation just run on the tape.
func (x *Experiment) change() *store.Change {
	return x.changeInto(&store.Change{})
}

// eventChange is a change with the copy of the event it writes, in one
// allocation.
type eventChange struct {
	c  store.Change
	ev store.Event
}

// changeOf returns the writes of the operation just run on the tape,
// which inserts (insert) or updates a copy of ev: the writer reads the
// copy while the record goes on changing under x.mu.
func (x *Experiment) changeOf(ev store.Event, insert bool) *store.Change {
	ec := &eventChange{ev: ev}
	if insert {
		ec.c.Insert = &ec.ev
	} else {
		ec.c.Update = &ec.ev
	}
	return x.changeInto(&ec.c)
}

// changeInto fills c, a new change, with the writes of the operation
// just run on the tape.
func (x *Experiment) changeInto(c *store.Change) *store.Change {
	c.Exp, c.RelBase, c.DrawBase = x.key, x.nrel, x.draws
	if rel := x.tape.NewReleases(); len(rel) > 0 {
		c.Releases = slices.Clone(rel)
		x.nrel += int64(len(c.Releases))
		x.recent = lastReleases(x.recent, c.Releases)
	}
	if words := x.tape.NewWords(); len(words) > 0 {
		c.Draws = slices.Clone(words)
		x.draws += int64(len(c.Draws))
	}
	return c
}

// Decide takes a decision (or returns the stored one for a retried
// event_id) and returns once it is durable. On a Personalizer experiment
// with a unit_feature, unit must be the context's
// (define.Definition.CheckContextUnit).
func (x *Experiment) Decide(ctx context.Context, id, unit, ctxt string, set [][]float64) (outcome.Decision, error) {
	if err := x.def.CheckContextUnit(unit, ctxt); err != nil {
		return outcome.Decision{}, err
	}
	return x.decide(ctx, id, unit, ctxt, nil, set)
}

// rankFacts is what a rank request tells of its decision beyond its
// context: the part of the context the store may keep once
// (store.Shared; nil: none), and whether its activation is deferred
// (what deferred would read in the context).
type rankFacts struct {
	shared   *store.Shared
	deferred bool
}

// decide is Decide with a rank's facts (nil: none).
func (x *Experiment) decide(ctx context.Context, id, unit, ctxt string, facts *rankFacts, set [][]float64) (outcome.Decision, error) {
	d, durable, err := x.startDecide(id, unit, ctxt, facts, set)
	if err == nil {
		err = x.env.Writer.Wait(ctx, durable)
	}
	return d, err
}

// StartDecide takes a decision (ctxt is the context as JSON, set its
// decision set for contextual experiments) and returns it with the
// channel closed once it is durable: the answer must wait for it. As in
// Decide, on a Personalizer experiment with a unit_feature, unit must be
// the context's (define.Definition.CheckContextUnit).
func (x *Experiment) StartDecide(id, unit, ctxt string, set [][]float64) (outcome.Decision, chan struct{}, error) {
	if err := x.def.CheckContextUnit(unit, ctxt); err != nil {
		return outcome.Decision{}, nil, err
	}
	return x.startDecide(id, unit, ctxt, nil, set)
}

func (x *Experiment) startDecide(id, unit, ctxt string, facts *rankFacts, set [][]float64) (outcome.Decision, chan struct{}, error) {
	if x.def.Dim == 0 && !x.env.KeepLog {
		ctxt, facts = "", nil // no policy of this experiment reads it, and there is no log to keep it for
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.failed != nil {
		return outcome.Decision{}, nil, x.stopped()
	}
	if rec, err := x.event(id); err != nil {
		return outcome.Decision{}, nil, err
	} else if rec != nil {
		if err := define.CheckRetry(rec.Event, unit, ctxt); err != nil {
			return outcome.Decision{}, nil, err
		}
		return outcome.DecisionOf(rec.Event), rec.durable, nil
	}
	if err := x.def.CheckDecide(); err != nil {
		return outcome.Decision{}, nil, err
	}
	if w := x.identified(); w != nil {
		return outcome.Decision{}, nil, w.Stopped(x.def.ID)
	}
	rec, err := x.newDecision(func(int) (string, string) { return id, unit }, ctxt, facts, set)
	if err != nil {
		return outcome.Decision{}, nil, err
	}
	// Rewards that do come have come; those of overdue slots are not
	// waited for (bandit.Waits): they take the default reward, or are
	// dropped, now. A failure here stops the experiment (settle); the
	// decision itself is taken.
	for _, t := range x.pol.Overdue() {
		if o := x.slots[t.Seq]; o != nil {
			if x.resolve(o) != nil {
				break
			}
		}
	}
	return outcome.DecisionOf(rec.Event), rec.durable, nil
}

// newDecision takes a new decision (the policy's, then exploration's:
// take) and submits its change; name gives its event id and unit, given
// its arm (an import's depend on it: importhooks.go). The caller holds x.mu
// and has checked the request; facts are its rank's (nil: none).
func (x *Experiment) newDecision(name func(arm int) (id, unit string), ctxt string, facts *rankFacts, set [][]float64) (*record, error) {
	now := x.env.Now().UnixNano()
	x.seq++
	x.tape.Begin(x.seq, -1, now)
	tk, p, policyArm, err := x.take(set, ctxt)
	if err == nil {
		err = x.tape.Err()
	}
	if err != nil {
		// Inputs are validated before; a policy that fails here may have
		// drawn a release it cannot keep: stop the experiment rather than
		// re-draw it.
		x.seq--
		return nil, x.fail(fmt.Errorf("decision: %w", err))
	}
	id, unit := name(tk.Arm)
	rec := &record{Event: store.Event{Seq: x.seq, ID: id, Unit: unit, Context: ctxt, Arm: tk.Arm, Plan: tk.Plan, Decided: now, Status: store.Pending,
		PScore: p, PolicyArm: policyArm}, tk: tk, indexed: x.foldCh}
	if facts != nil {
		rec.Shared, rec.asked = facts.shared, 1
		if facts.deferred {
			rec.asked = 2
		}
	}
	x.unindexed.Add(rec.Seq)
	c := x.changeOf(rec.Event, true)
	c.Durable = make(chan struct{})
	rec.durable = c.Durable
	x.trim()
	x.events[id] = rec
	x.ids.Add(id)
	x.queue = append(x.queue, rec)
	if tk.Learns() {
		x.slots[tk.Seq] = rec
	}
	x.count(rec)
	x.forgetCovered(c) // a plan's start may close it from its arm's pool
	x.snapshotInto(c, false)
	x.foldDue(c)
	if err := x.submit(c); err != nil {
		return nil, err
	}
	x.last = c.Durable
	x.mDecisions.Inc()
	if len(c.Releases) > 0 {
		x.env.Metrics.Releases.WithLabelValues(x.key).Add(float64(len(c.Releases)))
	}
	return rec, nil
}

// submit submits a change to the writer, or, during an import, adds it
// to the import's changes, committed together at its end (importhooks.go).
// The caller holds x.mu.
func (x *Experiment) submit(c *store.Change) error {
	if x.imp != nil {
		x.imp.changes = append(x.imp.changes, c)
		return nil
	}
	if err := x.env.Writer.Submit(c); err != nil {
		return fault.Errorf(fault.Unavailable, "%v", err)
	}
	return nil
}

// take takes a decision: the policy's, and then, with probability
// Exploration (a word of the tape: replayed, never re-drawn), an arm
// drawn uniformly from the tape's words (rules.Explore, the
// exploration draw of every mode, here around the policy's arm). A drawn arm other than the
// policy's replaces it: the decision does not learn, and the policy's
// slot is freed at once (its reward would not be the plan's arm's). It
// returns the ticket, the probability with which the logging policy
// played its arm (p/K, or 1 - p + p/K for the policy's own arm, p the
// probability of exploring, exploreProb) and the policy's arm. In
// apprentice mode the baseline of ctxt, the decision's stored context,
// is served instead (takeApprentice).
func (x *Experiment) take(set [][]float64, ctxt string) (bandit.Ticket, float64, int, error) {
	if x.appr.Serving() {
		return x.takeApprentice(set, define.Baseline(ctxt))
	}
	if x.set.cur.Mode == define.ModeLoggingOnly {
		return x.takeLogging(set, define.Baseline(ctxt)) // (service/rules/loggingonly.go)
	}
	tk, err := x.pol.Decide(set)
	e := x.set.eff.Exploration
	if err != nil || e == 0 {
		return tk, 1, tk.Arm, err
	}
	k := x.def.Arms
	if x.def.Surface == define.SurfacePersonalizer {
		k = len(set) // the rank's eligible actions
	}
	arm := rules.Explore(k, tk.Arm, e, x.tape.Uint64) // the policy's arm, or one drawn by exploration
	if arm == tk.Arm {
		return tk, x.set.eff.PropensityOf(tk.Arm, tk.Arm, k), tk.Arm, nil
	}
	if tk.Learns() {
		if err := x.pol.Drop(tk); err != nil {
			return tk, 0, tk.Arm, err
		}
	}
	return bandit.Ticket{Arm: arm, Seq: tk.Seq}, x.set.eff.PropensityOf(arm, tk.Arm, k), tk.Arm, nil
}

// Reward records the reward of an event and returns once it is durable.
func (x *Experiment) Reward(ctx context.Context, id string, r float64) (outcome.RewardResult, error) {
	res, durable, err := x.StartReward(id, r)
	if err == nil {
		err = x.env.Writer.Wait(ctx, durable)
	}
	return res, err
}

// StartReward records a reward and returns the answer with the channel
// closed once it is durable.
func (x *Experiment) StartReward(id string, r float64) (outcome.RewardResult, chan struct{}, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.failed != nil {
		return outcome.RewardResult{}, nil, x.stopped()
	}
	if err := x.def.CheckReward(r); err != nil {
		return outcome.RewardResult{}, nil, err
	}
	rec, err := x.event(id)
	if err != nil {
		return outcome.RewardResult{}, nil, err
	}
	if rec == nil {
		if err := x.noSlot(id); err != nil {
			return outcome.RewardResult{}, nil, err
		}
		return outcome.RewardResult{}, nil, x.unknown(fault.Errorf(fault.NotFound, "unknown event_id %q: decide first", id))
	}
	if rec.Status != store.Pending {
		res, err := outcome.Retried(rec.Event) // (TestRewardRetriesAnsweredAlike)
		if err == nil {
			return res, rec.durable, nil
		}
		if rec.tk.Seq > 0 && !rec.late && !policy.ReplaysPatience(x.pol) {
			// It came after all: under the slot rule its delay
			// counts (not stored; a restart forgets it), so that the
			// patience follows delays that grow: the patience only
			// chooses which slots are resolved, and resolutions are
			// stored. Under the pooled and late rules the patience
			// chooses arms or withdrawals, which replay from stored
			// operations alone: an arrival after the window is not
			// counted.
			x.pol.Seen(rec.tk)
			rec.late = true
		}
		return outcome.RewardResult{}, nil, err
	}
	if err := x.settle(rec, r, store.Learned); err != nil {
		return outcome.RewardResult{}, nil, err
	}
	return outcome.ResultOf(rec.Event), rec.durable, nil
}

// settle decides the fate of a pending event's reward r (status Learned,
// or Defaulted for a default reward), applies it to the policy and
// submits the writes. The caller holds x.mu.
//
// The reward is learned if its decision was in a plan (not overflow),
// its unit has contributed fewer than max_rewards_per_unit rewards to
// this experiment, and the unit's ledger, debited in the same
// transaction, stays within the server's cap. Otherwise it is ignored:
// stored (acknowledged) but never seen by the policy, and the plan's
// slot is freed for another decision.
func (x *Experiment) settle(rec *record, r float64, status string) error {
	if x.retired(rec) {
		return x.settleRetired(rec, r, status)
	}
	tk := rec.tk
	delete(x.slots, tk.Seq)
	now := x.env.Now().UnixNano()
	adm, err := x.admit(rec, status)
	if err != nil {
		return err
	}
	status, learn := outcome.Settle(status, adm.Reason)
	prev := rec.Event
	rec.Status, rec.Reason, rec.At = status, adm.Reason, now
	if x.imp != nil { // an import's event (importhooks.go), counted before a snapshot of this operation
		x.noteImported(rec, status, adm.Reason, adm.Nano)
	}
	if status != store.Expired {
		// An ignored reward never enters a statistic: it is stored only
		// for the log (--keep-log).
		if learn || x.env.KeepLog {
			rec.Reward = &r
		}
	}
	seen := !tk.Learns() && status != store.Expired // an overflow decision's reward came
	if learn || tk.Learns() || seen {
		x.seq++
		rec.RSeq = x.seq
	}
	x.tape.Begin(rec.RSeq, rec.Arm, now)
	switch {
	case learn && status == store.Defaulted:
		err = x.pol.Default(tk, r)
	case learn:
		err = x.pol.Reward(tk, r)
	case tk.Learns():
		err = x.pol.Drop(tk)
	case seen:
		x.pol.Seen(tk)
	}
	if err == nil {
		err = x.tape.Err()
	}
	if err != nil {
		// The policy refused: undo the counters taken and stop the
		// experiment (the policy itself may be half-changed).
		if rec.RSeq == x.seq && prev.RSeq == 0 {
			x.seq--
		}
		rec.Event = prev
		x.env.Ledger.Refund(adm.Total, adm.Nano)
		return x.fail(fmt.Errorf("reward of event %q: %w", rec.ID, err))
	}
	x.apprenticeReward(rec, r, learn)
	c := x.changeOf(rec.Event, false)
	c.Debit, c.Durable = adm.Nano, make(chan struct{})
	rec.durable = c.Durable
	if learn {
		x.owed.Add(rec.Unit, adm.Nano)
		adm.Rewards.N++
		adm.Rewards.Pin(x.foldCh)
	}
	x.countReward(rec)
	x.keep(rec)
	x.minimise(c, rec, learn)
	x.snapshotInto(c, false)
	x.foldDue(c)
	x.counted(c, status, adm.Reason)
	if err := x.submit(c); err != nil {
		return err
	}
	x.last = c.Durable
	return nil
}

// admit decides whether the reward of rec (status Learned or Defaulted;
// Expired: none came) is learned: its decision was in a plan (not
// overflow, not exploration), its unit has contributed fewer than
// max_rewards_per_unit rewards here, and the unit's ledger, reserved
// now, stays within the server's cap (ledger.Cost, then Ledger.Reserve).
// The caller holds x.mu.
func (x *Experiment) admit(rec *record, status string) (ledger.Admission, error) {
	var a ledger.Admission
	tk := rec.tk
	if status != store.Expired && tk.Learns() {
		var err error
		if a.Rewards, err = x.unitRewards(rec.Unit); err != nil {
			return a, err
		}
	}
	switch {
	case status == store.Expired:
		// nothing to learn: the slot is freed
	case x.deferred(rec):
		a.Reason = reason.NotActivated
	case !tk.Learns() && x.loggedOnly(rec):
		a.Reason = reason.LoggingOnly
	case !tk.Learns() && outcome.Explored(rec.Event):
		a.Reason = reason.Exploration
	case !tk.Learns():
		a.Reason = reason.Overflow
	default:
		// (a reward the apprentice test releases costs rho again: rules.Apprentice.Doubles)
		a.Nano, a.Reason = ledger.Cost(a.Rewards.N, x.def.MaxRewardsPerUnit, x.def.NanoRho, x.appr.Doubles(rec.Seq, rec.PolicyArm))
		if a.Reason != "" {
			break
		}
		total, ok, err := x.env.Ledger.Reserve(store.UnitKey{Tenant: x.def.Tenant, Unit: rec.Unit}, x.key, a.Nano, x.foldCh)
		if err != nil {
			return a, err
		}
		a.Reserved(total, ok)
	}
	return a, nil
}

// minimise adds to c, the change of rec's reward (learned or not), the
// deletion of the stored rewards a release now covers, with a snapshot
// that replaces any holding them (data minimisation; nothing is deleted
// with --keep-log). The caller holds x.mu.
func (x *Experiment) minimise(c *store.Change, rec *record, learn bool) {
	if _, ok := policy.PoolsOf(x.pol); ok {
		if learn {
			x.learned(rec.tk, rec.Seq, !x.env.KeepLog)
		}
		x.forgetCovered(c)
		return
	}
	if learn && rec.Reward != nil && !x.env.KeepLog && x.forgets() {
		x.unfreed.Add(rec.Seq)
	}
	if !x.env.KeepLog && !x.unfreed.Empty() && x.released() {
		// The rewards of released blocks are deleted, and a snapshot
		// taken now (the policy holds no unreleased reward) replaces any
		// that held their unreleased sums.
		c.Forget, x.unfreed = x.unfreed, store.Span{}
		x.snapshotInto(c, true)
	}
}

// counted moves the metrics of a settled reward.
func (x *Experiment) counted(c *store.Change, status, reason string) {
	if reason != "" {
		x.env.Metrics.Ignored.WithLabelValues(x.key, reason).Inc()
	}
	if status == store.Learned {
		x.mLearned.Inc()
	} else {
		x.env.Metrics.Rewards.WithLabelValues(x.key, status).Inc()
	}
	if len(c.Releases) > 0 {
		x.env.Metrics.Releases.WithLabelValues(x.key).Add(float64(len(c.Releases)))
	}
}

// Expire settles the events whose window has passed, as of now: with the
// default reward when the experiment has one, else dropped from
// learning. It returns the channels closed once they are durable.
func (x *Experiment) Expire(now time.Time) []chan struct{} {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.failed != nil || x.def.Status == store.Archived {
		// (archived: its archive folded it for good, and it is never
		// loaded again to fold anything later)
		return nil
	}
	window := time.Duration(x.set.eff.RewardWindowSeconds * float64(time.Second))
	var done []chan struct{}
	for len(x.queue) > 0 {
		rec := x.queue[0]
		if rec.Status != store.Pending {
			x.queue = x.queue[1:]
			continue
		}
		if now.Sub(time.Unix(0, rec.Decided)) < window {
			break
		}
		if x.resolve(rec) != nil {
			break // the experiment stopped (settle)
		}
		done = append(done, rec.durable) // settled: keep took it off the queue
	}
	if c := x.retain(now); c != nil { // the log retention's sweep (service/rules/retention.go)
		done = append(done, c)
	}
	return done
}

// fail stops the experiment after its policy failed, logs why, and
// returns the 503 to answer. The caller holds x.mu.
func (x *Experiment) fail(err error) error {
	x.failed = err
	x.env.Logger.Error("experiment stopped: its policy failed; it answers 503 until the service restarts", "experiment", x.def.Key(), "err", err)
	return x.stopped()
}

// stopped is the answer of a stopped experiment. The caller holds x.mu.
func (x *Experiment) stopped() error {
	if errors.Is(x.failed, ErrMoved) {
		return fault.RetryLater("experiment %q moved to another replica", x.def.ID)
	}
	return fault.Errorf(fault.Unavailable, "experiment %q stopped after its policy failed (%v); the service's other experiments go on", x.def.ID, x.failed)
}

// unitRewards returns the entry of a unit's learned rewards in an
// experiment. The caller holds x.mu.
func (x *Experiment) unitRewards(unit string) (*ledger.Entry, error) {
	return x.units.Get(unit, func() (int64, error) {
		if !x.env.Ledger.MaySpend(store.UnitKey{Tenant: x.def.Tenant, Unit: unit}, x.key) {
			return 0, nil
		}
		ctx, cancel := context.WithTimeout(context.Background(), store.LookupTimeout)
		defer cancel()
		n, err := x.env.Store.UnitRewards(ctx, x.def.Key(), unit)
		if err != nil {
			return 0, fault.Errorf(fault.Unavailable, "store: %v", err)
		}
		return n, nil
	})
}

// ErrMoved stops an experiment handed over to another replica.
var ErrMoved = errors.New("service: the experiment moved to another replica")

// CheckContext is the experiment's Definition.CheckClientContext (the fields it
// reads never change).
func (x *Experiment) CheckContext(raw json.RawMessage) (string, [][]float64, error) {
	return x.def.CheckClientContext(raw)
}

// resolve settles a pending event whose reward did not come in time:
// with the default reward when the experiment has one, else dropped from
// learning. The caller holds x.mu.
func (x *Experiment) resolve(rec *record) error {
	if d := x.set.eff.DefaultReward; d != nil {
		return x.settle(rec, *d, store.Defaulted)
	}
	return x.settle(rec, 0, store.Expired)
}
