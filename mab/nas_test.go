package mab

import (
	"fmt"
	"math"
	"testing"

	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/privacy"
)

// runNAS returns the fraction of runs whose estimate misses mu by more
// than alpha |mu|, for a rule built with accuracy build (alpha for the
// real rule) on +-1 samples of mean mu.
func runNAS(t *testing.T, mu, alpha, build, beta, eps float64, geometric bool, runs int) (float64, float64) {
	b, _ := privacy.NewPure(eps)
	miss, samples := 0, 0.0
	for run := range runs {
		r := noise.Stream(70, uint64(run))
		n, err := NewNAS(b, build, beta, 1, geometric, noise.Fast{R: r})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; ; i++ {
			x := -1.0
			if r.Float64() < (1+mu)/2 {
				x = 1
			}
			stop, est, err := n.Add(x)
			if err != nil {
				t.Fatal(err)
			}
			if stop {
				if math.Abs(est-mu) > alpha*math.Abs(mu) {
					miss++
				}
				samples += float64(n.Samples())
				break
			}
			if i > 1e8 {
				t.Fatal("DP-NAS did not stop")
			}
		}
	}
	return float64(miss) / float64(runs), samples / float64(runs)
}

// TestNASGuarantee checks the (alpha, beta) guarantee of DP-NAS (seed 000,
// Section 4): P(|mu^ - mu| > alpha |mu|) < beta, on several settings.
func TestNASGuarantee(t *testing.T) {
	for _, c := range []struct {
		mu, alpha, beta, eps float64
		geometric            bool
	}{
		{0.5, 0.5, 0.1, 1, false},
		{-0.3, 0.25, 0.05, 2, false},
		{0.8, 0.1, 0.1, 0.5, false},
		{0.4, 0.3, 0.1, 1, true},
	} {
		t.Run(fmt.Sprintf("%+v", c), func(t *testing.T) {
			const runs = 200
			miss, _ := runNAS(t, c.mu, c.alpha, c.alpha, c.beta, c.eps, c.geometric, runs)
			if miss >= c.beta {
				t.Errorf("missed in %v of runs, beta = %v", miss, c.beta)
			}
		})
	}
	// Power: a rule that stops as if alpha were 16 times larger misses.
	if miss, _ := runNAS(t, 0.5, 0.05, 0.8, 0.1, 1, false, 200); miss < 0.1 {
		t.Errorf("the test cannot see a rule that stops too early (miss rate %v)", miss)
	}
}

func TestNASScalesAndErrors(t *testing.T) {
	b, _ := privacy.NewPure(2)
	n, err := NewNAS(b, 0.5, 0.1, 3, false, noise.Fast{R: noise.Stream(1)})
	if err != nil {
		t.Fatal(err)
	}
	// sigma1 = sigma2 = 12R/eps = 18, sigma3 = 4R/eps = 6 (Algorithm 2, line 1).
	s1, s2, s3 := n.Scales()
	for _, c := range [][2]float64{{s1, 18}, {s2, 18}, {s3, 6}} {
		if math.Abs(c[0]-c[1]) > 1e-11 || c[0] < c[1] {
			t.Errorf("scale %v, want %v", c[0], c[1])
		}
	}
	if _, _, err := n.Add(math.NaN()); err == nil {
		t.Error("NaN sample accepted")
	}
	z, _ := privacy.NewZCDP(1)
	for _, bad := range []func() error{
		func() error { _, err := NewNAS(z, 0.5, 0.1, 1, false, nil); return err },
		func() error { _, err := NewNAS(b, 0, 0.1, 1, false, nil); return err },
		func() error { _, err := NewNAS(b, 0.5, 1, 1, false, nil); return err },
		func() error { _, err := NewNAS(b, 0.5, 0.1, -1, false, nil); return err },
	} {
		if bad() == nil {
			t.Error("bad parameters accepted")
		}
	}
}
