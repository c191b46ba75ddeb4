package experiment

import (
	"math"
	"slices"
	"testing"

	"gonum.org/v1/plot"
)

// labelled returns the labelled ticks' values and labels.
func labelled(ts []plot.Tick) ([]float64, []string) {
	var vs []float64
	var ls []string
	for _, t := range ts {
		if t.Label != "" {
			vs, ls = append(vs, t.Value), append(ls, t.Label)
		}
	}
	return vs, ls
}

// TestNiceTicks checks the linear axes' ticks: steps of 1, 2 or 5 times
// a power of 10, 0 marked when the range holds it, at most 6
// labels, and no needless decimals, from tiny ranges to huge ones.
func TestNiceTicks(t *testing.T) {
	y := newPlot("", "", "", []float64{1, 10}).Y.Tick.Marker // the plots' own marker
	cases := []struct {
		lo, hi float64
		want   []string
	}{
		{0, 1250, []string{"0", "500", "1000"}},
		{-130, 1250, []string{"0", "500", "1000"}},
		{0, 1, []string{"0", "0.2", "0.4", "0.6", "0.8", "1"}},
		{0, 5.6, []string{"0", "1", "2", "3", "4", "5"}},
		{-0.3, 0.25, []string{"-0.3", "-0.2", "-0.1", "0", "0.1", "0.2"}},
		{0.8, 0.9, []string{"0.8", "0.82", "0.84", "0.86", "0.88", "0.9"}},
		{1e-7, 4e-7, []string{"10⁻⁷", "2×10⁻⁷", "3×10⁻⁷", "4×10⁻⁷"}},
		{0, 3.2e9, []string{"0", "10⁹", "2×10⁹", "3×10⁹"}},
		{89000, 89060, []string{"89000", "89020", "89040", "89060"}},
	}
	for _, c := range cases {
		vs, ls := labelled(y.Ticks(c.lo, c.hi))
		if len(vs) < 2 || len(vs) > maxMajorTicks {
			t.Errorf("[%g, %g]: %d labels %v, want 2 to %d", c.lo, c.hi, len(vs), ls, maxMajorTicks)
		}
		step := vs[1] - vs[0]
		mant := step / math.Pow(10, math.Floor(math.Log10(step)+1e-9))
		if !slices.ContainsFunc([]float64{1, 2, 5}, func(m float64) bool { return math.Abs(m-mant) < 1e-6 }) {
			t.Errorf("[%g, %g]: step %g is not 1, 2 or 5 times a power of 10 (%v)", c.lo, c.hi, step, ls)
		}
		if c.lo <= 0 && c.hi >= 0 && !slices.Contains(ls, "0") {
			t.Errorf("[%g, %g]: no 0 among %v", c.lo, c.hi, ls)
		}
		for _, v := range vs {
			if v < c.lo || v > c.hi {
				t.Errorf("[%g, %g]: tick %g outside", c.lo, c.hi, v)
			}
		}
		if len(c.want) > 0 && !slices.Equal(ls, c.want) {
			t.Errorf("[%g, %g]: labels %v, want %v", c.lo, c.hi, ls, c.want)
		}
		if len(slices.Compact(slices.Clone(ls))) != len(ls) {
			t.Errorf("[%g, %g]: repeated labels %v", c.lo, c.hi, ls)
		}
	}
}

// TestLogTicks checks the log axes' ticks: powers of 10 labelled 1, 10,
// ... or 10ⁿ, and at least two labels on a range within one decade.
func TestLogTicks(t *testing.T) {
	x := newPlot("", "", "", []float64{1, 10}).X.Tick.Marker
	cases := []struct {
		lo, hi float64
		want   []string
	}{
		{1, 2000, []string{"1", "10", "100", "1000"}},
		{1, 1e6, []string{"10⁰", "10¹", "10²", "10³", "10⁴", "10⁵", "10⁶"}},
		{0.1, 100, []string{"0.1", "1", "10", "100"}},
		{26, 50, nil},
		{1e-9, 1e-3, []string{"10⁻⁹", "10⁻⁸", "10⁻⁷", "10⁻⁶", "10⁻⁵", "10⁻⁴", "10⁻³"}},
	}
	for _, c := range cases {
		vs, ls := labelled(x.Ticks(c.lo, c.hi))
		if len(vs) < 2 {
			t.Errorf("[%g, %g]: labels %v, want at least 2", c.lo, c.hi, ls)
		}
		if c.want != nil && !slices.Equal(ls, c.want) {
			t.Errorf("[%g, %g]: labels %v, want %v", c.lo, c.hi, ls, c.want)
		}
	}
}
