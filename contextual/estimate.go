package contextual

import "slices"

// Estimate returns theta~ of the last re-estimation: for AdaC-OFUL
// V_tau^-1 times the released (noisy) reward statistics, a
// post-processing of its releases and of V (the chosen actions, public
// in 001's model), so it costs no privacy. It is what Greedy ranks by;
// before the first re-estimation it is 0.
func (o *OFUL) Estimate() []float64 {
	if o.theta == nil {
		return make([]float64, o.d)
	}
	return slices.Clone(o.theta)
}
