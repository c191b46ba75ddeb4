// Package define is what an experiment of the service is: the client's
// spec, its validation with its defaults, the definition stored from it
// (the budget the mechanisms are calibrated to, a reward's ledger cost,
// the rules its decisions follow), and the validation of what each
// request brings (ids, contexts, rank requests), so that a replay
// validates a stored context as the request's was.
package define

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"regexp"

	"github.com/dpbandit/dpbandit/catalog"
	"github.com/dpbandit/dpbandit/internal/liberr"
	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/privacy"
	"github.com/dpbandit/dpbandit/service/fault"
	"github.com/dpbandit/dpbandit/service/store"
)

// Spec is what a client sends to create an experiment.
type Spec struct {
	// ID names the experiment: 1 to 64 letters, digits, '.', '_', '-'.
	ID string `json:"id"`
	// Algorithm is a registry spec, e.g. "adac-ucb:beta=4": a private
	// finite-armed, linear or linear contextual bandit algorithm.
	Algorithm string `json:"algorithm"`
	// Arms is K, for finite-armed algorithms.
	Arms int `json:"arms,omitempty"`
	// Actions are the arms of a linear algorithm, as vectors.
	Actions [][]float64 `json:"actions,omitempty"`
	// Dim is d for contextual algorithms, whose decisions each take a
	// decision set: a context of Arms vectors of dimension Dim.
	Dim int `json:"dim,omitempty"`
	// RewardRange is the declared range [lo, hi]; rewards outside it are
	// rejected.
	RewardRange [2]float64 `json:"reward_range"`
	// Privacy is the budget, fixed for the experiment's life.
	Privacy Privacy `json:"privacy"`
	// Horizon is T for algorithms that need one (0: unknown).
	Horizon int64 `json:"horizon,omitempty"`
	// MaxRewardsPerUnit bounds what one unit contributes (default 1).
	MaxRewardsPerUnit int64 `json:"max_rewards_per_unit,omitempty"`
	// RewardWindowSeconds is how long a reward may take at most (default
	// 600, ten minutes, as Azure Personalizer's reward wait): a reward
	// is also not waited for once its slot is overdue (bandit.Waits).
	RewardWindowSeconds float64 `json:"reward_window_seconds,omitempty"`
	// DefaultReward, when set, is learned for a reward that has not come
	// within the window; else the event is dropped from learning.
	DefaultReward *float64 `json:"default_reward"`
	// Exploration is the probability e in [0, 1] that a decision plays
	// an arm drawn uniformly (default 0), as Azure Personalizer's
	// exploration percentage: every logged decision then has a
	// propensity, e/K for every arm and 1 - e more for the policy's own,
	// for off-policy evaluation. It costs no privacy (post-processing of
	// released values, with fresh randomness); a decision whose drawn arm
	// is not the policy's does not learn (its slot is freed).
	Exploration float64 `json:"exploration,omitempty"`
	// Surface is "personalizer" (SurfacePersonalizer) for an experiment
	// served through Azure Personalizer's REST API, whose decisions are
	// rank requests; "" for the service's own API.
	Surface string `json:"surface,omitempty"`
	// HashBits is, on the Personalizer surface, the features' hashed
	// dimension 2^HashBits (default defaultHashBits, 5).
	HashBits int `json:"hash_bits,omitempty"`
	// UnitFeature is, on the Personalizer surface, the dotted path of a
	// context feature (e.g. "user.id") whose value is each rank's privacy
	// unit (unitfeature.go); "" makes each event its own unit. It cannot
	// change after creation: the ledger's units would change meaning.
	UnitFeature string `json:"unit_feature,omitempty"`
}

// The rules of decision (Definition.Rules), in the order they came.
const (
	// RulesConcurrent: concurrent contextual decisions (before: one
	// contextual choice in flight at a time).
	RulesConcurrent = 2
	// RulesExactPropensity: an exploring experiment's propensities from
	// the coin's exact probability (ExploreProb; before: from e).
	RulesExactPropensity = 3
	// RulesPooled: finite-armed and linear experiments learn every reward
	// that comes in its window (bandit.Pooled; before: bandit.Delayed,
	// whose plans closed on their own decisions' rewards only).
	RulesPooled = 4
	// RulesLate: contextual experiments learn every reward that comes in
	// its window (contextual.NewDelayedLate: an overdue choice is
	// withdrawn from V but its reward, when it comes, enters the episode
	// open then; before: the overdue choice was settled at once, by the
	// default reward or a drop, and its reward refused).
	RulesLate = 5
	// CurrentRules is the rule new experiments decide under.
	CurrentRules = RulesLate
)

// Privacy is a budget: rho (zCDP), or eps (pure DP), or eps and delta.
type Privacy struct {
	Rho   *float64 `json:"rho,omitempty"`
	Eps   *float64 `json:"eps,omitempty"`
	Delta *float64 `json:"delta,omitempty"`
}

// Budget returns the privacy.Budget.
func (p Privacy) Budget() (privacy.Budget, error) {
	b, err := privacy.Given{Rho: p.Rho, Eps: p.Eps, Delta: p.Delta}.Budget()
	switch {
	case errors.Is(err, privacy.ErrCombination):
		return b, fmt.Errorf(`privacy needs {"rho": R}, {"eps": E} or {"eps": E, "delta": D}: %w`, err)
	case err != nil:
		return b, fmt.Errorf("privacy: %s", liberr.Message(err))
	}
	return b, nil
}

// Definition is a stored experiment: the client's Spec and what the
// server derived from it.
type Definition struct {
	Spec
	// Tenant owns the experiment.
	Tenant string `json:"tenant"`
	// NanoRho is the zCDP, in units of 1e-9 rho rounded up, that one
	// learned reward costs its unit (the first; the k-th costs 2k-1
	// times it, by group privacy: k rewards cost k^2 rho).
	NanoRho int64 `json:"nano_rho"`
	// Created is when it was created, unix nanoseconds.
	Created int64 `json:"created"`
	// Status is its lifecycle status (Active, Paused, Archived), stored
	// beside the definition, which never changes.
	Status string `json:"status"`
	// Rules numbers the rule its decisions were taken under: 0 (absent:
	// created before 2026-11-24) for one contextual choice in flight at a
	// time, 2 for concurrent contextual decisions, 3 for exact
	// propensities, 4 for pooled rewards, 5 for late contextual rewards
	// (the constants Rules*). A history replays under its
	// own rule, and keeps deciding under it.
	Rules int `json:"rules,omitempty"`
	// Settings are the changes of its settings since its creation, in
	// order (settings.go; the Personalizer surface's configurations):
	// the Spec stays as created, and Effective applies them.
	Settings []Setting `json:"settings,omitempty"`
	// Folded is the operation up to which the experiment's event ids are
	// in the event-id index and its debits in the ledger (engine/fold.go),
	// stored beside the definition.
	Folded int64 `json:"-"`
	// ranks is the cache of its rank requests' action lists
	// (CacheRanks; nil: none).
	ranks *rankCache
}

// Key is the experiment's key in the store and in metrics: its tenant
// and id. Ids are the tenant's own: two tenants may use the same one.
//
// A pointer receiver: it reads the two fields, not a copy of the whole
// definition, whose Status another goroutine may be writing under the
// experiment's lock (the race detector saw New's filter building copy
// it while a pause wrote it).
func (d *Definition) Key() string { return d.Tenant + "/" + d.ID }

// Row returns the definition as the store keeps it.
func (d Definition) Row() (store.Experiment, error) {
	b, err := json.Marshal(d)
	return store.Experiment{Key: d.Key(), Tenant: d.Tenant, Definition: string(b), Created: d.Created, Status: d.Status, Folded: d.Folded}, err
}

// Decode reads a stored experiment's definition.
func Decode(e store.Experiment) (Definition, error) {
	var d Definition
	err := json.Unmarshal([]byte(e.Definition), &d)
	d.Status, d.Folded = e.Status, e.Folded
	return d, err
}

// Read reads every experiment's definition from st.
func Read(ctx context.Context, st store.Registry) ([]Definition, error) {
	rows, err := st.Experiments(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Definition, len(rows))
	for i, e := range rows {
		if out[i], err = Decode(e); err != nil {
			return nil, fmt.Errorf("experiment %s: %w", e.Key, err)
		}
	}
	return out, nil
}

var idPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// Limits on what a client may declare.
const (
	maxArms      = 1000
	maxDim       = 100
	maxPerUnit   = 1000000
	maxWindowSec = 366 * 24 * 3600
	// a reward range's width: the sensitivities w/n stay normal floats
	minWidth, maxWidth = 1e-100, 1e100
	// maxUnitNano bounds m^2 rho, what one unit may spend in one
	// experiment (1e6 rho protects nothing), so that the ledger's integer
	// sums stay far from overflow.
	maxUnitNano = 1e15
)

// validate fills the defaults and checks the spec; it returns the parsed
// algorithm, the budget and the per-reward ledger cost.
func (s *Spec) validate() (catalog.Spec, privacy.Budget, int64, error) {
	fail := func(f string, a ...any) (catalog.Spec, privacy.Budget, int64, error) {
		for i, v := range a {
			if err, ok := v.(error); ok {
				a[i] = liberr.Message(err) // the library's message, without its package's name
			}
		}
		return catalog.Spec{}, privacy.Budget{}, 0, fmt.Errorf(f, a...)
	}
	if !idPattern.MatchString(s.ID) || dotSegment(s.ID) {
		return fail("id must be 1 to 64 letters, digits, '.', '_' or '-', other than \".\" and \"..\" (clients remove those from a URL), got %q", s.ID)
	}
	switch s.Surface {
	case "":
		if s.HashBits != 0 || s.UnitFeature != "" {
			return fail("hash_bits and unit_feature are for the personalizer surface")
		}
	case SurfacePersonalizer:
		if err := s.personalizerDefaults(); err != nil {
			return fail("%v", err)
		}
		if err := CheckUnitFeature(s.UnitFeature); err != nil {
			return fail("%v", err)
		}
	default:
		return fail("surface must be %q or absent, got %q", SurfacePersonalizer, s.Surface)
	}
	a, err := catalog.Parse(s.Algorithm)
	if err != nil {
		return fail("algorithm: %v", err)
	}
	if !a.Private {
		return fail("algorithm %s is not private; the service runs private algorithms only (compare with non-private ones in simulation: dpbandit run)", a.Name)
	}
	if a.Local {
		return fail("algorithm %s is locally private: its randomisers run on the clients, in batches, not one decision at a time", a.Name)
	}
	if a.Kind != catalog.Finite && a.Kind != catalog.Linear && a.Kind != catalog.Contextual {
		return fail("algorithm %s is for %s; the service runs finite-armed, linear and linear contextual bandit algorithms (see dpbandit list)", a.Name, a.Kind)
	}
	if a.Kind == catalog.Contextual {
		if len(s.Actions) > 0 {
			return fail("%s is a contextual algorithm: give arms and dim; each decision's context is its decision set", a.Name)
		}
		if s.Dim < 1 || s.Dim > maxDim {
			return fail("%s is a contextual algorithm: dim must lie in [1, %d], got %d", a.Name, maxDim, s.Dim)
		}
		// The shortest decision set, every number 0, written out:
		// [[0,...,0],...,[0,...,0]] takes arms (2 dim + 2) + 1 bytes.
		if n := s.Arms*(2*s.Dim+2) + 1; s.Arms <= maxArms && n > maxCtx {
			return fail("%d decision vectors of dimension %d cannot fit in a decision's context (at least %d bytes written out, above its %d): arms x (dim + 1) must stay below %d", s.Arms, s.Dim, n, maxCtx, maxCtx/2)
		}
	} else if s.Dim != 0 {
		return fail("dim is for contextual algorithms; %s is not one", a.Name)
	}
	if a.Kind == catalog.Linear {
		if s.Arms != 0 && s.Arms != len(s.Actions) {
			return fail("arms is %d but %d actions are given; give actions only", s.Arms, len(s.Actions))
		}
		if len(s.Actions) < 2 || len(s.Actions) > maxArms {
			return fail("%s is a linear algorithm: it needs 2 to %d actions (vectors), got %d", a.Name, maxArms, len(s.Actions))
		}
		d := len(s.Actions[0])
		if d < 1 || d > maxDim {
			return fail("actions must have dimension 1 to %d, got %d", maxDim, d)
		}
		for i, v := range s.Actions {
			if err := checkVector(fmt.Sprintf("action %d", i), v, d); err != nil {
				return fail("%v", err)
			}
		}
		s.Arms = len(s.Actions)
	} else {
		if len(s.Actions) > 0 {
			return fail("%s is a finite-armed algorithm: give arms, not actions", a.Name)
		}
		if s.Arms < 2 || s.Arms > maxArms {
			return fail("arms must lie in [2, %d], got %d", maxArms, s.Arms)
		}
	}
	lo, hi := s.RewardRange[0], s.RewardRange[1]
	if err := (mechanism.Bounds{Lo: lo, Hi: hi}).Validate(); err != nil {
		return fail("reward_range: %v", err)
	}
	if w := hi - lo; !(w >= minWidth && w <= maxWidth) {
		return fail("reward_range: its width %v must lie in [%g, %g] (noise scales divide it by episode sizes up to 2^50)", w, minWidth, maxWidth)
	}
	b, err := s.Privacy.Budget()
	if err != nil {
		return fail("%v", err)
	}
	rho, err := ledgerRho(a, b)
	if err != nil {
		return fail("privacy: %v", err)
	}
	nano, err := nanoCeil(rho)
	if err != nil {
		return fail("privacy: %v", err)
	}
	if s.Horizon < 0 || s.Horizon > 1<<50 {
		return fail("horizon must lie in [0, 2^50], got %d", s.Horizon)
	}
	if s.MaxRewardsPerUnit == 0 {
		s.MaxRewardsPerUnit = 1
	}
	if s.MaxRewardsPerUnit < 1 || s.MaxRewardsPerUnit > maxPerUnit {
		return fail("max_rewards_per_unit must lie in [1, %d], got %d", maxPerUnit, s.MaxRewardsPerUnit)
	}
	if m := float64(s.MaxRewardsPerUnit); m*m*float64(nano) > maxUnitNano {
		return fail("a unit may spend max_rewards_per_unit^2 x rho = %g rho here; at most %g is accepted", m*m*float64(nano)/1e9, maxUnitNano/1e9)
	}
	if s.RewardWindowSeconds == 0 {
		s.RewardWindowSeconds = 600
	}
	if !(s.RewardWindowSeconds >= 0.001) || s.RewardWindowSeconds > maxWindowSec {
		return fail("reward_window_seconds must lie in [0.001, %d], got %v", maxWindowSec, s.RewardWindowSeconds)
	}
	if !(s.Exploration >= 0 && s.Exploration <= 1) {
		return fail("exploration must lie in [0, 1], got %v", s.Exploration)
	}
	if r := s.DefaultReward; r != nil && !(*r >= lo && *r <= hi) {
		return fail("default_reward %v lies outside reward_range [%v, %v]", *r, lo, hi)
	}
	return a, b, nano, nil
}

// ErrNotAccountable is returned for an algorithm and budget whose cost the
// zCDP ledger cannot state.
var ErrNotAccountable = errors.New("service: the budget cannot be accounted in the zCDP ledger")

// ledgerRho returns the zCDP that one reward costs its unit in an
// experiment of algorithm a at budget b, as the mechanism on the
// service's secure (discrete) noise meets it: rho for a zCDP budget;
// eps^2/2 for Laplace algorithms (eps-DP implies it) and for pure
// budgets; for an (eps, delta) budget on a Gaussian algorithm, the rho
// that the discrete Gaussian is calibrated to (privacy.ApproxToZCDP,
// mechanism.NewGaussian). The ledger adds zCDP across experiments, which
// composes additively.
func ledgerRho(a catalog.Spec, b privacy.Budget) (float64, error) {
	switch b.Notion {
	case privacy.ZCDP:
		return b.Rho, nil
	case privacy.Pure:
		return privacy.PureToZCDP(b.Eps), nil
	case privacy.Approx:
		switch {
		case a.PureDP:
			return privacy.PureToZCDP(b.Eps), nil
		case a.Gaussian:
			return privacy.ApproxToZCDP(b.Eps, b.Delta)
		}
		return 0, fmt.Errorf("%w: %s is not a Gaussian mechanism, so its (eps, delta) guarantee has no zCDP equivalent to enter in the ledger; give it a zCDP budget (rho)", ErrNotAccountable, a.Name)
	}
	return 0, fmt.Errorf("a %s budget cannot be entered in the zCDP ledger", b.Notion)
}

// nanoCeil returns the ledger cost, in nano-rho, of a per-reward zCDP
// rho: rho 1e9 exactly when rho is the double nearest to a multiple of
// 1e-9 (a budget written with at most nine decimals, such as 0.1, whose
// double is 0.1 + 5.6e-18), else rounded up from rho's binary value.
// The mechanisms are then calibrated to at most the charged amount
// (Definition.budget). Budgets below 1e-9 rho cost one unit; above 1e6
// they are refused (such a budget protects nothing).
func nanoCeil(rho float64) (int64, error) {
	if !(rho > 0) || rho > 1e6 {
		return 0, fmt.Errorf("the per-reward zCDP %v must lie in (0, 1e6]", rho)
	}
	if n, exact := nanoOf(rho); exact {
		return max(n, 1), nil
	}
	r := new(big.Rat).SetFloat64(rho)
	r.Mul(r, big.NewRat(1e9, 1))
	q, m := new(big.Int).DivMod(r.Num(), r.Denom(), new(big.Int))
	if m.Sign() != 0 {
		q.Add(q, big.NewInt(1))
	}
	return q.Int64(), nil
}

// nanoOf returns rho 1e9 rounded to the nearest integer n, and whether
// rho is the double nearest to n 1e-9 (the decimal the user wrote).
func nanoOf(rho float64) (int64, bool) {
	n := int64(math.Round(rho * 1e9))
	f, _ := big.NewRat(n, 1e9).Float64()
	return n, f == rho
}

// CheckWritten checks what decoding into a Spec cannot see in a create
// request: that reward_range is written as exactly two numbers (an array
// of another length, or null, decodes into [2]float64 silently), and
// that max_rewards_per_unit and reward_window_seconds, whose absence
// means their default, are not written as 0.
func CheckWritten(raw []byte) error {
	var w struct {
		Surface string          `json:"surface"`
		Range   json.RawMessage `json:"reward_range"`
		Max     *float64        `json:"max_rewards_per_unit"`
		Window  *float64        `json:"reward_window_seconds"`
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return fault.Errorf(fault.Invalid, "invalid JSON: %v", err)
	}
	var r []float64
	rangeDefault := w.Surface == SurfacePersonalizer && w.Range == nil // [0, 1]
	if !rangeDefault && (json.Unmarshal(w.Range, &r) != nil || len(r) != 2) {
		got := string(w.Range)
		if got == "" {
			got = "nothing"
		}
		return fault.Errorf(fault.Invalid, "reward_range must be [lo, hi], two numbers, got %s", got)
	}
	if w.Max != nil && *w.Max == 0 {
		return fault.Errorf(fault.Invalid, "max_rewards_per_unit must lie in [1, %d], got 0 (leave it out for the default, 1)", maxPerUnit)
	}
	if w.Window != nil && *w.Window == 0 {
		return fault.Errorf(fault.Invalid, "reward_window_seconds must lie in [0.001, %d], got 0 (leave it out for the default, 600)", maxWindowSec)
	}
	return nil
}

// CapNano converts a cap in rho (dpbandit serve --unit-budget) to
// nano-rho: exactly when it was written with at most nine decimals, else
// rounded down, so that the cap is never exceeded; a positive cap that
// would round to 0, which means no cap, is an error.
func CapNano(rho float64) (int64, error) {
	if !(rho >= 0) || rho > 1e6 {
		return 0, fmt.Errorf("the cap %v must lie in [0, 1e6] rho", rho)
	}
	if n, exact := nanoOf(rho); exact {
		return n, nil
	}
	r := new(big.Rat).SetFloat64(rho)
	r.Mul(r, big.NewRat(1e9, 1))
	n := new(big.Int).Quo(r.Num(), r.Denom()).Int64()
	if n == 0 { // 0 means no cap
		return 0, fmt.Errorf("the cap %v lies below the ledgers' unit of 1e-9 rho (0 means no cap)", rho)
	}
	return n, nil
}

// Budget returns the budget the experiment's mechanisms are calibrated
// to: the client's, except that a zCDP rho whose double lies above the
// charged NanoRho 1e-9 (0.1's does) is lowered to the double just below
// it, so that a reward never costs more than its debit. (Definitions
// stored before exact debits were charged rounded up, and keep their
// calibration: their rho lies below their charge.)
func (d Definition) Budget() (privacy.Budget, error) {
	b, err := d.Privacy.Budget()
	if err != nil || b.Notion != privacy.ZCDP {
		return b, err
	}
	if new(big.Rat).SetFloat64(b.Rho).Cmp(big.NewRat(d.NanoRho, 1e9)) <= 0 {
		return b, nil
	}
	return privacy.NewZCDP(math.Nextafter(b.Rho, 0))
}

// Debit returns the ledger cost of a unit's k-th learned reward (k from 1)
// in an experiment whose first reward costs nano: k^2 - (k-1)^2 = 2k - 1
// times it, so that k rewards cost k^2 nano (group privacy under zCDP).
func Debit(nano, k int64) int64 { return (2*k - 1) * nano }

// New validates a client's spec and returns the definition of
// a new experiment of tenant, created at created (unix nanoseconds),
// under the current rules: its defaults filled and the ledger cost of a
// reward computed. capNano is the server's cap on a unit's ledger
// (nano-rho, 0: none): an experiment one reward of which costs more is
// refused, as no reward of it could ever be learned.
func New(tenant string, sp Spec, created, capNano int64) (Definition, error) {
	_, _, nano, err := sp.validate()
	if err != nil {
		return Definition{}, fault.Errorf(fault.Invalid, "%v", err)
	}
	if capNano > 0 && nano > capNano {
		return Definition{}, fault.Errorf(fault.Invalid, "privacy: one reward costs rho=%v, above the server's cap on each unit's ledger, rho=%v (--unit-budget): no reward could ever be learned", float64(nano)/1e9, float64(capNano)/1e9)
	}
	return Definition{Spec: sp, Tenant: tenant, NanoRho: nano, Created: created, Status: store.Active, Rules: CurrentRules}, nil
}
