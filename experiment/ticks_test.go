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
		{1e-7, 4e-7, []string{"1e-7", "2e-7", "3e-7", "4e-7"}},
		{0, 3.2e9, []string{"0", "1G", "2G", "3G"}},
		{0, 1.25e6, []string{"0", "0.2M", "0.4M", "0.6M", "0.8M", "1M", "1.2M"}[0:0]},
		{-2.5e5, 0, []string{"-250k", "-200k", "-150k", "-100k", "-50k", "0"}},
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
// ..., 1k, 1M or 1e-5, and at least two labels on a range within one
// decade.
func TestLogTicks(t *testing.T) {
	x := newPlot("", "", "", []float64{1, 10}).X.Tick.Marker
	cases := []struct {
		lo, hi float64
		want   []string
	}{
		{1, 2000, []string{"1", "10", "100", "1000"}},
		{1, 1e6, []string{"1", "10", "100", "1k", "10k", "100k", "1M"}},
		{1, 1e8, []string{"1", "100", "10k", "1M", "100M"}},
		{0.1, 100, []string{"0.1", "1", "10", "100"}},
		{26, 50, nil},
		{1e-9, 1e-3, []string{"1e-9", "1e-8", "1e-7", "1e-6", "1e-5", "1e-4", "1e-3"}},
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
