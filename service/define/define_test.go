package define

import (
	"errors"
	"math/big"
	"strings"
	"testing"

	"github.com/dpbandit/dpbandit/catalog"
	"github.com/dpbandit/dpbandit/privacy"
	"github.com/dpbandit/dpbandit/service/fault"
)

// TestExactCharges: a budget written with at most nine decimals is
// charged exactly, and its mechanisms are calibrated to at most the
// charge; other budgets are charged rounded up, caps rounded down.
func TestExactCharges(t *testing.T) {
	rho := 0.1
	d, err := New("t", Spec{ID: "a", Algorithm: "adac-ucb", Arms: 2, RewardRange: [2]float64{0, 1}, Privacy: Privacy{Rho: &rho}}, 0, 0)
	if err != nil || d.NanoRho != 1e8 {
		t.Fatalf("rho 0.1 costs %d nano-rho (%v)", d.NanoRho, err)
	}
	b, err := d.Budget()
	if err != nil || new(big.Rat).SetFloat64(b.Rho).Cmp(big.NewRat(1, 10)) > 0 {
		t.Fatalf("rho 0.1 is calibrated to %v, above its charge 0.1: %v", b.Rho, err)
	}
	for _, c := range []struct {
		rho         float64
		ceil, floor int64
	}{{0.1, 1e8, 1e8}, {0.3, 3e8, 3e8}, {1.0 / 3, 333333334, 333333333}, {0.5, 5e8, 5e8}, {1e-9, 1, 1}} {
		n, _ := nanoCeil(c.rho)
		m, _ := CapNano(c.rho)
		if n != c.ceil || m != c.floor {
			t.Errorf("rho %v: charged %d (want %d), cap %d (want %d)", c.rho, n, c.ceil, m, c.floor)
		}
	}
}

// TestLedgerAccountsOnlyWhatItCan: an (eps, delta) budget enters the
// zCDP ledger only for Gaussian mechanisms (privacy.ApproxToZCDP) and
// Laplace ones (eps^2/2); a Wishart or sparse-vector algorithm is
// refused, whatever kind is served.
func TestLedgerAccountsOnlyWhatItCan(t *testing.T) {
	t.Parallel()
	b, _ := privacy.NewApprox(1, 1e-6)
	for _, c := range []struct {
		algo string
		ok   bool
	}{{"adac-ucb", true}, {"adac-oful", true}, {"adap-ucb", true}, {"dp-pe", true}, {"private-lasso", false}, {"dp-ftpl", false}} {
		a, err := catalog.Parse(c.algo)
		if err != nil {
			t.Fatal(err)
		}
		_, err = ledgerRho(a, b)
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, ErrNotAccountable)) {
			t.Errorf("%s at (1, 1e-6): %v", c.algo, err)
		}
	}
}

// TestDefinitionErrorsNameTheField: a bad spec is refused with the
// field it is about and the library's message, without the library's
// package names (found when the library's errors were typed: the
// service answered "algorithm: catalog: ...").
func TestDefinitionErrorsNameTheField(t *testing.T) {
	rho := -1.0
	for _, c := range []struct {
		sp    Spec
		field string
	}{
		{Spec{ID: "a", Algorithm: "adac-ucb:betta=2", Arms: 2, RewardRange: [2]float64{0, 1}}, "algorithm: "},
		{Spec{ID: "a", Algorithm: "nope", Arms: 2, RewardRange: [2]float64{0, 1}}, "algorithm: "},
		{Spec{ID: "a", Algorithm: "adac-ucb", Arms: 2, RewardRange: [2]float64{0, 1}, Privacy: Privacy{Rho: &rho}}, "privacy: "},
	} {
		_, err := New("t", c.sp, 0, 0)
		if fault.Of(err) != fault.Invalid || !strings.HasPrefix(err.Error(), c.field) {
			t.Errorf("%+v: %v, want an Invalid error starting %q", c.sp, err, c.field)
		}
		for _, pkg := range []string{"catalog:", "privacy: privacy", "mab:", "mechanism:"} {
			if strings.Contains(err.Error(), pkg) {
				t.Errorf("%q names a package (%s)", err, pkg)
			}
		}
	}
}
