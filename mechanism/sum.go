package mechanism

import (
	"math"
	"math/big"

	"github.com/dpbandit/dpbandit/noise"
)

// sumPrec is the precision of an exact sum: products of two float64
// values span at most 2^-2148 to 2^2048, and a sum of up to 2^63 of them
// adds 63 bits, so 8192 bits hold every such sum without rounding
// (big.Float stores only the bits a value needs).
const sumPrec = 1 << 13

// Sums is a vector of running sums that a mechanism releases: in float64
// (F, what simulation uses) and, when built exact, also exactly, so that
// on a noise source that takes exact statistics (noise.Exact, as
// noise.Secure does) the value released is the exact function of the
// data that the sensitivity was derived for. Floating-point rounding in
// a long sum is data-dependent and not counted in any sensitivity; the
// exact sums remove it.
type Sums struct {
	// F holds the float64 sums.
	F []float64
	x []*big.Float // nil unless exact
}

// NewSums returns d zero sums, kept exactly too when exact is set.
func NewSums(d int, exact bool) Sums {
	s := Sums{F: make([]float64, d)}
	if exact {
		s.x = make([]*big.Float, d)
		for i := range s.x {
			s.x[i] = new(big.Float).SetPrec(sumPrec)
		}
	}
	return s
}

// ExactFor reports whether releases through nz should use exact sums: nz
// takes exact statistics.
func ExactFor(nz noise.Noise) bool {
	_, ok := nz.(noise.Exact)
	return ok
}

// Exact reports whether the sums are kept exactly.
func (s Sums) Exact() bool { return s.x != nil }

// Add adds v to sum i.
func (s Sums) Add(i int, v float64) {
	s.F[i] += v
	if s.x != nil {
		s.x[i].Add(s.x[i], new(big.Float).SetFloat64(v))
	}
}

// AddScaled adds a r to the sums (a of their length), each product exact
// in the exact sums.
func (s Sums) AddScaled(a []float64, r float64) {
	for i, x := range a {
		s.F[i] += x * r
	}
	if s.x == nil {
		return
	}
	rb := new(big.Float).SetFloat64(r)
	for i, x := range a {
		p := new(big.Float).SetPrec(sumPrec).SetFloat64(x)
		s.x[i].Add(s.x[i], p.Mul(p, rb))
	}
}

// AddVec adds l to the sums.
func (s Sums) AddVec(l []float64) {
	for i, v := range l {
		s.Add(i, v)
	}
}

// AddSums adds the sums o (of the same length and exactness) to s.
func (s Sums) AddSums(o Sums) {
	for i, v := range o.F {
		s.F[i] += v
	}
	for i, v := range o.x {
		s.x[i].Add(s.x[i], v)
	}
}

// At returns sum i alone, as sums of length 1 sharing its storage.
func (s Sums) At(i int) Sums {
	v := Sums{F: s.F[i : i+1]}
	if s.x != nil {
		v.x = s.x[i : i+1]
	}
	return v
}

// Reset sets every sum to 0.
func (s Sums) Reset() {
	clear(s.F)
	for _, v := range s.x {
		v.SetInt64(0)
	}
}

// Combine returns the sums K s: n sums, sum j being sum_i K[j][i] s_i,
// computed exactly in the exact sums (K is public, and its float entries
// are taken as the exact coefficients).
func (s Sums) Combine(k [][]float64) Sums {
	out := NewSums(len(k), s.Exact())
	for j, row := range k {
		for i, c := range row {
			out.F[j] += c * s.F[i]
			if s.x != nil {
				p := new(big.Float).SetPrec(sumPrec).SetFloat64(c)
				out.x[j].Add(out.x[j], p.Mul(p, s.x[i]))
			}
		}
	}
	return out
}

// rat returns sum i divided by div, exactly (from the float sum when the
// sums are not exact).
func (s Sums) rat(i int, div int64) *big.Rat {
	var r *big.Rat
	if s.x != nil {
		r, _ = s.x[i].Rat(nil)
	} else {
		r = new(big.Rat).SetFloat64(s.F[i])
	}
	if div != 1 {
		r.Quo(r, new(big.Rat).SetInt64(div))
	}
	return r
}

// share returns the per-coordinate sensitivity that a noise source must
// be told for one coordinate of a d-dimensional release of sensitivity
// total: total/sqrt(d) for L2 (Gaussian), total/d for L1 (Laplace),
// rounded down. A snapping source widens each coordinate's sensitivity by
// one grid step L of this share; a d-vector moves by at most sqrt(d) L in
// L2 and d L in L1 after snapping, which is exactly what the widening of
// the share by L covers: (share + L)/share = (total + sqrt(d) L)/total
// (L2), (total + d L)/total (L1).
func share(total float64, d int, l2 bool) float64 {
	if d <= 1 {
		return total
	}
	x := total / float64(d)
	if l2 {
		x = total / math.Sqrt(float64(d))
	}
	return x * (1 - 0x1p-50)
}

// SumsState is the value of Sums, for a policy's snapshot.
type SumsState struct {
	F []float64
	X []*big.Float // nil unless exact
}

// State returns the sums' values (copies).
func (s Sums) State() SumsState {
	st := SumsState{F: append([]float64(nil), s.F...)}
	for _, v := range s.x {
		st.X = append(st.X, new(big.Float).Copy(v))
	}
	return st
}

// SetState sets the sums to st, which must be of their length and
// exactness; the storage is kept (views such as At see the new values).
func (s Sums) SetState(st SumsState) error {
	if len(st.F) != len(s.F) || len(st.X) != len(s.x) {
		return inputf("a state of %d sums (%d exact) for %d sums (%d exact)", len(st.F), len(st.X), len(s.F), len(s.x))
	}
	copy(s.F, st.F)
	for i, v := range st.X {
		if v == nil {
			return inputf("exact sum %d is missing", i)
		}
		s.x[i].Set(v)
	}
	return nil
}
