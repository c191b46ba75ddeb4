// Package privacy holds privacy budgets, the conversions between privacy
// notions and the calibration of noise to a budget and a sensitivity.
//
// It is the one place where noise scales are computed: algorithms obtain them
// from here (usually through package mechanism), from the sensitivity implied
// by their declared input bounds, and never type a scale themselves.
//
// Four notions are supported: pure eps-DP, approximate (eps,delta)-DP,
// rho-zero-concentrated DP (zCDP) and (alpha,eps)-Renyi DP. Conversions are
// rounded in the safe direction: a converted budget is never smaller (more
// private) than the exact value, and a calibrated noise scale is never
// smaller than the exact one.
package privacy

import (
	"fmt"
	"math"
	"strconv"
)

// Notion names a definition of differential privacy.
type Notion string

// The supported notions.
const (
	// NonPrivate marks an algorithm run without any privacy guarantee.
	NonPrivate Notion = "none"
	// Pure is eps-differential privacy.
	Pure Notion = "pure"
	// Approx is (eps,delta)-differential privacy.
	Approx Notion = "approx"
	// ZCDP is rho-zero-concentrated differential privacy (Bun and Steinke 2016).
	ZCDP Notion = "zcdp"
	// Renyi is (alpha,eps)-Renyi differential privacy (Mironov 2017).
	Renyi Notion = "renyi"
	// LDP is local eps-differential privacy (Kasiviswanathan et al.
	// 2011): every client's report is eps-DP with respect to that
	// client's data, so the guarantee holds against the learner itself.
	// It implies central eps-DP of the whole transcript.
	LDP Notion = "ldp"
)

// Budget is a privacy budget under one notion. Only the fields of its notion
// are meaningful: Eps for Pure; Eps and Delta for Approx; Rho for ZCDP;
// Alpha and Eps for Renyi. Build budgets with the constructors, which
// validate them.
type Budget struct {
	Notion Notion  `json:"notion"`
	Eps    float64 `json:"eps,omitempty"`
	Delta  float64 `json:"delta,omitempty"`
	Rho    float64 `json:"rho,omitempty"`
	Alpha  float64 `json:"alpha,omitempty"`
	// Client is, for an LDP budget whose clients hold several rewards
	// (004's M2: a client holds every reward of its action), one client's
	// guarantee over the run: the randomisers are Eps-DP in one reward,
	// so a client of r rewards is r Eps-DP in all of them (composition
	// over its reports, group privacy within one). 0 when each reward is
	// its own client's (the guarantee is Eps).
	Client float64 `json:"client_eps,omitempty"`
}

// None returns the budget of a non-private run.
func None() Budget { return Budget{Notion: NonPrivate} }

// validated returns b and its validation error.
func validated(b Budget) (Budget, error) { return b, b.Validate() }

// NewPure returns an eps-DP budget.
func NewPure(eps float64) (Budget, error) { return validated(Budget{Notion: Pure, Eps: eps}) }

// NewApprox returns an (eps,delta)-DP budget.
func NewApprox(eps, delta float64) (Budget, error) {
	return validated(Budget{Notion: Approx, Eps: eps, Delta: delta})
}

// NewZCDP returns a rho-zCDP budget.
func NewZCDP(rho float64) (Budget, error) { return validated(Budget{Notion: ZCDP, Rho: rho}) }

// NewRenyi returns an (alpha,eps)-Renyi DP budget; alpha must exceed 1.
func NewRenyi(alpha, eps float64) (Budget, error) {
	return validated(Budget{Notion: Renyi, Alpha: alpha, Eps: eps})
}

// ParamError is a budget parameter outside its range: Param ("rho",
// "eps", "delta", "alpha") must Want ("lie in (0,1)"), and is Value.
type ParamError struct {
	Param string
	Value float64
	Want  string
}

func (e *ParamError) Error() string {
	return "privacy: " + e.Message()
}

// Message is the error without the package's name: "rho must ..., got v".
func (e *ParamError) Message() string { return e.Param + " " + e.Reason() }

// Reason is the error without the parameter's name: "must ..., got v".
func (e *ParamError) Reason() string { return fmt.Sprintf("must %s, got %v", e.Want, e.Value) }

// positive reports an error naming the value unless x is positive and finite.
func positive(name string, x float64) error {
	if math.IsNaN(x) || math.IsInf(x, 0) || x <= 0 {
		return &ParamError{name, x, "be positive and finite"}
	}
	return nil
}

// checkDelta reports an error unless delta lies in the open interval (0,1).
func checkDelta(delta float64) error {
	if math.IsNaN(delta) || delta <= 0 || delta >= 1 {
		return &ParamError{"delta", delta, "lie in (0,1)"}
	}
	return nil
}

// Validate reports an error naming the first invalid field of b.
func (b Budget) Validate() error {
	switch b.Notion {
	case NonPrivate:
		return nil
	case Pure:
		return positive("eps", b.Eps)
	case LDP:
		if b.Client != 0 && !(b.Client >= b.Eps) {
			return &ParamError{"client_eps", b.Client, "be at least the per-report eps"}
		}
		return positive("eps", b.Eps)
	case Approx:
		if err := positive("eps", b.Eps); err != nil {
			return err
		}
		return checkDelta(b.Delta)
	case ZCDP:
		return positive("rho", b.Rho)
	case Renyi:
		if math.IsNaN(b.Alpha) || math.IsInf(b.Alpha, 0) || b.Alpha <= 1 {
			return &ParamError{"alpha", b.Alpha, "be finite and greater than 1"}
		}
		return positive("eps", b.Eps)
	}
	return errorf("unknown notion %q", b.Notion)
}

// IsPrivate reports whether b carries a privacy guarantee.
func (b Budget) IsPrivate() bool { return b.Notion != NonPrivate && b.Notion != "" }

// String formats b compactly, e.g. "rho=0.1" or "eps=1,delta=1e-06",
// every number exactly (the shortest that parses back).
func (b Budget) String() string { return b.Label(-1) }

// Label formats b as String does with each number rounded to digits
// significant digits (-1: exactly), e.g. "eps=1.414" for eps = sqrt 2 at
// 4 digits: for legends and tables, where the exact value is in the
// budget's JSON.
func (b Budget) Label(digits int) string {
	f := func(x float64) string {
		if r := strconv.FormatFloat(x, 'g', digits, 64); digits >= 0 {
			if y, _ := strconv.ParseFloat(r, 64); y != x {
				return r // rounded
			}
		}
		return strconv.FormatFloat(x, 'g', -1, 64) // exact in its shortest form: 10000, not 1e+04
	}
	switch b.Notion {
	case Pure:
		return "eps=" + f(b.Eps)
	case Approx:
		return "eps=" + f(b.Eps) + ",delta=" + f(b.Delta)
	case ZCDP:
		return "rho=" + f(b.Rho)
	case Renyi:
		return "alpha=" + f(b.Alpha) + ",eps=" + f(b.Eps)
	case LDP:
		if b.Client > 0 {
			return "eps=" + f(b.Eps) + ",local,client=" + f(b.Client)
		}
		return "eps=" + f(b.Eps) + ",local"
	}
	return "non-private"
}

// margin is the relative outward margin applied to every computed budget
// and scale. Each formula here takes a handful of floating-point
// operations and library calls (sqrt, log, exp, erfc), each within a few
// ulps, so the computed value is within a relative 2^-48 of the exact
// one; 2^-44 covers that sixteenfold (TestSafeRounding checks it against
// 256-bit arithmetic).
const margin = 0x1p-44

// up rounds a computed non-negative budget or scale outward (up), so that
// floating-point error never makes a guarantee look stronger than it is.
func up(x float64) float64 { return x * (1 + margin) }

// down rounds a computed non-negative budget down by the same margin.
func down(x float64) float64 { return x * (1 - margin) }

// ErrScaleRange is returned, wrapped with a *ParamError naming the
// budget's parameter, when a calibrated noise scale is outside float64's
// range: infinite (a budget of 1e-320, say: such noise would release
// infinities) or 0 (a sensitivity of 1e-320 under a large budget).
var ErrScaleRange = errorf("the noise scale is outside float64's range")

// finiteScale returns scale, or an error wrapping ErrScaleRange and a
// *ParamError if it is not positive and finite.
func finiteScale(scale float64, b Budget, sens float64) (float64, error) {
	if scale > 0 && !math.IsInf(scale, 1) {
		return scale, nil
	}
	pe := &ParamError{Param: "eps", Value: b.Eps, Want: fmt.Sprintf("give a noise scale float64 holds at sensitivity %v (got %v)", sens, scale)}
	if b.Notion == ZCDP {
		pe.Param, pe.Value = "rho", b.Rho
	}
	return 0, errorf("%w: %w", ErrScaleRange, pe)
}

// ErrNotPrivate is returned when a calibration is asked of a non-private budget.
var ErrNotPrivate = errorf("the budget is non-private")

// ToZCDP returns the smallest rho for which a mechanism satisfying b is
// known to be rho-zCDP: eps-DP implies (eps^2/2)-zCDP (Bun and Steinke 2016,
// Proposition 1.4). Approximate and Renyi budgets have no zCDP equivalent.
func (b Budget) ToZCDP() (float64, error) {
	if err := b.Validate(); err != nil {
		return 0, err
	}
	switch b.Notion {
	case ZCDP:
		return b.Rho, nil
	case Pure, LDP:
		return PureToZCDP(b.Eps), nil
	case NonPrivate:
		return 0, ErrNotPrivate
	}
	return 0, errorf("a %s budget has no zCDP equivalent", b.Notion)
}

// Local returns the eps-LDP budget that Laplace randomisers calibrated
// to b meet (LaplaceScale): eps for pure and approximate budgets (a pure
// randomiser needs no delta), sqrt(2 rho) rounded down for rho-zCDP.
func Local(b Budget) (Budget, error) {
	if err := b.Validate(); err != nil {
		return Budget{}, err
	}
	switch b.Notion {
	case Pure, Approx, LDP:
		return Budget{Notion: LDP, Eps: b.Eps}, nil
	case ZCDP:
		return Budget{Notion: LDP, Eps: down(math.Sqrt(2 * b.Rho))}, nil
	case NonPrivate:
		return Budget{}, ErrNotPrivate
	}
	return Budget{}, errorf("a %s budget has no local Laplace calibration", b.Notion)
}

// PerClient returns the LDP budget b (per reward) for clients that
// hold up to r rewards: Client = r Eps, rounded up to the next float64
// when not exact (0 for r = 1).
func PerClient(b Budget, r int64) (Budget, error) {
	if b.Notion != LDP || r < 1 {
		return Budget{}, errorf("a per-client guarantee of %d reports of a %s budget", r, b.Notion)
	}
	b.Client = 0
	if r > 1 {
		p := float64(r) * b.Eps
		if math.FMA(float64(r), b.Eps, -p) > 0 { // the product was rounded down
			p = math.Nextafter(p, math.Inf(1))
		}
		b.Client = p
	}
	return b, b.Validate()
}

// PerReport returns the LDP budget whose clients, holding up to r
// rewards, each have the guarantee b.Eps over the run: Eps = b.Eps/r
// rounded down to the float64 below when not exact, Client = b.Eps (0
// for r = 1).
func PerReport(b Budget, r int64) (Budget, error) {
	if b.Notion != LDP || r < 1 {
		return Budget{}, errorf("a per-report budget of %d reports of a %s budget", r, b.Notion)
	}
	if r == 1 {
		return Budget{Notion: LDP, Eps: b.Eps}, nil
	}
	q := b.Eps / float64(r)
	if math.FMA(q, float64(r), -b.Eps) > 0 { // r q > eps
		q = math.Nextafter(q, 0)
	}
	out := Budget{Notion: LDP, Eps: q, Client: b.Eps}
	return out, out.Validate()
}

// PureToZCDP converts eps-DP to rho-zCDP: rho = eps^2/2, rounded up, for
// an eps that NewPure accepts (it does not check: Budget.ToZCDP does).
func PureToZCDP(eps float64) float64 { return up(eps * eps / 2) }

// ZCDPToApprox converts rho-zCDP to (eps,delta)-DP for the given delta:
// eps = rho + 2 sqrt(rho ln(1/delta)) (Bun and Steinke 2016, Proposition 1.3),
// rounded up.
func ZCDPToApprox(rho, delta float64) (float64, error) {
	if err := positive("rho", rho); err != nil {
		return 0, err
	}
	if err := checkDelta(delta); err != nil {
		return 0, err
	}
	return up(rho + 2*math.Sqrt(rho*math.Log(1/delta))), nil
}

// ApproxToZCDP returns (nearly) the largest rho whose conversion
// (ZCDPToApprox) gives at most eps at delta: rho = (sqrt(ln(1/delta) + eps)
// - sqrt(ln(1/delta)))^2, computed without cancellation as
// (eps/(sqrt(l + eps) + sqrt(l)))^2 and rounded down until the conversion
// (itself rounded up) is at most eps. A rho-zCDP mechanism is then
// (eps,delta)-DP.
func ApproxToZCDP(eps, delta float64) (float64, error) {
	b, err := NewApprox(eps, delta)
	if err != nil {
		return 0, err
	}
	l := math.Log(1 / b.Delta)
	r := b.Eps / (math.Sqrt(l+b.Eps) + math.Sqrt(l))
	rho := down(r * r)
	for range 64 {
		if rho <= 0 {
			break
		}
		if e, _ := ZCDPToApprox(rho, b.Delta); e <= b.Eps {
			return rho, nil
		}
		rho = down(rho)
	}
	return 0, errorf("no positive rho meets eps=%v at delta=%v", eps, delta)
}

// RenyiToApprox converts (alpha,eps)-RDP to (eps',delta)-DP with
// eps' = eps + ln(1/delta)/(alpha-1) (Mironov 2017, Proposition 3), rounded up.
func RenyiToApprox(alpha, eps, delta float64) (float64, error) {
	b, err := NewRenyi(alpha, eps)
	if err != nil {
		return 0, err
	}
	if err := checkDelta(delta); err != nil {
		return 0, err
	}
	return up(b.Eps + math.Log(1/delta)/(b.Alpha-1)), nil
}

// ToApprox returns the eps for which a mechanism satisfying b is
// (eps,delta)-DP at the given delta. A pure budget is (eps,delta)-DP for
// every delta; an approximate budget only for delta >= its own delta.
func (b Budget) ToApprox(delta float64) (float64, error) {
	if err := b.Validate(); err != nil {
		return 0, err
	}
	if err := checkDelta(delta); err != nil {
		return 0, err
	}
	switch b.Notion {
	case Pure, LDP:
		return b.Eps, nil
	case Approx:
		if delta < b.Delta {
			return 0, errorf("an (eps,%v)-DP budget says nothing at delta=%v", b.Delta, delta)
		}
		return b.Eps, nil
	case ZCDP:
		return ZCDPToApprox(b.Rho, delta)
	case Renyi:
		return RenyiToApprox(b.Alpha, b.Eps, delta)
	}
	return 0, ErrNotPrivate
}

// Split returns the budget each of k releases may spend so that their
// composition is within b (basic composition: eps, delta and rho add;
// Renyi eps adds at the same alpha): each field divided by k, rounded
// down to the float64 below when the quotient is not exact. Local
// budgets are split per client by PerReport.
func Split(b Budget, k int) (Budget, error) {
	if err := b.Validate(); err != nil {
		return Budget{}, err
	}
	if k < 1 {
		return Budget{}, errorf("a budget is split in at least 1 part, got %d", k)
	}
	if !b.IsPrivate() || b.Notion == LDP {
		return Budget{}, errorf("a %s budget is not split", b.Notion)
	}
	part := func(x float64) float64 {
		q := x / float64(k)
		if math.FMA(q, float64(k), -x) > 0 { // k q > x
			q = math.Nextafter(q, 0)
		}
		return q
	}
	b.Eps, b.Delta, b.Rho = part(b.Eps), part(b.Delta), part(b.Rho)
	return b, b.Validate()
}
