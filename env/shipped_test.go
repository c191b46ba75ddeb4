package env

import (
	"compress/gzip"
	"encoding/csv"
	"math/big"
	"testing"
)

// The declared range of every feature of a shipped data set is the rule
// convert.py states, computed here exactly (big.Rat on the shipped text):
// the minimum and maximum over the rows, rounded outward to two
// significant digits; digits and letter take their full scale. In
// floating point the rule gave iris's sepal_length [4.2, 7.9] for
// [4.3, 7.9] (4.3 / 0.1 = 42.99999999999999, floored; issue #50).
func TestShippedRanges(t *testing.T) {
	full := map[string][2]float64{"digits": {0, 16}, "letter": {0, 15}}
	for _, s := range Shipped() {
		f, err := shipped.Open("datasets/" + s.File)
		if err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := csv.NewReader(zr).ReadAll()
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Bounds) != s.Features || len(rows) != s.Rows+1 {
			t.Fatalf("%s: %d ranges, %d rows; want %d, %d", s.Name, len(s.Bounds), len(rows)-1, s.Features, s.Rows)
		}
		for j, b := range s.Bounds {
			var lo, hi *big.Rat
			for _, r := range rows[1:] {
				x, ok := new(big.Rat).SetString(r[j])
				if !ok {
					t.Fatalf("%s: %q is not a number", s.Name, r[j])
				}
				if lo == nil || x.Cmp(lo) < 0 {
					lo = x
				}
				if hi == nil || x.Cmp(hi) > 0 {
					hi = x
				}
			}
			want := [2]float64{ratFloat(outwardExact(lo, false)), ratFloat(outwardExact(hi, true))}
			if fs, ok := full[s.Name]; ok {
				if lo.Cmp(new(big.Rat).SetFloat64(fs[0])) < 0 || hi.Cmp(new(big.Rat).SetFloat64(fs[1])) > 0 {
					t.Errorf("%s: %s: values [%s, %s] outside the full scale %v", s.Name, rows[0][j], lo.FloatString(6), hi.FloatString(6), fs)
				}
				want = fs
			}
			if b[0] != want[0] || b[1] != want[1] {
				t.Errorf("%s: %s: declared range %v, the rule gives %v (values [%s, %s])", s.Name, rows[0][j], b, want, lo.FloatString(6), hi.FloatString(6))
			}
		}
	}
}

// outwardExact rounds x to two significant digits, down (up: up),
// exactly.
func outwardExact(x *big.Rat, up bool) *big.Rat {
	if x.Sign() == 0 {
		return new(big.Rat)
	}
	ax := new(big.Rat).Abs(x)
	e := 0 // the unit of the second significant digit: 10^(e+1) <= |x| < 10^(e+2)
	for ax.Cmp(pow10(e+1)) < 0 {
		e--
	}
	for ax.Cmp(pow10(e+2)) >= 0 {
		e++
	}
	q := pow10(e)
	y := new(big.Rat).Quo(x, q)
	n := new(big.Int).Div(y.Num(), y.Denom()) // Euclidean, the denominator positive: the floor
	if up && !y.IsInt() {
		n.Add(n, big.NewInt(1))
	}
	return new(big.Rat).Mul(new(big.Rat).SetInt(n), q)
}

// pow10 returns 10^e exactly.
func pow10(e int) *big.Rat {
	p := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(max(e, -e))), nil)
	if e < 0 {
		return new(big.Rat).SetFrac(big.NewInt(1), p)
	}
	return new(big.Rat).SetInt(p)
}

// ratFloat is the float64 nearest x.
func ratFloat(x *big.Rat) float64 {
	f, _ := x.Float64()
	return f
}
