package experiment

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/dpbandit/dpbandit/audit"
	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/contextual"
	"github.com/dpbandit/dpbandit/privacy"
)

// Algorithm describes a policy that experiments can build by name.
type Algorithm struct {
	// Name is what --algo and configs call it.
	Name string
	// Summary is one line for `dpbandit list`.
	Summary string
	// Private algorithms take a privacy budget; others run once, non-private.
	Private bool
	// Counterpart names the non-private algorithm that private results are
	// compared with (paired differences, price of privacy) when it is in
	// the same experiment.
	Counterpart string
	// Params holds the accepted parameters with their defaults and
	// ranges; ParseAlgo rejects a value outside its range.
	Params map[string]Param
	// New is the constructor, of the type its family runs (the family
	// asserts it).
	New any
	// family is the family the algorithm belongs to.
	family Family
	// WeakAudit, when set, says why the audit's default tables cannot show
	// power for this algorithm: its broken variants are then not audited.
	WeakAudit string
	// Local marks algorithms whose privacy is local (seed 004): the
	// randomisers run on the clients, the guarantee holds against the
	// learner, and results show the notion "ldp" (privacy.Local).
	Local bool
	// Approx marks private algorithms that take (eps, delta) budgets
	// only; audits at a rho-zCDP budget run them at the (eps, delta)
	// that rho implies at the audit's delta (privacy.ZCDPToApprox).
	Approx bool
	// PureDP marks private algorithms whose mechanism is Laplace whatever
	// the budget: they are eps-DP, with eps = sqrt(2 rho) for a rho-zCDP
	// budget.
	PureDP bool
	// Redraw, if set, builds the deliberately broken variant of a bandit
	// algorithm that re-draws its noise at every index evaluation (for
	// audits only).
	Redraw func(p map[string]float64, b privacy.Budget, s bandit.Setting) (bandit.Policy, error)
	// AuditTables, if set, returns the neighbouring tables on which this
	// algorithm is hardest to audit; nil means audit.Hard.
	AuditTables func(p map[string]float64, b privacy.Budget, k int, T int64) (audit.Neighbours, error)
	// Bound, if set, returns the paper's regret upper bound at horizon T
	// for a K-armed instance's gaps, and whether it applies.
	Bound func(p map[string]float64, b privacy.Budget, gaps []float64, T int64) (float64, bool)
}

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
		return 0, fmt.Errorf("must be one of %s, got %q", strings.Join(p.Choices, ", "), v)
	}
	x, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
		return 0, fmt.Errorf("needs a number, got %q", v)
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

// params is an algorithm's parameter table.
type params = map[string]Param

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

// ParamList formats the algorithm's parameters as "k=default in range",
// sorted by key, e.g. "beta=1 in (0, 100]".
func (a Algorithm) ParamList() string {
	var s []string
	for _, k := range slices.Sorted(maps.Keys(a.Params)) {
		p := a.Params[k]
		s = append(s, k+"="+p.Format(p.Default)+" in "+p.Range())
	}
	return strings.Join(s, ", ")
}

// Points returns the parameter points of the algorithm that the privacy
// checks visit (the edge test and `dpbandit audit --all`): its defaults,
// then every parameter at each end of its accepted range, the others at
// their defaults, as specs ("adac-ucb", "adac-ucb:beta=100", ...).
func (a Algorithm) Points() []string {
	points := []string{a.Name}
	for _, k := range slices.Sorted(maps.Keys(a.Params)) {
		for _, v := range a.Params[k].Edges() {
			points = append(points, a.Name+":"+k+"="+a.Params[k].Format(v))
		}
	}
	return points
}

// defaults returns the default value of every parameter.
func defaults(p params) map[string]float64 {
	out := make(map[string]float64, len(p))
	for k, v := range p {
		out[k] = v.Default
	}
	return out
}

// Family returns the family the algorithm belongs to.
func (a Algorithm) Family() Family { return a.family }

// Algorithms returns the registry of every family, sorted by name.
func Algorithms() []Algorithm {
	var algos []Algorithm
	for _, f := range Families() {
		for _, a := range f.Algorithms() {
			a.family = f
			algos = append(algos, a)
		}
	}
	slices.SortFunc(algos, func(a, b Algorithm) int { return strings.Compare(a.Name, b.Name) })
	return algos
}

// lookup returns the registered algorithm of that name.
func lookup(name string) (Algorithm, error) {
	for _, a := range Algorithms() {
		if a.Name == name {
			return a, nil
		}
	}
	names := make([]string, 0)
	for _, a := range Algorithms() {
		names = append(names, a.Name)
	}
	return Algorithm{}, fmt.Errorf("unknown algorithm %q (known: %s)", name, strings.Join(names, ", "))
}

// AlgoSpec is a parsed algorithm spec "name" or "name:key=value:key=value".
type AlgoSpec struct {
	Algorithm
	// Values holds every parameter: the defaults overridden by the spec.
	Values map[string]float64
	// Spec is the canonical spec string, with the parameters the user set.
	Spec string
}

// ParseAlgo parses an algorithm spec such as "adac-ucb:beta=4".
func ParseAlgo(spec string) (AlgoSpec, error) {
	fields := strings.Split(strings.TrimSpace(spec), ":")
	a, err := lookup(fields[0])
	if err != nil {
		return AlgoSpec{}, err
	}
	vals := defaults(a.Params)
	var set []string
	seen := map[string]bool{}
	for _, f := range fields[1:] {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			return AlgoSpec{}, fmt.Errorf("algorithm %q: parameter %q needs the form key=value", spec, f)
		}
		p, known := a.Params[k]
		if !known {
			if len(a.Params) == 0 {
				return AlgoSpec{}, fmt.Errorf("algorithm %q: unknown parameter %q (%s takes none)", a.Name, k, a.Name)
			}
			keys := slices.Sorted(maps.Keys(a.Params))
			return AlgoSpec{}, fmt.Errorf("algorithm %q: unknown parameter %q (known: %s)", a.Name, k, strings.Join(keys, ", "))
		}
		if seen[k] {
			return AlgoSpec{}, fmt.Errorf("algorithm %q: parameter %q is given twice", spec, k)
		}
		seen[k] = true
		x, err := p.parse(v)
		if err != nil {
			return AlgoSpec{}, fmt.Errorf("algorithm %q: parameter %s %v", a.Name, k, err)
		}
		vals[k] = x
		set = append(set, k+"="+p.Format(x))
		if p.Public != "" && v == p.Public {
			a.Private, a.Local, a.Counterpart = false, false, ""
		}
	}
	slices.Sort(set)
	canon := strings.Join(append([]string{a.Name}, set...), ":")
	return AlgoSpec{Algorithm: a, Values: vals, Spec: canon}, nil
}

// trimFloat formats x in its shortest form.
func trimFloat(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

// ParamString formats parameters as "k1=v1,k2=v2", sorted by key.
func ParamString(p map[string]float64) string {
	var s []string
	for _, k := range slices.Sorted(maps.Keys(p)) {
		s = append(s, k+"="+trimFloat(p[k]))
	}
	return strings.Join(s, ",")
}

// ErrNotOnline is returned by NewPolicy for algorithms that do not decide
// one arm at a time from a bandit.Setting (contextual, sparse, batched
// and online-learning algorithms).
var ErrNotOnline = errors.New("experiment: the algorithm does not decide one arm at a time")

// NewPolicy builds the algorithm as a bandit.Policy, for a caller that
// takes decisions one at a time (the decision service): finite-armed and
// linear bandit algorithms; ErrNotOnline for the others.
func (a AlgoSpec) NewPolicy(b privacy.Budget, s bandit.Setting) (bandit.Policy, error) {
	nw, ok := a.New.(banditNew)
	if !ok {
		return nil, ErrNotOnline
	}
	return nw(a.Values, b, s)
}

// Online reports whether NewPolicy can build the algorithm.
func (a AlgoSpec) Online() bool {
	_, ok := a.New.(banditNew)
	return ok
}

// Linear reports whether the algorithm's arms are action vectors
// (bandit.Setting.Actions).
func (a AlgoSpec) Linear() bool {
	_, ok := a.family.(linearFamily)
	return ok
}

// Contextual reports whether the algorithm is a linear contextual bandit
// (NewContextual builds it).
func (a AlgoSpec) Contextual() bool {
	_, ok := a.family.(contextualFamily)
	return ok
}

// NewContextual builds a linear contextual bandit algorithm as a
// contextual.Policy, for a caller that takes decisions one at a time;
// ErrNotOnline for the others.
func (a AlgoSpec) NewContextual(b privacy.Budget, s contextual.Setting) (contextual.Policy, error) {
	nw, ok := a.New.(contextualNew)
	if !ok || !a.Contextual() {
		return nil, ErrNotOnline
	}
	return nw(a.Values, b, s)
}
