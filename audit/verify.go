package audit

import (
	"math"
)

// Check is the exact verdict of one definition for a budget (eps, delta).
type Check struct {
	// DeltaAtEps is the smallest delta for which the policy is
	// (eps, delta)-DP at the given eps.
	DeltaAtEps float64 `json:"delta_at_eps"`
	// MinEpsAtDelta is the smallest eps for which it is (eps, delta)-DP at
	// the given delta; nil (JSON null) when no eps suffices.
	MinEpsAtDelta *float64 `json:"min_eps_at_delta"`
	// Satisfied reports whether the policy is (eps, delta)-DP.
	Satisfied bool `json:"satisfied"`
	// Renyi is the largest Renyi divergence of order Alpha between
	// neighbouring inputs, when an order was asked; nil if infinite.
	Renyi *float64 `json:"renyi,omitempty"`
}

// Verification is the outcome of Verify, as `dpbandit verify --json`
// prints it.
type Verification struct {
	Policy string  `json:"policy"`
	Eps    float64 `json:"eps"`
	Delta  float64 `json:"delta"`
	Alpha  float64 `json:"alpha,omitempty"`
	View   Check   `json:"view"`
	Table  Check   `json:"table"`
	// Interactive is nil when enumerating the deterministic adversaries is
	// infeasible; InteractiveNote then says why.
	Interactive     *Check `json:"interactive,omitempty"`
	InteractiveNote string `json:"interactive_note,omitempty"`
}

// Verify computes the exact privacy of the policy under View, Table and
// (where feasible) Interactive DP for the budget (eps, delta), and the
// Renyi divergence of order alpha when alpha > 1.
func Verify(p *TablePolicy, eps, delta, alpha float64) (*Verification, error) {
	if math.IsNaN(eps) || eps < 0 || math.IsInf(eps, 0) {
		return nil, errorf("eps: must be finite and non-negative, got %v", eps)
	}
	if math.IsNaN(delta) || delta < 0 || delta >= 1 {
		return nil, errorf("delta: must lie in [0,1), got %v", delta)
	}
	if alpha != 0 && !(alpha > 1 && !math.IsInf(alpha, 0)) {
		return nil, errorf("alpha: must be a Renyi order, finite and greater than 1, got %v", alpha)
	}
	v := &Verification{Policy: p.Name, Eps: eps, Delta: delta, Alpha: alpha}
	check := func(d Definition) (*Check, error) {
		pr, err := p.Profile(d)
		if err != nil {
			return nil, err
		}
		c := &Check{DeltaAtEps: pr.Delta(eps)}
		c.Satisfied = c.DeltaAtEps <= delta
		if e := pr.MinEps(delta); !math.IsInf(e, 1) {
			c.MinEpsAtDelta = &e
		}
		if alpha > 1 {
			if r := pr.Renyi(alpha); !math.IsInf(r, 1) {
				c.Renyi = &r
			}
		}
		return c, nil
	}
	c, err := check(View)
	if err != nil {
		return nil, err
	}
	v.View = *c
	if c, err = check(Table); err != nil {
		return nil, err
	}
	v.Table = *c
	if v.Interactive, err = check(Interactive); err != nil {
		v.InteractiveNote = err.Error()
	}
	return v, nil
}
