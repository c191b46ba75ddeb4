package privacy

// Given is a budget as a user gives it, each value nil when not given:
// rho alone (zCDP), eps alone (pure DP), eps with delta ((eps,delta)-DP)
// or eps with alpha (Renyi DP). The command line, the service and the
// audits all read a user's budget through it.
type Given struct {
	Rho, Eps, Delta, Alpha *float64
}

// ErrCombination is a Given whose values name no budget: none, rho with
// another, delta with alpha, or delta or alpha without eps.
var ErrCombination = errorf("give rho, or eps, or eps with delta, or eps with alpha")

// Budget returns the budget the values describe, validated by the
// constructor of its notion (*ParamError for a value out of range), or
// ErrCombination.
func (g Given) Budget() (Budget, error) {
	switch {
	case g.Rho != nil && g.Eps == nil && g.Delta == nil && g.Alpha == nil:
		return NewZCDP(*g.Rho)
	case g.Rho != nil || g.Eps == nil || g.Delta != nil && g.Alpha != nil:
		return Budget{}, ErrCombination
	case g.Delta != nil:
		return NewApprox(*g.Eps, *g.Delta)
	case g.Alpha != nil:
		return NewRenyi(*g.Alpha, *g.Eps)
	}
	return NewPure(*g.Eps)
}
