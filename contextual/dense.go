package contextual

import (
	"math"

	"github.com/dpbandit/dpbandit/internal/linalg"
)

// The dense step, for d >= linalg.StripLanes when V^-1 and every action
// of the decision set are dense (the Gaussian environments; the data set
// environments' block-sparse actions keep the span-wise loops of index
// and rankOne): the K products V_tau^-1 a are computed together by
// linalg.MulSym, which reads V_tau^-1 once per strip of 16 columns for
// all the actions, in fused multiply-adds on every machine; the
// quadratic form is a^T (V_tau^-1 a). V^-1 is updated by
// linalg.RankOneSym, (V^-1)_ij += c (u_i u_j), which adds the same to
// (i, j) and (j, i): MulSym reads V^-1 by columns, which equal its rows
// after an exact refresh and up to the rounding of the first span-wise
// updates otherwise. V's updates wait in a log and are applied in one
// pass before V is read (syncV; the values of the span-wise loops to the
// bit). The norm check is in the index's pass (linalg.Dot3, the norm of
// mechanism.InUnitBall to the bit). Under OFUL (C = 0)
// V_tau^-1 is V^-1 at every Choose, so the product of the chosen action
// is V^-1 a, which the update reuses instead of computing it again;
// V_tau^-1 is V^-1 itself, not a copy (shared), and the update computes
// theta~ in its pass over V^-1 (linalg.RankOneDot; the values tau would
// compute, linalg.Rows, to the bit).
//
// The sums are grouped otherwise than by the span-wise loops (one chain
// of fused multiply-adds per entry instead of the four partial sums of
// gonum's kernel, the full product instead of the upper triangle), so
// values at d >= 16 on dense actions differ in the last bits from those
// of the span-wise loops: the same policy, other rounding (no chosen
// action changed in the runs docs/algorithms.md reports).

// flushV applies the waiting updates to V's upper triangle, in order
// (linalg.AddPendingUpper: the values of one update at a time, to the
// bit).
func (o *OFUL) flushV() {
	linalg.AddPendingUpper(o.v, o.d, o.vlog[:o.nlog], o.vsign[:o.nlog])
	o.nlog = 0
}

// syncV applies the waiting updates of V and copies its upper triangle
// to its lower one if the dense updates left it stale: before every read
// of V as a whole (the exact computations, Drift, the state, the
// span-wise updates).
func (o *OFUL) syncV() {
	if !o.vStale {
		return
	}
	o.flushV()
	d := o.d
	for i := range d {
		for j := range i {
			o.v[i*d+j] = o.v[j*d+i]
		}
	}
	o.vStale = false
}

// tauM returns V_tau^-1: V^-1 itself when shared.
func (o *OFUL) tauM() []float64 {
	if o.shared {
		return o.vinv
	}
	return o.tauInv
}

// unshare copies V^-1 into V_tau^-1 if they are shared, before a change
// of V^-1 that no re-estimation follows (under fuseTau, OFUL's Update,
// tau follows).
func (o *OFUL) unshare() {
	if o.shared && !o.fuseTau {
		copy(o.tauInv, o.vinv)
		o.shared = false
	}
}

// denseSpans reports whether every span is the whole [0, d).
func denseSpans(spans []span, d int) bool {
	for _, s := range spans {
		if s != (span{0, d}) {
			return false
		}
	}
	return true
}

// mulSym sets y = M x for the symmetric d x d matrix m.
func (o *OFUL) mulSym(m, x, y []float64) {
	linalg.MulSym(m, o.d, [][]float64{x}, [][]float64{y})
}

// products returns K buffers of length d for the products of a decision
// set of K actions.
func (o *OFUL) products(k int) [][]float64 {
	for len(o.ys) < k {
		o.ys = append(o.ys, make([]float64, o.d))
	}
	return o.ys[:k]
}

// indexDense is index for a dense decision set against a dense
// V_tau^-1. It checks the actions' norms in the pass that sums their
// index (linalg.Dot3: the squared norm of linalg.SquaredNorm, to the
// bit, so the same check as mechanism.InUnitBall), returning the first
// bad action's error as index does.
func (o *OFUL) indexDense(actions [][]float64) (int, error) {
	ys := o.products(len(actions))
	linalg.MulSym(o.tauM(), o.d, actions, ys)
	best, bv := -1, math.Inf(-1)
	for k, a := range actions {
		q, lin, nn := linalg.Dot3(a, ys[k], o.theta)
		if !(nn <= 1) {
			return 0, checkNorm(k, nn)
		}
		best, bv = keepMax(best, bv, k, lin+o.radius*math.Sqrt(max(q, 0)))
	}
	k, err := o.pick(best, len(actions))
	if err == nil && o.synced {
		o.uReady, o.uAt = true, k
	}
	return k, err
}

// rankOneDense is rankOne on a dense V^-1; ready says that ys[uAt] holds
// V^-1 a already (index's product of the chosen action, under OFUL).
func (o *OFUL) rankOneDense(a []float64, s float64, ready bool) error {
	d := o.d
	var u []float64
	if ready {
		u = o.ys[o.uAt]
	} else {
		u = o.tmp[:d]
		o.mulSym(o.vinv, a, u)
	}
	q, _ := linalg.Dot2(a, u, u)
	den := 1 + s*q
	if !(den > 0) {
		return denError(s, q)
	}
	// V is read rarely: its updates wait, up to linalg.MaxPending of
	// them, to be applied in one pass (syncV).
	if o.vlog == nil {
		o.vlog = make([][]float64, linalg.MaxPending)
		for i := range o.vlog {
			o.vlog[i] = make([]float64, d)
		}
	}
	copy(o.vlog[o.nlog], a)
	o.vsign[o.nlog] = s
	o.nlog++
	o.vStale = true
	if o.nlog == len(o.vlog) {
		o.flushV()
	}
	if o.fuseTau {
		// OFUL's re-estimation in the same pass: theta~ = V^-1
		// (accumulated sums), as tau computes it.
		linalg.RankOneDot(o.vinv, d, u, -(s / den), o.nsum, o.theta)
		o.tauDone = true
	} else {
		linalg.RankOneSym(o.vinv, d, u, -(s / den))
	}
	o.ratio *= den
	return nil
}
