//go:build !amd64

package linalg

import "unsafe"

// hasAVX2FMA is false: this architecture has no assembly kernels (the
// tests, which also run the Go loops on amd64, read it).
var hasAVX2FMA = false

// strip16x1 sets y[0:16] to the chains of MulSym for one x over the n
// rows of stride stride (in float64s) starting at m.
func strip16x1(m *float64, stride, n int, x, y *float64) {
	stripRef(unsafe.Slice(m, (n-1)*stride+StripLanes), stride, n, unsafe.Slice(x, n), unsafe.Slice(y, StripLanes))
}

// strip16x2 is strip16x1 for two vectors.
func strip16x2(m *float64, stride, n int, x0, x1, y0, y1 *float64) {
	strip16x1(m, stride, n, x0, y0)
	strip16x1(m, stride, n, x1, y1)
}

// axpyProd sets dst[j] = fma(c, ui u[j], dst[j]) for j < n.
func axpyProd(dst *float64, n int, ui float64, u *float64, c float64) {
	axpyProdRef(unsafe.Slice(dst, n), ui, unsafe.Slice(u, n), c)
}

// rankOneDot is axpyProd (c, ui, u) on row, returning the inner product
// of the updated row with w as Dot2 sums it.
func rankOneDot(row *float64, n int, ui float64, u *float64, c float64, w *float64) float64 {
	return rankOneDotRef(unsafe.Slice(row, n), ui, unsafe.Slice(u, n), c, unsafe.Slice(w, n))
}

// dot2 returns Dot2's two sums.
func dot2(a, b, c *float64, n int) (float64, float64) {
	return dot2Ref(unsafe.Slice(a, n), unsafe.Slice(b, n), unsafe.Slice(c, n))
}

// strip4x8 sets ys[k][0:4] to the chains of MulSym for the eight
// vectors xs[k].
func strip4x8(m *float64, stride, n int, xs, ys *[8]*float64) {
	strip4x8Ref(m, stride, n, xs, ys)
}

// addProducts adds alphas[p] vecs[p][j] to dst[j] for p < np in order.
func addProducts(dst *float64, n int, alphas *float64, vecs *[16]*float64, np int) {
	addProductsRef(dst, n, alphas, vecs, np)
}

// dot3 returns Dot3's three sums.
func dot3(a, b, c *float64, n int) (float64, float64, float64) {
	return dot3Ref(unsafe.Slice(a, n), unsafe.Slice(b, n), unsafe.Slice(c, n))
}

// scaleNorm scales a by s and returns its squared norm as ScaleSquaredNorm.
func scaleNorm(a []float64, s float64) float64 { return scaleNormRef(a, s) }
