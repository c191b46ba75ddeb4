package mechanism

import (
	"math"
	"math/bits"

	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/privacy"
)

// TreeAgg is TreeBasedAgg, Algorithm 2 of Agarwal and Singh, "The Price
// of Differential Privacy for Online Learning" (seed 003): the binary
// mechanism (Dwork et al. 2010; Jain et al. 2012) for the continual
// release of the prefix sums sum_{s<=t} l_s of vectors in R^N, with
// independent noise at every node of the binary tree, and every released
// sum padded so that it carries exactly Levels() draws (Lemma 3.3: the
// noise of every output is identically distributed).
//
// A loss vector enters one node per level of the tree, L = floor(log2 T)
// + 1 levels for t <= T, so the whole sequence of releases is the
// composition of L mechanisms, one per level, each releasing disjoint
// sums. Lemma 3.3 writes lambda = ||Y||_1 log T / eps; "log T" is read
// here as the number of levels, which makes the accounting hold for every
// T (with ceil(log2 T) it would fail at powers of 2). The sensitivity s
// is that of one loss vector: the diameter of the loss set.
//
// The padding is drawn once, as a bank of sums of 0..L node draws made
// when the tree is built, and the same bank entry pads every release
// with the same number of nodes: a fixed function of released noise,
// which is post-processing. Every release still carries exactly L node
// draws. State is O(N L): one exact and one noisy partial sum per level.
type TreeAgg struct {
	n, levels int
	T, t      int64
	node      func(x []float64) error // one node's noisy release, in place
	// nodeSums releases a node from exact sums; exact holds the exact
	// sums of the current dyadic blocks, by level, when the noise source
	// takes exact statistics (nil otherwise).
	nodeSums  func(Sums, int64) ([]float64, error)
	exact     []Sums
	scale     float64
	gaussian  bool
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

// levelsOf returns L, the number of levels of a tree over horizon T.
func levelsOf(T int64) int { return bits.Len64(uint64(T)) }

// NewTreeAgg returns the mechanism with Laplace nodes for vectors of
// dimension n over horizon T and the L1 sensitivity l1 of one loss
// vector. Each of the L levels gets an equal share of the budget:
//
//   - eps-DP: eps/L per level (pure DP composes additively in eps), node
//     noise Lap(L l1/eps), the scale of Corollary 3.2;
//   - rho-zCDP: rho/L per level (zCDP composes additively in rho), node
//     noise Lap(l1/eps_node) with eps_node = sqrt(2 rho/L), since eps-DP
//     implies (eps^2/2)-zCDP. The earlier reading, eps = sqrt(2 rho) split
//     as eps/L, needs a scale sqrt(L) times larger (14 against 3.7 at
//     T = 10^4, rho = 0.5, l1 = 1).
//
// Other notions are rejected: use NewTreeAggGaussian.
func NewTreeAgg(b privacy.Budget, l1 float64, n int, T int64, nz noise.Noise) (*TreeAgg, error) {
	if n < 1 || T < 1 {
		return nil, inputf("a tree needs n >= 1 and T >= 1, got n=%d T=%d", n, T)
	}
	if err := b.Validate(); err != nil {
		return nil, err
	}
	levels := levelsOf(T)
	l := float64(levels)
	var per privacy.Budget
	var err error
	switch b.Notion {
	case privacy.Pure: // shares rounded down, so that L shares never exceed eps
		per, err = privacy.NewPure(math.Nextafter(b.Eps/l, 0))
	case privacy.ZCDP:
		per, err = privacy.NewZCDP(math.Nextafter(b.Rho/l, 0))
	default:
		return nil, inputf("TreeBasedAgg with Laplace nodes needs a pure eps-DP or zCDP budget, got %s", b)
	}
	if err != nil {
		return nil, err
	}
	lap, err := NewLaplace(per, l1, nz)
	if err != nil {
		return nil, err
	}
	return newTree(n, levels, T, lap.AddTo, lap.ReleaseSums, ExactFor(nz), lap.Scale(), false)
}

// NewTreeAggGaussian returns TreeBasedAgg with Gaussian node noise of
// standard deviation max(sigmaMin, sigma_b), where sigma_b is the Gaussian
// mechanism's for the budget (zCDP, (eps,delta) or Renyi) and L2
// sensitivity l2 sqrt(L): a loss vector changes the L nodes that contain
// it by at most l2 each, so their concatenation moves by l2 sqrt(L) in L2.
// Under rho-zCDP this is sigma_b = l2 sqrt(L/(2 rho)): rho/L per level.
// sigmaMin lets a caller impose a larger scale for its own reasons (the
// regret term of FTPL's Theorem 3.5).
func NewTreeAggGaussian(b privacy.Budget, l2, sigmaMin float64, n int, T int64, nz noise.Noise) (*TreeAgg, error) {
	if n < 1 || T < 1 {
		return nil, inputf("a tree needs n >= 1 and T >= 1, got n=%d T=%d", n, T)
	}
	levels := levelsOf(T)
	g, err := NewGaussian(b, l2*math.Sqrt(float64(levels)), nz)
	if err != nil {
		return nil, err
	}
	sigma := math.Max(g.Sigma(), sigmaMin)
	// The sensitivity is that of the L nodes of n coordinates together.
	g.sigma, g.dim = sigma, n*levels
	return newTree(n, levels, T, g.AddTo, g.ReleaseSums, ExactFor(nz), sigma, true)
}

// NewTreeAggFor returns the tree with the node noise of least error for
// the budget, given the L1 and L2 sensitivities of one loss vector:
// Laplace nodes (NewTreeAgg) for a pure eps-DP budget, which Gaussian
// noise cannot meet, and Gaussian nodes (NewTreeAggGaussian) for every
// other notion. Under rho-zCDP the per-coordinate variance of one node is
// 2 (l1 sqrt(L/(2 rho)))^2 = l1^2 L/rho with Laplace nodes and
// l2^2 L/(2 rho) with Gaussian ones: since l2 <= l1, Gaussian nodes have
// at most half the variance (1/(2N) of it for losses in [0,1]^N, where
// l1 = N and l2 = sqrt(N)), and lighter tails.
func NewTreeAggFor(b privacy.Budget, l1, l2 float64, n int, T int64, nz noise.Noise) (*TreeAgg, error) {
	if b.Notion == privacy.Pure {
		return NewTreeAgg(b, l1, n, T, nz)
	}
	return NewTreeAggGaussian(b, l2, 0, n, T, nz)
}

func newTree(n, levels int, T int64, node func([]float64) error, nodeSums func(Sums, int64) ([]float64, error),
	exact bool, scale float64, gaussian bool) (*TreeAgg, error) {
	a := &TreeAgg{n: n, levels: levels, T: T, node: node, nodeSums: nodeSums, scale: scale, gaussian: gaussian,
		out: make([]float64, n), prefix: make([]float64, n)}
	if exact {
		for range levels {
			a.exact = append(a.exact, NewSums(n, true))
		}
	}
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

// Gaussian reports whether the nodes draw Gaussian (else Laplace) noise.
func (a *TreeAgg) Gaussian() bool { return a.gaussian }

// SD returns the standard deviation of the noise of one coordinate of a
// release (Levels() node draws): scale sqrt(2 L) for Laplace nodes,
// scale sqrt(L) for Gaussian ones.
func (a *TreeAgg) SD() float64 {
	if a.gaussian {
		return a.scale * math.Sqrt(float64(a.levels))
	}
	return a.scale * math.Sqrt(2*float64(a.levels))
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
		return nil, inputf("loss of dimension %d, want %d", len(l), a.n)
	}
	if a.t >= a.T {
		return nil, inputf("more than T=%d vectors", a.T)
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
	if a.exact != nil {
		// The same block sums, exactly, released from their exact value.
		e := a.exact[i]
		e.Reset()
		e.AddVec(l)
		for j := range i {
			e.AddSums(a.exact[j])
			a.exact[j].Reset()
		}
		out, err := a.nodeSums(e, 1)
		if err != nil {
			return nil, err
		}
		copy(v, out)
	} else {
		copy(v, a.alpha[i])
		if err := a.node(v); err != nil {
			return nil, err
		}
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
