package mechanism

import (
	"math"
	"math/big"
	"testing"

	"github.com/dpbandit/dpbandit/privacy"
)

// exactRec is a noise source that takes exact statistics and records what
// it is given, adding nothing.
type exactRec struct {
	xs    []*big.Rat
	sens  []float64
	float int
}

func (e *exactRec) AddGaussian(x, _, s float64) (float64, error) {
	e.float++
	e.sens = append(e.sens, s)
	return x, nil
}
func (e *exactRec) AddLaplace(x, _, s float64) (float64, error) {
	e.float++
	e.sens = append(e.sens, s)
	return x, nil
}
func (e *exactRec) AddGaussianRat(x *big.Rat, _, s float64) (float64, error) {
	e.xs, e.sens = append(e.xs, x), append(e.sens, s)
	f, _ := x.Float64()
	return f, nil
}
func (e *exactRec) AddLaplaceRat(x *big.Rat, sc, s float64) (float64, error) {
	return e.AddGaussianRat(x, sc, s)
}

// TestSumsExact: a float sum loses 2^-60 added to 1; the exact sums keep
// every one, and a release on a noise source that takes exact statistics
// gets the exact mean, not the float one; products are exact too.
func TestSumsExact(t *testing.T) {
	s := NewSums(2, true)
	s.Add(0, 1)
	for range 1000 {
		s.Add(0, 0x1p-60)
	}
	s.AddScaled([]float64{0, 0.1}, 0.3)
	if s.F[0] != 1 {
		t.Fatalf("float sum %v", s.F[0])
	}
	want := new(big.Rat).Add(big.NewRat(1, 1), new(big.Rat).SetFrac(big.NewInt(1000), new(big.Int).Lsh(big.NewInt(1), 60)))
	want.Quo(want, big.NewRat(3, 1))
	z, _ := privacy.NewZCDP(1)
	rec := &exactRec{}
	g, _ := NewGaussian(z, 1, rec)
	if _, err := g.ReleaseSums(s.At(0), 3); err != nil {
		t.Fatal(err)
	}
	if len(rec.xs) != 1 || rec.xs[0].Cmp(want) != 0 || rec.float != 0 {
		t.Errorf("released %v (float releases %d), want the exact mean %v", rec.xs, rec.float, want)
	}
	// 0.1 * 0.3 exactly: the product of the two doubles.
	p := new(big.Rat).Mul(new(big.Rat).SetFloat64(0.1), new(big.Rat).SetFloat64(0.3))
	if r := s.rat(1, 1); r.Cmp(p) != 0 {
		t.Errorf("exact product %v, want %v", r, p)
	}
	// Without exact sums, or on a float noise source, the float sums are
	// released.
	f := NewSums(1, false)
	f.Add(0, 2)
	if out, err := g.ReleaseSums(f, 4); err != nil || out[0] != 0.5 || rec.float != 1 {
		t.Errorf("float path: %v %v", out, err)
	}
	if _, err := g.ReleaseSums(f, 0); err == nil {
		t.Error("division by 0 accepted")
	}
}

// TestReleaseShares: a vector release tells the noise source each
// coordinate's share of the sensitivity: l2/sqrt(d) (Gaussian), l1/d
// (Laplace), and for a Gaussian tree l2 sqrt(L)/sqrt(n L), its nodes
// being one mechanism over all L levels; never more.
func TestReleaseShares(t *testing.T) {
	z, _ := privacy.NewZCDP(1)
	rec := &exactRec{}
	g, _ := NewGaussian(z, 2, rec)
	if _, err := g.ReleaseSums(NewSums(4, true), 1); err != nil {
		t.Fatal(err)
	}
	l, _ := NewLaplace(z, 2, rec)
	if err := l.AddTo(make([]float64, 4)); err != nil {
		t.Fatal(err)
	}
	tr, _ := NewTreeAggGaussian(z, 2, 0, 5, 100, rec) // L = 7
	if _, err := tr.Add(make([]float64, 5)); err != nil {
		t.Fatal(err)
	}
	for i, want := range map[int]float64{0: 1, 4: 0.5, 8: 2 / math.Sqrt(5)} {
		if got := rec.sens[i]; got > want || got < want*(1-1e-12) {
			t.Errorf("release %d: share %v, want %v", i, got, want)
		}
	}
}
