// Package stattest holds the goodness-of-fit tests that dpbandit's
// statistical tests share: Pearson's chi-square against an exact pmf and
// the one- and two-sample Kolmogorov-Smirnov tests. Each returns a p-value;
// tests compare it with a significance level fixed in advance and run on
// fixed seeds, so they are deterministic.
package stattest

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"
)

// ChiSquare tests observed counts against an expected distribution. counts[i]
// is the number of samples equal to lo+i (values outside [lo, lo+len(counts))
// must be added to the end bins by the caller or passed as tail); pmf(k)
// gives the exact probability of k. Neighbouring cells are pooled until each
// expects at least 5 samples, the mass outside the window is pooled into the
// end cells, and the p-value of Pearson's statistic is returned with its
// degrees of freedom.
func ChiSquare(counts []int, lo int64, pmf func(k int64) float64) (p float64, df int) {
	n := 0
	for _, c := range counts {
		n += c
	}
	exp := make([]float64, len(counts))
	inside := 0.0
	for i := range counts {
		exp[i] = pmf(lo+int64(i)) * float64(n)
		inside += exp[i]
	}
	// Mass outside the window goes half to each end cell's expectation; the
	// caller's window is chosen wide enough for it to be negligible.
	rest := math.Max(float64(n)-inside, 0)
	exp[0] += rest / 2
	exp[len(exp)-1] += rest / 2
	var obsCells, expCells []float64
	var o, e float64
	for i := range counts {
		o += float64(counts[i])
		e += exp[i]
		if e >= 5 {
			obsCells, expCells = append(obsCells, o), append(expCells, e)
			o, e = 0, 0
		}
	}
	if len(expCells) == 0 {
		return 1, 0
	}
	obsCells[len(obsCells)-1] += o
	expCells[len(expCells)-1] += e
	stat := 0.0
	for i := range obsCells {
		d := obsCells[i] - expCells[i]
		stat += d * d / expCells[i]
	}
	df = len(expCells) - 1
	if df < 1 {
		return 1, df
	}
	return distuv.ChiSquared{K: float64(df)}.Survival(stat), df
}

// kolmogorovQ is the survival function of the Kolmogorov distribution.
func kolmogorovQ(l float64) float64 {
	if l < 0.2 {
		return 1
	}
	s := 0.0
	for k := 1; k <= 100; k++ {
		term := math.Exp(-2 * float64(k*k) * l * l)
		if k%2 == 1 {
			s += term
		} else {
			s -= term
		}
		if term < 1e-16 {
			break
		}
	}
	return math.Min(math.Max(2*s, 0), 1)
}

// KSOne returns the Kolmogorov-Smirnov statistic of the samples against the
// continuous distribution function cdf, and its asymptotic p-value.
func KSOne(x []float64, cdf func(float64) float64) (d, p float64) {
	s := slices.Clone(x)
	slices.Sort(s)
	n := float64(len(s))
	for i, v := range s {
		f := cdf(v)
		d = math.Max(d, math.Max(f-float64(i)/n, float64(i+1)/n-f))
	}
	return d, kolmogorovQ(d * (math.Sqrt(n) + 0.12 + 0.11/math.Sqrt(n)))
}

// KSTwo returns the two-sample Kolmogorov-Smirnov statistic of a and b and
// its asymptotic p-value. Ties are handled by stepping past equal values.
func KSTwo(a, b []float64) (d, p float64) {
	x, y := slices.Clone(a), slices.Clone(b)
	slices.Sort(x)
	slices.Sort(y)
	i, j := 0, 0
	n, m := float64(len(x)), float64(len(y))
	for i < len(x) && j < len(y) {
		v := math.Min(x[i], y[j])
		for i < len(x) && x[i] == v {
			i++
		}
		for j < len(y) && y[j] == v {
			j++
		}
		d = math.Max(d, math.Abs(float64(i)/n-float64(j)/m))
	}
	en := math.Sqrt(n * m / (n + m))
	return d, kolmogorovQ(d * (en + 0.12 + 0.11/en))
}
