package mab

import (
	"math"
	"slices"
	"testing"

	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/noise"
)

// referenceUCB1 is the index of UCB1 computed for every arm at every
// step, as the paper states it: the oracle of TestUCB1MatchesReference.
func referenceUCB1(n []int64, s []float64, t int64) int {
	for a, c := range n {
		if c == 0 {
			return a
		}
	}
	l := 2 * math.Log(float64(t))
	best, bestIdx := 0, math.Inf(-1)
	for a, c := range n {
		nf := float64(c)
		if idx := s[a]/nf + math.Sqrt(l/nf); idx > bestIdx {
			best, bestIdx = a, idx
		}
	}
	return best
}

// TestUCB1MatchesReference: UCB1's bracketed indices choose, at every
// step, the arm the full computation chooses, bit for bit, through ties
// (two arms of equal statistics), single steps and batches, arms close
// together and far apart, a long run, and a restore from a snapshot.
func TestUCB1MatchesReference(t *testing.T) {
	cases := []struct {
		name  string
		means []float64
		steps int
		batch int64 // pulls per update every 1000th step
	}{
		{"five arms", []float64{0.75, 0.625, 0.5, 0.375, 0.25}, 400000, 1},
		{"close arms", []float64{0.5, 0.5, 0.499, 0.5}, 200000, 1},
		{"equal rewards", []float64{1, 1, 0, 1}, 50000, 1},
		{"batches", []float64{0.9, 0.1, 0.6}, 100000, 5000},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			u, err := NewUCB1(setting(len(c.means), nil))
			if err != nil {
				t.Fatal(err)
			}
			r := noise.Stream(7)
			n := make([]int64, len(c.means))
			s := make([]float64, len(c.means))
			var tt, snapT int64
			var snapN []int64
			var snapS []float64
			var snap []byte
			for step := range c.steps {
				want := referenceUCB1(n, s, tt)
				pl := u.Next()
				if pl.Arm != want || pl.Count != 1 {
					t.Fatalf("step %d (t = %d): plan %+v, the full computation plays arm %d", step, tt, pl, want)
				}
				count := int64(1)
				if step%1000 == 999 {
					count = c.batch
				}
				k, _ := noise.Binomial(r, count, c.means[want])
				if err := u.Update(bandit.Feedback{Arm: want, Count: count, Sum: float64(k)}); err != nil {
					t.Fatal(err)
				}
				n[want] += count
				s[want] += float64(k)
				tt += count
				switch step {
				case c.steps/2 - 1:
					if snap, err = u.MarshalBinary(); err != nil {
						t.Fatal(err)
					}
					snapN, snapS, snapT = slices.Clone(n), slices.Clone(s), tt
				case c.steps / 2:
					// The running policy, restored to the step before (within
					// the same window of bounds), goes on as the full
					// computation from that state.
					if err := u.UnmarshalBinary(snap); err != nil {
						t.Fatal(err)
					}
					n, s, tt = snapN, snapS, snapT
				case 3 * c.steps / 4:
					// So does a new one restored to the current state.
					b, err := u.MarshalBinary()
					if err != nil {
						t.Fatal(err)
					}
					if u, err = NewUCB1(setting(len(c.means), nil)); err != nil {
						t.Fatal(err)
					}
					if err := u.UnmarshalBinary(b); err != nil {
						t.Fatal(err)
					}
				}
			}
		})
	}
}

// TestUCB1LateSteps: past the horizons where consecutive logarithms are
// far apart in floating point, UCB1 still chooses as the full computation.
func TestUCB1LateSteps(t *testing.T) {
	u, _ := NewUCB1(bandit.Setting{Arms: 3, Bounds: mechanism.Unit})
	n := []int64{1 << 45, 1 << 20, 1 << 20}
	s := []float64{0.6 * (1 << 45), 0.5 * (1 << 20), 0.55 * (1 << 20)}
	var tt int64
	for a := range n {
		u.Update(bandit.Feedback{Arm: a, Count: n[a], Sum: s[a]})
		tt += n[a]
	}
	for step := range 2000 {
		want := referenceUCB1(n, s, tt)
		if pl := u.Next(); pl.Arm != want {
			t.Fatalf("step %d: arm %d, want %d", step, pl.Arm, want)
		}
		u.Update(bandit.Feedback{Arm: want, Count: 1, Sum: 0.5})
		n[want]++
		s[want] += 0.5
		tt++
	}
}
