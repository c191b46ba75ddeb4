package noise

import "math/rand/v2"

// NormalsAffine sets dst[i] = m + s z_i for independent standard normal
// draws z_i from src: the values of Normals(src, dst) followed by dst[i]
// = m + s dst[i], to the bit, with the same draws from src in the same
// order (Normals leaves 0 + 1 z = z), in one pass instead of three. A
// 64-bit output serves two draws, as in Normals, here in a loop over
// pairs with both draws' fast paths written out (no test of the index's
// parity per draw, no call but the rare slow path's).
func NormalsAffine(src *rand.PCG, dst []float64, m, s float64) {
	z := zigNormal
	// The sign bit of a draw selects s or -s: m + (-s) x is m + s (-x)
	// to the bit (negation and rounding commute), one multiplication
	// instead of moving x to the integer unit and back.
	ss := [2]float64{s, -s}
	i := 0
	for ; i+1 < len(dst); i += 2 {
		u := src.Uint64()
		h0, h1 := uint32(u), uint32(u>>32)
		l0, m0 := h0&(zigN-1), h0>>(zigBits+1)
		x0 := (float64(m0) + 0.5) * z.w[l0]
		if m0 >= z.k[l0] {
			x0 = z.slow(src, l0, m0)
		}
		l1, m1 := h1&(zigN-1), h1>>(zigBits+1)
		x1 := (float64(m1) + 0.5) * z.w[l1]
		if m1 >= z.k[l1] {
			x1 = z.slow(src, l1, m1)
		}
		dst[i], dst[i+1] = m+ss[h0>>zigBits&1]*x0, m+ss[h1>>zigBits&1]*x1
	}
	if i < len(dst) {
		h := uint32(src.Uint64())
		l, n := h&(zigN-1), h>>(zigBits+1)
		x := (float64(n) + 0.5) * z.w[l]
		if n >= z.k[l] {
			x = z.slow(src, l, n)
		}
		dst[i] = m + ss[h>>zigBits&1]*x
	}
}
