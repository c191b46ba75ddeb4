package mechanism

import (
	"sync"
	"testing"
)

// TestCalibrationsMemoise: a shared Calibrations returns what NewWishart
// returns, errors included, for every caller and from concurrent ones;
// a nil one computes.
func TestCalibrationsMemoise(t *testing.T) {
	type args struct {
		eps, delta, b float64
		u, p          int
	}
	cases := []args{{0.5, 1e-3, 1.4, 3, 11}, {2, 1e-5, 1, 1, 2}, {0.5, 1e-3, 1.4, 3, 12}, {-1, 1e-3, 1, 1, 2}}
	c := &Calibrations{}
	var nilc *Calibrations
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, a := range cases {
				want, werr := NewWishart(a.eps, a.delta, a.b, a.u, a.p)
				for _, m := range []*Calibrations{c, c, nilc} {
					got, err := m.Wishart(a.eps, a.delta, a.b, a.u, a.p)
					if got != want || (err == nil) != (werr == nil) {
						t.Errorf("%+v: %+v, %v; NewWishart: %+v, %v", a, got, err, want, werr)
					}
				}
			}
		}()
	}
	wg.Wait()
	if len(c.wishart) != len(cases) {
		t.Errorf("%d calibrations remembered, want %d", len(c.wishart), len(cases))
	}
}
