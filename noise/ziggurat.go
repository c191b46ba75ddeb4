package noise

import (
	"math"
	"math/rand/v2"
)

// The ziggurat method of Marsaglia and Tsang (2000, "The Ziggurat Method
// for Generating Random Variables", J. Stat. Softw. 5(8)) for a decreasing
// density f on [0, inf), with a random sign: the standard normal (f(x) =
// exp(-x^2/2)) and the Laplace distribution (f(x) = exp(-x)). The area
// under f is cut into 256 layers of equal area v: the base layer is the
// rectangle [0, r] x [0, f(r)] together with the tail beyond r (treated as
// one rectangle of width v/f(r)), and layer i >= 1 is [0, x_i] x [f(x_i),
// f(x_{i+1})] with x_1 = r, f(x_{i+1}) = f(x_i) + v/x_i and x_256 = 0. r
// and v are the paper's constants for 256 layers; a test checks that the
// layers close.
const (
	zigBits = 8 // 2^8 layers
	zigN    = 1 << zigBits
	zigRes  = 1 << (31 - zigBits) // resolution of the position inside a layer
)

// ziggurat holds the layer tables of one density; it is built once and
// never written.
type ziggurat struct {
	r, v   float64
	f      func(float64) float64
	tail   func(src *rand.PCG) float64 // a draw from f beyond r
	k      [zigN]uint32                // a position below k[i] is under f
	w      [zigN]float64               // x = (m + 1/2) w[i]
	lo, hi [zigN]float64               // f at the bottom and top of layer i
}

var (
	zigNormal = newZiggurat(3.6541528853610088, 4.92867323399e-3,
		func(x float64) float64 { return math.Exp(-x * x / 2) },
		func(y float64) float64 { return math.Sqrt(-2 * math.Log(y)) },
		func(src *rand.PCG) float64 {
			// Marsaglia (1964): the normal tail beyond r.
			const r = 3.6541528853610088
			for {
				t := -math.Log(open01(src)) / r
				if -2*math.Log(open01(src)) > t*t {
					return r + t
				}
			}
		})
	zigExp = newZiggurat(7.69711747013104972, 3.949659822581572e-3,
		func(x float64) float64 { return math.Exp(-x) },
		func(y float64) float64 { return -math.Log(y) },
		func(src *rand.PCG) float64 {
			// The exponential is memoryless: r plus a fresh draw.
			return 7.69711747013104972 - math.Log(open01(src))
		})
)

// newZiggurat builds the tables of density f (inverse finv) from r and v.
func newZiggurat(r, v float64, f, finv func(float64) float64, tail func(*rand.PCG) float64) *ziggurat {
	z := &ziggurat{r: r, v: v, f: f, tail: tail}
	var x [zigN + 1]float64
	x[1] = r
	for i := 1; i < zigN-1; i++ {
		x[i+1] = finv(f(x[i]) + v/x[i])
	}
	w0 := v / f(r)
	z.w[0], z.k[0] = w0/zigRes, uint32(zigRes*r/w0)
	for i := 1; i < zigN; i++ {
		z.w[i], z.k[i] = x[i]/zigRes, uint32(zigRes*x[i+1]/x[i])
		z.lo[i], z.hi[i] = f(x[i]), f(x[i+1])
	}
	return z
}

// Normals fills dst with independent standard normal draws from src. It is
// a fast sampler for simulation (the decision sets of the contextual
// environments); privacy noise on a Fast source uses its Laplace twin.
func Normals(src *rand.PCG, dst []float64) {
	clear(dst)
	zigNormal.add(src, dst, 1)
}

// add adds scale times an independent draw to every dst[i]. Two draws
// share one 64-bit output of src, 32 bits each: 8 choose the layer, 1 the
// sign, 23 the position in the layer (the accepted values lie on a grid of
// 2^-23 of the layer's width, symmetric about 0). The fast path, a table
// lookup and a multiplication, takes about 99% of the draws; it is written
// inline, as the compiler would not inline it.
func (z *ziggurat) add(src *rand.PCG, dst []float64, scale float64) {
	var u uint64
	for i := range dst {
		if i%2 == 0 {
			u = src.Uint64()
		} else {
			u >>= 32
		}
		h := uint32(u)
		l, m := h&(zigN-1), h>>(zigBits+1)
		var x float64
		if m < z.k[l] {
			x = (float64(m) + 0.5) * z.w[l]
		} else {
			x = z.slow(src, l, m)
		}
		// The sign bit moved to the float's sign, without a branch (the
		// sign is a coin flip, which no branch predictor guesses).
		x = math.Float64frombits(math.Float64bits(x) ^ uint64(h&zigN)<<(63-zigBits))
		dst[i] += scale * x
	}
}

// slow handles a point outside the inner rectangle of its layer: the tail
// of the base layer, or the wedge test of an upper layer; a rejected point
// starts afresh with new bits (its sign is already drawn and independent).
func (z *ziggurat) slow(src *rand.PCG, l, m uint32) float64 {
	for {
		x := (float64(m) + 0.5) * z.w[l]
		if l == 0 {
			return z.tail(src)
		}
		if z.lo[l]+open01(src)*(z.hi[l]-z.lo[l]) < z.f(x) {
			return x
		}
		h := uint32(src.Uint64())
		l, m = h&(zigN-1), h>>(zigBits+1)
		if m < z.k[l] {
			return (float64(m) + 0.5) * z.w[l]
		}
	}
}

// open01 returns a uniform draw in (0, 1].
func open01(src *rand.PCG) float64 {
	return float64(src.Uint64()>>11+1) / (1 << 53)
}
