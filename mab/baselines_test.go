package mab

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/noise"
)

// TestThompsonChoiceProbability: with posteriors Beta(3,5) and Beta(5,4),
// arm 1 is chosen with probability P(X1 > X0) = int f1(x) F0(x) dx.
func TestThompsonChoiceProbability(t *testing.T) {
	s := setting(2, nil)
	p, err := NewThompson(s)
	if err != nil {
		t.Fatal(err)
	}
	p.n[0], p.s[0] = 6, 2 // Beta(3, 5)
	p.n[1], p.s[1] = 7, 4 // Beta(5, 4)
	b0, b1 := distuv.Beta{Alpha: 3, Beta: 5}, distuv.Beta{Alpha: 5, Beta: 4}
	want := 0.0
	const m = 20000
	for i := range m {
		x := (float64(i) + 0.5) / m
		want += b1.Prob(x) * b0.CDF(x) / m
	}
	const draws = 20000
	hits := 0
	for range draws {
		if p.Next().Arm == 1 {
			hits++
		}
	}
	got := float64(hits) / draws
	if se := math.Sqrt(want * (1 - want) / draws); math.Abs(got-want) > 4*se {
		t.Errorf("arm 1 chosen with frequency %v, want %v", got, want)
	}
}

func TestThompsonAndKLUCBLearn(t *testing.T) {
	means := []float64{0.7, 0.5}
	const T, runs = 20000, 50
	klDiv := bernoulliKL(0.5, 0.7)
	for name, mk := range map[string]func(bandit.Setting) (bandit.Policy, error){
		"thompson": func(s bandit.Setting) (bandit.Policy, error) { return NewThompson(s) },
		"kl-ucb":   func(s bandit.Setting) (bandit.Policy, error) { return NewKLUCB(s, 0) },
	} {
		var pulls float64
		for run := range uint64(runs) {
			s := setting(2, nil)
			s.Rand = noise.Stream(90, run)
			p, err := mk(s)
			if err != nil {
				t.Fatal(err)
			}
			pulls += float64(play(t, p, means, T, 200+run)[1])
		}
		pulls /= runs
		// Both are asymptotically optimal: N_2(T) ~ ln T / kl(0.5, 0.7) (Lai
		// and Robbins). Allow twice that plus 100 for lower-order terms.
		if bound := 2*math.Log(T)/klDiv + 100; pulls > bound {
			t.Errorf("%s: %v suboptimal pulls, more than %v", name, pulls, bound)
		}
	}
}

func TestKLIndex(t *testing.T) {
	for _, c := range [][2]float64{{0.3, 0.1}, {0, 0.5}, {0.9, 0.01}, {0.5, 2}} {
		q := klIndex(c[0], c[1], math.Inf(-1))
		if q < c[0] || q > 1 {
			t.Fatalf("index %v outside [%v, 1]", q, c[0])
		}
		if q < 1-1e-8 && math.Abs(bernoulliKL(c[0], q)-c[1]) > 1e-6 {
			t.Errorf("kl(%v, %v) = %v, want %v", c[0], q, bernoulliKL(c[0], q), c[1])
		}
	}
	// With a floor: the same index whenever it exceeds the floor, else a
	// value at most the floor (KL-UCB's choice never changes).
	r := rand.New(rand.NewPCG(5, 5))
	for range 20000 {
		p, d := r.Float64(), math.Exp(-8+10*r.Float64())
		want := klIndex(p, d, math.Inf(-1))
		floor := want + (r.Float64()-0.5)*0.02
		if r.IntN(10) == 0 {
			floor = want
		}
		got := klIndex(p, d, floor)
		if (want > floor && got != want) || (want <= floor && got > floor) {
			t.Fatalf("klIndex(%v, %v, floor %v) = %v; without a floor %v", p, d, floor, got, want)
		}
	}
	if _, err := NewKLUCB(setting(2, nil), -1); err == nil {
		t.Error("c = -1 accepted")
	}
	th, _ := NewThompson(setting(2, nil))
	if err := th.Update(bandit.Feedback{Arm: 0, Count: 3, Sum: 1.5}); err == nil {
		t.Error("fractional batch without samples accepted")
	}
	if err := th.Update(bandit.Feedback{Arm: 0, Count: 3, Sum: 2}); err != nil || th.s[0] != 2 {
		t.Errorf("integral batch: %v, successes %v", err, th.s[0])
	}
}
