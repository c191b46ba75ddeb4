package ope

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/dpbandit/dpbandit/mechanism"
)

// Options configures an evaluation.
type Options struct {
	// Arms is K (0: from the log, see NewReader).
	Arms int
	// Clip caps the importance weights pi/pscore at Clip (0: no cap). A
	// cap lowers the variance and biases IPS and DR; Estimate.ClipBias
	// bounds the bias of IPS from the weights it cut.
	Clip float64
	// Lambda is the direct method's ridge regulariser (0: 1e-3).
	Lambda float64
	// Rewards, when set, is the declared reward range: rewards outside
	// are clipped into it (Result.RewardsClipped counts them). A private
	// release needs it.
	Rewards *mechanism.Bounds
	// MaxMemory bounds, in bytes, the direct method's reward model,
	// checked before it is allocated (CheckMemory; 0: no bound).
	MaxMemory int64
	// MaxEventsPerUnit, when positive, keeps at most that many events
	// with a reward of each unit (its unit_id; the first in the log's
	// order, the others dropped and counted in
	// Result.DroppedOverUnitCap), and a private release is calibrated to
	// the replacement of a unit's events, not one event's (Private). The
	// evaluation then holds a count per unit.
	MaxEventsPerUnit int
	// Reading is how the log's records are read (its format, detected
	// when not named, and the hashing of dsjson's and obp's features).
	Reading Reading
	// redecode makes EvaluateAll's second pass decode the log again
	// rather than read its spill (for the tests of both paths).
	redecode bool
}

// OptionError is an Options field (or the target) that Evaluate or
// ParsePolicy refuses, named as its flag is: arms, clip, lambda,
// rewards, max-memory, policy. Reason says why without the package's
// prefix; Err, when set, is the cause (a file's error).
type OptionError struct {
	Field  string
	Reason string
	Err    error
}

func (e *OptionError) Error() string { return "ope: " + e.Message() }

// Message is the error without the package's name.
func (e *OptionError) Message() string { return e.Field + ": " + e.Reason }

// Unwrap returns the cause, if any.
func (e *OptionError) Unwrap() error { return e.Err }

// Validate refuses, as an *OptionError, what would otherwise be read as a
// default or give a wrong number: a negative K, a cap or ridge that is
// negative, NaN or infinite, a reward range that is not one. Evaluate
// calls it; a caller may call it first, to refuse options before any
// log is read.
func (o Options) Validate() error {
	finite := func(x float64) bool { return x >= 0 && !math.IsInf(x, 1) }
	switch {
	case o.Arms < 0:
		return &OptionError{Field: "arms", Reason: fmt.Sprintf("must be positive (0: from the log), got %d", o.Arms)}
	case !finite(o.Clip):
		return &OptionError{Field: "clip", Reason: fmt.Sprintf("must be positive and finite (0: no cap), got %v", o.Clip)}
	case o.Clip != 0 && o.Clip < 1:
		// A weight of 1 is an event the target plays as the logging
		// policy did: a cap below it biases even the logging policy's
		// own estimate, and tiny caps leave weights whose squares
		// float64 cannot hold.
		return &OptionError{Field: "clip", Reason: fmt.Sprintf("must be at least 1, the weight of an event the target plays as the logging policy did (0: no cap), got %v", o.Clip)}
	case o.MaxMemory < 0:
		return &OptionError{Field: "max-memory", Reason: fmt.Sprintf("must be positive (0: no bound), got %d", o.MaxMemory)}
	case o.MaxEventsPerUnit < 0:
		return &OptionError{Field: "max-events-per-unit", Reason: fmt.Sprintf("must be positive (0: no bound), got %d", o.MaxEventsPerUnit)}
	case !finite(o.Lambda):
		return &OptionError{Field: "lambda", Reason: fmt.Sprintf("must be positive and finite (0: 1e-3), got %v", o.Lambda)}
	}
	if o.Rewards != nil {
		if err := o.Rewards.Validate(); err != nil {
			return &OptionError{Field: "rewards", Reason: err.Error()}
		}
	}
	return nil
}

// Estimate is one estimator's value of the target policy.
type Estimate struct {
	Name string `json:"estimator"`
	// Value is the estimated mean reward of the target policy; SE its
	// standard error, and [Lo, Hi] the normal 95% interval Value +-
	// 1.96 SE.
	Value float64 `json:"value"`
	SE    float64 `json:"se"`
	Lo    float64 `json:"ci95_lo"`
	Hi    float64 `json:"ci95_hi"`
}

// Result is an evaluation: every estimator's value, on the events with a
// reward.
type Result struct {
	Events int `json:"events"`
	// Skipped counts the logged decisions without a reward.
	Skipped int `json:"skipped_without_reward"`
	Arms    int `json:"arms"`
	// ESS is the effective sample size of the (clipped) weights,
	// (sum w)^2 / sum w^2: the number of on-policy events the weighted
	// estimates are worth.
	ESS float64 `json:"effective_sample_size"`
	// MaxWeight is the largest weight pi/pscore before clipping.
	MaxWeight float64 `json:"max_weight"`
	// Uncovered is the target's mean probability on actions the
	// logging policy never takes (by action_prob, or, without it, the
	// other actions of a pscore of 1): IPS and DR see no reward of
	// theirs and are biased by up to that times the reward range,
	// whatever the effective sample size.
	Uncovered float64 `json:"uncovered_mass"`
	// Clipped counts the events whose weight was capped, and ClipBias
	// bounds |bias| of IPS from the cut: max |r| times the mean of the
	// weight removed, (w - Clip)+.
	Clipped  int     `json:"clipped"`
	ClipBias float64 `json:"clip_bias_bound"`
	// RewardsClipped counts the rewards clipped into Options.Rewards.
	RewardsClipped int `json:"rewards_clipped,omitempty"`
	// DroppedOverUnitCap counts the events with a reward dropped because
	// their unit had Options.MaxEventsPerUnit events before them.
	DroppedOverUnitCap int        `json:"dropped_over_unit_cap,omitempty"`
	Estimate           []Estimate `json:"estimates"`
	// The sums a private release is computed from (Private): the IPS
	// terms' and the weights' sums, and per action a its logged events'
	// count, reward sum and weight sum, and the target's total
	// probability sum_i pi(a | x_i).
	ipsSum, wSum float64
	actions      []actionSums
	// opts are the options the sums were computed with (Arms as given).
	opts Options
}

// actionSums are one action's sums over a log (Result).
type actionSums struct{ count, rewards, weights, target float64 }

// Evaluate estimates the value of one fixed target policy on a log:
// EvaluateAll with one target.
func Evaluate(open func() (io.ReadCloser, error), pol Policy, o Options) (*Result, error) {
	res, err := EvaluateAll(open, []Policy{pol}, o)
	if err != nil {
		return nil, err
	}
	return res[0], nil
}

// EvaluateAll estimates the values of fixed target policies on a log, in
// two streamed passes for all of them (memory grows with the model and
// the number of targets, not with the log): the first decodes each
// record, fits the direct method's ridge reward model (once: it does
// not depend on the target) and sums every target's IPS and SNIPS
// terms, the second sums the DM and DR terms, which need the model
// fitted on the whole log, and SNIPS's variance, which needs its value.
// The first pass keeps its events in a temporary binary file (8 bytes a
// number, removed at the end) that the second reads back, so that the
// log is decoded once; an event of more than 64 numbers (a decision set
// of hashed features), or no temporary file, makes the second pass
// decode the log again (open is then called twice). Result i is
// pols[i]'s.
//
// With w_i = pi(a_i | x_i) / pscore_i (capped at Options.Clip):
//
//	IPS   = (1/n) sum w_i r_i
//	SNIPS = sum w_i r_i / sum w_i
//	DM    = (1/n) sum_i sum_a pi(a | x_i) q(x_i, a)
//	DR    = DM + (1/n) sum_i w_i (r_i - q(x_i, a_i))
//
// where q is the ridge regression of the reward on features of (context,
// action): the action's own vector and an intercept for a decision-set
// context, e_a (x) (x, 1) for a feature vector, e_a without context. Standard errors are the
// terms' standard deviation over sqrt(n) (for SNIPS, the delta method);
// DM has none: its error is the model's bias, which no standard error
// of its terms measures (conditional on the model, a log without
// contexts would give DM a standard error of 0). A number that is
// undefined (SNIPS of a target the log never plays, a standard error
// from one event) is NaN, and null in JSON. An error of any target
// stops them all.
func EvaluateAll(open func() (io.ReadCloser, error), pols []Policy, o Options) ([]*Result, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if len(pols) == 0 {
		return nil, &OptionError{Field: "policy", Reason: "no target policy"}
	}
	for _, pol := range pols {
		if pol == nil {
			return nil, &OptionError{Field: "policy", Reason: "no target policy"}
		}
	}
	if o.Lambda == 0 {
		o.Lambda = 1e-3
	}
	ev := &evaluation{o: o, ts: make([]*target, len(pols))}
	for i, pol := range pols {
		ev.ts[i] = &target{pol: pol, res: &Result{opts: o}}
	}
	defer func() { ev.sp.close() }()
	var skipped, clipped, dropped, records int
	err := scan(open, o, true, ev.first, &tally{&skipped, &clipped, &records, &dropped})
	if err == nil {
		err = endPasses(ev.ts, records)
	}
	if err != nil {
		return nil, err
	}
	if err := ev.model.fit(); err != nil {
		return nil, &ModelError{Reason: err.Error()}
	}
	// Second pass: DM and DR terms, and SNIPS's delta-method variance.
	for _, t := range ev.ts {
		t.snips = t.snWR.sum / t.snW.sum
	}
	o.Arms = len(ev.ts[0].p)
	ev.q = make([]float64, o.Arms)
	if ev.sp != nil && ev.sp.err == nil {
		err = ev.sp.replay(o.Arms, ev.second)
	} else {
		err = scan(open, o, true, ev.second, &tally{new(int), new(int), &records, new(int)})
	}
	if err == nil {
		err = endPasses(ev.ts, records)
	}
	if err != nil {
		return nil, err
	}
	out := make([]*Result, len(ev.ts))
	for i, t := range ev.ts {
		t.res.Skipped, t.res.RewardsClipped, t.res.DroppedOverUnitCap = skipped, clipped, dropped
		if out[i], err = t.result(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// evaluation is EvaluateAll's state: the targets' sums, the reward
// model, and the first pass's spill.
type evaluation struct {
	o     Options
	ts    []*target
	model *ridge
	buf   []float64 // the features of one action, reused
	q     []float64 // the model's prediction of each action, reused
	sp    *spill    // the events, for the second pass (nil: decode the log again)
}

// first adds an event to the first pass: the model, every target's
// weighted sums, and the spill.
func (ev *evaluation) first(e *Event, k int) error {
	if ev.model == nil {
		d := featureDim(e, k)
		if err := CheckMemory(d, k, ev.o.MaxMemory); err != nil {
			return err
		}
		if !ev.o.redecode {
			ev.sp = newSpill(e, k)
		}
		ev.model = newRidge(d, ev.o.Lambda)
		ev.buf = make([]float64, d)
		for _, t := range ev.ts {
			t.p = make([]float64, k)
			t.res.actions = make([]actionSums, k)
		}
	}
	for _, t := range ev.ts {
		if err := t.first(e, ev.o.Clip); err != nil {
			return err
		}
	}
	if ev.sp != nil {
		ev.sp.write(e)
	}
	return ev.model.add(features(e, k, e.Action, ev.buf), e.Reward)
}

// second adds an event to the second pass: the model's prediction of
// each action, once, then every target's model terms.
func (ev *evaluation) second(e *Event, k int) error {
	for a := range ev.q {
		ev.q[a] = ev.model.predict(features(e, k, a, ev.buf))
	}
	for _, t := range ev.ts {
		if err := t.second(e, ev.q, ev.o.Clip); err != nil {
			return err
		}
	}
	return nil
}

// target is one target policy's sums over a log (EvaluateAll).
type target struct {
	pol Policy
	res *Result
	p   []float64 // the target's probabilities for the event, reused
	// The first pass's sums.
	ips, snW, snWR, snW2    moments
	rmax, excess, uncovered float64
	// wmax is the largest weight after the cap, wmaxLine and wmaxPScore
	// its event's line and pscore; rmaxLine is the largest |reward|'s.
	wmax, wmaxPScore   float64
	wmaxLine, rmaxLine int
	// The second pass's.
	snips      float64
	dm, dr     moments
	snVar      float64
	ess1, ess2 float64
}

// first adds e to the first pass's sums.
func (t *target) first(e *Event, clip float64) error {
	p, res := t.p, t.res
	if err := t.pol.Probs(e, p); err != nil {
		return err
	}
	// The target's probabilities as a distribution: a logged
	// action_prob may sum to 1 within 1e-6, and DR's private
	// sensitivity needs sum_a pi(a | x) q(a) in [lo, hi].
	total := 0.0
	for _, pa := range p {
		total += pa
	}
	for a, pa := range p {
		res.actions[a].target += pa / total
	}
	switch {
	case e.Probs != nil:
		for a, pa := range p {
			if e.Probs[a] == 0 {
				t.uncovered += pa / total
			}
		}
	case e.PScore == 1:
		t.uncovered += 1 - p[e.Action]/total
	}
	w := p[e.Action] / e.PScore
	res.MaxWeight = max(res.MaxWeight, w)
	if clip > 0 && w > clip {
		res.Clipped++
		t.excess += w - clip
		w = clip
	}
	if w > t.wmax {
		t.wmax, t.wmaxLine, t.wmaxPScore = w, e.Line, e.PScore
	}
	if math.Abs(e.Reward) > t.rmax {
		t.rmax, t.rmaxLine = math.Abs(e.Reward), e.Line
	}
	as := &res.actions[e.Action]
	as.count++
	as.rewards += e.Reward
	as.weights += w
	t.ips.add(w * e.Reward)
	t.snW.add(w)
	t.snWR.add(w * e.Reward)
	t.snW2.add(w * w)
	return nil
}

// second adds e to the second pass's sums, q holding the model's
// prediction of each action in e's context.
func (t *target) second(e *Event, q []float64, clip float64) error {
	p := t.p
	if err := t.pol.Probs(e, p); err != nil {
		return err
	}
	w := min(p[e.Action]/e.PScore, clipOr(clip))
	dm := 0.0
	for a, pa := range p {
		if pa > 0 {
			dm += pa * q[a]
		}
	}
	t.dm.add(dm)
	t.dr.add(dm + w*(e.Reward-q[e.Action]))
	if w > 0 { // SNIPS is NaN when every weight is 0
		t.snVar += w * w * (e.Reward - t.snips) * (e.Reward - t.snips)
	}
	// The effective sample size is computed on the weights over the
	// largest, w/wmax in [0, 1]: their squares do not underflow to 0
	// when the weights are tiny (the largest term is 1).
	if t.wmax > 0 {
		t.ess1 += w / t.wmax
		t.ess2 += (w / t.wmax) * (w / t.wmax)
	}
	return nil
}

// result is the target's Result from its sums.
func (t *target) result() (*Result, error) {
	res := t.res
	res.Events, res.Arms = int(t.ips.n), len(t.p)
	res.Uncovered = t.uncovered / t.ips.n
	res.ipsSum, res.wSum = t.ips.sum, t.snW.sum
	res.ClipBias = t.rmax * t.excess / t.ips.n
	if t.ess2 > 0 { // 0 when the log never takes an action the target plays
		res.ESS = t.ess1 * t.ess1 / t.ess2
	}
	snSE := math.NaN() // a standard error needs two events, SNIPS's too
	if t.ips.n >= 2 {
		snSE = math.Sqrt(t.snVar) / t.snW.sum
	}
	// Weights of pscores near 0, uncapped, make sums that float64
	// cannot hold: refused, rather than printed as infinities.
	for _, x := range []float64{t.ips.sum, t.ips.s, t.snW.sum, t.snWR.sum, t.snVar, t.dm.sum, t.dr.sum, t.dr.s, res.ESS} {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			if math.Log(t.wmax) >= math.Log(t.rmax) { // the larger factor names the line
				return nil, &LogError{Line: t.wmaxLine, Reason: fmt.Sprintf("the weight pi/pscore = %.3g of pscore %v makes the estimators' sums overflow float64 (the largest |reward| is %.3g): cap the weights (--clip M)", t.wmax, t.wmaxPScore, t.rmax)}
			}
			return nil, &LogError{Line: t.rmaxLine, Reason: fmt.Sprintf("the reward %.3g makes the estimators' sums overflow float64 (the largest weight is %.3g): rescale the rewards and their range", t.rmax, t.wmax)}
		}
	}
	res.Estimate = []Estimate{
		estimate("dm", t.dm.mean(), math.NaN()),
		estimate("ips", t.ips.mean(), t.ips.se()),
		estimate("snips", t.snips, snSE),
		estimate("dr", t.dr.mean(), t.dr.se()),
	}
	return res, nil
}

// endPasses tells the targets that a pass over a log of that many
// records ended.
func endPasses(ts []*target, records int) error {
	for _, t := range ts {
		if err := endPass(t.pol, records); err != nil {
			return err
		}
	}
	return nil
}

// passEnder is a target policy that checks, after a pass over the log,
// that it fits the log's number of records (Dist: one row per record).
type passEnder interface {
	EndPass(records int) error
}

// endPass tells pol that a pass over a log of that many records ended.
func endPass(pol Policy, records int) error {
	if e, ok := pol.(passEnder); ok {
		return e.EndPass(records)
	}
	return nil
}

func clipOr(c float64) float64 {
	if c > 0 {
		return c
	}
	return math.Inf(1)
}

// estimateJSON is an Estimate as JSON, where a number that is not
// finite is null (JSON has no NaN).
type estimateJSON struct {
	Name  string   `json:"estimator"`
	Value *float64 `json:"value"`
	SE    *float64 `json:"se"`
	Lo    *float64 `json:"ci95_lo"`
	Hi    *float64 `json:"ci95_hi"`
}

// MarshalJSON writes the estimate with null for a number that is not
// finite.
func (e Estimate) MarshalJSON() ([]byte, error) {
	num := func(x float64) *float64 {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil
		}
		return &x
	}
	return json.Marshal(estimateJSON{e.Name, num(e.Value), num(e.SE), num(e.Lo), num(e.Hi)})
}

// UnmarshalJSON reads what MarshalJSON writes, null as NaN.
func (e *Estimate) UnmarshalJSON(b []byte) error {
	var v estimateJSON
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	num := func(p *float64) float64 {
		if p == nil {
			return math.NaN()
		}
		return *p
	}
	*e = Estimate{Name: v.Name, Value: num(v.Value), SE: num(v.SE), Lo: num(v.Lo), Hi: num(v.Hi)}
	return nil
}

func estimate(name string, v, se float64) Estimate {
	return Estimate{Name: name, Value: v, SE: se, Lo: v - 1.96*se, Hi: v + 1.96*se}
}

// scan streams a log's events to f, checking that every event has the
// first one's kind of context; skipped counts the events without a
// reward.
// Rewards are clipped into o.Rewards when it is set; t counts the events
// skipped and the rewards clipped.
// With reuse, an event's slices (X, Actions, Probs) are the Reader's,
// overwritten by the next event: f must not keep them.
func scan(open func() (io.ReadCloser, error), o Options, reuse bool, f func(e *Event, k int) error, t *tally) error {
	rc, err := open()
	if err != nil {
		return err
	}
	defer rc.Close()
	rd, err := NewReaderWith(rc, o.Arms, o.Reading)
	if err != nil {
		return err
	}
	rd.reuse = reuse
	var units map[string]int // events kept per unit
	if o.MaxEventsPerUnit > 0 {
		rd.wantUnit, units = true, map[string]int{}
	}
	shape := [2]int{-1}
	n := 0
	var e Event // one, not one a record: f takes its address
	for {
		e, err = rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		kind := 0 // no context, a vector, a decision set
		if e.X != nil {
			kind = 1
		} else if e.Actions != nil {
			kind = 2
		}
		if sh := [2]int{kind, featureDim(&e, rd.Arms())}; shape[0] < 0 {
			shape = sh
		} else if sh != shape {
			return &LogError{Line: e.Line, Reason: "the context's shape differs from the first event's"}
		}
		if units != nil {
			if e.Unit == "" {
				return &LogError{Line: e.Line, Reason: "no unit_id: bounding each unit's events (--max-events-per-unit) needs every event's unit"}
			}
			if units[e.Unit] >= o.MaxEventsPerUnit {
				*t.dropped++
				continue
			}
			units[e.Unit]++
		}
		if r := o.Rewards; r != nil && (e.Reward < r.Lo || e.Reward > r.Hi) {
			e.Reward = min(max(e.Reward, r.Lo), r.Hi)
			*t.clipped++
		}
		if err := f(&e, rd.Arms()); err != nil {
			return lineError(&e, err)
		}
		n++
	}
	*t.skipped = rd.Skipped
	if t.records != nil {
		*t.records = rd.records
	}
	if n == 0 {
		return ErrNoEvents
	}
	return nil
}

// tally counts what scan left out or changed, and the log's records
// (records may be nil): the events without a reward, the rewards
// clipped, the records, the events dropped over a unit's bound.
type tally struct{ skipped, clipped, records, dropped *int }

// featureDim is the dimension of the reward model's features.
func featureDim(e *Event, k int) int {
	switch {
	case e.Actions != nil:
		return len(e.Actions[0]) + 1
	case e.X != nil:
		return k * (len(e.X) + 1)
	}
	return k
}

// features returns the reward model's features of action a in e's
// context (see Evaluate), written into buf (of featureDim's length, or
// nil to allocate): the action's vector and 1 for a decision set, e_a
// (x) (x, 1) for a feature vector, e_a without context.
func features(e *Event, k, a int, buf []float64) []float64 {
	if buf == nil {
		buf = make([]float64, featureDim(e, k))
	}
	if e.Actions != nil {
		copy(buf, e.Actions[a])
		buf[len(buf)-1] = 1
		return buf
	}
	clear(buf)
	if e.X == nil {
		buf[a] = 1
		return buf
	}
	w := len(e.X) + 1
	copy(buf[a*w:], e.X)
	buf[a*w+w-1] = 1
	return buf
}

// ridge is a streamed ridge regression: the Gram matrix and moment vector
// are summed, then solved once.
type ridge struct {
	g     *mat.SymDense
	b     *mat.VecDense
	theta *mat.VecDense
}

func newRidge(d int, lambda float64) *ridge {
	g := mat.NewSymDense(d, nil)
	for i := range d {
		g.SetSym(i, i, lambda)
	}
	return &ridge{g: g, b: mat.NewVecDense(d, nil)}
}

// add adds the features x of an event of reward r: G += x x^T, b += r x,
// in place, as BLAS's dsyr and daxpy would (the same operations in the
// same order, so the same numbers), skipping the rows of x's zeros
// (most of a feature vector's: all but its action's block).
func (m *ridge) add(x []float64, r float64) error {
	d := m.b.Len()
	if len(x) != d {
		return fmt.Errorf("features of dimension %d, the model's are %d", len(x), d)
	}
	g := m.g.RawSymmetric() // upper triangle, row-major
	b := m.b.RawVector().Data
	for i, xi := range x {
		if xi == 0 {
			continue
		}
		row := g.Data[i*g.Stride+i : i*g.Stride+d]
		for j, xj := range x[i:] {
			row[j] += xj * xi
		}
		b[i] += r * xi
	}
	return nil
}

// ModelError is a log on which the direct method's reward model cannot
// be fit: its contexts' Gram matrix overflows float64 (contexts of 1e200
// square to infinity) or is not positive definite.
type ModelError struct{ Reason string }

func (e *ModelError) Error() string { return "ope: " + e.Message() }

// Message is the error without the package's name.
func (e *ModelError) Message() string { return "the reward model cannot be fit: " + e.Reason }

func (m *ridge) fit() error {
	for i := range m.b.Len() {
		if v := m.g.At(i, i); math.IsInf(v, 0) || math.IsNaN(v) {
			return fmt.Errorf("feature %d's sum of squares is %v: the contexts are too large for float64 (scale them)", i, v)
		}
	}
	var ch mat.Cholesky
	if !ch.Factorize(m.g) {
		return errors.New("its Gram matrix is not positive definite")
	}
	m.theta = mat.NewVecDense(m.b.Len(), nil)
	return ch.SolveVecTo(m.theta, m.b)
}

// predict is <x, theta> (as mat.Dot computes it, without its
// allocation).
func (m *ridge) predict(x []float64) float64 {
	return floats.Dot(x, m.theta.RawVector().Data)
}

// moments accumulates a mean and variance (Welford).
type moments struct{ n, sum, m, s float64 }

func (m *moments) add(x float64) {
	m.n++
	m.sum += x
	d := x - m.m
	m.m += d / m.n
	m.s += d * (x - m.m)
}

func (m *moments) mean() float64 { return m.m }

// se is the standard error of the mean.
func (m *moments) se() float64 {
	if m.n < 2 {
		return math.NaN()
	}
	return math.Sqrt(m.s / (m.n - 1) / m.n)
}
