package linalg

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// hasAVX2FMA selects the assembly kernels (sym_amd64.s); it is read
// once, at start-up, from the processor's own report.
var hasAVX2FMA = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// strip16x1 sets y[0:16] to the chains of MulSym for one x over the n
// rows of stride stride (in float64s) starting at m.
func strip16x1(m *float64, stride, n int, x, y *float64) {
	if hasAVX2FMA {
		strip16x1AVX(m, stride, n, x, y)
		return
	}
	stripRef(unsafe.Slice(m, (n-1)*stride+StripLanes), stride, n, unsafe.Slice(x, n), unsafe.Slice(y, StripLanes))
}

// strip16x2 is strip16x1 for two vectors, reading the rows once.
func strip16x2(m *float64, stride, n int, x0, x1, y0, y1 *float64) {
	if hasAVX2FMA {
		strip16x2AVX(m, stride, n, x0, x1, y0, y1)
		return
	}
	strip16x1(m, stride, n, x0, y0)
	strip16x1(m, stride, n, x1, y1)
}

// axpyProd sets dst[j] = fma(c, ui u[j], dst[j]) for j < n.
func axpyProd(dst *float64, n int, ui float64, u *float64, c float64) {
	if hasAVX2FMA {
		axpyProdAVX(dst, n, ui, u, c)
		return
	}
	axpyProdRef(unsafe.Slice(dst, n), ui, unsafe.Slice(u, n), c)
}

// rankOneDot is axpyProd (c, ui, u) on row, returning the inner product
// of the updated row with w as Dot2 sums it.
func rankOneDot(row *float64, n int, ui float64, u *float64, c float64, w *float64) float64 {
	if hasAVX2FMA {
		return rankOneDotAVX(row, n, ui, u, c, w)
	}
	return rankOneDotRef(unsafe.Slice(row, n), ui, unsafe.Slice(u, n), c, unsafe.Slice(w, n))
}

// dot2 returns Dot2's two sums.
func dot2(a, b, c *float64, n int) (float64, float64) {
	if hasAVX2FMA {
		ab, ac, _ := dot3AVX(a, b, c, n) // the same two sums
		return ab, ac
	}
	return dot2Ref(unsafe.Slice(a, n), unsafe.Slice(b, n), unsafe.Slice(c, n))
}

//go:noescape
func rankOneDotAVX(row *float64, n int, ui float64, u *float64, c float64, w *float64) float64

// dot3 returns Dot3's three sums.
func dot3(a, b, c *float64, n int) (float64, float64, float64) {
	if hasAVX2FMA {
		return dot3AVX(a, b, c, n)
	}
	return dot3Ref(unsafe.Slice(a, n), unsafe.Slice(b, n), unsafe.Slice(c, n))
}

// scaleNorm scales a by s and returns its squared norm as ScaleSquaredNorm.
func scaleNorm(a []float64, s float64) float64 {
	if hasAVX2FMA {
		return scaleNormAVX(&a[0], len(a), s)
	}
	return scaleNormRef(a, s)
}

//go:noescape
func scaleNormAVX(a *float64, n int, s float64) float64

//go:noescape
func dot3AVX(a, b, c *float64, n int) (ab, ac, aa float64)

// strip4x8 sets ys[k][0:4] to the chains of MulSym for the eight
// vectors xs[k], over the n rows of stride stride starting at m.
func strip4x8(m *float64, stride, n int, xs, ys *[8]*float64) {
	if hasAVX2FMA {
		strip4x8AVX(m, stride, n, xs, ys)
		return
	}
	strip4x8Ref(m, stride, n, xs, ys)
}

// addProducts adds alphas[p] vecs[p][j] to dst[j] for p < np in order,
// each product and each sum rounded, for j < n.
func addProducts(dst *float64, n int, alphas *float64, vecs *[16]*float64, np int) {
	if hasAVX2FMA {
		addProductsAVX(dst, n, alphas, vecs, np)
		return
	}
	addProductsRef(dst, n, alphas, vecs, np)
}

//go:noescape
func addProductsAVX(dst *float64, n int, alphas *float64, vecs *[16]*float64, np int)

//go:noescape
func strip4x8AVX(m *float64, stride, n int, xs, ys *[8]*float64)

//go:noescape
func strip16x1AVX(m *float64, stride, n int, x, y *float64)

//go:noescape
func strip16x2AVX(m *float64, stride, n int, x0, x1, y0, y1 *float64)

//go:noescape
func axpyProdAVX(dst *float64, n int, ui float64, u *float64, c float64)
