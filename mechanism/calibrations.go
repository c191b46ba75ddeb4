package mechanism

import "sync"

// Calibrations remembers the calibrations of mechanisms, pure functions
// of their parameters, some of them costly (NewWishart searches for about
// 200 µs). A caller that builds many policies of one configuration (an
// audit's trials, a simulation's runs) shares one, through the policies'
// settings; a nil *Calibrations computes every calibration afresh. It is
// safe for concurrent use.
type Calibrations struct {
	mu      sync.Mutex
	wishart map[wishartArgs]wishartCalibration
}

type wishartArgs struct {
	eps, delta, b float64
	u, p          int
}

type wishartCalibration struct {
	w   Wishart
	err error
}

// Wishart returns NewWishart(eps, delta, b, u, p), computed once (or
// twice, by callers racing for the same parameters: it is a pure
// function).
func (c *Calibrations) Wishart(eps, delta, b float64, u, p int) (Wishart, error) {
	if c == nil {
		return NewWishart(eps, delta, b, u, p)
	}
	k := wishartArgs{eps, delta, b, u, p}
	c.mu.Lock()
	r, ok := c.wishart[k]
	c.mu.Unlock()
	if ok {
		return r.w, r.err
	}
	r.w, r.err = NewWishart(eps, delta, b, u, p)
	c.mu.Lock()
	if c.wishart == nil {
		c.wishart = map[wishartArgs]wishartCalibration{}
	}
	c.wishart[k] = r
	c.mu.Unlock()
	return r.w, r.err
}
