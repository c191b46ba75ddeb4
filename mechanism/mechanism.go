// Package mechanism holds the privacy mechanisms that algorithms call: the
// Gaussian and Laplace mechanisms, and the declared input bounds that fix
// their sensitivity.
//
// Every mechanism is built from a privacy.Budget and a sensitivity; the
// noise scale comes from package privacy and the noise from a noise.Noise.
// An algorithm never computes a scale itself. Inputs pass through Bounds
// first: values outside the declared range are clipped to it (so that the
// sensitivity the calibration assumed holds), and NaN or infinite values
// are rejected with an error.
package mechanism

import (
	"fmt"
	"math"
	"math/big"

	"github.com/dpbandit/dpbandit/internal/linalg"
	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/privacy"
)

// Bounds is the declared range [Lo, Hi] of one input value, such as a
// reward. The sensitivity of every statistic a mechanism releases is
// derived from it.
type Bounds struct {
	Lo float64 `json:"lo"`
	Hi float64 `json:"hi"`
}

// String formats the range as "[lo, hi]".
func (b Bounds) String() string { return fmt.Sprintf("[%v, %v]", b.Lo, b.Hi) }

// Unit is the range [0, 1] assumed by most proofs of the source papers.
var Unit = Bounds{0, 1}

// NewBounds validates and returns the range [lo, hi].
func NewBounds(lo, hi float64) (Bounds, error) {
	b := Bounds{lo, hi}
	return b, b.Validate()
}

// Validate reports an error unless Lo < Hi are both finite and the
// width Hi - Lo, the sensitivity of one value, is finite too.
func (b Bounds) Validate() error {
	if !finite(b.Lo) || !finite(b.Hi) || b.Lo >= b.Hi {
		return inputf("a range needs finite lo < hi, got [%v, %v]", b.Lo, b.Hi)
	}
	if !finite(b.Hi - b.Lo) {
		return inputf("the range [%v, %v] is too wide: its width, the sensitivity of one value, overflows", b.Lo, b.Hi)
	}
	return nil
}

// Width returns Hi - Lo, the sensitivity of one value under replacement.
func (b Bounds) Width() float64 { return b.Hi - b.Lo }

// finite reports whether x is neither NaN nor infinite (x - x is NaN
// exactly for those).
func finite(x float64) bool { return x-x == 0 }

// Clip returns x clipped to the range. NaN and infinite values are errors:
// they carry no information a mechanism may use.
func (b Bounds) Clip(x float64) (float64, error) {
	if !finite(x) {
		return 0, inputf("input %v is not a finite number", x)
	}
	return min(max(x, b.Lo), b.Hi), nil
}

// Sum returns the sum of a block of count values in the range, given either
// the values themselves (samples, each clipped) or only their sum. A single
// value (count 1) is clipped. A sum of several values cannot be clipped
// value by value, so it must lie in [count Lo, count Hi], or it is an
// error. count must be positive, and samples, when given, must number count.
func (b Bounds) Sum(count int64, sum float64, samples []float64) (float64, error) {
	if count <= 0 {
		return 0, inputf("a block needs a positive count, got %d", count)
	}
	if samples != nil {
		if int64(len(samples)) != count {
			return 0, inputf("count %d but %d samples", count, len(samples))
		}
		s := 0.0
		for _, x := range samples {
			c, err := b.Clip(x)
			if err != nil {
				return 0, err
			}
			s += c
		}
		return s, nil
	}
	if count == 1 {
		return b.Clip(sum)
	}
	if !finite(sum) {
		return 0, inputf("reward sum %v is not a finite number", sum)
	}
	n := float64(count)
	// Allow the rounding of a float sum of in-range values.
	tol := 1e-9 * n * math.Max(math.Abs(b.Lo), math.Abs(b.Hi))
	if sum < n*b.Lo-tol || sum > n*b.Hi+tol {
		return 0, inputf("a sum of %d rewards in [%v, %v] must lie in [%v, %v], got %v; pass the samples to have them clipped", count, b.Lo, b.Hi, n*b.Lo, n*b.Hi, sum)
	}
	return math.Min(math.Max(sum, n*b.Lo), n*b.Hi), nil
}

// CheckActions validates action vectors against the bound ||a||_2 <= 1
// that the linear privacy and regret proofs assume: all of dimension d,
// finite, and InUnitBall, exactly (no slack for rounding: a generator
// that normalises calls IntoUnitBall). A larger action is an error:
// rescale the set.
func CheckActions(actions [][]float64, d int) error {
	if err := linalg.CheckRows(actions, d, "action", "coordinate"); err != nil {
		return inputf("%w", err)
	}
	for i, a := range actions {
		if !InUnitBall(a) {
			return inputf("action %d has norm %v > 1; the privacy and regret proofs assume ||a|| <= 1: rescale the action set", i, math.Sqrt(linalg.Dot(a, a)))
		}
	}
	return nil
}

// InUnitBall reports whether a's squared norm, as every policy computes
// it (linalg.Dot), is at most 1; false for NaN.
func InUnitBall(a []float64) bool { return linalg.SquaredNorm(a) <= 1 }

// IntoUnitBall scales a finite vector a in place so that InUnitBall holds:
// by 1/||a|| if it is outside, then down by an ulp at a time while
// rounding leaves it outside (a step or two at most). A vector with a
// NaN or infinite coordinate is left as it is (InUnitBall is false for
// it); one whose squared norm overflows is first divided by its largest
// coordinate.
func IntoUnitBall(a []float64) {
	n := linalg.SquaredNorm(a)
	if math.IsInf(n, 1) {
		m := 0.0
		for _, x := range a {
			m = max(m, math.Abs(x))
		}
		if math.IsInf(m, 0) {
			return
		}
		for i := range a {
			a[i] /= m
		}
		n = linalg.SquaredNorm(a)
	}
	if !(n <= math.MaxFloat64) { // NaN
		return
	}
	// s = 1 when a is inside (and a times 1 is a, bit for bit): no
	// branch on whether it is, which about half of a decision set's
	// actions are, in an order no branch predictor learns.
	scaleIntoUnitBall(a, 1/math.Sqrt(max(n, 1)))
}

// scaleIntoUnitBall multiplies a by s, then by 1 - 2^-52 while rounding
// leaves it outside the unit ball (a step or two at most).
func scaleIntoUnitBall(a []float64, s float64) {
	for !InUnitBall(scaled(a, s)) {
		s = 1 - 0x1p-52
	}
}

// scaled multiplies a by s in place and returns it.
func scaled(a []float64, s float64) []float64 {
	for i := range a {
		a[i] *= s
	}
	return a
}

// IntoUnitBallSet is IntoUnitBall on every vector of a decision set, to
// the bit, computed a phase at a time over up to 16 vectors (their
// squared norms, then their scales, then the scaling and its check) so
// that the square roots and divisions of different vectors overlap in
// the processor instead of waiting on each other; a vector whose norm is
// not finite takes IntoUnitBall.
func IntoUnitBallSet(set [][]float64) {
	var s [16]float64
	for len(set) > 0 {
		chunk := set[:min(len(set), len(s))]
		set = set[len(chunk):]
		for k, a := range chunk {
			s[k] = linalg.SquaredNorm(a)
		}
		for k := range chunk {
			s[k] = 1 / math.Sqrt(max(s[k], 1)) // NaN and +Inf give 0 and NaN: see below
		}
		for k, a := range chunk {
			if !(s[k] > 0) { // a norm that overflows, or NaN
				IntoUnitBall(a)
				continue
			}
			// scaled and checked in one pass (InUnitBall's norm, to the bit)
			if !(linalg.ScaleSquaredNorm(a, s[k]) <= 1) { // the rare rounding outside, as IntoUnitBall
				scaleIntoUnitBall(a, 1-0x1p-52)
			}
		}
	}
}

// MeanSensitivity returns the sensitivity, in L1 and L2 alike, of the mean
// of n values in the range when one value is replaced: (Hi - Lo)/n.
func (b Bounds) MeanSensitivity(n int64) float64 { return b.Width() / float64(n) }

// Gaussian is the Gaussian mechanism (Theorem 18 of seed 001): it adds
// N(0, Sigma^2) to each coordinate of a statistic, with Sigma calibrated by
// privacy.GaussianSigma to a budget and an L2 sensitivity.
type Gaussian struct {
	sigma, l2 float64
	nz        noise.Noise
	// dim is the dimension of the statistic the sensitivity is for, when
	// larger than one release (TreeAgg's L levels); 0: the vector's own.
	dim int
}

// NewGaussian returns the Gaussian mechanism for the budget and the L2
// sensitivity, drawing from nz. On a discrete noise source (noise.Secure)
// an (eps,delta) budget is met through zCDP, the guarantee the discrete
// Gaussian carries exactly (privacy.ApproxToZCDP). A policy that releases
// at many sensitivities (one an episode) calibrates once
// (CalibrateGaussian).
func NewGaussian(b privacy.Budget, l2 float64, nz noise.Noise) (Gaussian, error) {
	c, err := CalibrateGaussian(b, nz)
	return at(c, err, l2)
}

// GaussianCalibration is the Gaussian mechanism of a budget on a noise
// source, calibrated once (privacy.Calibration): At builds it at
// a sensitivity with one multiplication.
type GaussianCalibration struct {
	cal privacy.Calibration
	nz  noise.Noise
}

// CalibrateGaussian calibrates the Gaussian mechanism for the budget on
// nz, as NewGaussian does.
func CalibrateGaussian(b privacy.Budget, nz noise.Noise) (GaussianCalibration, error) {
	if err := checkNoise(nz); err != nil {
		return GaussianCalibration{}, err
	}
	if d, ok := nz.(interface{ Discrete() bool }); ok && d.Discrete() && b.Notion == privacy.Approx {
		rho, err := privacy.ApproxToZCDP(b.Eps, b.Delta)
		if err != nil {
			return GaussianCalibration{}, err
		}
		b, _ = privacy.NewZCDP(rho)
	}
	c, err := privacy.CalibrateGaussian(b)
	return GaussianCalibration{cal: c, nz: nz}, err
}

// At returns the mechanism for the L2 sensitivity l2.
func (c GaussianCalibration) At(l2 float64) (Gaussian, error) {
	s, err := c.cal.Scale(l2)
	return Gaussian{sigma: s, l2: l2, nz: c.nz}, err
}

// Sigma returns the standard deviation of the noise added per coordinate.
func (g Gaussian) Sigma() float64 { return g.sigma }

// Release returns x plus fresh noise. Call it once per value of the
// statistic: a second release of the same data spends the budget again.
func (g Gaussian) Release(x float64) (float64, error) {
	if err := checkFinite(x); err != nil {
		return 0, err
	}
	return g.nz.AddGaussian(x, g.sigma, g.l2)
}

// ReleaseVec returns x plus fresh noise in every coordinate: the mechanism
// for a vector statistic whose L2 sensitivity is the one it was built
// with. Call it once per value of the statistic.
func (g Gaussian) ReleaseVec(x []float64) ([]float64, error) {
	out := append([]float64(nil), x...)
	return out, g.AddTo(out)
}

// AddTo is ReleaseVec in place: it adds fresh noise to every coordinate
// of x. A snapping noise source is told each coordinate's share of the L2
// sensitivity (share), so that its rounding is accounted for in the
// vector's dimension.
func (g Gaussian) AddTo(x []float64) error {
	sh := share(g.l2, max(g.dim, len(x)), true)
	return addTo(x, func(v float64) (float64, error) { return g.nz.AddGaussian(v, g.sigma, sh) })
}

// ReleaseSums returns the sums divided by div plus fresh noise in every
// coordinate: exactly, from the exact sums, on a noise source that takes
// exact statistics; else from the float sums, as ReleaseVec. Call it once
// per value of the statistic.
func (g Gaussian) ReleaseSums(s Sums, div int64) ([]float64, error) {
	sh := share(g.l2, max(g.dim, len(s.F)), true)
	return releaseSums(s, div, g.nz, g.AddTo, func(e noise.Exact, x *big.Rat) (float64, error) {
		return e.AddGaussianRat(x, g.sigma, sh)
	})
}

// releaseSums is ReleaseSums for either mechanism.
func releaseSums(s Sums, div int64, nz noise.Noise, addTo func([]float64) error,
	exact func(noise.Exact, *big.Rat) (float64, error)) ([]float64, error) {
	if div < 1 {
		return nil, inputf("a sum is divided by a positive count, got %d", div)
	}
	out := make([]float64, len(s.F))
	if e, ok := nz.(noise.Exact); ok && s.Exact() {
		for i := range out {
			var err error
			if out[i], err = exact(e, s.rat(i, div)); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	for i, v := range s.F {
		out[i] = v
		if div != 1 {
			out[i] = v / float64(div)
		}
	}
	return out, addTo(out)
}

// checkFinite reports an error if a value of x is NaN or infinite.
func checkFinite(x ...float64) error {
	for _, v := range x {
		if !finite(v) {
			return inputf("statistic %v is not a finite number", v)
		}
	}
	return nil
}

// addTo checks that every coordinate of x is finite, then replaces each by
// add(x[i]).
func addTo(x []float64, add func(float64) (float64, error)) error {
	if err := checkFinite(x...); err != nil {
		return err
	}
	for i, v := range x {
		var err error
		if x[i], err = add(v); err != nil {
			return err
		}
	}
	return nil
}

// Laplace is the Laplace mechanism (Dwork, McSherry, Nissim and Smith 2006):
// it adds Lap(Scale) to each coordinate, with Scale calibrated by
// privacy.LaplaceScale to a budget and an L1 sensitivity.
type Laplace struct {
	scale, l1 float64
	nz        noise.Noise
}

// NewLaplace returns the Laplace mechanism for the budget and the L1
// sensitivity, drawing from nz. A policy that releases at many
// sensitivities calibrates once (CalibrateLaplace).
func NewLaplace(b privacy.Budget, l1 float64, nz noise.Noise) (Laplace, error) {
	c, err := CalibrateLaplace(b, nz)
	return at(c, err, l1)
}

// at returns the mechanism of the calibration c at the sensitivity l,
// or err, c's.
func at[M any](c interface{ At(float64) (M, error) }, err error, l float64) (M, error) {
	if err != nil {
		var none M
		return none, err
	}
	return c.At(l)
}

// LaplaceCalibration is the Laplace mechanism of a budget on a noise
// source, calibrated once (privacy.Calibration): At builds it at
// a sensitivity with one division.
type LaplaceCalibration struct {
	cal privacy.Calibration
	nz  noise.Noise
}

// CalibrateLaplace calibrates the Laplace mechanism for the budget on nz.
func CalibrateLaplace(b privacy.Budget, nz noise.Noise) (LaplaceCalibration, error) {
	if err := checkNoise(nz); err != nil {
		return LaplaceCalibration{}, err
	}
	c, err := privacy.CalibrateLaplace(b)
	return LaplaceCalibration{cal: c, nz: nz}, err
}

// At returns the mechanism for the L1 sensitivity l1.
func (c LaplaceCalibration) At(l1 float64) (Laplace, error) {
	s, err := c.cal.Scale(l1)
	return Laplace{scale: s, l1: l1, nz: c.nz}, err
}

// Scale returns the scale of the Laplace noise added per coordinate.
func (l Laplace) Scale() float64 { return l.scale }

// Release returns x plus fresh noise, once per value of the statistic.
func (l Laplace) Release(x float64) (float64, error) {
	if err := checkFinite(x); err != nil {
		return 0, err
	}
	return l.nz.AddLaplace(x, l.scale, l.l1)
}

// AddTo adds fresh noise to every coordinate of x in place: the mechanism
// for a vector statistic of the L1 sensitivity it was built with (through
// noise.VecNoise when the source has it). Call it once per value of the
// statistic.
// A snapping noise source is told each coordinate's share of the L1
// sensitivity (share), so that its rounding is accounted for in the
// vector's dimension.
func (l Laplace) AddTo(x []float64) error {
	sh := share(l.l1, len(x), false)
	if v, ok := l.nz.(noise.VecNoise); ok {
		if err := checkFinite(x...); err != nil {
			return err
		}
		return v.AddLaplaceVec(x, l.scale, sh)
	}
	return addTo(x, func(v float64) (float64, error) { return l.nz.AddLaplace(v, l.scale, sh) })
}

// ReleaseSums is Gaussian.ReleaseSums for the Laplace mechanism.
func (l Laplace) ReleaseSums(s Sums, div int64) ([]float64, error) {
	sh := share(l.l1, len(s.F), false)
	// One value goes through Release, so that the draw is the one a scalar
	// release makes.
	add := func(x []float64) (err error) {
		if len(x) == 1 {
			x[0], err = l.Release(x[0])
			return err
		}
		return l.AddTo(x)
	}
	return releaseSums(s, div, l.nz, add, func(e noise.Exact, x *big.Rat) (float64, error) {
		return e.AddLaplaceRat(x, l.scale, sh)
	})
}

// Chosen is the mechanism NewFor chose for a budget: its name
// ("laplace" or "gaussian"), the scale of its noise per coordinate and
// the sensitivity it was calibrated to.
type Chosen struct {
	Name        string
	Scale       float64
	Sensitivity float64
	addTo       func([]float64) error
}

// AddTo adds fresh noise to every coordinate of x in place, once per
// value of the statistic.
func (c Chosen) AddTo(x []float64) error { return c.addTo(x) }

// NewFor returns the mechanism of least error for the budget, given the
// L1 and L2 sensitivities of a statistic (as NewTreeAggFor does for
// trees): Laplace with l1 for a pure eps-DP budget, which Gaussian noise
// cannot meet, and Gaussian with l2 for every other notion.
func NewFor(b privacy.Budget, l1, l2 float64, nz noise.Noise) (Chosen, error) {
	if b.Notion == privacy.Pure {
		m, err := NewLaplace(b, l1, nz)
		return Chosen{"laplace", m.Scale(), l1, m.AddTo}, err
	}
	m, err := NewGaussian(b, l2, nz)
	return Chosen{"gaussian", m.Sigma(), l2, m.AddTo}, err
}
