package rules

import (
	"math"
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
//     baseline's, the weight of pi clipped at C = Clip (which
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
//     the blocks and the switch are in the state (ApprenticeState).
//
// Everything the test shows is post-processing of its releases and of
// counts and propensities (the decisions, which the service does not
// protect); the block's raw sum is never shown.
const (
	// Clip is C, the clip on the learner's inverse propensity, and the
	// sensitivity of a block's sum.
	Clip = 20.0
	// Delta is delta, the test's error probability over every check.
	Delta = 0.05
	// MinBlock is the fewest rewards in a block.
	MinBlock = 64
	// grid is the ratio of the grid of V' and M'; gridPoints its points
	// (from 1 to (9/8)^600, far above any V).
	grid       = 9.0 / 8
	gridPoints = 600
)

// ApprenticeState is what the state shows of apprentice mode.
type ApprenticeState struct {
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

// Apprentice is the test's state. Its fields are the layout of the
// engine's snapshots (gob, by field name: renaming one makes stored
// snapshots unreadable, and their experiments replay their whole
// history); the open block's (Block*) are raw and never shown.
type Apprentice struct {
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
	Greedy map[int64]Greedy
}

// Greedy is the learner's greedy choice Pi at an apprentice decision
// among K eligible actions.
type Greedy struct{ Pi, K int }

// Serving reports whether the baseline is served.
func (a *Apprentice) Serving() bool { return a.On && !a.Switched }

// SetMode starts (or stops) the test when the learning mode changes (on:
// apprentice mode), and starts it over when the learner does (reset).
func (a *Apprentice) SetMode(on, reset bool) {
	if on != a.On || on && reset {
		*a = Apprentice{On: on, Greedy: map[int64]Greedy{}}
	}
}

// Decided keeps g, the learner's greedy choice at the apprentice
// decision of operation seq, for the test of its reward.
func (a *Apprentice) Decided(seq int64, g Greedy) {
	if a.Greedy == nil {
		a.Greedy = map[int64]Greedy{}
	}
	a.Greedy[seq] = g
}

// Due reports whether the open block is full: it holds max(MinBlock,
// N/2) rewards, so that the blocks are O(log N). The engine releases it
// at the learner's first release once it is.
func (a *Apprentice) Due() bool { return a.BlockN >= max(MinBlock, a.N/2) }

// Propensity is the probability with which the logging policy served
// arm when its choice was policyArm, among k actions
// (define.Definition.PropensityOf under the settings a decision was
// taken under).
type Propensity func(arm, policyArm, k int) float64

// Settle forgets the greedy choice of the decision of operation seq,
// whose reward (or drop) is settled, and returns it when the reward
// enters the test: it was learned, of an apprentice decision, while the
// baseline is served.
func (a *Apprentice) Settle(seq int64, learned bool) (Greedy, bool) {
	g, ok := a.Greedy[seq]
	delete(a.Greedy, seq)
	return g, ok && learned && a.Serving()
}

// Count counts in the open block the reward r of a decision that Settle
// let in: g its greedy choice, served the action served, b the baseline,
// p its propensities. It adds d (the comment above: 0 when pi = b) to
// the block's sum, and the bounds on d's variance and range to the
// block's.
func (a *Apprentice) Count(g Greedy, served, b int, r float64, p Propensity) {
	a.BlockN++
	if g.Pi == b {
		return // d = 0, whatever r
	}
	pPi, pB := p(g.Pi, b, g.K), p(b, b, g.K)
	wPi := min(Clip, 1/pPi)
	d := 0.0
	switch served {
	case g.Pi:
		d = r * wPi
	case b:
		d = -r / pB
	}
	a.BlockSum += d
	a.BlockVar += wPi + 1/pB
	a.BlockMax = max(a.BlockMax, 1+max(wPi, 1/pB))
}

// Doubles reports whether a reward of the decision of operation seq, of
// baseline b, enters the test (its greedy choice is not b), whose
// release costs it the learner's rho again.
func (a *Apprentice) Doubles(seq int64, b int) bool {
	g, ok := a.Greedy[seq]
	return ok && a.Serving() && g.Pi != b
}

// Prune forgets the greedy choices of the decisions no longer pending
// (pending false): after a replay, those settled without an operation.
func (a *Apprentice) Prune(pending func(seq int64) bool) {
	for seq := range a.Greedy {
		if !pending(seq) {
			delete(a.Greedy, seq)
		}
	}
}

// Released closes the open block, whose sum (BlockSum) the engine
// released as v with noise sigma (Sigma), and checks the switch at
// operation seq: the learner's choices are served once the lower
// confidence bound is above 0.
func (a *Apprentice) Released(v, sigma float64, seq int64) {
	a.Sum += v
	a.N += a.BlockN
	a.Var += a.BlockVar
	a.Max = max(a.Max, a.BlockMax)
	a.Blocks++
	a.BlockN, a.BlockSum, a.BlockVar, a.BlockMax = 0, 0, 0, 0
	a.LCB = LCB(a.Sum, float64(a.N), a.Var, a.Max, a.Blocks, sigma, Delta)
	if a.LCB > 0 {
		a.Switched, a.SwitchedAt = true, seq
	}
}

// State is what the state shows (nil: not in apprentice mode): only
// released values, counts and the switch.
func (a *Apprentice) State() *ApprenticeState {
	if !a.On {
		return nil
	}
	out := &ApprenticeState{Switched: a.Switched, SwitchedAt: a.SwitchedAt, Rewards: a.N, Blocks: a.Blocks, LCB: a.LCB, Delta: Delta}
	if a.N > 0 {
		out.Estimate = a.Sum / float64(a.N)
	} else {
		out.LCB = 0
	}
	return out
}

// Sigma is the Gaussian noise of a block's sum at the experiment's rho
// (nano-rho, as the ledger charges it): rho-zCDP for sensitivity C
// (Bun and Steinke 2016, Proposition 1.6), sigma = C / sqrt(2 rho).
func Sigma(nanoRho int64) float64 {
	return Clip / math.Sqrt(2*float64(nanoRho)/1e9)
}

// LCB is the test's lower confidence bound after blocks blocks of
// noise sigma, from the released sums' total sum over n rewards, their
// variance bound v and range bound m, at level 1 - delta over every
// check (the comment above: Freedman 1975, Theorem 1.6, with a union
// over the grid of V' and M', and the Gaussian tail of the blocks'
// noise). It is -Inf for n = 0.
func LCB(sum, n, v, m float64, blocks int64, sigma, delta float64) float64 {
	if n == 0 {
		return math.Inf(-1)
	}
	j := float64(blocks)
	dj := 6 * delta / (math.Pi * math.Pi * j * j)
	l := math.Log(2 * gridPoints * gridPoints / dj)
	noise := math.Sqrt(2 * j * sigma * sigma * math.Log(2/dj))
	return (sum - noise - math.Sqrt(2*gridAbove(v)*l) - 2*gridAbove(m)*l/3) / n
}

// gridAbove returns the smallest (9/8)^i >= v (1 for v <= 1).
func gridAbove(v float64) float64 {
	if v <= 1 {
		return 1
	}
	return math.Pow(grid, math.Ceil(math.Log(v)/math.Log(grid)))
}
