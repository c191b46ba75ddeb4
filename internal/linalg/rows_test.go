package linalg

import (
	"math"
	"testing"
)

// CheckRows names the first row of another dimension or with a
// non-finite entry, in the caller's words.
func TestCheckRows(t *testing.T) {
	for _, c := range []struct {
		rows [][]float64
		want string
	}{
		{[][]float64{{1, 2}, {3, 4}}, ""},
		{[][]float64{{1, 2}, {3}}, "point 1 has dimension 1, want 2"},
		{[][]float64{{1, 2}, {3, math.NaN()}}, "point 1 has a non-finite coordinate"},
		{[][]float64{{math.Inf(-1), 2}, {3}}, "point 0 has a non-finite coordinate"},
	} {
		err := CheckRows(c.rows, 2, "point", "coordinate")
		if got := ""; err != nil {
			got = err.Error()
			if got != c.want {
				t.Errorf("%v: %q, want %q", c.rows, got, c.want)
			}
		} else if c.want != "" {
			t.Errorf("%v: accepted, want %q", c.rows, c.want)
		}
	}
}
