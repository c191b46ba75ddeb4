package sim

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// Stats summarises a quantity over runs at each checkpoint.
type Stats struct {
	Mean []float64 `json:"mean"`
	Std  []float64 `json:"std"`
	// CILo and CIHi bound the 95% confidence interval of the mean
	// (Student's t with runs-1 degrees of freedom).
	CILo []float64 `json:"ci95_lo"`
	CIHi []float64 `json:"ci95_hi"`
	// Q05 and Q95 are the empirical 5% and 95% quantiles over runs.
	Q05 []float64 `json:"q05"`
	Q95 []float64 `json:"q95"`
}

// TQuantile returns the 97.5% quantile of Student's t with n-1 degrees of
// freedom (NaN for n < 2): the factor of the standard error in the 95%
// interval of a mean of n runs, and of a paired difference over them.
func TQuantile(n int) float64 {
	if n < 2 {
		return math.NaN()
	}
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(n - 1)}.Quantile(0.975)
}

// Summarize computes Stats of x[run][checkpoint] over runs.
func Summarize(x [][]float64) Stats {
	if len(x) == 0 {
		return Stats{}
	}
	nc := len(x[0])
	s := Stats{
		Mean: make([]float64, nc), Std: make([]float64, nc),
		CILo: make([]float64, nc), CIHi: make([]float64, nc),
		Q05: make([]float64, nc), Q95: make([]float64, nc),
	}
	tq := TQuantile(len(x))
	col := make([]float64, len(x))
	for c := range nc {
		for r := range x {
			col[r] = x[r][c]
		}
		m, sd := stat.MeanStdDev(col, nil)
		if len(x) < 2 {
			sd = 0
		}
		half := 0.0
		if len(x) > 1 {
			half = tq * sd / math.Sqrt(float64(len(x)))
		}
		slices.Sort(col)
		s.Mean[c], s.Std[c] = m, sd
		s.CILo[c], s.CIHi[c] = m-half, m+half
		s.Q05[c] = stat.Quantile(0.05, stat.Empirical, col, nil)
		s.Q95[c] = stat.Quantile(0.95, stat.Empirical, col, nil)
	}
	return s
}

// Paired returns, at each checkpoint, the mean of the per-run differences
// a[r][c] - b[r][c] and its standard error (std/sqrt(runs)). With common
// random numbers the differences vary far less than either side.
func Paired(a, b [][]float64) (mean, se []float64) {
	if len(a) == 0 || len(a) != len(b) {
		return nil, nil
	}
	d := make([][]float64, len(a))
	for r := range a {
		d[r] = make([]float64, len(a[r]))
		for c := range a[r] {
			d[r][c] = a[r][c] - b[r][c]
		}
	}
	s := Summarize(d)
	se = make([]float64, len(s.Std))
	for c, sd := range s.Std {
		se[c] = sd / math.Sqrt(float64(len(a)))
	}
	return s.Mean, se
}

// PriceOfPrivacy returns (priv - nonpriv)/nonpriv elementwise (seed 001,
// Section VII): NaN where the non-private regret is 0.
func PriceOfPrivacy(priv, nonpriv []float64) []float64 {
	out := make([]float64, len(priv))
	for i := range priv {
		if nonpriv[i] == 0 {
			out[i] = math.NaN()
			continue
		}
		out[i] = (priv[i] - nonpriv[i]) / nonpriv[i]
	}
	return out
}
