package rules

import (
	"math"
	"testing"
)

// words returns a word source that plays ws and counts the words taken.
func words(t *testing.T, ws ...uint64) (func() uint64, *int) {
	n := new(int)
	return func() uint64 {
		if *n == len(ws) {
			t.Fatalf("more than %d words drawn", len(ws))
		}
		*n++
		return ws[*n-1]
	}, n
}

// TestExplore: the coin explores when its word's top 53 bits m have
// m/2^53 < e (at e = 1/2: m = 2^52 does not, 2^52 - 1 does), then the
// action is a later word mod k, a word at or above the largest multiple
// of k below 2^64 drawn again (k = 7: 2^64 - 1 and 2^64 - 2).
func TestExplore(t *testing.T) {
	half := uint64(1) << 52 << 11
	for _, c := range []struct {
		name  string
		k, b  int
		ws    []uint64
		want  int
		taken int
	}{
		{"at the coin's edge", 3, 1, []uint64{half}, 1, 1},
		{"below it", 3, 1, []uint64{half - 1<<11, 5}, 2, 2},
		{"rejected words", 7, 0, []uint64{0, math.MaxUint64, math.MaxUint64 - 1, math.MaxUint64 - 2}, int((math.MaxUint64 - 2) % 7), 4},
	} {
		word, n := words(t, c.ws...)
		if got := Explore(c.k, c.b, 0.5, word); got != c.want || *n != c.taken {
			t.Errorf("%s: %d after %d words, want %d after %d", c.name, got, *n, c.want, c.taken)
		}
	}
}
