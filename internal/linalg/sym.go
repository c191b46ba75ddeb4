package linalg

import (
	"math"
	"unsafe"
)

// The kernels of this file serve OFUL's dense steps (package contextual):
// the products y = M x of a symmetric d x d matrix M (row-major) with the
// K actions of a decision set, and the symmetric rank-one update M +=
// c (u u^T). Each output entry is one chain of fused multiply-adds in a
// fixed order, the same on every machine: on amd64 with AVX2 and FMA an
// assembly kernel computes 16 entries (or 2 x 16) side by side, elsewhere
// the Go loops below compute the same chains with math.FMA, to the bit
// (TestKernelsMatchReference compares both with the definitions).

// StripLanes is the number of entries of y that one pass of MulSym
// computes; MulSym needs d >= StripLanes.
const StripLanes = 16

// MulSym sets ys[k] = M xs[k] for every k (len(xs) == len(ys), each of
// length d >= StripLanes), where M is the symmetric d x d matrix m,
// read by columns: entry i of y is the chain of fused multiply-adds
//
//	y_i = fma(x_{d-1}, M_{d-1,i}, ... fma(x_1, M_{1,i}, fma(x_0, M_{0,i}, 0)))
//
// (M_{j,i} = M_{i,j}; reading row j of m lets 16 entries of y advance
// together). The matrix is read in strips of 16 columns, each strip for
// every x while it is in cache, the last d mod 16 columns in strips of 4
// for eight x at a time or in a last strip of 16: the same chains
// whatever the strip.
func MulSym(m []float64, d int, xs, ys [][]float64) {
	_ = m[d*d-1]
	for k := range xs {
		_, _ = xs[k][d-1], ys[k][d-1]
	}
	l0 := 0
	for ; l0+StripLanes <= d; l0 += StripLanes {
		k := 0
		for ; k+1 < len(xs); k += 2 {
			strip16x2(&m[l0], d, d, &xs[k][0], &xs[k+1][0], &ys[k][l0], &ys[k+1][l0])
		}
		if k < len(xs) {
			strip16x1(&m[l0], d, d, &xs[k][0], &ys[k][l0])
		}
	}
	// The last d mod 16 entries: for a group of eight vectors, four
	// entries at a time (the last four overlapping the ones before when
	// d is not a multiple of 4; a group padded with repeats of its last
	// vector, which write its values again), or, when that takes more
	// passes over the rows, a 16-entry strip ending at d (overlapping the
	// strip before, recomputing equal values).
	if l0 == d {
		return
	}
	strips := (d - l0 + 3) / 4
	var px, py [8]*float64
	for k0 := 0; k0 < len(xs); k0 += 8 {
		g := min(8, len(xs)-k0)
		if (g+1)/2 <= strips {
			l, k := d-StripLanes, k0
			for ; k+1 < k0+g; k += 2 {
				strip16x2(&m[l], d, d, &xs[k][0], &xs[k+1][0], &ys[k][l], &ys[k+1][l])
			}
			if k < k0+g {
				strip16x1(&m[l], d, d, &xs[k][0], &ys[k][l])
			}
			continue
		}
		for l4 := l0; l4 < d; l4 += 4 {
			l := min(l4, d-4)
			for j := range 8 {
				k := k0 + min(j, g-1)
				px[j], py[j] = &xs[k][0], &ys[k][l]
			}
			strip4x8(&m[l], d, d, &px, &py)
		}
	}
}

// RankOneSym adds c (u u^T) to the d x d matrix m: entry (i, j) becomes
// fma(c, u_i u_j, m_ij). The product u_i u_j is the same for (i, j) and
// (j, i), so a symmetric m stays exactly symmetric. With c = +-1 it is
// m_ij +- u_i u_j rounded once, the value of linalg.AddScaled(row i,
// c u_i, u) to the bit.
func RankOneSym(m []float64, d int, u []float64, c float64) {
	_, _ = m[d*d-1], u[d-1]
	for i := range d {
		axpyProd(&m[i*d], d, u[i], &u[0], c)
	}
}

// RankOneDot is RankOneSym(m, d, u, c) that also sets theta_i to the
// inner product of the updated row i with w, summed as Dot2 sums (the
// values of Dot2(row i, w, w)'s first sum, to the bit), in the same pass.
func RankOneDot(m []float64, d int, u []float64, c float64, w, theta []float64) {
	_, _, _, _ = m[d*d-1], u[d-1], w[d-1], theta[d-1]
	for i := range d {
		theta[i] = rankOneDot(&m[i*d], d, u[i], &u[0], c, &w[0])
	}
}

// Rows sets y_i = Dot2(row i of the d x d matrix m, x, x)'s first sum.
func Rows(m []float64, d int, x, y []float64) {
	for i := range d {
		y[i], _ = Dot2(m[i*d:i*d+d], x, x)
	}
}

// Dot2 returns the inner products a.b and a.c (b and c at least as long
// as a), each summed in eight lanes (element j into lane j mod 8, by
// fused multiply-adds) over the first len(a) &^ 3 elements, the lanes
// added as ((s0+s4) + (s1+s5)) + ((s2+s6) + (s3+s7)), then the other
// elements added in order, fused. One pass over a serves both.
func Dot2(a, b, c []float64) (float64, float64) {
	n := len(a)
	if n == 0 {
		return 0, 0
	}
	_, _ = b[n-1], c[n-1]
	return dot2(&a[0], &b[0], &c[0], n)
}

// MaxPending is the most rank-one updates AddPendingUpper applies in one
// pass.
const MaxPending = 16

// AddPendingUpper applies the updates m += s_p a_p a_p^T (s_p = +-1,
// len(as) <= MaxPending) in order to the upper triangle of the d x d
// matrix m (j >= i): entry (i, j) becomes m_ij + fl((s_p a_pi) a_pj),
// rounded, for p in order, the values of as many RankOneSym(m, d, a_p,
// s_p) calls to the bit (and of linalg.AddScaled(row i, s_p a_pi, a_p));
// each row is read and written once for all of them. Each row is
// updated from column i rounded down to a multiple of 16, so that its
// part below the diagonal changes too: the lower triangle's values are
// left unspecified (a caller mirrors the upper one).
func AddPendingUpper(m []float64, d int, as [][]float64, s []float64) {
	if len(as) == 0 {
		return
	}
	_, _ = m[d*d-1], s[len(as)-1]
	var alphas [MaxPending]float64
	var vecs [MaxPending]*float64
	for i := range d {
		j := i &^ 15
		for p, a := range as {
			alphas[p], vecs[p] = s[p]*a[i], &a[j]
		}
		addProducts(&m[i*d+j], d-j, &alphas[0], &vecs, len(as))
	}
}

// Dot3 returns Dot2(a, b, c)'s two sums and a.a, summed as Dot sums it
// for len(a) >= Short (gonum's kernel: element j into partial sum j mod 4
// for j < len(a) &^ 3, products and sums rounded apart, the other
// elements added to the first partial sum in order, then (s0 + s2) +
// (s1 + s3)): SquaredNorm(a) to the bit there, so that the unit-ball
// check of an action (mechanism.InUnitBall) is the same. One pass over a.
func Dot3(a, b, c []float64) (float64, float64, float64) {
	n := len(a)
	if n == 0 {
		return 0, 0, 0
	}
	_, _ = b[n-1], c[n-1]
	return dot3(&a[0], &b[0], &c[0], n)
}

// stripRef is the reference of strip16x1 and strip16x2 for one x: y[l]
// = the chain over the n rows of stride stride below m.
func stripRef(m []float64, stride, n int, x, y []float64) {
	for l := range StripLanes {
		s := 0.0
		for j := range n {
			s = math.FMA(x[j], m[j*stride+l], s)
		}
		y[l] = s
	}
}

// strip4x8Ref is the reference of strip4x8.
func strip4x8Ref(m *float64, stride, n int, xs, ys *[8]*float64) {
	ms := unsafe.Slice(m, (n-1)*stride+4)
	for k := range 8 {
		x, y := unsafe.Slice(xs[k], n), unsafe.Slice(ys[k], 4)
		for l := range 4 {
			s := 0.0
			for j := range n {
				s = math.FMA(x[j], ms[j*stride+l], s)
			}
			y[l] = s
		}
	}
}

// addProductsRef is the reference of addProducts.
func addProductsRef(dst *float64, n int, alphas *float64, vecs *[16]*float64, np int) {
	d, al := unsafe.Slice(dst, n), unsafe.Slice(alphas, np)
	for p := range np {
		v := unsafe.Slice(vecs[p], n)
		for j := range d {
			d[j] += float64(al[p] * v[j]) // the product rounded, never fused
		}
	}
}

// axpyProdRef is the reference of axpyProd.
func axpyProdRef(dst []float64, ui float64, u []float64, c float64) {
	for j := range dst {
		dst[j] = math.FMA(c, ui*u[j], dst[j])
	}
}

// rankOneDotRef is the reference of rankOneDot.
func rankOneDotRef(row []float64, ui float64, u []float64, c float64, w []float64) float64 {
	for j := range row {
		row[j] = math.FMA(c, ui*u[j], row[j])
	}
	r, _ := dot2Ref(row, w, w)
	return r
}

// dot3Ref is the reference of dot3.
func dot3Ref(a, b, c []float64) (float64, float64, float64) {
	ab, ac := dot2Ref(a, b, c)
	var s [4]float64
	n := len(a) &^ 3
	for j := range n {
		s[j%4] += float64(a[j] * a[j]) // the product rounded, never fused
	}
	for j := n; j < len(a); j++ {
		s[0] += float64(a[j] * a[j])
	}
	return ab, ac, (s[0] + s[2]) + (s[1] + s[3])
}

// dot2Ref is the reference of dot2.
func dot2Ref(a, b, c []float64) (float64, float64) {
	var sb, sc [8]float64
	n := len(a) &^ 3
	for j := range n {
		sb[j%8] = math.FMA(a[j], b[j], sb[j%8])
		sc[j%8] = math.FMA(a[j], c[j], sc[j%8])
	}
	fold := func(s *[8]float64) float64 {
		return ((s[0] + s[4]) + (s[1] + s[5])) + ((s[2] + s[6]) + (s[3] + s[7]))
	}
	rb, rc := fold(&sb), fold(&sc)
	for j := n; j < len(a); j++ {
		rb = math.FMA(a[j], b[j], rb)
		rc = math.FMA(a[j], c[j], rc)
	}
	return rb, rc
}
