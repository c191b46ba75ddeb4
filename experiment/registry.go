package experiment

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/mab"
	"github.com/dpbandit/dpbandit/privacy"
	"github.com/dpbandit/dpbandit/theory"
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
	// Params holds the accepted parameters with their defaults.
	Params map[string]float64
	// Build returns the policy for the parameters and budget.
	Build func(p map[string]float64, b privacy.Budget, s bandit.Setting) (bandit.Policy, error)
	// Bound, if set, returns the paper's regret upper bound at horizon T
	// for the instance's gaps, and whether it applies.
	Bound func(p map[string]float64, b privacy.Budget, gaps []float64, T int64) (float64, bool)
}

// Algorithms returns the registry, sorted by name.
func Algorithms() []Algorithm {
	algos := []Algorithm{
		{
			Name:    "ucb1",
			Summary: "UCB1 (Auer et al. 2002), non-private, one step per plan",
			Params:  map[string]float64{},
			Build: func(_ map[string]float64, _ privacy.Budget, s bandit.Setting) (bandit.Policy, error) {
				return mab.NewUCB1(s)
			},
		},
		{
			Name:    "ucb-doubling",
			Summary: "UCB with arm-dependent doubling and forgetting, non-private counterpart of AdaC-UCB (001 Sec. VII)",
			Params:  map[string]float64{"beta": 1},
			Build: func(p map[string]float64, _ privacy.Budget, s bandit.Setting) (bandit.Policy, error) {
				return mab.NewAdaCUCB(s, privacy.None(), p["beta"])
			},
		},
		{
			Name:        "adac-ucb",
			Summary:     "AdaC-UCB (001 Alg. 4, Eq. 14): Gaussian noise once per doubling episode; zCDP, (eps,delta) or Renyi",
			Private:     true,
			Counterpart: "ucb-doubling",
			Params:      map[string]float64{"beta": 1},
			Build: func(p map[string]float64, b privacy.Budget, s bandit.Setting) (bandit.Policy, error) {
				return mab.NewAdaCUCB(s, b, p["beta"])
			},
			Bound: func(p map[string]float64, b privacy.Budget, gaps []float64, T int64) (float64, bool) {
				if b.Notion != privacy.ZCDP || p["beta"] <= 3 {
					return 0, false
				}
				v, err := theory.AdaCUCB(gaps, T, b.Rho, p["beta"])
				return v, err == nil
			},
		},
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
	vals := maps.Clone(a.Params)
	var set []string
	for _, f := range fields[1:] {
		k, v, ok := strings.Cut(f, "=")
		x, err := strconv.ParseFloat(v, 64)
		if !ok || err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return AlgoSpec{}, fmt.Errorf("algorithm %q: parameter %q needs the form key=number", spec, f)
		}
		if _, known := a.Params[k]; !known {
			keys := slices.Sorted(maps.Keys(a.Params))
			return AlgoSpec{}, fmt.Errorf("algorithm %q: unknown parameter %q (known: %s)", a.Name, k, strings.Join(keys, ", "))
		}
		vals[k] = x
		set = append(set, k+"="+trimFloat(x))
	}
	slices.Sort(set)
	canon := strings.Join(append([]string{a.Name}, set...), ":")
	return AlgoSpec{Algorithm: a, Values: vals, Spec: canon}, nil
}

// trimFloat formats x in its shortest form.
func trimFloat(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

// paramString formats parameters as "k1=v1,k2=v2", sorted by key.
func paramString(p map[string]float64) string {
	var s []string
	for _, k := range slices.Sorted(maps.Keys(p)) {
		s = append(s, k+"="+trimFloat(p[k]))
	}
	return strings.Join(s, ",")
}
