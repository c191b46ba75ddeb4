package engine

import (
	"errors"
	"math"

	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/service/define"
	"github.com/dpbandit/dpbandit/service/store"
)

// Apprentice mode (a Personalizer experiment's learningMode
// "Apprentice"). Each rank's baseline is its first eligible action (the
// action the application would show without Personalizer, as the
// specification's RankRequest says); each slot of a slate's is its
// baselineAction, or its first eligible action when a slot before it
// was given that (define.Baseline). Every slot is a decision of its
// own, served, learned and tested as a rank's, and one test, fed by the
// ranks' and the slots' rewards alike, decides the experiment's switch.
// While in apprentice mode:
//
//   - The logging policy is the baseline with exploration: the baseline
//     with probability 1 - p + p/k, every other eligible action with
//     p/k (p = ExploreProb(e), the coin's exact probability; k the
//     eligible actions), so that every propensity in the ranking and the
//     log is exact. The baseline is not served with probability 1: then
//     no estimate from the log could ever show another policy better
//     (the inverse-propensity estimate of a policy pi counts the rewards
//     where pi agrees with the baseline, never more than the baseline's
//     own).
//
//   - The learner learns from what is served: it takes the served action
//     (a decision set of that action alone), so that V and its reward
//     statistic hold the served action's vector and reward. No
//     importance weight enters its update: its ridge estimate, and the
//     confidence set around it (Abbasi-Yadkori, Pal and Szepesvari 2011,
//     Theorem 2), hold for any sequence of actions chosen from the past,
//     as the logging policy's are; weighting would only add variance.
//     Its privacy is unchanged: one reward enters one release.
//
//   - The test: for each learned reward r of an apprentice decision, with
//     pi the learner's greedy choice at the decision (Greedy: the
//     released estimate's argmax, post-processing), b the baseline and a
//     the served action of propensity p_a,
//
//     d = r (min(C, 1/p_a) [a = pi] - [a = b]/p_a)   (0 when pi = b),
//
//     an inverse-propensity estimate of the value of pi minus the
//     baseline's, the weight of pi clipped at C = apprenticeClip (which
//     only lowers it: rewards are >= 0). The d of the rewards learned
//     since the last block are summed, and the block's sum released by
//     the Gaussian mechanism (Bun and Steinke 2016, Proposition 1.6;
//     sensitivity C: a reward moves one d by at
//     most max(C, 1/p_b) = C, as p_b >= 1 - p >= 1/2), at the learner's
//     first release once the block holds max(64, N/2) rewards (N those in
//     released blocks): O(log N) blocks. Each reward enters one block,
//     so the test costs a reward rho-zCDP, the experiment's rho, and an
//     apprentice reward debits its unit twice the learner's cost.
//
//   - The switch: after the j-th block, with S the released sums' total
//     over N rewards, m blocks of noise sigma, V the sum of the rewards'
//     variance bounds min(C, 1/p_pi) + 1/p_b and M the largest bound
//     1 + max(min(C, 1/p_pi), 1/p_b) on |d - E d| (both from the
//     decisions only), the lower confidence bound
//
//     LCB = (S - sqrt(2 m sigma^2 ln(2/delta_j)) - sqrt(2 V' L) - (2/3) M' L) / N,
//     L = ln(2 G / delta_j), delta_j = 6 delta / (pi^2 j^2),
//
//     (Freedman's inequality, Freedman 1975 Theorem 1.6, for the
//     martingale differences d - E d,
//     with V' and M' the grid values (9/8)^i just above V and M, G the
//     grid's points, a union over them; the Gaussian tail for the noise)
//     holds, with probability 1 - delta over every check, below the
//     average value difference of the greedy policies over the counted
//     decisions. Once LCB > 0 the experiment serves the learner's
//     choices (with exploration, as online). The estimate S/N, LCB, N,
//     the blocks and the switch are in the state (Apprentice).
//
// Everything the test shows is post-processing of its releases and of
// counts and propensities (the decisions, which the service does not
// protect); the block's raw sum is never shown.
const (
	// apprenticeClip is C, the clip on the learner's inverse propensity.
	apprenticeClip = 20.0
	// apprenticeDelta is delta, the test's error probability over every
	// check.
	apprenticeDelta = 0.05
	// apprenticeMinBlock is the fewest rewards in a block.
	apprenticeMinBlock = 64
	// apprenticeGrid is the ratio of the grid of V' and M'; apprenticeGridPoints
	// its points (from 1 to (9/8)^600, far above any V).
	apprenticeGrid       = 9.0 / 8
	apprenticeGridPoints = 600
)

// Apprentice is what the state shows of apprentice mode.
type Apprentice struct {
	// Switched says the test passed (at operation SwitchedAt): the
	// learner's choices are served.
	Switched   bool  `json:"switched"`
	SwitchedAt int64 `json:"switched_at_operation,omitempty"`
	// Rewards counts the rewards in released blocks, Blocks the blocks.
	Rewards int64 `json:"rewards"`
	Blocks  int64 `json:"blocks"`
	// Estimate is the released estimate of the greedy policies' value
	// minus the baseline's (S/N), LCB its lower confidence bound at the
	// last check (level 1 - Delta over every check).
	Estimate float64 `json:"estimate"`
	LCB      float64 `json:"lcb"`
	Delta    float64 `json:"delta"`
}

// apprentice is the test's state (in snapshots).
type apprentice struct {
	On         bool
	Switched   bool
	SwitchedAt int64
	N, Blocks  int64
	Sum, Var   float64 // released sums' total; variance bounds of the rewards in released blocks
	Max        float64 // the largest bound on |d - E d|
	LCB        float64
	// the open block: raw, never shown
	BlockN             int64
	BlockSum, BlockVar float64
	BlockMax           float64
	// Greedy holds the learner's greedy choice of each pending
	// apprentice decision, by its operation.
	Greedy map[int64]greedyChoice
}

// greedyChoice is the learner's greedy choice Pi at an apprentice
// decision among K eligible actions.
type greedyChoice struct{ Pi, K int }

// serving reports whether the baseline is served.
func (a *apprentice) serving() bool { return a.On && !a.Switched }

// setMode starts (or stops) the test when the learning mode changes,
// and starts it over when the learner does (reset).
func (x *Experiment) setMode(mode string, reset bool) {
	on := mode == define.ModeApprentice
	if on != x.appr.On || on && reset {
		x.appr = apprentice{On: on, Greedy: map[int64]greedyChoice{}}
	}
}

// errNoGreedy is returned when a learner has no greedy choice to test.
var errNoGreedy = errors.New("service: the learner has no greedy choice for apprentice mode")

// greedier is a learner that ranks by its released estimate.
type greedier interface {
	Greedy(actions [][]float64) (int, error)
}

// takeApprentice is take in apprentice mode: the served action drawn
// from the baseline b (the index of the decision's baseline in set:
// define.Baseline) with exploration, the learner made to take it, its
// greedy choice kept for the test, and a block released after a
// release of the learner. The caller holds x.mu.
func (x *Experiment) takeApprentice(set [][]float64, b int) (bandit.Ticket, float64, int, error) {
	k := len(set)
	arm := x.aroundBaseline(k, b)
	released := x.tape.rpos + len(x.tape.newRel)
	tk, err := x.pol.Decide([][]float64{set[arm]})
	if err != nil {
		return tk, 0, b, err
	}
	tk.Arm = arm
	g, ok := x.pol.Policy().(greedier)
	if !ok {
		return tk, 0, b, errNoGreedy
	}
	pi, err := g.Greedy(set)
	if err != nil {
		return tk, 0, b, err
	}
	if x.appr.Greedy == nil {
		x.appr.Greedy = map[int64]greedyChoice{}
	}
	x.appr.Greedy[x.seq] = greedyChoice{pi, k}
	if x.tape.rpos+len(x.tape.newRel) > released && x.appr.BlockN >= max(apprenticeMinBlock, x.appr.N/2) {
		if err := x.releaseBlock(); err != nil {
			return tk, 0, b, err
		}
	}
	return tk, x.set.eff.PropensityOf(arm, b, k), b, nil
}

// apprenticeReward counts a learned reward r of rec in the open block;
// learn says it was learned. Every settled reward forgets its greedy
// choice. The caller holds x.mu.
func (x *Experiment) apprenticeReward(rec *record, r float64, learn bool) {
	g, ok := x.appr.Greedy[rec.Seq]
	delete(x.appr.Greedy, rec.Seq)
	if !ok || !learn || !x.appr.serving() {
		return
	}
	x.appr.BlockN++
	pi, k := g.Pi, g.K
	if pi == rec.PolicyArm {
		return // d = 0, whatever r
	}
	at, _ := x.def.Effective(rec.Seq) // the exploration it was decided under
	pPi, pB := at.PropensityOf(pi, rec.PolicyArm, k), at.PropensityOf(rec.PolicyArm, rec.PolicyArm, k)
	wPi := min(apprenticeClip, 1/pPi)
	d := 0.0
	switch rec.Arm {
	case pi:
		d = r * wPi
	case rec.PolicyArm:
		d = -r / pB
	}
	x.appr.BlockSum += d
	x.appr.BlockVar += wPi + 1/pB
	x.appr.BlockMax = max(x.appr.BlockMax, 1+max(wPi, 1/pB))
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
	for seq := range x.appr.Greedy {
		if !pending[seq] {
			delete(x.appr.Greedy, seq)
		}
	}
}

// doublesDebit reports whether a reward of rec enters the test, whose
// release costs it the learner's rho again. The caller holds x.mu.
func (x *Experiment) doublesDebit(rec *record) bool {
	g, ok := x.appr.Greedy[rec.Seq]
	return ok && x.appr.serving() && g.Pi != rec.PolicyArm
}

// releaseBlock releases the open block's sum and checks the switch. The
// caller holds x.mu, within an operation on the tape.
func (x *Experiment) releaseBlock() error {
	a := &x.appr
	sigma := apprenticeSigma(x.def.NanoRho)
	v, err := x.tape.AddGaussian(a.BlockSum, sigma, apprenticeClip)
	if err != nil {
		return err
	}
	a.Sum += v
	a.N += a.BlockN
	a.Var += a.BlockVar
	a.Max = max(a.Max, a.BlockMax)
	a.Blocks++
	a.BlockN, a.BlockSum, a.BlockVar, a.BlockMax = 0, 0, 0, 0
	a.LCB = apprenticeLCB(a.Sum, float64(a.N), a.Var, a.Max, a.Blocks, sigma, apprenticeDelta)
	if a.LCB > 0 {
		a.Switched, a.SwitchedAt = true, x.seq
	}
	return nil
}

// apprenticeSigma is the Gaussian noise of a block's sum at the
// experiment's rho (nano-rho, as the ledger charges it): rho-zCDP for
// sensitivity C, sigma = C / sqrt(2 rho).
func apprenticeSigma(nanoRho int64) float64 {
	return apprenticeClip / math.Sqrt(2*float64(nanoRho)/1e9)
}

// apprenticeLCB is the test's lower confidence bound after m blocks
// (the package comment: Freedman's inequality with a union over the
// grid of V' and M', and the Gaussian tail of the m blocks' noise).
func apprenticeLCB(sum, n, v, m float64, blocks int64, sigma, delta float64) float64 {
	if n == 0 {
		return math.Inf(-1)
	}
	j := float64(blocks)
	dj := 6 * delta / (math.Pi * math.Pi * j * j)
	l := math.Log(2 * apprenticeGridPoints * apprenticeGridPoints / dj)
	noise := math.Sqrt(2 * j * sigma * sigma * math.Log(2/dj))
	return (sum - noise - math.Sqrt(2*gridAbove(v)*l) - 2*gridAbove(m)*l/3) / n
}

// gridAbove returns the smallest (9/8)^i >= v (1 for v <= 1).
func gridAbove(v float64) float64 {
	if v <= 1 {
		return 1
	}
	return math.Pow(apprenticeGrid, math.Ceil(math.Log(v)/math.Log(apprenticeGrid)))
}

// apprenticeState is what the state shows (nil: not in apprentice mode).
func (x *Experiment) apprenticeState() *Apprentice {
	a := x.appr
	if !a.On {
		return nil
	}
	out := &Apprentice{Switched: a.Switched, SwitchedAt: a.SwitchedAt, Rewards: a.N, Blocks: a.Blocks, LCB: a.LCB, Delta: apprenticeDelta}
	if a.N > 0 {
		out.Estimate = a.Sum / float64(a.N)
	} else {
		out.LCB = 0
	}
	return out
}
