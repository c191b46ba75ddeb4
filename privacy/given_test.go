package privacy

import (
	"errors"
	"testing"
)

func TestGiven(t *testing.T) {
	x := func(v float64) *float64 { return &v }
	for _, c := range []struct {
		g    Given
		want Notion
		err  error
	}{
		{Given{Rho: x(0.5)}, ZCDP, nil},
		{Given{Eps: x(1)}, Pure, nil},
		{Given{Eps: x(1), Delta: x(1e-5)}, Approx, nil},
		{Given{Eps: x(1), Alpha: x(2)}, Renyi, nil},
		{Given{}, "", ErrCombination},
		{Given{Rho: x(1), Eps: x(1)}, "", ErrCombination},
		{Given{Rho: x(1), Delta: x(1e-5)}, "", ErrCombination},
		{Given{Delta: x(1e-5)}, "", ErrCombination},
		{Given{Eps: x(1), Delta: x(1e-5), Alpha: x(2)}, "", ErrCombination},
	} {
		b, err := c.g.Budget()
		if !errors.Is(err, c.err) || err == nil && b.Notion != c.want {
			t.Errorf("%+v: %v %v, want %v %v", c.g, b.Notion, err, c.want, c.err)
		}
	}
	var pe *ParamError
	if _, err := (Given{Rho: x(0)}).Budget(); !errors.As(err, &pe) {
		t.Errorf("rho 0: %v, want a *ParamError", err)
	}
}

// A budget parameter out of range is a *ParamError naming it, whose
// Message has no package name.
func TestParamErrorMessage(t *testing.T) {
	rho := -1.0
	_, err := Given{Rho: &rho}.Budget()
	var pe *ParamError
	if !errors.As(err, &pe) || pe.Param != "rho" {
		t.Fatalf("rho -1: %v, want a *ParamError on rho", err)
	}
	if got, want := pe.Message(), "rho must be positive and finite, got -1"; got != want {
		t.Errorf("Message() = %q, want %q", got, want)
	}
}
