package audit

import (
	"math"
)

// Definition names a way of adapting DP to bandits (seed 001, Section III).
type Definition string

// The definitions of seed 001.
const (
	// View DP: the input is the list of observed rewards r_1..r_T, fixed in
	// advance; neighbours differ in one reward (Definition 3).
	View Definition = "view"
	// Table DP: the input is the table of potential rewards x_{t,a};
	// neighbours differ in one row, a user (Definition 3).
	Table Definition = "table"
	// Interactive DP: as Table DP, against every deterministic adversary
	// that chooses which arm's reward the policy observes at each step
	// from the actions recommended so far (Definition 4; deterministic
	// adversaries suffice, Lemma 2.2 of ref. [18]).
	Interactive Definition = "interactive"
)

// maxWork bounds distributions x outcomes held by a profile.
const maxWork = 1 << 24

// Profile holds, for one definition, the output distribution of the policy
// on every input and the neighbouring pairs of inputs.
type Profile struct {
	Definition Definition
	dists      [][]float64
	pairs      [][2]int32
}

// Profile enumerates the inputs of the definition and returns the exact
// output distributions. It returns an error when the enumeration would be
// too large (the interactive one grows as K^(K + K^2 + ... + K^(T-1))).
func (p *TablePolicy) Profile(def Definition) (*Profile, error) {
	nr, k, T := len(p.Rewards), p.Arms, p.Horizon
	out, ok := pow(k, T, maxWork)
	if !ok {
		return nil, errorf("%d^%d action sequences are too many to enumerate", k, T)
	}
	digits := func(x, base, n int) []int { // x in base `base`, n digits, most significant first
		d := make([]int, n)
		for i := n - 1; i >= 0; i-- {
			d[i], x = x%base, x/base
		}
		return d
	}
	pr := &Profile{Definition: def}
	switch def {
	case View:
		n, ok := pow(nr, T, maxWork/out)
		if !ok {
			return nil, errorf("%d^%d reward lists are too many to enumerate", nr, T)
		}
		for i := range n {
			r := digits(i, nr, T)
			pr.dists = append(pr.dists, p.dist(func(t, _ int) int { return r[t] }, nil))
		}
		pr.pairs = neighbours(n, nr, T, 1)
	case Table, Interactive:
		n, ok := pow(nr, k*T, maxWork/out)
		if !ok {
			return nil, errorf("%d^%d reward tables are too many to enumerate", nr, k*T)
		}
		tables := make([][]int, n)
		for i := range tables {
			tables[i] = digits(i, nr, k*T)
		}
		base := neighbours(n, nr, T, k)
		if def == Table {
			for _, d := range tables {
				pr.dists = append(pr.dists, p.dist(func(t, a int) int { return d[t*k+a] }, nil))
			}
			pr.pairs = base
			break
		}
		// A deterministic adversary is a table B_t(o_1..o_t) for t < T.
		var offs []int
		entries := 0
		for t := 0; t+1 < T; t++ {
			w, ok := pow(k, t+1, maxWork)
			if !ok {
				return nil, errorf("too many adversaries to enumerate")
			}
			offs = append(offs, entries)
			entries += w
		}
		advs, ok := pow(k, entries, maxWork/(out*n))
		if !ok {
			return nil, errorf("%d^%d deterministic adversaries are too many to enumerate", k, entries)
		}
		for ai := range advs {
			b := digits(ai, k, entries)
			q := func(t, prefix int) int {
				if t+1 >= T {
					return 0 // the last query is never observed
				}
				return b[offs[t]+prefix]
			}
			first := int32(len(pr.dists))
			for _, d := range tables {
				pr.dists = append(pr.dists, p.dist(func(t, a int) int { return d[t*k+a] }, q))
			}
			for _, pp := range base {
				pr.pairs = append(pr.pairs, [2]int32{first + pp[0], first + pp[1]})
			}
		}
	default:
		return nil, errorf("unknown definition %q", def)
	}
	return pr, nil
}

// neighbours lists the ordered pairs of inputs numbered in base nr with T
// groups of w digits (w = 1 for lists, K for table rows) that differ in
// exactly one group.
func neighbours(n, nr, T, w int) [][2]int32 {
	group, _ := pow(nr, w, math.MaxInt32)
	var out [][2]int32
	for i := range n {
		place := 1
		for t := T - 1; t >= 0; t-- { // group t occupies digits at place .. place*group
			cur := (i / place) % group
			for v := range group {
				if v != cur {
					out = append(out, [2]int32{int32(i), int32(i + (v-cur)*place)})
				}
			}
			place *= group
		}
	}
	return out
}

// Delta returns the smallest delta for which the policy is (eps, delta)-DP
// under the definition: the largest hockey-stick divergence
// sum_o max(0, P(o) - e^eps Q(o)) over neighbouring inputs.
func (pr *Profile) Delta(eps float64) float64 {
	e := math.Exp(eps)
	return pr.largest(func(P, Q []float64) float64 {
		s := 0.0
		for o, p := range P {
			if d := p - e*Q[o]; d > 0 {
				s += d
			}
		}
		return s
	})
}

// largest returns the largest div(P, Q) over the output distributions P
// and Q of neighbouring inputs (0 when there are none), +Inf as soon as
// one is.
func (pr *Profile) largest(div func(P, Q []float64) float64) float64 {
	worst := 0.0
	for _, pq := range pr.pairs {
		d := div(pr.dists[pq[0]], pr.dists[pq[1]])
		if math.IsInf(d, 1) {
			return d
		}
		worst = math.Max(worst, d)
	}
	return worst
}

// MinEps returns the smallest eps for which the policy is (eps, delta)-DP
// under the definition, to within 1e-12, or +Inf when no eps suffices
// (some output has positive probability on one input and none on a
// neighbour, with more than delta mass).
func (pr *Profile) MinEps(delta float64) float64 {
	hi, tail := 0.0, 0.0
	for _, pq := range pr.pairs {
		P, Q := pr.dists[pq[0]], pr.dists[pq[1]]
		s := 0.0
		for o, p := range P {
			switch {
			case p > 0 && Q[o] == 0:
				s += p
			case p > 0:
				hi = math.Max(hi, math.Log(p/Q[o]))
			}
		}
		tail = math.Max(tail, s)
	}
	if tail > delta {
		return math.Inf(1)
	}
	if pr.Delta(0) <= delta {
		return 0
	}
	lo := 0.0
	for hi-lo > 1e-12 {
		mid := (lo + hi) / 2
		if pr.Delta(mid) <= delta {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

// Renyi returns the largest Renyi divergence of order alpha > 1 between the
// output distributions of neighbouring inputs (+Inf when some output is
// impossible on a neighbour).
func (pr *Profile) Renyi(alpha float64) float64 {
	return pr.largest(func(P, Q []float64) float64 {
		s := 0.0
		for o, p := range P {
			if p == 0 {
				continue
			}
			if Q[o] == 0 {
				return math.Inf(1)
			}
			s += math.Pow(p, alpha) * math.Pow(Q[o], 1-alpha)
		}
		return math.Log(s) / (alpha - 1)
	})
}
