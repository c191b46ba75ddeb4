package experiment

import (
	"math"
	"strconv"

	"gonum.org/v1/plot"
)

// niceTicks marks a linear axis at multiples of a step of 1, 2 or 5
// times a power of 10: the smallest such step that gives at most
// maxMajorTicks labelled ticks. Ticks are whole multiples of the step, so
// 0 is one of them whenever the range holds it, and no tick falls at an
// odd value (250, 750, 1250). Labels carry no needless decimals (1000,
// not 1000.00; 0.5, not 0.50); niceLabel writes them. Unlabelled minor ticks divide each step in 5 (a step of 1 or 5)
// or 4 (a step of 2).
type niceTicks struct{}

// maxMajorTicks is the most labelled ticks an axis gets.
const maxMajorTicks = 6

// Ticks implements plot.Ticker.
func (niceTicks) Ticks(lo, hi float64) []plot.Tick {
	if math.IsNaN(lo) || math.IsNaN(hi) || math.IsInf(lo, 0) || math.IsInf(hi, 0) {
		return nil
	}
	if hi <= lo {
		return []plot.Tick{{Value: lo, Label: niceLabel(lo, niceStep(math.Abs(lo)), math.Abs(lo))}}
	}
	step, m := niceStepFor(lo, hi)
	var ticks []plot.Tick
	big := max(math.Abs(lo), math.Abs(hi))
	for k := math.Ceil(lo/step - 1e-9); k <= math.Floor(hi/step+1e-9); k++ {
		v := snap(k*step, step)
		ticks = append(ticks, plot.Tick{Value: v, Label: niceLabel(v, step, big)})
	}
	minor := step / 5
	if m == 2 {
		minor = step / 4
	}
	for k := math.Ceil(lo/minor - 1e-9); k <= math.Floor(hi/minor+1e-9); k++ {
		if v := snap(k*minor, minor); math.Abs(math.Remainder(v, step)) > minor/2 {
			ticks = append(ticks, plot.Tick{Value: v})
		}
	}
	return ticks
}

// niceStepFor returns the smallest step m×10^e (m in 1, 2, 5) that marks
// [lo, hi] with at most maxMajorTicks labelled ticks, and its m.
func niceStepFor(lo, hi float64) (float64, int) {
	e := math.Floor(math.Log10((hi - lo) / maxMajorTicks))
	for {
		for _, m := range []int{1, 2, 5} {
			step := float64(m) * math.Pow(10, e)
			if math.Floor(hi/step+1e-9)-math.Ceil(lo/step-1e-9)+1 <= maxMajorTicks {
				return step, m
			}
		}
		e++
	}
}

// niceStep returns the power of 10 at or below x (1 for 0): the step a
// lone value is labelled at.
func niceStep(x float64) float64 {
	if x == 0 {
		return 1
	}
	return math.Pow(10, math.Floor(math.Log10(x)))
}

// niceLabel labels v, a multiple of step on an axis whose values reach
// big in magnitude: decimals down to the step's and no further, trailing
// zeros dropped (0.5, 1250); from 10^5 on in thousands, millions, ...
// (250k, 1.5M: the figures' font has no superscript digits); below a
// step of 10^-4 as 2e-7.
func niceLabel(v, step, big float64) string {
	e := int(math.Floor(math.Log10(step) + 1e-9))
	if v == 0 || math.Abs(v) < step/2 {
		return "0"
	}
	if e < -4 {
		n := int(math.Floor(math.Log10(math.Abs(v)) + 1e-9))
		mant := roundTo(v/math.Pow(10, float64(n)), max(0, n-e))
		return strconv.FormatFloat(mant, 'f', -1, 64) + "e" + strconv.Itoa(n)
	}
	if big < 1e5 {
		return strconv.FormatFloat(roundTo(v, max(0, -e)), 'f', -1, 64)
	}
	return siLabel(v, e, big)
}

// siLabels are the suffixes of 10^3, 10^6, 10^9 and 10^12.
var siLabels = []string{"k", "M", "G", "T"}

// siLabel writes v, a multiple of 10^e, in the unit of big (k, M, G, T;
// past 10^15 as 2e+18).
func siLabel(v float64, e int, big float64) string {
	u := int(math.Floor(math.Log10(big)+1e-9)) / 3
	if u > len(siLabels) {
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
	unit := math.Pow(10, float64(3*u))
	return strconv.FormatFloat(roundTo(v/unit, max(0, 3*u-e)), 'f', -1, 64) + siLabels[u-1]
}

// snap rounds x, a multiple of step, to the step's decimals, so that
// -0.30000000000000004 is -0.3.
func snap(x, step float64) float64 {
	if e := int(math.Floor(math.Log10(step) + 1e-9)); e < 0 {
		return roundTo(x, 1-e)
	}
	return x
}

// roundTo rounds x to d decimals (d < 0: to tens, hundreds, ...).
func roundTo(x float64, d int) float64 {
	if d < 0 {
		p := math.Pow(10, float64(-d))
		return math.Round(x/p) * p
	}
	s := strconv.FormatFloat(x, 'f', d, 64)
	y, _ := strconv.ParseFloat(s, 64)
	return y
}

// logTicks marks a log axis at the powers of 10 (minor ticks at 2 to 9
// times them over at most 6 decades; every other power labelled past 8),
// labelled 0.01, ..., 1, 10, ..., 10000 when every label lies in
// [10^-3, 10^4]; past 10^4 in thousands, millions, ... (1k, 10k, 1M);
// below 10^-3 as 1e-5. A range holding fewer than two powers of 10 (a regret
// between 26 and 50, say) is marked at 1, 2 and 5 times them, or, with
// fewer than two of those, at niceTicks, so that the axis always has at
// least two labels.
type logTicks struct{}

// Ticks implements plot.Ticker.
func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(lo > 0) || !(hi > lo) || math.IsInf(hi, 0) {
		return niceTicks{}.Ticks(lo, hi)
	}
	e0, e1 := int(math.Ceil(math.Log10(lo)-1e-9)), int(math.Floor(math.Log10(hi)+1e-9))
	if e1-e0+1 >= 2 {
		every := 1
		if e1-e0+1 > 8 {
			every = 2
		}
		tiny := e0 < -3
		var ticks []plot.Tick
		for e := e0 - 1; e <= e1; e++ {
			v := math.Pow(10, float64(e))
			if e >= e0 && (e-e0)%every == 0 {
				label := strconv.FormatFloat(v, 'f', -1, 64)
				switch {
				case tiny:
					label = "1e" + strconv.Itoa(e)
				case e1 > 4 && e >= 3:
					label = siLabel(v, e, v)
				}
				ticks = append(ticks, plot.Tick{Value: v, Label: label})
			} else if e >= e0 {
				ticks = append(ticks, plot.Tick{Value: v})
			}
			if e1-e0 <= 6 {
				for m := 2; m <= 9; m++ {
					if x := float64(m) * v; x >= lo && x <= hi {
						ticks = append(ticks, plot.Tick{Value: x})
					}
				}
			}
		}
		return ticks
	}
	var ticks []plot.Tick
	for e := e0 - 1; e <= e1; e++ {
		for _, m := range []float64{1, 2, 5} {
			v := m * math.Pow(10, float64(e))
			if v >= lo*(1-1e-12) && v <= hi*(1+1e-12) {
				step := math.Pow(10, float64(e))
				ticks = append(ticks, plot.Tick{Value: v, Label: niceLabel(v, step, hi)})
			}
		}
	}
	if len(ticks) >= 2 {
		return ticks
	}
	return niceTicks{}.Ticks(lo, hi)
}
