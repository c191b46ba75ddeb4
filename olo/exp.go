package olo

import "math"

// expTable holds 2^(j/256), j = 0..255.
var expTable = func() (t [256]float64) {
	for j := range t {
		t[j] = math.Exp2(float64(j) / 256)
	}
	return t
}()

// expNonPos returns e^x for x <= 0, about twice as fast as math.Exp (the
// exponential weights of a step cost N of them) and within 1e-15 of it in
// relative terms (a test checks): x = k ln2/256 + r with k = trunc(256
// x/ln2), so r is in (-ln2/256, 0]; e^x = 2^(k>>8) 2^((k&255)/256) e^r,
// the middle factor from a table and e^r from its degree-5 Taylor
// polynomial (remainder below r^6/720 < 6e-19), evaluated by Estrin's
// scheme. ln2/256 is split in two parts so that k ln2/256 is exact enough.
// Below -700, where the result nears the subnormal range, it is math.Exp.
func expNonPos(x float64) float64 {
	if x < -700 {
		return math.Exp(x)
	}
	const (
		c    = 256 / math.Ln2
		ln2h = 6.93147180369123816490e-01 / 256 // ln 2 = ln2h + ln2l, ln2h with 33 bits
		ln2l = 1.90821492927058770002e-10 / 256
	)
	k := int64(x * c)
	kf := float64(k)
	r := (x - kf*ln2h) - kf*ln2l
	r2 := r * r
	p := (1 + r) + r2*((0.5+r*(1.0/6))+r2*(1.0/24+r*(1.0/120)))
	return math.Float64frombits(math.Float64bits(expTable[k&255]*p) + uint64(k>>8)<<52)
}
