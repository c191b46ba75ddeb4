// Package catalog is dpbandit's catalogue of algorithms: for each, its
// name, summary, parameters with their accepted ranges, privacy notion
// and typed constructor. The simulator's harness (package experiment) and
// the decision service (package service) both build algorithms from it.
// It depends on the algorithm packages and on nothing above them: a
// server that builds policies does not pull in plotting or simulation.
//
// A new algorithm is its policy, in its own package, and one entry in
// this package's file of its kind (finite.go, linear.go, ...). A private
// algorithm whose non-private counterpart is the same constructor without
// noise names that counterpart in its entry (Public), and the catalogue
// generates it.
package catalog

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/dpbandit/dpbandit/audit"
	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/contextual"
	"github.com/dpbandit/dpbandit/internal/liberr"
	"github.com/dpbandit/dpbandit/olo"
	"github.com/dpbandit/dpbandit/privacy"
)

// Kind is the problem an algorithm solves, which fixes the type of its
// constructor.
type Kind int

// The kinds, in the order of `dpbandit list`.
const (
	// Finite: finite-armed stochastic bandits (Algorithm.Policy).
	Finite Kind = iota
	// Linear: linear bandits on finite action sets (Algorithm.Policy, on
	// bandit.Setting.Actions).
	Linear
	// Robust: batched linear bandits under local DP and corruption
	// (Algorithm.Batched).
	Robust
	// Contextual: linear contextual bandits (Algorithm.Contextual).
	Contextual
	// Sparse: sparse high-dimensional contextual bandits
	// (Algorithm.Contextual).
	Sparse
	// Online: online learning, full information or bandit feedback
	// (Algorithm.Learner).
	Online
)

// Kinds returns every kind, in order.
func Kinds() []Kind { return []Kind{Finite, Linear, Robust, Contextual, Sparse, Online} }

// String titles the kind, e.g. "finite-armed bandits".
func (k Kind) String() string {
	switch k {
	case Finite:
		return "finite-armed bandits"
	case Linear:
		return "linear bandits (finite action sets)"
	case Robust:
		return "robust batched linear bandits under local DP"
	case Contextual:
		return "linear contextual bandits"
	case Sparse:
		return "sparse high-dimensional contextual bandits"
	case Online:
		return "online learning"
	}
	return fmt.Sprintf("kind %d", int(k))
}

// Algorithm is one entry of the catalogue.
type Algorithm struct {
	// Name is what --algo, configs and the service call it.
	Name string
	// Summary is one line for `dpbandit list`, citing the paper.
	Summary string
	// Kind fixes which constructor is set.
	Kind Kind
	// Private algorithms take a privacy budget; others run once,
	// non-private.
	Private bool
	// Local marks algorithms whose privacy is local (seed 004): the
	// randomisers run on the clients, the guarantee holds against the
	// learner, and results show the notion "ldp" (privacy.Local).
	Local bool
	// ClientRewards, for a Local algorithm, returns the most rewards one
	// client holds over a run of horizon T (1, or nil, when each reward
	// is its own client's): the randomisers are eps-DP in one reward, so
	// a client is ClientRewards times eps-DP over the run
	// (privacy.Budget.Client).
	ClientRewards func(p Args, T int64) int64
	// Approx marks private algorithms that take (eps, delta) budgets
	// only; audits at a rho-zCDP budget run them at the (eps, delta)
	// that rho implies at the audit's delta (privacy.ZCDPToApprox).
	Approx bool
	// PureDP marks private algorithms whose mechanism is Laplace whatever
	// the budget: they are eps-DP, with eps = sqrt(2 rho) for a rho-zCDP
	// budget.
	PureDP bool
	// Gaussian marks private algorithms whose every release is a Gaussian
	// mechanism calibrated to the budget's rho (for an (eps, delta)
	// budget, the rho of privacy.ApproxToZCDP): only for them, and for
	// PureDP ones, may an (eps, delta) budget be accounted as zCDP (the
	// decision service's ledger). A Wishart, sparse-vector or local
	// mechanism is neither.
	Gaussian bool
	// Counterpart names the non-private algorithm that private results
	// are compared with (paired differences, price of privacy) when it is
	// in the same experiment.
	Counterpart string
	// Baseline marks an algorithm that learns nothing (uniform play): it
	// is shown for comparison but never taken as a private entry's
	// reference.
	Baseline bool
	// Public, when set on a private algorithm, defines its non-private
	// counterpart: the same parameters and constructor at privacy.None(),
	// under another name. The catalogue generates it and sets
	// Counterpart.
	Public *Public
	// Params holds the accepted parameters with their defaults and
	// ranges; Parse rejects a value outside its range.
	Params map[string]Param

	// The constructor of the algorithm's kind; the others are nil.
	Policy     func(p Args, b privacy.Budget, s bandit.Setting) (bandit.Policy, error)
	Batched    func(p Args, b privacy.Budget, s bandit.Setting) (bandit.BatchPolicy, error)
	Contextual func(p Args, b privacy.Budget, s contextual.Setting) (contextual.Policy, error)
	Learner    func(p Args, b privacy.Budget, s olo.Setting) (olo.Learner, error)
	// Set is an online learner's decision set: "simplex" (experts),
	// "ball" or "cube".
	Set string

	// WeakAudit, when set, says why the audit's default tables cannot show
	// power for this algorithm: its broken variants are then not audited.
	WeakAudit string
	// Redraw, if set, builds the deliberately broken variant of a bandit
	// algorithm that re-draws its noise at every index evaluation (for
	// audits only).
	Redraw func(p Args, b privacy.Budget, s bandit.Setting) (bandit.Policy, error)
	// AuditTables, if set, returns the neighbouring tables on which this
	// algorithm is hardest to audit; nil means audit.Hard.
	AuditTables func(p Args, b privacy.Budget, k int, T int64) (audit.Neighbours, error)
	// Bound, if set, returns the paper's regret upper bound at horizon T
	// for a K-armed instance's gaps, and whether it applies.
	Bound func(p Args, b privacy.Budget, gaps []float64, T int64) (float64, bool)
}

// Public names and describes a generated non-private counterpart.
type Public struct {
	Name, Summary string
	// Bound, if set, is the counterpart's regret upper bound.
	Bound func(p Args, b privacy.Budget, gaps []float64, T int64) (float64, bool)
}

// counterpart returns the non-private algorithm a defines in a.Public.
func (a Algorithm) counterpart() Algorithm {
	none := privacy.None()
	c := Algorithm{Name: a.Public.Name, Summary: a.Public.Summary, Kind: a.Kind, Params: a.Params, Set: a.Set, Bound: a.Public.Bound}
	switch {
	case a.Policy != nil:
		c.Policy = func(p Args, _ privacy.Budget, s bandit.Setting) (bandit.Policy, error) {
			return a.Policy(p, none, s)
		}
	case a.Contextual != nil:
		c.Contextual = func(p Args, _ privacy.Budget, s contextual.Setting) (contextual.Policy, error) {
			return a.Contextual(p, none, s)
		}
	case a.Learner != nil:
		c.Learner = func(p Args, _ privacy.Budget, s olo.Setting) (olo.Learner, error) {
			return a.Learner(p, none, s)
		}
	}
	return c
}

// ByKind returns the algorithms of one kind, in the catalogue's order
// (a generated counterpart just before its private algorithm).
func ByKind(k Kind) []Algorithm {
	var entries []Algorithm
	finiteAll := func() []Algorithm { return slices.Concat(finite(), thompsonGDP(), nonStationary(), identification()) }
	if of := map[Kind]func() []Algorithm{Finite: finiteAll, Linear: linearBandits, Robust: robustBatched,
		Contextual: func() []Algorithm { return slices.Concat(contextualBandits(), scaledContextual()) }, Sparse: sparseBandits, Online: onlineLearners}[k]; of != nil {
		entries = of()
	}
	var out []Algorithm
	for _, a := range entries {
		a.Kind = k
		if a.Public != nil {
			out = append(out, a.counterpart())
			a.Counterpart = a.Public.Name
		}
		out = append(out, a)
	}
	return out
}

// All returns every algorithm, sorted by name.
func All() []Algorithm {
	var out []Algorithm
	for _, k := range Kinds() {
		out = append(out, ByKind(k)...)
	}
	slices.SortFunc(out, func(a, b Algorithm) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// fieldErrorf is errorf about the parameter field.
func fieldErrorf(field, format string, a ...any) error {
	e := liberr.New("catalog", format, a...)
	e.Field = field
	return e
}

// ErrUnknown is returned (wrapped) for an algorithm name the catalogue
// does not have.
var ErrUnknown = errors.New("unknown algorithm")

// ErrSpec is returned (wrapped) for a malformed spec or a parameter
// outside its range.
var ErrSpec = errors.New("bad algorithm spec")

// Lookup returns the algorithm of that name.
func Lookup(name string) (Algorithm, error) {
	all := All()
	for _, a := range all {
		if a.Name == name {
			return a, nil
		}
	}
	names := make([]string, len(all))
	for i, a := range all {
		names[i] = a.Name
	}
	return Algorithm{}, errorf("%w %q (known: %s)", ErrUnknown, short(name), strings.Join(names, ", "))
}

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
// their defaults, as specs ("adac-ucb", "adac-ucb:beta=100", ...). An
// edge that is its parameter's default, or the other edge again (a
// choice of two), is the same algorithm and not repeated.
func (a Algorithm) Points() []string {
	points := []string{a.Name}
	for _, k := range slices.Sorted(maps.Keys(a.Params)) {
		p := a.Params[k]
		edges := p.Edges()
		for i, v := range edges {
			if v == p.Default || (i == 1 && v == edges[0]) {
				continue
			}
			points = append(points, a.Name+":"+k+"="+p.Format(v))
		}
	}
	return points
}

// Spec is a parsed algorithm spec "name" or "name:key=value:key=value".
type Spec struct {
	Algorithm
	// Values holds every parameter: the defaults overridden by the spec.
	Values map[string]float64
	// Canonical is the canonical spec, with the parameters the user set,
	// sorted.
	Canonical string
	// Identity is what the algorithm is: the canonical spec without the
	// parameters set to their defaults (adac-ucb:beta=1 is adac-ucb), so
	// that two spellings of one algorithm are one (its random streams
	// are keyed by it).
	Identity string
}

// Parse parses an algorithm spec such as "adac-ucb:beta=4". A parameter
// given twice, unknown, or outside its range is an error (ErrSpec); an
// unknown name is ErrUnknown.
func Parse(spec string) (Spec, error) {
	fields := strings.Split(strings.TrimSpace(spec), ":")
	shown := short(spec)
	a, err := Lookup(fields[0])
	if err != nil {
		return Spec{}, err
	}
	vals := make(map[string]float64, len(a.Params))
	for k, p := range a.Params {
		vals[k] = p.Default
	}
	var set, changed []string
	seen := map[string]bool{}
	for _, f := range fields[1:] {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			return Spec{}, fieldErrorf(short(f), "%w: algorithm %q: parameter %q needs the form key=value", ErrSpec, shown, short(f))
		}
		p, known := a.Params[k]
		if !known {
			if len(a.Params) == 0 {
				return Spec{}, fieldErrorf(short(k), "%w: algorithm %q: unknown parameter %q (%s takes none)", ErrSpec, a.Name, short(k), a.Name)
			}
			keys := slices.Sorted(maps.Keys(a.Params))
			return Spec{}, fieldErrorf(short(k), "%w: algorithm %q: unknown parameter %q (known: %s)", ErrSpec, a.Name, short(k), strings.Join(keys, ", "))
		}
		if seen[k] {
			return Spec{}, fieldErrorf(short(k), "%w: algorithm %q: parameter %q is given twice", ErrSpec, shown, short(k))
		}
		seen[k] = true
		x, err := p.parse(v)
		if err != nil {
			return Spec{}, fieldErrorf(k, "%w: algorithm %q: parameter %s %v", ErrSpec, a.Name, k, err)
		}
		vals[k] = x
		set = append(set, k+"="+p.Format(x))
		if x != p.Default {
			changed = append(changed, k+"="+p.Format(x))
		}
		if p.Public != "" && v == p.Public {
			a.Private, a.Local, a.Counterpart = false, false, ""
		}
	}
	slices.Sort(set)
	slices.Sort(changed)
	canon := strings.Join(append([]string{a.Name}, set...), ":")
	return Spec{Algorithm: a, Values: vals, Canonical: canon, Identity: strings.Join(append([]string{a.Name}, changed...), ":")}, nil
}

// Named returns the parameter values as results show them: a choice by
// its name ("peel"), a number as a number.
func (s Spec) Named() map[string]any {
	out := make(map[string]any, len(s.Values))
	for k, v := range s.Values {
		if p := s.Params[k]; p.Choices != nil {
			out[k] = p.Format(v)
		} else {
			out[k] = v
		}
	}
	return out
}

// short returns s, or its first 60 bytes and a count of the rest: an
// error never echoes a huge input in full.
func short(s string) string {
	if len(s) <= 64 {
		return s
	}
	return fmt.Sprintf("%s... (%d bytes)", strings.ToValidUTF8(s[:60], ""), len(s))
}

// ErrKind is returned by a constructor of another kind than the
// algorithm's (NewPolicy for a contextual algorithm, say).
var ErrKind = errors.New("the algorithm is of another kind")

// LocalBudget returns the eps-LDP budget of a Local algorithm's
// randomisers for the budget b given (privacy.Local) and horizon T: eps
// in one reward (004's Definition 1.1), with the guarantee of a client
// over the run (Client) when a client holds several rewards. With
// unit=client, b is that per-client guarantee and the randomisers get
// b's eps divided by the most rewards a client holds.
func (s Spec) LocalBudget(b privacy.Budget, T int64) (privacy.Budget, error) {
	lb, err := privacy.Local(b)
	if err != nil || !s.Local {
		return lb, err
	}
	r := int64(1)
	if s.ClientRewards != nil {
		r = s.ClientRewards(s.Args(), T)
	}
	if p, ok := s.Params["unit"]; ok && p.Format(s.Values["unit"]) == "client" {
		return privacy.PerReport(lb, r)
	}
	return privacy.PerClient(lb, r)
}

// NewPolicy builds a finite-armed or linear algorithm.
func (s Spec) NewPolicy(b privacy.Budget, st bandit.Setting) (bandit.Policy, error) {
	if err := checkArms(st); err != nil {
		return nil, err
	}
	return build(s, s.Policy, b, st, "finite-armed or linear")
}

// NewContextual builds a contextual or sparse algorithm.
func (s Spec) NewContextual(b privacy.Budget, st contextual.Setting) (contextual.Policy, error) {
	return build(s, s.Contextual, b, st, "contextual")
}

// NewBatched builds a robust batched algorithm.
func (s Spec) NewBatched(b privacy.Budget, st bandit.Setting) (bandit.BatchPolicy, error) {
	if err := checkArms(st); err != nil {
		return nil, err
	}
	return build(s, s.Batched, b, st, "batched")
}

// MaxArms is the most arms a bandit.Setting may have for the policies
// the catalogue builds (2^24, about 16.8 million). Each keeps several
// numbers per arm (AdaC-UCB: counts, means, scales, sums; about 100
// bytes), so that 2^24 arms take a few GiB per policy; far beyond, the
// allocation cannot succeed and the process would die of it instead of
// returning an error.
const MaxArms = 1 << 24

// ErrTooManyArms is returned (wrapped) for a setting of more than
// MaxArms arms.
var ErrTooManyArms = errors.New("too many arms")

// checkArms refuses a setting with more than MaxArms arms.
func checkArms(st bandit.Setting) error {
	if st.Arms > MaxArms {
		return errorf("%d arms: %w (at most 2^24 = %d: every policy keeps state per arm)", st.Arms, ErrTooManyArms, MaxArms)
	}
	return nil
}

// NewLearner builds an online learner (st.Set is the algorithm's Set).
func (s Spec) NewLearner(b privacy.Budget, st olo.Setting) (olo.Learner, error) {
	return build(s, s.Learner, b, st, "online learning")
}

// build calls the constructor f of the spec's kind, or returns ErrKind
// when the algorithm has none of that type.
func build[S, P any](s Spec, f func(Args, privacy.Budget, S) (P, error), b privacy.Budget, st S, kind string) (p P, err error) {
	if f == nil {
		var none P
		return none, errorf("%s (%s): %w than %s", s.Name, s.Kind, ErrKind, kind)
	}
	defer recoverUndeclared(&err)
	return f(s.Args(), b, st)
}
