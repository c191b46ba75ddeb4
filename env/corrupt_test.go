package env

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/dpbandit/dpbandit/noise"
)

// TestCorruptedRewards: on linear-sphere with alpha = 0.1, each action's
// stream has a fraction of corrupted rewards within 4 standard errors of
// alpha, with exactly the adversary's values (far: hi + 1000 w; flip: -r
// of a clean reward; target: hi on the worst action, lo elsewhere); range
// sums equal the sums of the samples; two streams of the same (seed, run,
// arm) agree (common random numbers); Means are the clean means; the
// observed means are (1 - alpha) mu + alpha v for the target adversary's
// v and (1 - 2 alpha) mu for flip.
func TestCorruptedRewards(t *testing.T) {
	const n = 20000
	for _, adv := range Adversaries {
		inst, err := Parse("linear-sphere:k=4,d=3,corrupt=0.1,adversary="+adv, 3)
		if err != nil {
			t.Fatal(err)
		}
		c := inst.(*Corrupted)
		if !strings.Contains(c.String(), "corrupt=0.1") || !strings.Contains(c.String(), "adversary="+adv) {
			t.Errorf("spec %q", c.String())
		}
		clean := c.Linear.Means()
		for a, m := range c.Means() {
			if m != clean[a] {
				t.Errorf("%s: Means()[%d] = %v, clean %v", adv, a, m, clean[a])
			}
		}
		for arm := range c.Arms() {
			s := c.Stream(7, 1, arm, n)
			xs := s.Samples(0, n, nil)
			bad := 0
			for _, x := range xs {
				outside := x < c.Range.Lo || x > c.Range.Hi
				switch adv {
				case "far":
					if x == c.Range.Hi+1000*c.Range.Width() {
						bad++
					} else if outside {
						t.Fatalf("far: reward %v outside the range but not the adversary's", x)
					}
				}
			}
			if adv == "far" {
				p := 0.1
				se := math.Sqrt(p * (1 - p) / n)
				if f := float64(bad) / n; math.Abs(f-p) > 4*se {
					t.Errorf("far arm %d: corrupted fraction %v, want %v", arm, f, p)
				}
			}
			if adv == "target" {
				// The observed mean is (1 - alpha) mu + alpha v, v = hi on
				// the worst action and lo elsewhere (rewards in [-1, 1]:
				// standard deviation at most 1).
				v := c.Range.Lo
				if arm == c.worst {
					v = c.Range.Hi
				}
				m := 0.0
				for _, x := range xs {
					m += x / n
				}
				if want := 0.9*clean[arm] + 0.1*v; math.Abs(m-want) > 4/math.Sqrt(n) {
					t.Errorf("target arm %d: observed mean %v, want %v", arm, m, want)
				}
			}
			sum := 0.0
			for _, x := range xs[:1000] {
				sum += x
			}
			if got := c.Stream(7, 1, arm, n).Sum(0, 1000); math.Abs(got-sum) > 1e-9 {
				t.Errorf("%s: range sum %v, samples sum %v", adv, got, sum)
			}
			if again := c.Stream(7, 1, arm, n).Samples(0, 100, nil); again[99] != xs[99] {
				t.Errorf("%s: two streams of one key differ", adv)
			}
		}
		// flip: the mean of the observed rewards is (1 - 2 alpha) mu.
		if adv == "flip" {
			xs := c.Stream(9, 2, 0, 200000).Samples(0, 200000, nil)
			m := 0.0
			for _, x := range xs {
				m += x / float64(len(xs))
			}
			if want := 0.8 * clean[0]; math.Abs(m-want) > 4*0.9/math.Sqrt(float64(len(xs))) {
				t.Errorf("flip: observed mean %v, want (1 - 2 alpha) mu = %v", m, want)
			}
		}
	}
}

// TestEdgeAdversaryValues: the edge adversary replaces a fraction alpha
// of the observations by +-EdgeFactor Y/sqrt(alpha), + on the worst
// action, Y the root mean square of the clean observations its Attack
// has seen (the range's max(|lo|, |hi|) on the reward streams), and
// leaves the others untouched.
func TestEdgeAdversaryValues(t *testing.T) {
	inst, err := Parse("linear-sphere:k=4,d=3,corrupt=0.1,adversary=edge", 3)
	if err != nil {
		t.Fatal(err)
	}
	c := inst.(*Corrupted)
	if !c.Unclipped() {
		t.Error("edge values never leave the range")
	}
	r := rand.New(rand.NewPCG(1, 2))
	for _, arm := range []int{c.worst, (c.worst + 1) % 4} {
		sign := -1.0
		if arm == c.worst {
			sign = 1
		}
		a := c.NewAttack()
		sum2, n, replaced := 0.0, 0, 0
		for i := range 20000 {
			x := 3 * math.Sin(float64(i)) // clean reports of RMS about 3/sqrt 2
			sum2, n = sum2+x*x, n+1
			y := a.Observe(r, arm, x)
			if y == x {
				continue
			}
			replaced++
			if want := sign * EdgeFactor * math.Sqrt(sum2/float64(n)) / math.Sqrt(0.1); math.Abs(y-want) > 1e-12*math.Abs(want) {
				t.Fatalf("arm %d: replaced by %v, want %v", arm, y, want)
			}
		}
		if se := math.Sqrt(0.1 * 0.9 * 20000); math.Abs(float64(replaced)-2000) > 4.5*se {
			t.Errorf("arm %d: %d of 20000 replaced, want about 2000", arm, replaced)
		}
		if y := c.corrupt(arm, 0.5, 1); math.Abs(y-sign*EdgeFactor/math.Sqrt(0.1)) > 1e-12 {
			t.Errorf("arm %d: on the reward streams, replaced by %v", arm, y)
		}
	}
}

func TestCorruptedSpecErrors(t *testing.T) {
	for _, spec := range []string{
		"linear-sphere:k=4,d=3,corrupt=0.25",
		"linear-sphere:k=4,d=3,corrupt=-0.1",
		"linear-sphere:k=4,d=3,corrupt=x",
		"linear-sphere:k=4,d=3,corrupt=0.1,adversary=nice",
		"linear-sphere:k=4,d=3,adversary=far",
	} {
		if _, err := Parse(spec, 1); err == nil {
			t.Errorf("%s accepted", spec)
		}
	}
}

// TestSparseGauss: theta* has s0 non-zeros of magnitude 1/sqrt(s0); the
// actions have norm at most 1; the AR(1) recursion behind them gives
// unit-variance coordinates with Toeplitz correlation corr^|i-j|: over
// 10^6 coordinates, the sample variance is within 4.5 standard errors of
// 1 (var x^2 = 2 for a standard normal, and the AR(1) dependence
// multiplies it by (1 + rho^2)/(1 - rho^2) at most), and the lag-1 and
// lag-2 correlations within 4.5 standard errors of rho and rho^2, by
// Bartlett's formula: var r_1 = (1 - rho^2)/n, var r_2 = ((1 + rho^2)^2
// - 4 rho^4)/n.
func TestSparseGauss(t *testing.T) {
	c, err := ParseContextual("sparse-gauss:k=10,d=40,s=4,corr=0.5", 9)
	if err != nil {
		t.Fatal(err)
	}
	if s := c.Support(); len(s) != 4 {
		t.Fatalf("support %v", s)
	}
	for _, j := range c.Support() {
		if math.Abs(math.Abs(c.Theta[j])-0.5) > 1e-15 {
			t.Errorf("theta_%d = %v, want magnitude 1/2", j, c.Theta[j])
		}
	}
	r := c.NewRun(1, 0)
	for range 100 {
		for _, a := range r.Next() {
			norm := 0.0
			for _, x := range a {
				norm += x * x
			}
			if norm > 1+1e-12 {
				t.Fatalf("an action of norm %v", math.Sqrt(norm))
			}
		}
	}
	const n, rho = 1 << 20, 0.5
	z := make([]float64, n)
	noise.Normals(rand.NewPCG(4, 5), z)
	ar1(z, rho)
	var s0, s1, s2 float64
	for i := 2; i < n; i++ {
		s0 += z[i] * z[i]
		s1 += z[i] * z[i-1]
		s2 += z[i] * z[i-2]
	}
	v := s0 / (n - 2)
	if se := math.Sqrt(2 * (1 + rho*rho) / (1 - rho*rho) / n); math.Abs(v-1) > 4.5*se {
		t.Errorf("variance %v, want 1 (se %v)", v, se)
	}
	r1, r2 := s1/s0, s2/s0
	se1, se2 := math.Sqrt((1-rho*rho)/n), math.Sqrt(((1+rho*rho)*(1+rho*rho)-4*rho*rho*rho*rho)/n)
	if math.Abs(r1-rho) > 4.5*se1 || math.Abs(r2-rho*rho) > 4.5*se2 {
		t.Errorf("correlations %v, %v; want %v, %v (se %v, %v)", r1, r2, rho, rho*rho, se1, se2)
	}
	for _, bad := range []string{"sparse-gauss:d=3,s=4", "sparse-gauss:corr=1", "sparse-gauss:s=0", "sparse-gauss:q=1"} {
		if _, err := ParseContextual(bad, 1); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}
