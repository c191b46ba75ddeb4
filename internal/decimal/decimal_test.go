package decimal

import (
	"errors"
	"math"
	"testing"
)

func TestParse(t *testing.T) {
	for s, want := range map[string]float64{"1": 1, " -2.5e3 ": -2500, "+.5": 0.5, "1E-2": 0.01, "NaN": math.NaN(), "-Inf": math.Inf(-1)} {
		x, err := Parse(s)
		if err != nil || !(x == want || math.IsNaN(want) && math.IsNaN(x)) {
			t.Errorf("%q: %v, %v", s, x, err)
		}
	}
	for _, s := range []string{"1_000.5", "1_0", "0x1p-2", "0X10", "", "four", "1,5"} {
		if x, err := Parse(s); !errors.Is(err, ErrSyntax) {
			t.Errorf("%q: %v accepted", s, x)
		}
	}
}

// A number beyond float64's range is an overflow, not a syntax error
// (issue #50: 1e309 was "not a decimal number"); an underflow reads as 0.
func TestParseOverflow(t *testing.T) {
	for _, s := range []string{"1e309", "-1e309", "2e308"} {
		if x, err := Parse(s); !errors.Is(err, ErrOverflow) {
			t.Errorf("%q: %v, %v; want ErrOverflow", s, x, err)
		}
	}
	if x, err := Parse("1e-400"); x != 0 || err != nil {
		t.Errorf("1e-400: %v, %v; want 0", x, err)
	}
}
