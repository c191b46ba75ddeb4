package mab

import (
	"math"
	"testing"

	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/internal/stattest"
	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/privacy"
)

// laplaceCounter counts Laplace draws and records their scales.
type laplaceCounter struct {
	countingNoise
	scales []float64
}

func (l *laplaceCounter) AddLaplace(x, b, _ float64) (float64, error) {
	l.draws++
	l.scales = append(l.scales, b)
	return x, nil
}

func TestAdaPUCBOnceAndScale(t *testing.T) {
	nz := &laplaceCounter{}
	b, _ := privacy.NewPure(0.5)
	p, err := NewAdaPUCB(setting(3, nz), b, 4)
	if err != nil {
		t.Fatal(err)
	}
	drawsOncePerEpisode(t, p, &nz.draws)
	// Each scale is 1/(eps n) for the episode's n: n is a power of 2.
	for i, s := range nz.scales {
		n := 1 / (0.5 * s)
		if math.Abs(n-math.Round(n)) > 1e-12*n || int64(math.Round(n))&(int64(math.Round(n))-1) != 0 {
			t.Fatalf("draw %d: scale %v is not 1/(eps 2^k)", i, s)
		}
	}
	if _, err := NewAdaPUCB(setting(3, nz), privacy.None(), 4); err == nil {
		t.Error("non-private AdaP-UCB accepted")
	}
}

// TestAdaPUCBIndex compares the chosen arm with the index derived in the
// doc comment: mu~ + sqrt(beta log t / (2n)) + beta log t/(eps n).
func TestAdaPUCBIndex(t *testing.T) {
	r := noise.Stream(8)
	for trial := range 1000 {
		eps := math.Pow(10, -2+3*r.Float64())
		beta := 0.5 + 4*r.Float64()
		b, _ := privacy.NewPure(eps)
		p, _ := NewAdaPUCB(setting(4, noise.Fast{R: r}), b, beta)
		tt := randomState(p.doubling, r, func(n float64) float64 { return 1 / (eps * n) })
		bl := beta * math.Log(float64(tt+1))
		want, best := 0, math.Inf(-1)
		for a := range 4 {
			n := float64(p.last[a])
			if idx := p.mean[a] + math.Sqrt(bl/(2*n)) + bl/(eps*n); idx > best {
				want, best = a, idx
			}
		}
		if got := p.Next(); got.Arm != want {
			t.Fatalf("trial %d: arm %d, index says %d", trial, got.Arm, want)
		}
	}
}

func TestAdaPUCBReleasedNoiseLaw(t *testing.T) {
	r := noise.Stream(9)
	z, _ := privacy.NewZCDP(0.125) // eps = sqrt(2 rho) = 0.5
	x := make([]float64, 5000)
	for i := range x {
		p, _ := NewAdaPUCB(setting(2, noise.Fast{R: r}), z, 1)
		p.Next()
		if err := p.Update(bandit.Feedback{Arm: 0, Count: 1, Sum: 0.5}); err != nil {
			t.Fatal(err)
		}
		x[i] = p.mean[0] - 0.5
	}
	const b = 2.0 // 1/(eps n) with eps = 0.5, n = 1
	cdf := func(v float64) float64 {
		if v < 0 {
			return 0.5 * math.Exp(v/b)
		}
		return 1 - 0.5*math.Exp(-v/b)
	}
	if d, p := stattest.KSOne(x, cdf); p < 1e-3 {
		t.Errorf("released noise not Lap(2): D=%v p=%v", d, p)
	}
}
