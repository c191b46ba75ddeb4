package noise

import (
	"math"
	"math/rand/v2"
)

// The ziggurat of Marsaglia and Tsang (2000, "The Ziggurat Method for
// Generating Random Variables", J. Stat. Softw. 5(8)) for the standard
// normal, with 256 layers of equal area zigV under f(x) = exp(-x^2/2):
// the base layer is the rectangle [0, r] x [0, f(r)] together with the tail
// beyond r (both of area zigV, treated as one rectangle of width zigV/f(r)),
// and layer i >= 1 is [0, x_i] x [f(x_i), f(x_{i+1})] with x_1 = r,
// f(x_{i+1}) = f(x_i) + zigV/x_i and x_256 = 0. r and zigV are the
// constants for 256 layers (Marsaglia and Tsang give them for 128 and 256);
// a test checks that the layers close.
const (
	zigBits = 8 // 2^8 layers
	zigN    = 1 << zigBits
	zigR    = 3.6541528853610088
	zigV    = 4.92867323399e-3
	zigRes  = 1 << (31 - zigBits) // resolution of the position inside a layer
)

// ziggurat holds the layer tables; it is built once and never written.
type ziggurat struct {
	k      [zigN]uint32  // |j| below k[i]: the point is under the curve
	w      [zigN]float64 // x = (j + 1/2) w[i]
	lo, hi [zigN]float64 // f at the bottom and top of layer i
}

var zig = newZiggurat()

func newZiggurat() *ziggurat {
	z := &ziggurat{}
	f := func(x float64) float64 { return math.Exp(-x * x / 2) }
	var x [zigN + 1]float64
	x[1] = zigR
	for i := 1; i < zigN-1; i++ {
		x[i+1] = math.Sqrt(-2 * math.Log(f(x[i])+zigV/x[i]))
	}
	w0 := zigV / f(zigR)
	z.w[0], z.k[0] = w0/zigRes, uint32(zigRes*zigR/w0)
	for i := 1; i < zigN; i++ {
		z.w[i], z.k[i] = x[i]/zigRes, uint32(zigRes*x[i+1]/x[i])
		z.lo[i], z.hi[i] = f(x[i]), f(x[i+1])
	}
	return z
}

// Normals fills dst with independent standard normal draws from src, by
// the ziggurat method. It is a fast sampler for simulation (the decision
// sets of the contextual environments): two draws share one 64-bit output
// of src (8 bits choose the layer, 24 bits the signed position in it, so
// the accepted values lie on a grid of 2^-23 of the layer's width), and it
// avoids the rand.Rand interface. Privacy noise never comes from here.
func Normals(src *rand.PCG, dst []float64) {
	z := zig
	var u uint64
	for i := range dst {
		if i%2 == 0 {
			u = src.Uint64()
		} else {
			u >>= 32
		}
		// The fast path (about 98.6% of draws): 8 bits choose the layer,
		// the 24 others a signed position in it; j ^ (j >> 31) is
		// |j + 1/2| - 1/2, the grid being symmetric about 0.
		l, j := uint32(u)&(zigN-1), int32(uint32(u))>>zigBits
		if uint32(j^(j>>31)) < z.k[l] {
			dst[i] = (float64(j) + 0.5) * z.w[l]
		} else {
			dst[i] = z.slow(src, l, j)
		}
	}
}

// slow handles a point outside the inner rectangle of its layer: the tail
// of the base layer, or the wedge test of an upper layer; a rejected point
// starts afresh with new bits.
func (z *ziggurat) slow(src *rand.PCG, i uint32, j int32) float64 {
	for {
		x := (float64(j) + 0.5) * z.w[i]
		if i == 0 {
			// Marsaglia (1964): the tail of the normal beyond r.
			for {
				t := -math.Log(open01(src)) / zigR
				if -2*math.Log(open01(src)) > t*t {
					return math.Copysign(zigR+t, x)
				}
			}
		}
		if z.lo[i]+open01(src)*(z.hi[i]-z.lo[i]) < math.Exp(-x*x/2) {
			return x
		}
		h := uint32(src.Uint64())
		i, j = h&(zigN-1), int32(h)>>zigBits
		if uint32(j^(j>>31)) < z.k[i] {
			return (float64(j) + 0.5) * z.w[i]
		}
	}
}

// open01 returns a uniform draw in (0, 1].
func open01(src *rand.PCG) float64 {
	return float64(src.Uint64()>>11+1) / (1 << 53)
}
