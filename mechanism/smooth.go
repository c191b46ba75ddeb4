package mechanism

import (
	"iter"
	"math/big"

	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/privacy"
)

// smooth is the smooth binary mechanism (NewSmooth).
type smooth struct {
	n, d  int
	T, t  int64
	g     Gaussian
	b     privacy.Budget
	leaf  uint64      // m(t+1), the leaf the last release was read off
	accID []int64     // by bit p: the node (leaf >> (p+1)) whose exact sum acc[p] is
	acc   [][]float64 // exact sums of the nodes that received inputs, by bit
	nzID  []int64     // by bit p: the node whose noisy release noisy[p] is
	noisy [][]float64
	ex    []Sums // exact sums of acc's nodes, by bit, for an exact noise source (ExactFor); nil otherwise
	out   []float64
}

// SmoothDepth returns d, the depth of the smooth binary mechanism's tree
// for horizon T: the smallest even integer with C(d, d/2) > T, so that
// there are at least T + 1 leaves of Hamming weight d/2.
func SmoothDepth(T int64) int {
	d := 0
	c := new(big.Int)
	for c.Binomial(int64(d), int64(d/2)).Cmp(big.NewInt(T)) <= 0 {
		d += 2
	}
	return d
}

// NewSmooth returns the smooth binary mechanism of Andersson and Pagh
// ("A smooth binary mechanism for efficient private continual
// observation", NeurIPS 2023, arXiv 2306.09666), as the authors' code
// (jodander/smooth-binary-mechanism, mechanism_noise_generation.py)
// builds it. The tree has depth d = SmoothDepth(T) and only its balanced
// leaves, the d-bit integers of Hamming weight d/2 in increasing order
// m(1) < m(2) < ..., are used: x_t sits at leaf m(t), and the release at
// t is read off m(t+1) (the first balanced leaf is never a query): for
// each bit p of m(t+1) that is 1, the node of the leaves that share
// m(t+1)'s bits above p and have bit p equal to 0 (the binary
// decomposition of the leaves before m(t+1)), d/2 nodes in all. Each node
// holds the sum of its inputs plus N(0, sigma^2).
//
// Privacy: an input at leaf m enters exactly the nodes of the bits of m
// that are 0 (only those nodes are ever released), d/2 of them, so the
// vector of released nodes has L2 sensitivity l2 sqrt(d/2), and sigma is
// the Gaussian mechanism's for it: d l2^2/(4 rho) per node under rho-zCDP
// (the code's "variance per node", whose np.random.normal call passes it
// as a standard deviation: a bug the spec records and this does not
// copy). A node is released when first queried, after all its inputs
// arrived and before any later one: each is a Gaussian mechanism on fixed
// inputs, so the guarantee holds for adaptively chosen inputs. Every
// release sums d/2 independent nodes: Var = (d/2) sigma^2 = d^2 l2^2/(8
// rho) at every t (Figure 2 of the paper; (1 + o(1)) log2(T)^2/(8 rho)).
// Work O(d n) per step, memory O(d n).
func NewSmooth(b privacy.Budget, l2 float64, n int, T int64, nz noise.Noise) (Counter, error) {
	if err := counterArgs(n, T); err != nil {
		return nil, err
	}
	d := SmoothDepth(T)
	if d > 62 {
		return nil, inputf("horizon %d too long for the smooth binary mechanism", T)
	}
	g, err := nodeGaussian(b, l2, d/2, n, nz)
	if err != nil {
		return nil, err
	}
	c := &smooth{n: n, d: d, T: T, g: g, b: b, leaf: 1<<(d/2) - 1, out: make([]float64, n)}
	for range d {
		c.accID = append(c.accID, -1)
		c.nzID = append(c.nzID, -1)
		c.acc = append(c.acc, make([]float64, n))
		c.noisy = append(c.noisy, make([]float64, n))
		if ExactFor(nz) {
			c.ex = append(c.ex, NewSums(n, true))
		}
	}
	return c, nil
}

// nextBalanced returns the next integer with the same number of 1 bits
// as v > 0 (Gosper's hack).
func nextBalanced(v uint64) uint64 {
	c := v & -v
	r := v + c
	return ((r^v)>>2)/c | r
}

// nodes yields the bits p of the leaf m that equal bit, each with the
// node of level p above m: the id m >> (p+1) of the leaves that share m's
// bits above p. An input at m enters the nodes of its 0 bits; the release
// read off m sums those of its 1 bits.
func (c *smooth) nodes(m, bit uint64) iter.Seq2[int, int64] {
	return func(yield func(int, int64) bool) {
		for p := range c.d {
			if m>>p&1 == bit && !yield(p, int64(m>>(p+1))) {
				return
			}
		}
	}
}

// release draws the noisy release of the node of bit p: its sum (0 for
// a node without inputs, has false) plus Gaussian noise; on an exact
// noise source the exact sum goes to the exact mechanism, so that the
// value released is the function of the data the sensitivity is for.
func (c *smooth) release(p int, has bool) error {
	v := c.noisy[p]
	if c.ex != nil {
		sums := NewSums(c.n, true)
		if has {
			sums = c.ex[p]
		}
		out, err := c.g.ReleaseSums(sums, 1)
		if err != nil {
			return err
		}
		copy(v, out)
		return nil
	}
	clear(v)
	if has {
		copy(v, c.acc[p])
	}
	return c.g.AddTo(v)
}

func (c *smooth) Budget() privacy.Budget { return c.b }
func (c *smooth) Horizon() int64         { return c.T }

// Var returns d sigma^2 / 2, the same at every t.
func (c *smooth) Var(int64) float64 { return float64(c.d/2) * c.g.sigma * c.g.sigma }

// Add records x_t at leaf m(t) and returns the release read off m(t+1).
func (c *smooth) Add(x []float64) ([]float64, error) {
	if err := step(x, c.n, c.t, c.T); err != nil {
		return nil, err
	}
	c.t++
	m := c.leaf // m(t)
	for p, id := range c.nodes(m, 0) {
		if c.accID[p] != id {
			c.accID[p] = id
			clear(c.acc[p])
			if c.ex != nil {
				c.ex[p].Reset()
			}
		}
		for k, v := range x {
			c.acc[p][k] += v
		}
		if c.ex != nil {
			c.ex[p].AddVec(x)
		}
	}
	q := nextBalanced(m) // m(t+1)
	c.leaf = q
	clear(c.out)
	for p, id := range c.nodes(q, 1) {
		if c.nzID[p] != id {
			// First query of this node: all its inputs are in.
			c.nzID[p] = id
			if err := c.release(p, c.accID[p] == id); err != nil {
				return nil, err
			}
		}
		for k, v := range c.noisy[p] {
			c.out[k] += v
		}
	}
	return c.out, nil
}

// InitialNoise returns a release of the counter before any input: the
// zero vector plus noise distributed as that of every later release, for
// the counters whose releases are all identically distributed (the tree,
// TreeAgg.Initial; the smooth binary mechanism, d/2 fresh node draws).
// The draws are independent of the data: no privacy cost. Other counters
// are an input error.
func InitialNoise(c Counter) ([]float64, error) {
	switch c := c.(type) {
	case *treeCounter:
		return c.Initial(), nil
	case *smooth:
		out := make([]float64, c.n)
		v := make([]float64, c.n)
		for range c.d / 2 {
			clear(v)
			if err := c.g.AddTo(v); err != nil {
				return nil, err
			}
			for k, x := range v {
				out[k] += x
			}
		}
		return out, nil
	}
	return nil, inputf("the releases of a %T counter are not identically distributed", c)
}

// SmoothState is the state of a smooth binary mechanism, for a policy's
// snapshot: the step, the leaf, and the exact and noisy node sums with
// their nodes. A restore never redraws a node.
type SmoothState struct {
	T           int64
	Leaf        uint64
	AccID, NzID []int64
	Acc, Noisy  [][]float64
	// Exact holds the exact node sums of a counter on an exact noise
	// source, by bit and coordinate, in big.Float's exact 'p' format;
	// nil otherwise.
	Exact [][]string
}

// CounterState returns the state of a counter that has one (the smooth
// binary mechanism), or an input error.
func CounterState(c Counter) (SmoothState, error) {
	s, ok := c.(*smooth)
	if !ok {
		return SmoothState{}, inputf("a %T counter has no snapshot", c)
	}
	st := SmoothState{T: s.t, Leaf: s.leaf, AccID: s.accID, NzID: s.nzID, Acc: s.acc, Noisy: s.noisy}
	for _, e := range s.ex {
		row := make([]string, s.n)
		for k, x := range e.x {
			row[k] = x.Text('p', 0)
		}
		st.Exact = append(st.Exact, row)
	}
	return st, nil
}

// RestoreCounter restores what CounterState returned into a counter built
// as the saved one was.
func RestoreCounter(c Counter, st SmoothState) error {
	s, ok := c.(*smooth)
	if !ok {
		return inputf("a %T counter has no snapshot", c)
	}
	if len(st.AccID) != s.d || len(st.NzID) != s.d || len(st.Acc) != s.d || len(st.Noisy) != s.d || st.T < 0 || st.T > s.T {
		return inputf("the snapshot is not of this smooth mechanism")
	}
	for p := range s.d {
		if len(st.Acc[p]) != s.n || len(st.Noisy[p]) != s.n {
			return inputf("the snapshot is not of this smooth mechanism")
		}
		copy(s.acc[p], st.Acc[p])
		copy(s.noisy[p], st.Noisy[p])
	}
	if (st.Exact != nil) != (s.ex != nil) || s.ex != nil && len(st.Exact) != s.d {
		return inputf("the snapshot is not of this smooth mechanism (exact sums)")
	}
	for p, row := range st.Exact {
		if len(row) != s.n {
			return inputf("the snapshot is not of this smooth mechanism")
		}
		for k, txt := range row {
			x, _, err := big.ParseFloat(txt, 0, sumPrec, big.ToNearestEven)
			if err != nil {
				return inputf("the snapshot's exact sum %q: %v", txt, err)
			}
			s.ex[p].x[k].Set(x)
			s.ex[p].F[k] = st.Acc[p][k]
		}
	}
	copy(s.accID, st.AccID)
	copy(s.nzID, st.NzID)
	s.t, s.leaf = st.T, st.Leaf
	return nil
}
