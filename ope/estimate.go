package ope

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"

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
	RewardsClipped int        `json:"rewards_clipped,omitempty"`
	Estimate       []Estimate `json:"estimates"`
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

// Evaluate estimates the value of a fixed target policy on a log, in two
// streamed passes (open is called twice; memory does not grow with the
// log): the first fits the direct method's ridge reward model and sums
// the IPS and SNIPS terms, the second sums the DM and DR terms.
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
// from one event) is NaN, and null in JSON.
func Evaluate(open func() (io.ReadCloser, error), pol Policy, o Options) (*Result, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if pol == nil {
		return nil, &OptionError{Field: "policy", Reason: "no target policy"}
	}
	if o.Lambda == 0 {
		o.Lambda = 1e-3
	}
	var model *ridge
	var buf []float64 // the features of one action, reused
	var ips, snW, snWR, snW2 moments
	res := &Result{opts: o}
	var rmax, excess, uncovered float64
	var wmax float64 // the largest weight after the cap, and its event's line and pscore
	wmaxLine, wmaxPScore, rmaxLine := 0, 0.0, 0
	records := 0
	p := []float64(nil)
	err := scan(open, o, func(e *Event, k int) error {
		if model == nil {
			if err := CheckMemory(featureDim(e, k), k, o.MaxMemory); err != nil {
				return err
			}
			p = make([]float64, k)
			model = newRidge(featureDim(e, k), o.Lambda)
			buf = make([]float64, featureDim(e, k))
		}
		if err := pol.Probs(e, p); err != nil {
			return err
		}
		if res.actions == nil {
			res.actions = make([]actionSums, len(p))
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
					uncovered += pa / total
				}
			}
		case e.PScore == 1:
			uncovered += 1 - p[e.Action]/total
		}
		w := p[e.Action] / e.PScore
		res.MaxWeight = max(res.MaxWeight, w)
		if o.Clip > 0 && w > o.Clip {
			res.Clipped++
			excess += w - o.Clip
			w = o.Clip
		}
		if w > wmax {
			wmax, wmaxLine, wmaxPScore = w, e.Line, e.PScore
		}
		if math.Abs(e.Reward) > rmax {
			rmax, rmaxLine = math.Abs(e.Reward), e.Line
		}
		as := &res.actions[e.Action]
		as.count++
		as.rewards += e.Reward
		as.weights += w
		ips.add(w * e.Reward)
		snW.add(w)
		snWR.add(w * e.Reward)
		snW2.add(w * w)
		return model.add(features(e, k, e.Action, buf), e.Reward)
	}, &tally{&res.Skipped, &res.RewardsClipped, &records})
	if err == nil {
		err = endPass(pol, records)
	}
	if err != nil {
		return nil, err
	}
	res.Events, res.Arms = int(ips.n), len(p)
	res.Uncovered = uncovered / ips.n
	if err := model.fit(); err != nil {
		return nil, &ModelError{Reason: err.Error()}
	}
	res.ipsSum, res.wSum = ips.sum, snW.sum
	res.ClipBias = rmax * excess / ips.n
	// Second pass: DM and DR terms, and SNIPS's delta-method variance.
	snips := snWR.sum / snW.sum
	var dm, dr moments
	var snVar float64
	// The effective sample size is computed on the weights over the
	// largest, w/wmax in [0, 1]: their squares do not underflow to 0
	// when the weights are tiny (the largest term is 1).
	var ess1, ess2 float64
	o.Arms = res.Arms
	err = scan(open, o, func(e *Event, k int) error {
		if err := pol.Probs(e, p); err != nil {
			return err
		}
		w := min(p[e.Action]/e.PScore, clipOr(o.Clip))
		q := 0.0
		for a, pa := range p {
			if pa > 0 {
				q += pa * model.predict(features(e, k, a, buf))
			}
		}
		dm.add(q)
		dr.add(q + w*(e.Reward-model.predict(features(e, k, e.Action, buf))))
		if w > 0 { // SNIPS is NaN when every weight is 0
			snVar += w * w * (e.Reward - snips) * (e.Reward - snips)
		}
		if wmax > 0 {
			ess1 += w / wmax
			ess2 += (w / wmax) * (w / wmax)
		}
		return nil
	}, &tally{new(int), new(int), &records})
	if err == nil {
		err = endPass(pol, records)
	}
	if err != nil {
		return nil, err
	}
	if ess2 > 0 { // 0 when the log never takes an action the target plays
		res.ESS = ess1 * ess1 / ess2
	}
	snSE := math.NaN() // a standard error needs two events, SNIPS's too
	if ips.n >= 2 {
		snSE = math.Sqrt(snVar) / snW.sum
	}
	// Weights of pscores near 0, uncapped, make sums that float64
	// cannot hold: refused, rather than printed as infinities.
	for _, x := range []float64{ips.sum, ips.s, snW.sum, snWR.sum, snVar, dm.sum, dr.sum, dr.s, res.ESS} {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			if math.Log(wmax) >= math.Log(rmax) { // the larger factor names the line
				return nil, &LogError{Line: wmaxLine, Reason: fmt.Sprintf("the weight pi/pscore = %.3g of pscore %v makes the estimators' sums overflow float64 (the largest |reward| is %.3g): cap the weights (--clip M)", wmax, wmaxPScore, rmax)}
			}
			return nil, &LogError{Line: rmaxLine, Reason: fmt.Sprintf("the reward %.3g makes the estimators' sums overflow float64 (the largest weight is %.3g): rescale the rewards and their range", rmax, wmax)}
		}
	}
	res.Estimate = []Estimate{
		estimate("dm", dm.mean(), math.NaN()),
		estimate("ips", ips.mean(), ips.se()),
		estimate("snips", snips, snSE),
		estimate("dr", dr.mean(), dr.se()),
	}
	return res, nil
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
func scan(open func() (io.ReadCloser, error), o Options, f func(e *Event, k int) error, t *tally) error {
	rc, err := open()
	if err != nil {
		return err
	}
	defer rc.Close()
	rd, err := NewReader(rc, o.Arms)
	if err != nil {
		return err
	}
	shape := [2]int{-1}
	n := 0
	for {
		e, err := rd.Next()
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
		if r := o.Rewards; r != nil && (e.Reward < r.Lo || e.Reward > r.Hi) {
			e.Reward = min(max(e.Reward, r.Lo), r.Hi)
			*t.clipped++
		}
		if err := f(&e, rd.Arms()); err != nil {
			if me := (*MemoryError)(nil); errors.As(err, &me) {
				return err // the model's, not the line's
			}
			return &LogError{Line: e.Line, Reason: err.Error()}
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
// (records may be nil).
type tally struct{ skipped, clipped, records *int }

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

func (m *ridge) add(x []float64, r float64) error {
	if len(x) != m.b.Len() {
		return fmt.Errorf("features of dimension %d, the model's are %d", len(x), m.b.Len())
	}
	v := mat.NewVecDense(len(x), x)
	m.g.SymRankOne(m.g, 1, v)
	m.b.AddScaledVec(m.b, r, v)
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

func (m *ridge) predict(x []float64) float64 {
	return mat.Dot(mat.NewVecDense(len(x), x), m.theta)
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
