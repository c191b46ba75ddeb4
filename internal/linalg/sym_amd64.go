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

//go:noescape
func strip16x1AVX(m *float64, stride, n int, x, y *float64)

//go:noescape
func strip16x2AVX(m *float64, stride, n int, x0, x1, y0, y1 *float64)

//go:noescape
func axpyProdAVX(dst *float64, n int, ui float64, u *float64, c float64)
