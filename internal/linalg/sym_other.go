//go:build !amd64

package linalg

import "unsafe"

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
