package experiment

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/dpbandit/dpbandit/env"
	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/privacy"
	"github.com/dpbandit/dpbandit/theory"
)

// BoundsRow holds the finite-armed bounds of the papers for one budget.
// Fields that do not apply (beta <= 3, rho > 1) are nil.
type BoundsRow struct {
	Privacy privacy.Budget `json:"privacy"`
	// Rho is the zCDP budget the bounds use (eps^2/2 for a pure budget).
	Rho float64 `json:"rho"`
	// Theorem10 and Theorem11 are AdaC-UCB's problem-dependent and minimax
	// upper bounds (seed 001).
	Theorem10 *float64 `json:"theorem10,omitempty"`
	Theorem11 *float64 `json:"theorem11,omitempty"`
	// TableII is the converted pure-DP bound of Table II (seed 001).
	TableII *float64 `json:"table2_converted,omitempty"`
	// Theorem17 is the minimax lower bound (seed 001).
	Theorem17 *float64 `json:"theorem17_lower,omitempty"`
	// DPSEPulls bounds each arm's pulls by DP-SE (Lemma 4.1 of seed 000,
	// with probability >= 1 - confidence; 0 for optimal arms), and
	// DPSERegret is sum_a gap_a DPSEPulls_a.
	DPSEPulls  []float64 `json:"dpse_pulls"`
	DPSERegret float64   `json:"dpse_regret"`
	// Capped names the bounds whose value exceeded T times the largest
	// gap, the most any policy can regret, and were capped there (an
	// upper bound is then vacuous; a lower bound outside its regime).
	Capped []string `json:"capped,omitempty"`
}

// capRegret caps a regret bound at max, the most any policy can regret;
// it reports whether it did.
func capRegret(v *float64, max float64) bool {
	if v == nil || *v <= max {
		return false
	}
	*v = max
	return true
}

// Bounds evaluates the finite-armed bounds for a stationary environment
// with rewards in [0,1] (not a drifting one: the bounds are for fixed
// means), a horizon, budgets (zCDP or pure), the UCB optimism beta and
// DP-SE's confidence.
func Bounds(envSpec string, T int64, budgets []privacy.Budget, beta, confidence float64) ([]BoundsRow, error) {
	finite := slices.DeleteFunc(finiteFamily{}.Envs(), func(k string) bool { return slices.Contains(env.DriftingKinds(), k) })
	if kind, _, _ := strings.Cut(envSpec, ":"); !slices.Contains(finite, kind) {
		return nil, fieldErr("env", "the bounds are for finite-armed environments (%s), not %s", strings.Join(finite, ", "), kind)
	}
	inst, err := env.Parse(envSpec, 0)
	if err != nil {
		return nil, &FieldError{Field: "env", Err: err}
	}
	if inst.Bounds() != mechanism.Unit {
		return nil, fieldErr("env", "the bounds are proved for rewards in [0,1], got %v", inst.Bounds())
	}
	if T < 2 || T > MaxHorizon {
		return nil, fieldErr("horizon", "must lie in [2, 2^50], got %d", T)
	}
	if !(confidence > 0 && confidence < 1) {
		return nil, fieldErr("confidence", "must lie in (0,1), got %v", confidence)
	}
	if !(beta > 0) || math.IsInf(beta, 0) {
		return nil, fieldErr("beta", "must be positive and finite, got %v", beta)
	}
	if len(budgets) == 0 {
		return nil, fieldErr("rho", "give at least one budget (rho or eps)")
	}
	gaps := env.Gaps(inst.Means())
	var rows []BoundsRow
	for _, b := range budgets {
		rho, err := b.ToZCDP()
		if err != nil {
			return nil, fieldErr("eps", "%v", err)
		}
		row := BoundsRow{Privacy: b, Rho: rho}
		opt := func(v float64, err error) *float64 {
			if err != nil {
				return nil
			}
			return &v
		}
		row.Theorem10 = opt(theory.AdaCUCB(gaps, T, rho, beta))
		row.Theorem11 = opt(theory.AdaCUCBMinimax(gaps, T, rho, beta))
		row.TableII = opt(theory.ConvertedPureDP(gaps, T, rho, beta))
		row.Theorem17 = opt(theory.FiniteArmedLower(len(gaps), T, rho))
		eps := math.Sqrt(2 * rho)
		if b.Notion == privacy.Pure {
			eps = b.Eps
		}
		for _, g := range gaps {
			n := 0.0
			if g > 0 {
				if n, err = theory.DPSEPulls(g, len(gaps), confidence, eps, T); err != nil {
					return nil, fmt.Errorf("DP-SE bound: %w", err)
				}
			}
			row.DPSEPulls = append(row.DPSEPulls, n)
			row.DPSERegret += g * n
		}
		_, most := banditWorld{inst}.regretRange(T)
		for _, b := range []struct {
			name string
			v    *float64
		}{{"theorem10", row.Theorem10}, {"theorem11", row.Theorem11}, {"table2_converted", row.TableII},
			{"theorem17_lower", row.Theorem17}, {"dpse_regret", &row.DPSERegret}} {
			if capRegret(b.v, most) {
				row.Capped = append(row.Capped, b.name)
			}
		}
		rows = append(rows, row)
	}
	return rows, nil
}
