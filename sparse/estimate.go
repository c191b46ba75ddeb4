package sparse

import (
	"math"

	"github.com/dpbandit/dpbandit/internal/liberr"
	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/privacy"
)

// EstimationConfig holds the inputs of SparseEstimation besides the
// LASSO fit.
type EstimationConfig struct {
	// Lambda is lambda_t of the re-estimation.
	Lambda float64
	// S0 is the sparsity s_0 the learner assumes; SBar is 002's s-bar
	// (>= 1); the cutoff is c = ceil(S0 + sqrt(SBar)) positive answers.
	S0   int
	SBar float64
	// CTheta bounds ||theta||_2: the LASSO coordinates' magnitudes lie in
	// [0, CTheta], so one datum moves each by at most CTheta, the queries'
	// sensitivity.
	CTheta float64
	// Eps1 and Delta1 are the re-estimation's budget (002 Algorithm 1,
	// line 2); D and T enter Gamma.
	Eps1, Delta1 float64
	D            int
	T            int64
}

// Cutoff returns c = ceil(S0 + sqrt(SBar)).
func (c EstimationConfig) Cutoff() int { return int(math.Ceil(float64(c.S0) + math.Sqrt(c.SBar))) }

// Gamma returns Gamma of 002 Algorithm 2, line 1, read as
//
//	Gamma = sbar^-1/2 [ (xi ln((1 - delta_1)/delta_1) - C_theta) / sqrt(ln d ln T) - 1 ],
//	xi = sqrt(32 ln(1/delta_1)) / eps',  eps' = eps_1 / sqrt(8 sbar ln(1/delta_1)),
//
// and clamped at 0: printed as is it is negative when xi ln(1/delta_1)
// < C_theta + sqrt(ln d ln T), which would put the private threshold
// 4 lambda_t Gamma sqrt(sbar) below 0 (SparseEstimation keeps the
// threshold at least 4 lambda_t). Its role in 002 (Lemma 2) is to raise
// the threshold far above the screen's 4 lambda_t, so that a coordinate
// the non-private screen let in on one stream but not on its neighbour
// passes the private test with probability within delta_1; the audit
// shows that it does not (see SparseEstimation).
func (c EstimationConfig) Gamma() float64 {
	l := math.Log(1 / c.Delta1)
	epsp := c.Eps1 / math.Sqrt(8*c.SBar*l)
	xi := math.Sqrt(32*l) / epsp
	g := ((xi*math.Log((1-c.Delta1)/c.Delta1)-c.CTheta)/math.Sqrt(math.Log(float64(c.D))*math.Log(float64(c.T))) - 1) / math.Sqrt(c.SBar)
	return max(g, 0)
}

// SparseEstimation is 002's Algorithm 2 on a LASSO fit theta (line 2,
// Lasso) without its non-private screen: over all coordinates in
// increasing order, the sparse vector technique (mechanism.SparseVector
// at eps_1, queries of sensitivity C_theta) asks whether |theta_i| +
// noise reaches 4 lambda_t max(Gamma sqrt(sbar), 1) + noise (lines 5-7),
// stopping after c = S0 + sqrt(sbar) positive answers (line 11). It
// returns S_1, increasing. The whole pass is pure eps_1-DP.
//
// The screen. Line 3 first keeps S_0 = {i : |theta_i| > 4 lambda_t}
// without noise, and Lemma 2 counts its leak in delta, through Gamma. It
// does leak more: run as written, PrivateThresholdLASSO failed the
// empirical audit (`dpbandit audit --algo private-lasso --rho 0.1`: eps_lo
// 1.92 against the 1.76 claimed at delta = 10^-3, and 4.10 at s0 =
// 1000), because a coordinate that the screen lets in on one stream and
// not on its neighbour then passes the noisy test with a probability
// (a few percent at these noise scales) far above delta_1: Gamma raises
// the threshold by a factor of the noise scale xi, but the value noise
// is of that scale too. The pass therefore runs over every coordinate,
// which the sparse vector technique makes private by construction (the
// audit then passes, eps_lo 0), and the threshold is kept at least the
// screen's 4 lambda_t, so that with little noise S_1 is still the
// screen's set (Gamma read as at least 1/sqrt(sbar)).
//
// Readings:
//   - line 7 compares the signed value, which would drop every negative
//     coefficient; the comparison is of magnitudes;
//   - lines 5-6 print fresh threshold noise Lap(xi) per coordinate and
//     value noise Lap(2 xi); the sparse vector technique with a cutoff
//     draws the threshold noise once and the value noise at the scale
//     its proof needs (Lyu, Su and Li 2017, Algorithm 1: 3 Delta/eps_1
//     and 3 c Delta/eps_1), which is pure eps_1-DP for the whole pass;
//   - Gamma, as Gamma() reads it.
func SparseEstimation(theta []float64, c EstimationConfig, nz noise.Noise) ([]int, error) {
	if !(c.Lambda > 0) || math.IsInf(c.Lambda, 0) {
		return nil, inputf("lambda_t must be positive and finite, got %v", c.Lambda)
	}
	if c.S0 < 1 || !(c.SBar >= 1) || !(c.CTheta > 0) || c.D < 2 || c.T < 2 {
		return nil, inputf("bad estimation parameters %+v", c)
	}
	if !(c.Delta1 > 0 && c.Delta1 < 1) {
		return nil, inputf("delta_1 must lie in (0, 1), got %v", c.Delta1)
	}
	for _, x := range theta {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, liberr.New("sparse", "the LASSO fit has a non-finite coordinate")
		}
	}
	b, err := privacy.NewPure(c.Eps1)
	if err != nil {
		return nil, err
	}
	svt, err := mechanism.NewSparseVector(b, c.CTheta, c.Cutoff(), nz)
	if err != nil {
		return nil, err
	}
	threshold := 4 * c.Lambda * max(c.Gamma()*math.Sqrt(c.SBar), 1)
	var s1 []int
	for i := range theta {
		q := min(math.Abs(theta[i]), c.CTheta)
		above, err := svt.Above(q, threshold)
		if err != nil {
			return nil, err
		}
		if above {
			s1 = append(s1, i)
			if svt.Left() == 0 {
				break
			}
		}
	}
	return s1, nil
}
