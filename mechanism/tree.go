package mechanism

import (
	"fmt"
	"math"
	"math/bits"

	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/privacy"
)

// TreeAgg is TreeBasedAgg, Algorithm 2 of Agarwal and Singh, "The Price
// of Differential Privacy for Online Learning" (seed 003): the binary
// mechanism (Dwork et al. 2010; Jain et al. 2012) for the continual
// release of the prefix sums sum_{s<=t} l_s of vectors in R^N, with
// independent Laplace noise at every node of the binary tree, and every
// released sum padded with fresh draws so that it carries exactly Levels()
// draws (Lemma 3.3: the noise of every output is identically distributed).
//
// A loss vector enters one node per level of the tree, L = floor(log2 T)
// + 1 levels for t <= T, so each node's noise is Lap(L s/eps) per
// coordinate for a budget eps and L1 sensitivity s (the L1 diameter of the
// loss set), calibrated by package privacy: the whole sequence of
// released sums is then eps-DP. Lemma 3.3 writes lambda = ||Y||_1 log T /
// eps; "log T" is read here as the number of levels, which makes the
// accounting hold for every T (with ceil(log2 T) it would fail at powers
// of 2). The padding draws are fresh at every release (post-processing).
// State is O(N L): one exact and one noisy partial sum per level.
type TreeAgg struct {
	n, levels int
	T, t      int64
	node      func(x []float64) error // one node's noisy release, in place
	scale     float64
	alpha     [][]float64 // exact sums of the current dyadic blocks, by level
	noisy     [][]float64 // their noisy releases
	bank      [][]float64 // bank[k]: the sum of k padding draws per coordinate
	prefix    []float64   // the sum of the noisy blocks of the set bits of t
	nodes     int         // the number of noisy blocks in prefix
	bankDraws []int       // the number of node draws summed in each bank entry
	out       []float64
	// Draws is the number of node draws in the last released sum (a
	// tally of the prefix's nodes and the padding's draws).
	Draws int
}

// NewTreeAgg returns the mechanism for vectors of dimension n over
// horizon T, a pure eps-DP (or zCDP, via eps = sqrt(2 rho)) budget and
// the L1 sensitivity of one loss vector.
func NewTreeAgg(b privacy.Budget, l1 float64, n int, T int64, nz noise.Noise) (*TreeAgg, error) {
	if n < 1 || T < 1 {
		return nil, fmt.Errorf("mechanism: a tree needs n >= 1 and T >= 1, got n=%d T=%d", n, T)
	}
	if err := b.Validate(); err != nil {
		return nil, err
	}
	levels := bits.Len64(uint64(T))
	var eps float64
	switch b.Notion {
	case privacy.Pure:
		eps = b.Eps
	case privacy.ZCDP: // Laplace nodes: eps-DP with eps = sqrt(2 rho) in total
		eps, _ = LaplaceScaleEps(b)
	default:
		return nil, fmt.Errorf("mechanism: TreeBasedAgg needs a pure eps-DP or zCDP budget, got %s", b)
	}
	per, err := privacy.NewPure(eps / float64(levels))
	if err != nil {
		return nil, err
	}
	lap, err := NewLaplace(per, l1, nz)
	if err != nil {
		return nil, err
	}
	return newTree(n, levels, T, lap.AddTo, lap.Scale())
}

// NewTreeAggGaussian returns TreeBasedAgg with Gaussian node noise of
// standard deviation max(sigmaMin, sigma_b), where sigma_b is the Gaussian
// mechanism's for the budget (zCDP, (eps,delta) or Renyi) and L2
// sensitivity l2 sqrt(L): a loss vector changes the L nodes that contain
// it by at most l2 each, so their concatenation moves by l2 sqrt(L) in L2.
// sigmaMin lets a caller impose a larger scale for its own reasons (the
// regret term of FTPL's Theorem 3.5).
func NewTreeAggGaussian(b privacy.Budget, l2, sigmaMin float64, n int, T int64, nz noise.Noise) (*TreeAgg, error) {
	if n < 1 || T < 1 {
		return nil, fmt.Errorf("mechanism: a tree needs n >= 1 and T >= 1, got n=%d T=%d", n, T)
	}
	levels := bits.Len64(uint64(T))
	g, err := NewGaussian(b, l2*math.Sqrt(float64(levels)), nz)
	if err != nil {
		return nil, err
	}
	sigma := math.Max(g.Sigma(), sigmaMin)
	g.sigma = sigma
	return newTree(n, levels, T, g.AddTo, sigma)
}

func newTree(n, levels int, T int64, node func([]float64) error, scale float64) (*TreeAgg, error) {
	a := &TreeAgg{n: n, levels: levels, T: T, node: node, scale: scale, out: make([]float64, n), prefix: make([]float64, n)}
	a.bank = append(a.bank, make([]float64, n))
	a.bankDraws = append(a.bankDraws, 0)
	for k := range levels {
		a.alpha = append(a.alpha, make([]float64, n))
		a.noisy = append(a.noisy, make([]float64, n))
		next := append([]float64(nil), a.bank[k]...)
		if err := node(next); err != nil {
			return nil, err
		}
		a.bank = append(a.bank, next)
		a.bankDraws = append(a.bankDraws, a.bankDraws[k]+1)
	}
	return a, nil
}

// LaplaceScaleEps returns the eps at which Laplace noise meets a zCDP
// budget: sqrt(2 rho), rounded as package privacy rounds it.
func LaplaceScaleEps(b privacy.Budget) (float64, error) {
	s, err := privacy.LaplaceScale(b, 1)
	return 1 / s, err
}

// Levels returns L, the number of noise draws in every released sum.
func (a *TreeAgg) Levels() int { return a.levels }

// Scale returns the scale of each node's noise (Laplace scale, or
// Gaussian standard deviation).
func (a *TreeAgg) Scale() float64 { return a.scale }

// Initial returns L~_0: the zero vector plus Levels() draws per
// coordinate (Algorithm 1, lines 2-3). The slice belongs to the tree and
// is overwritten by the next Add.
func (a *TreeAgg) Initial() []float64 {
	copy(a.out, a.bank[a.levels])
	a.Draws = a.levels
	return a.out
}

// Add records l_t and returns the private estimate of sum_{s<=t} l_s. The
// returned slice belongs to the tree and is overwritten by the next call.
func (a *TreeAgg) Add(l []float64) ([]float64, error) {
	if len(l) != a.n {
		return nil, fmt.Errorf("mechanism: loss of dimension %d, want %d", len(l), a.n)
	}
	if a.t >= a.T {
		return nil, fmt.Errorf("mechanism: more than T=%d vectors", a.T)
	}
	if err := checkFinite(l...); err != nil {
		return nil, err
	}
	a.t++
	// The block ending at t has level i = number of trailing zeros of t:
	// it merges the blocks of the lower levels (the trailing ones of t-1)
	// and l_t. The released prefix is the sum of the noisy blocks of the
	// set bits of t: those of t-1 minus levels < i, plus the new block.
	i := bits.TrailingZeros64(uint64(a.t))
	for k := range a.n {
		s := l[k]
		for j := range i {
			s += a.alpha[j][k]
			a.prefix[k] -= a.noisy[j][k]
		}
		a.alpha[i][k] = s
	}
	for j := range i {
		clear(a.alpha[j])
		clear(a.noisy[j])
	}
	v := a.noisy[i]
	copy(v, a.alpha[i])
	if err := a.node(v); err != nil {
		return nil, err
	}
	a.nodes += 1 - i
	// Pad with the bank's sum of Levels() - nodes draws.
	pad := a.bank[a.levels-a.nodes]
	for k, x := range v {
		p := a.prefix[k] + x
		a.prefix[k] = p
		a.out[k] = p + pad[k]
	}
	a.Draws = a.nodes + a.bankDraws[a.levels-a.nodes]
	return a.out, nil
}
