package contextual

// span is a half-open range [lo, hi) of coordinates that holds every
// non-zero entry of a vector or of a row of a matrix; empty when lo >= hi.
//
// The disjoint-arm encoding of the data set environments makes actions
// zero outside their arm's block of coordinates, and V and V^-1
// block-diagonal: a row of V^-1 is non-zero only within its block's
// span. OFUL keeps the span of each row of V^-1 and of V_tau^-1, and
// every inner product and update over such rows and actions covers only
// the spans (linalg.DotWithin; an update adds nothing outside the span of
// its vector), which changes no value: each skipped product has an exact
// zero factor. With dense actions every span is the whole row, and the
// work is the dense computation's.
type span struct{ lo, hi int }

// empty reports whether s holds no coordinate.
func (s span) empty() bool { return s.lo >= s.hi }

// union returns the smallest span holding s and t.
func (s span) union(t span) span {
	switch {
	case s.empty():
		return t
	case t.empty():
		return s
	}
	return span{min(s.lo, t.lo), max(s.hi, t.hi)}
}

// meet returns the coordinates s and t share.
func (s span) meet(t span) span { return span{max(s.lo, t.lo), min(s.hi, t.hi)} }

// nonzero returns the span of a's non-zero entries (a NaN is non-zero).
func nonzero(a []float64) span {
	lo, hi := 0, len(a)
	for lo < hi && a[lo] == 0 {
		lo++
	}
	for hi > lo && a[hi-1] == 0 {
		hi--
	}
	return span{lo, hi}
}

// rowSpans sets out[i] to the span of the non-zero entries of row i of
// the d x d matrix m.
func rowSpans(out []span, m []float64, d int) {
	for i := range d {
		out[i] = nonzero(m[i*d : i*d+d])
	}
}

// full reports whether every span of rows is the whole [0, d).
func full(rows []span, d int) bool {
	for _, r := range rows {
		if r != (span{0, d}) {
			return false
		}
	}
	return true
}
