package mechanism

import (
	"errors"
	"math/big"
	"testing"

	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/privacy"
)

// ratCount is the secure noise, counting its float and exact releases.
type ratCount struct {
	noise.Secure
	floats, rats *int
}

func (c ratCount) AddGaussian(x, s, d float64) (float64, error) {
	*c.floats++
	return c.Secure.AddGaussian(x, s, d)
}

func (c ratCount) AddGaussianRat(x *big.Rat, s, d float64) (float64, error) {
	*c.rats++
	return c.Secure.AddGaussianRat(x, s, d)
}

// TestSmoothExactOnSecureNoise: on a noise source that takes exact
// statistics the smooth binary mechanism releases every node through the
// exact path (its sums kept exactly, as the tree's are), never a float
// sum; its snapshot carries the exact sums, which a restore brings back
// bit for bit, and a snapshot with exact sums does not restore into a
// counter without them.
func TestSmoothExactOnSecureNoise(t *testing.T) {
	b, _ := privacy.NewZCDP(1)
	var floats, rats int
	nz := ratCount{floats: &floats, rats: &rats}
	c, err := NewSmooth(b, 1, 2, 100, nz)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		if _, err := c.Add([]float64{0.1, float64(i % 2)}); err != nil {
			t.Fatal(err)
		}
	}
	if rats == 0 || floats != 0 {
		t.Fatalf("%d exact and %d float releases", rats, floats)
	}
	st, err := CounterState(c)
	if err != nil || st.Exact == nil {
		t.Fatalf("state %v, exact sums %v", err, st.Exact)
	}
	fresh, _ := NewSmooth(b, 1, 2, 100, nz)
	if err := RestoreCounter(fresh, st); err != nil {
		t.Fatal(err)
	}
	s1, s2 := c.(*smooth), fresh.(*smooth)
	for p := range s1.ex {
		for k := range s1.ex[p].x {
			if s1.ex[p].x[k].Cmp(s2.ex[p].x[k]) != 0 || s1.ex[p].F[k] != s2.ex[p].F[k] {
				t.Fatalf("bit %d coordinate %d: restored %v, saved %v", p, k, s2.ex[p].x[k], s1.ex[p].x[k])
			}
		}
	}
	plain, _ := NewSmooth(b, 1, 2, 100, noise.NewFast(1))
	if err := RestoreCounter(plain, st); !errors.Is(err, ErrInput) {
		t.Errorf("exact sums restored into a float counter: %v", err)
	}
}
