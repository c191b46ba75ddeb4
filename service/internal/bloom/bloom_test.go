package bloom

import (
	"fmt"
	"math"
	"testing"
)

// TestIDFilter: every id added is reported (no false negative), in its
// namespace only, and ids never added are reported at the rate
// (1 - e^(-k n / m))^k of a Bloom filter of m bits with k probes and n
// ids: 0.66% for m = 2^20, k = 8, n = 10^5, within 4 standard errors
// over 10^5 probes (a standard error of 0.026%). The filter's memory
// does not change as ids are added.
func TestIDFilter(t *testing.T) {
	t.Parallel()
	const m, n, tries = 1 << 20, 100000, 100000
	f := NewFilter(m)
	words := len(f.bits)
	for i := range n {
		f.Add("a\x00", fmt.Sprint("event-", i))
	}
	fp, other := 0, 0
	for i := range n {
		if !f.MayContain("a\x00", fmt.Sprint("event-", i)) {
			t.Fatalf("event-%d added and not found", i)
		}
		if f.MayContain("b\x00", fmt.Sprint("event-", i)) {
			other++
		}
	}
	for i := range tries {
		if f.MayContain("a\x00", fmt.Sprint("other-", i)) {
			fp++
		}
	}
	want := math.Pow(1-math.Exp(-probes*n/float64(m)), probes)
	se := math.Sqrt(want * (1 - want) / tries)
	for _, c := range []struct {
		what string
		got  int
	}{{"ids never added", fp}, {"ids added in another namespace", other}} {
		if rate := float64(c.got) / tries; math.Abs(rate-want) > 4*se {
			t.Errorf("%s: false positive rate %.4f%%, want %.4f%% ± %.4f%%", c.what, 100*rate, 100*want, 400*se)
		}
	}
	t.Logf("false positive rates %.4f%% and %.4f%%, predicted %.4f%%", 100*float64(fp)/tries, 100*float64(other)/tries, 100*want)
	if len(f.bits) != words || words != m/64 {
		t.Errorf("%d words, want %d", len(f.bits), m/64)
	}
}
