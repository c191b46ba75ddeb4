package catalog

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Param is one accepted parameter of an algorithm: its default and the
// range [Min, Max] it must lie in (an end is excluded when MinOpen or
// MaxOpen is set). Ranges are finite, so that every accepted value can be
// tested: the privacy tests run every private algorithm at the ends of
// each range (Edges), and a value that would make an algorithm
// non-private is outside its range.
//
// A parameter with Choices takes one of those names instead of a number;
// its value is the index of the name. Choosing Public, when set, makes
// the spec non-private (it then runs once, without a budget): the
// private algorithm's privacy checks never visit it, and its constructor
// rejects a budget.
type Param struct {
	Default          float64
	Min, Max         float64
	MinOpen, MaxOpen bool
	Choices          []string
	Public           string
}

// choice returns a parameter with named choices, defaulting to the first.
func choice(public string, names ...string) Param {
	return Param{Min: 0, Max: float64(len(names) - 1), Choices: names, Public: public}
}

// Format formats a value of the parameter: its choice's name, or the
// number.
func (p Param) Format(x float64) string {
	if i := int(x); p.Choices != nil && float64(i) == x && i >= 0 && i < len(p.Choices) {
		return p.Choices[i]
	}
	return trimFloat(x)
}

// parse parses a value given as text.
func (p Param) parse(v string) (float64, error) {
	if p.Choices != nil {
		if i := slices.Index(p.Choices, v); i >= 0 {
			return float64(i), nil
		}
		return 0, fmt.Errorf("must be one of %s, got %q", strings.Join(p.Choices, ", "), short(v))
	}
	x, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
		return 0, fmt.Errorf("needs a number, got %q", short(v))
	}
	return x, p.Check(x)
}

// Check reports an error unless x lies in the parameter's range.
func (p Param) Check(x float64) error {
	if x < p.Min || x > p.Max || (p.MinOpen && x == p.Min) || (p.MaxOpen && x == p.Max) || x != x {
		return fmt.Errorf("must lie in %s, got %v", p.Range(), x)
	}
	return nil
}

// Range formats the range, e.g. "(0, 100]", or the choices, "m1|m2".
func (p Param) Range() string {
	if p.Choices != nil {
		return strings.Join(p.Choices, "|")
	}
	lb, rb := "[", "]"
	if p.MinOpen {
		lb = "("
	}
	if p.MaxOpen {
		rb = ")"
	}
	return lb + trimFloat(p.Min) + ", " + trimFloat(p.Max) + rb
}

// Edges returns the extreme accepted values: Min and Max, or the nearest
// floats inside them at an open end; for choices, the first and last
// that keep the algorithm private.
func (p Param) Edges() [2]float64 {
	if p.Choices != nil {
		var idx []float64
		for i, c := range p.Choices {
			if c != p.Public {
				idx = append(idx, float64(i))
			}
		}
		return [2]float64{idx[0], idx[len(idx)-1]}
	}
	lo, hi := p.Min, p.Max
	if p.MinOpen {
		lo = math.Nextafter(lo, math.Inf(1))
	}
	if p.MaxOpen {
		hi = math.Nextafter(hi, math.Inf(-1))
	}
	return [2]float64{lo, hi}
}

// The parameters shared by several algorithms.
var (
	// doublingBeta scales the exploration bonus of the doubling UCBs
	// (001 Eq. (14): beta = 1 in the experiments, beta > 3 in the theory).
	doublingBeta = Param{Default: 1, Min: 0, MinOpen: true, Max: 100}
	// seBeta is DP-SE's failure probability (000 Algorithm 3).
	// Below 1e-15 its first epoch outgrows any horizon.
	seBeta = Param{Default: 0.05, Min: 1e-15, Max: 1, MaxOpen: true}
	// klC is KL-UCB's c in ln t + c ln ln t.
	klC = Param{Default: 0, Min: 0, Max: 10}
	// confDelta is the confidence parameter of GOPE and OFUL's radii.
	confDelta = Param{Default: 0.001, Min: 1e-15, Max: 1, MaxOpen: true}
	// designTol is the Frank-Wolfe tolerance of the G-optimal design.
	designTol = Param{Default: 0.01, Min: 1e-4, Max: 1}
	// ridgeLambda is OFUL's regulariser lambda.
	ridgeLambda = Param{Default: 0.1, Min: 1e-6, Max: 1e6}
	// thetaBound is OFUL's bound S on ||theta*||.
	thetaBound = Param{Default: 1, Min: 0, Max: 1e6}
	// switchC is RS-OFUL's doubling constant C (0: OFUL's every step).
	switchC = Param{Default: 1, Min: 0, Max: 1e6}
	// privateSwitchC is AdaC-OFUL's C: releases happen only at
	// re-estimations, and C = 0 would re-estimate from exact sums at every
	// step without one, so it is excluded.
	privateSwitchC = Param{Default: 1, Min: 0, MinOpen: true, Max: 1e6}
)

// params is an algorithm's parameter table.
type params = map[string]Param

// trimFloat formats x in its shortest form.
func trimFloat(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
