package mechanism

import (
	"math"
	"math/bits"

	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/privacy"
)

// Counter is a continual counter: the continual release, after every
// input x_t of a stream of T vectors in R^n, of a private estimate of
// the prefix sum S_t = x_1 + ... + x_t. Two streams are neighbours when
// they differ in one input, by at most the L2 sensitivity the counter was
// built with; the whole sequence of releases then meets the counter's
// Budget, whatever the inputs, including inputs chosen from earlier
// releases (see each mechanism's doc comment for the adaptive case).
//
// The implementations (NewCounter) add Gaussian noise whose scale comes
// from privacy.GaussianSigma through NewGaussian; they differ in how the
// noise is correlated across t, hence in Var(t).
type Counter interface {
	// Add records x_t and returns the private estimate of S_t. The slice
	// belongs to the counter and is overwritten by the next call.
	Add(x []float64) ([]float64, error)
	// Var returns the variance of the noise of one coordinate of the
	// release at step t, 1 <= t <= Horizon(): what the accounting
	// assumes, for tests, audits and confidence widths.
	Var(t int64) float64
	// Budget returns the budget the whole sequence of releases meets;
	// its zCDP cost is Budget().ToZCDP().
	Budget() privacy.Budget
	// Horizon returns T, the largest number of inputs.
	Horizon() int64
}

// CounterKind names a continual-counting mechanism for NewCounter.
type CounterKind string

// The continual counters. The variances quoted are per coordinate, for
// l2 = 1 and rho-zCDP; L = bits.Len(T), the levels of the binary tree.
const (
	// CounterTree is TreeAgg with Gaussian nodes, padded so that every
	// release carries L node draws: Var = L^2/(2 rho) at every t.
	CounterTree CounterKind = "tree"
	// CounterBinary is the binary mechanism without padding (section 0
	// of the continual-counting spec): Var(t) = popcount(t) L/(2 rho).
	CounterBinary CounterKind = "binary"
	// CounterHonaker is the binary tree with every node released and
	// Honaker's minimum-variance online estimate of S_t (NewHonaker).
	CounterHonaker CounterKind = "honaker"
	// CounterSmooth is the smooth binary mechanism of Andersson and Pagh
	// (NewSmooth): Var = d^2/(8 rho) at every t.
	CounterSmooth CounterKind = "smooth"
	// CounterFactorisation is the square-root factorisation mechanism
	// (NewFactorisation): O(t) work at step t and O(T) memory.
	CounterFactorisation CounterKind = "factorisation"
)

// CounterKinds lists the kinds NewCounter builds, in that order.
var CounterKinds = []CounterKind{CounterTree, CounterBinary, CounterHonaker, CounterSmooth, CounterFactorisation}

// NewCounter returns the continual counter of the kind for the budget,
// the L2 sensitivity l2 of one input, the dimension n and the horizon T.
func NewCounter(kind CounterKind, b privacy.Budget, l2 float64, n int, T int64, nz noise.Noise) (Counter, error) {
	switch kind {
	case CounterTree:
		a, err := NewTreeAggGaussian(b, l2, 0, n, T, nz)
		if err != nil {
			return nil, err
		}
		return &treeCounter{TreeAgg: a, b: b}, nil
	case CounterBinary:
		return newDyadic(b, l2, n, T, nz, false)
	case CounterHonaker:
		return NewHonaker(b, l2, n, T, nz)
	case CounterSmooth:
		return NewSmooth(b, l2, n, T, nz)
	case CounterFactorisation:
		return NewFactorisation(b, l2, n, T, nz)
	}
	return nil, inputf("unknown continual counter %q (want one of %v)", kind, CounterKinds)
}

// treeCounter is TreeAgg behind the Counter interface.
type treeCounter struct {
	*TreeAgg
	b privacy.Budget
}

func (c *treeCounter) Var(int64) float64                  { s := c.SD(); return s * s }
func (c *treeCounter) Budget() privacy.Budget             { return c.b }
func (c *treeCounter) Horizon() int64                     { return c.T }
func (c *treeCounter) Add(x []float64) ([]float64, error) { return c.TreeAgg.Add(x) }

// nodeGaussian returns the Gaussian mechanism for the nodes of a tree in
// which every input enters k nodes of dimension n: L2 sensitivity
// l2 sqrt(k) for the concatenation of the nodes, rho/k per node under
// rho-zCDP.
func nodeGaussian(b privacy.Budget, l2 float64, k, n int, nz noise.Noise) (Gaussian, error) {
	if err := checkFinite(l2); err != nil {
		return Gaussian{}, err
	}
	g, err := NewGaussian(b, l2*math.Sqrt(float64(k)), nz)
	if err != nil {
		return Gaussian{}, err
	}
	g.dim = n * k
	return g, nil
}

// counterArgs checks what every counter needs.
func counterArgs(n int, T int64) error {
	if n < 1 || T < 1 {
		return inputf("a continual counter needs n >= 1 and T >= 1, got n=%d T=%d", n, T)
	}
	return nil
}

// step checks one input against the dimension and the horizon.
func step(x []float64, n int, t, T int64) error {
	if len(x) != n {
		return inputf("input of dimension %d, want %d", len(x), n)
	}
	if t >= T {
		return inputf("more than T=%d inputs", T)
	}
	return checkFinite(x...)
}

// dyadic is the binary tree over the inputs, L = bits.Len(T) levels: the
// node of level j ending at t (2^j divides t) holds x_{t-2^j+1} + ... +
// x_t plus N(0, sigma^2), sigma from nodeGaussian with k = L. Plain, it
// releases the sum of the nodes of the set bits of t (the binary
// mechanism, drawing only the nodes it uses); with Honaker's weights it
// releases every node and estimates S_t from all of them.
type dyadic struct {
	n, levels int
	T, t      int64
	g         Gaussian
	b         privacy.Budget
	honaker   bool
	w, v      []float64   // by level: weight of the node's own value, variance of est (Honaker)
	acc       [][]float64 // exact sums of the open block of each level
	est       [][]float64 // estimate of the last completed block of each level
	node, out []float64
	cur       []float64 // scratch: the estimate of the level below
}

func newDyadic(b privacy.Budget, l2 float64, n int, T int64, nz noise.Noise, honaker bool) (*dyadic, error) {
	if err := counterArgs(n, T); err != nil {
		return nil, err
	}
	L := levelsOf(T)
	g, err := nodeGaussian(b, l2, L, n, nz)
	if err != nil {
		return nil, err
	}
	c := &dyadic{n: n, levels: L, T: T, g: g, b: b, honaker: honaker,
		node: make([]float64, n), out: make([]float64, n), cur: make([]float64, n)}
	s2 := g.sigma * g.sigma
	for j := range L {
		c.acc = append(c.acc, make([]float64, n))
		c.est = append(c.est, make([]float64, n))
		w, v := 1.0, s2
		if honaker && j > 0 {
			w, v = honakerStep(s2, c.v[j-1])
		}
		c.w, c.v = append(c.w, w), append(c.v, v)
	}
	return c, nil
}

// honakerStep returns the weight of a node's own noisy value and the
// variance of the best estimate of its sum from its subtree, when the
// node's noise has variance s2 and each of its two children's estimates
// has variance vc: the inverse-variance weighting of the node (s2)
// against the sum of its children (2 vc), v = 1/(1/s2 + 1/(2 vc)) and
// w = v/s2.
func honakerStep(s2, vc float64) (w, v float64) {
	v = 1 / (1/s2 + 1/(2*vc))
	return v / s2, v
}

// NewHonaker returns the binary tree with Honaker's estimates (Honaker
// 2015, "Efficient use of differentially private binary trees"): every
// node of the tree of NewCounter's CounterBinary is released, leaves
// included (each input is in L nodes, so the noise is the same), and S_t
// is the minimum-variance linear unbiased estimate from the nodes
// completed by t.
//
// The nodes completed by t are the dyadic blocks inside [1, t], all
// inside the maximal blocks of t's binary expansion, which hold disjoint
// inputs and independent noise, so the estimate of S_t is the sum of the
// best estimates of those blocks' sums, each from its own subtree. That of
// a block of level j is the inverse-variance weighting of its node y_j
// against the sum of its two children's estimates (honakerStep; the
// up-pass of Honaker's and of Hay et al.'s 2010 consistency estimator):
// u_0 = y_0 and u_j = w_j y_j + (1 - w_j)(u_left + u_right), with
// v_0 = s^2, v_j = 1/(1/s^2 + 1/(2 v_{j-1})), w_j = v_j/s^2. So
// Var(t) = sum of v_j over the set bits j of t. The recursion is checked
// against the generalised least-squares solve (A^T A)^-1 A^T y in the
// tests. It is post-processing of the released nodes: the privacy is the
// tree's (rho-zCDP for node noise N(0, L l2^2/(2 rho))), also under
// adaptively chosen inputs, since each node is a Gaussian mechanism on
// inputs fixed before it is drawn. Work O(L n) per step.
func NewHonaker(b privacy.Budget, l2 float64, n int, T int64, nz noise.Noise) (Counter, error) {
	return newDyadic(b, l2, n, T, nz, true)
}

func (c *dyadic) Budget() privacy.Budget { return c.b }
func (c *dyadic) Horizon() int64         { return c.T }

// Var returns the sum of the variances of the estimates of the maximal
// blocks of t.
func (c *dyadic) Var(t int64) float64 {
	s := 0.0
	for j := range c.levels {
		if t>>j&1 == 1 {
			s += c.v[j]
		}
	}
	return s
}

// Add records x_t and returns the estimate of S_t.
func (c *dyadic) Add(x []float64) ([]float64, error) {
	if err := step(x, c.n, c.t, c.T); err != nil {
		return nil, err
	}
	c.t++
	top := bits.TrailingZeros64(uint64(c.t))
	for j := range c.levels {
		for k, xk := range x {
			c.acc[j][k] += xk
		}
	}
	lo := top // the plain tree draws the top node only
	if c.honaker {
		lo = 0
	}
	// cur is u_{j-1}, the estimate of the block of level j-1 ending at t
	// (the right child of the block of level j ending at t); est[j-1],
	// until replaced, is the left child.
	for j := lo; j <= top; j++ {
		copy(c.node, c.acc[j])
		clear(c.acc[j])
		if err := c.g.AddTo(c.node); err != nil {
			return nil, err
		}
		if j > lo {
			w := c.w[j]
			for k, y := range c.node {
				c.node[k] = w*y + (1-w)*(c.est[j-1][k]+c.cur[k])
			}
			copy(c.est[j-1], c.cur)
		}
		c.cur, c.node = c.node, c.cur
	}
	copy(c.est[top], c.cur)
	for j := range lo { // the blocks completed now that the plain tree does not release
		clear(c.acc[j])
	}
	clear(c.out)
	for j := range c.levels {
		if c.t>>j&1 == 1 {
			for k, v := range c.est[j] {
				c.out[k] += v
			}
		}
	}
	return c.out, nil
}
