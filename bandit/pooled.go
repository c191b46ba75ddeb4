package bandit

// Pooled runs a Policy one decision at a time when rewards arrive late,
// out of order, or never, and learns every reward that comes. It is the
// successor of Delayed, whose plans close only on their own decisions'
// rewards and so drop a slot whose reward is late (and then refuse the
// reward) and never learn the rewards of overflow decisions. The rule:
//
//   - The policy's current plan (arm a for n steps) needs n rewards of
//     arm a. Any reward of arm a serves it, whichever decision it belongs
//     to: rewards of one arm are exchangeable (samples of the same arm,
//     of which plan-based policies use only the sums, or the samples in
//     arrival order).
//   - A decision plays a while the plan's rewards learned plus the
//     decisions of arm a counted on (pending and not overdue) are fewer
//     than n; otherwise it plays the arm of highest released mean
//     (Releaser; post-processing of released values), or a for a policy
//     that shows no releases. Either way its reward will be learned.
//   - A reward that comes (Reward), or a default given when its window
//     passed (Default), is fed to the plan if it is of the plan's arm and
//     the plan still needs rewards; otherwise it joins its arm's pool.
//     When the plan has its n rewards the policy has seen them (one
//     Update each, as they came) and its next plan starts with the next
//     decision, reward or default, taking first the rewards its arm's
//     pool holds, oldest first: one of them closes at most one plan.
//   - A decision stops being counted on once it is overdue (Waits: more
//     decisions have passed since it than twice the 99th percentile of
//     the delays of the rewards that came, plus 8), so that the plan
//     takes another decision in its place instead of waiting; but its
//     reward is still learned when it comes, by this plan or by a later
//     one of its arm. Nothing is dropped before the caller's window:
//     Drop is for a decision whose reward will never come (its window
//     passed without a default).
//
// Why each reward enters exactly one release. Reward and Default accept
// a ticket only while it is pending (Waits) and close it first, so a
// decision gives at most one value. That value is either passed to the
// policy's Update as a single reward (Count 1, clipped there to the
// declared range) or appended to its arm's pool; a pooled value leaves
// the pool exactly when it is passed to Update, once. So every value the
// caller gives reaches the policy exactly once, and the policy's own
// argument applies: for the doubling policies (AdaC-UCB, AdaP-UCB) and
// DP-SE each reward the policy sees enters the one release of the
// episode (or epoch) it was fed in, with the sensitivity w/n of the
// episode's count n. That count is fixed by Next before any of the
// episode's rewards is fed, from released values only; which rewards
// fill an episode depends on the order of decisions and arrivals and on
// released values, never on a reward's value. Changing one reward thus
// changes one release by at most w/n, as the mechanism is calibrated
// for. What the rule does not hide, like Delayed, is whether and when a
// reward came.
//
// Statistically, an episode's rewards are samples of its arm's
// distribution, though decided at other times: a stationary bandit's
// guarantee is kept. Rewards whose absence means an outcome (no
// conversion) want a default reward at the window, so that early
// arrivals do not bias the released means; rewards missing at random do
// not. The simulator (sim.Config.Delay) and the decision service run
// this same code, so that `dpbandit run --delay` measures what delay
// costs the service.
type Pooled struct {
	p       Policy
	samples bool
	plan    Plan  // the current plan, as Next returned it when it started
	serial  int64 // the current plan's number, from 1; 0 before the first
	got     int64 // rewards fed to the current plan
	waits   Waits // the decisions, the pending ones and the delays
	arm     map[int64]int
	// counted holds, in decision order, the pending decisions counted on
	// (and, until they reach the front, some that no longer are);
	// counting[seq] is true while seq is counted on, and inflight[a] is
	// the number of arm a's.
	counted  []int64
	counting map[int64]bool
	inflight map[int]int64
	pool     map[int][]pooled // per arm, rewards that wait for the arm's next plan, oldest first
	// What a release covers, for a policy that forgets (Forgetter),
	// whose unreleased rewards are the last it saw: fed counts the
	// rewards fed, upTo those a release covers; drained holds the
	// rewards fed from a pool that no release covers yet, covered those
	// a release covered since the caller last asked (Covered), and
	// released whether one did. A pooled reward is in waiting.
	fed, upTo int64
	drained   []drain
	covered   []int64
	released  bool
	waiting   map[int64]bool
	track     bool // TrackCovered was called
}

// drain is a reward fed from a pool: its decision and its place among
// the rewards fed.
type drain struct{ Seq, At int64 }

// pooled is a reward that waits in its arm's pool, with its decision.
type pooled struct {
	Seq   int64
	Value float64
}

// NewPooled wraps p.
func NewPooled(p Policy) *Pooled {
	su, ok := p.(SampleUser)
	return &Pooled{p: p, samples: ok && su.NeedsSamples(),
		arm: map[int64]int{}, counting: map[int64]bool{}, inflight: map[int]int64{}, pool: map[int][]pooled{}, waiting: map[int64]bool{}}
}

// Policy returns the wrapped policy.
func (d *Pooled) Policy() Policy { return d.p }

// Decide returns the next decision; its reward will be learned.
func (d *Pooled) Decide() (Ticket, error) {
	if err := d.next(); err != nil {
		return Ticket{}, err
	}
	seq := d.waits.Decide()
	d.uncountOverdue()
	a := d.plan.Arm
	if d.got+d.inflight[a] >= d.plan.Count {
		a = bestReleased(d.p, a)
	}
	d.waits.Take(seq)
	d.arm[seq] = a
	d.counting[seq] = true
	d.counted = append(d.counted, seq)
	d.inflight[a]++
	return Ticket{Arm: a, Plan: d.serial, Seq: seq}, nil
}

// uncountOverdue stops counting on the decisions that are overdue.
func (d *Pooled) uncountOverdue() {
	p := d.waits.Patience()
	for len(d.counted) > 0 {
		seq := d.counted[0]
		if d.counting[seq] && d.waits.decided-seq <= p {
			return
		}
		d.uncount(seq)
		d.counted = d.counted[1:]
	}
}

func (d *Pooled) uncount(seq int64) {
	if d.counting[seq] {
		delete(d.counting, seq)
		d.inflight[d.arm[seq]]--
	}
}

// next begins the policy's next plan once the current one has its
// rewards (or before the first), and feeds it its arm's pool. It is
// called once at the start of a decision, a reward and a default, and a
// plan closed by its last reward starts its successor only at the next
// of them: so that one operation closes at most one plan and makes at
// most one plan's releases.
func (d *Pooled) next() error {
	if d.serial > 0 && d.got < d.plan.Count {
		return nil
	}
	d.plan = d.p.Next()
	d.serial++
	d.got = 0
	q := d.pool[d.plan.Arm]
	for len(q) > 0 && d.got < d.plan.Count {
		delete(d.waiting, q[0].Seq)
		if err := d.update(q[0], true); err != nil {
			return err
		}
		q = q[1:]
	}
	if len(q) == 0 {
		delete(d.pool, d.plan.Arm)
	} else {
		d.pool[d.plan.Arm] = q
	}
	return nil
}

// update passes one reward of the plan's arm to the policy (fromPool:
// out of its arm's pool), and notes what a release now covers.
func (d *Pooled) update(r pooled, fromPool bool) error {
	f := Feedback{Arm: d.plan.Arm, Count: 1, Sum: r.Value}
	if d.samples {
		f.Samples = []float64{r.Value}
	}
	if err := d.p.Update(f); err != nil {
		return err
	}
	d.got++
	fg, ok := d.p.(Forgetter)
	if !ok || !d.track {
		return nil
	}
	n, forgets := fg.Unreleased()
	if !forgets {
		return nil
	}
	if fromPool {
		d.drained = append(d.drained, drain{Seq: r.Seq, At: d.fed})
	}
	d.fed++
	if upTo := d.fed - n; upTo > d.upTo {
		// The policy's unreleased rewards are the last n it saw: a
		// release covers those before.
		d.upTo, d.released = upTo, true
		k := 0
		for k < len(d.drained) && d.drained[k].At < upTo {
			d.covered = append(d.covered, d.drained[k].Seq)
			k++
		}
		d.drained = append(d.drained[:0:0], d.drained[k:]...)
	}
	return nil
}

// TrackCovered starts the bookkeeping Covered reports (a caller that
// deletes covered rewards calls it once, before the first decision).
func (d *Pooled) TrackCovered() { d.track = true }

// Covered reports, for a policy that forgets (Forgetter) and after
// TrackCovered, whether a
// release has covered rewards since the last call, and which of those
// came out of a pool. After a release, every reward learned is covered
// but the pooled ones (Waiting) and those fed from a pool that no release
// covers yet (returned by later calls): the others may be deleted, the
// policy depends on them only through released values.
func (d *Pooled) Covered() (released bool, fromPool []int64) {
	released, fromPool = d.released, d.covered
	d.released, d.covered = false, nil
	return released, fromPool
}

// Waiting reports whether the reward of decision seq waits in a pool.
func (d *Pooled) Waiting(seq int64) bool { return d.waiting[seq] }

// check reports ErrStale unless t is a pending decision of this Pooled.
func (d *Pooled) check(t Ticket) error {
	if !t.Learns() {
		return inputf("an exploring decision's reward is not learned")
	}
	if a, ok := d.arm[t.Seq]; !ok || a != t.Arm || !d.waits.Pending(t.Seq) {
		return ErrStale
	}
	return nil
}

// Reward learns the reward r of a pending decision: now, if the current
// plan needs a reward of its arm, else when its arm's next plan starts.
// The reward must be finite; the policy clips it to its declared range.
func (d *Pooled) Reward(t Ticket, r float64) error { return d.learn(t, r, true) }

// Default learns the default reward r of a pending decision whose window
// passed: as Reward, but its delay is not one of the rewards that came.
func (d *Pooled) Default(t Ticket, r float64) error { return d.learn(t, r, false) }

func (d *Pooled) learn(t Ticket, r float64, came bool) error {
	if err := checkReward(d.check(t), r); err != nil {
		return err
	}
	d.close(t.Seq, came)
	if err := d.next(); err != nil {
		return err
	}
	if t.Arm != d.plan.Arm || d.got >= d.plan.Count {
		d.pool[t.Arm] = append(d.pool[t.Arm], pooled{t.Seq, r})
		d.waiting[t.Seq] = true
		return nil
	}
	return d.update(pooled{t.Seq, r}, false)
}

// close resolves a pending decision.
func (d *Pooled) close(seq int64, came bool) {
	d.uncount(seq)
	delete(d.arm, seq)
	d.waits.Arrive(seq, came)
	for len(d.counted) > 0 && !d.counting[d.counted[0]] {
		d.counted = d.counted[1:]
	}
}

// Drop resolves a pending decision whose reward will never come.
func (d *Pooled) Drop(t Ticket) error {
	if _, ok := d.arm[t.Seq]; !ok || !d.waits.Pending(t.Seq) {
		return ErrStale
	}
	d.close(t.Seq, false)
	return nil
}

// Seen counts among the delays the arrival of a reward that is not
// learned: an exploring decision's, or one that came after its window
// (Waits.Saw).
func (d *Pooled) Seen(t Ticket) { d.waits.Saw(t.Seq) }

// Overdue returns nothing: an overdue decision is not resolved, only no
// longer counted on (its reward is learned whenever it comes).
func (d *Pooled) Overdue() []Ticket { return nil }

// Patience returns the number of decisions after which a pending one is
// no longer counted on (Waits.Patience).
func (d *Pooled) Patience() int64 { return d.waits.Patience() }

// Pending returns the number of decisions that wait for a reward.
func (d *Pooled) Pending() int64 { return int64(len(d.arm)) }

// Pooled returns the number of rewards learned that wait in their arms'
// pools for the arms' next plans.
func (d *Pooled) Pooled() int64 {
	var n int64
	for _, q := range d.pool {
		n += int64(len(q))
	}
	return n
}

// Plan returns the current plan (arm and its number of rewards) and its
// number, 0 before the first decision.
func (d *Pooled) Plan() (Plan, int64) { return d.plan, d.serial }

// Unreleased returns how many of the rewards learned no release covers
// yet: the policy's and the pools' (Forgetter); false when the policy
// keeps raw statistics or is not a Forgetter.
func (d *Pooled) Unreleased() (int64, bool) {
	f, ok := d.p.(Forgetter)
	if !ok {
		return 0, false
	}
	n, forgets := f.Unreleased()
	return n + d.Pooled(), forgets
}
