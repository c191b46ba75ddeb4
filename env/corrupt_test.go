package env

import (
	"math"
	"strings"
	"testing"
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
