package contextual

import (
	"math/rand/v2"
	"testing"

	"github.com/dpbandit/dpbandit/env"
	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/privacy"
)

// TestRestoreContinuesSparse: a policy restored from a snapshot taken
// mid-run on digits (sparse actions, V^-1 block-diagonal) continues as
// the saved one does, choice for choice and entry for entry of V^-1: the
// spans of the rows (not in the snapshot) are rebuilt from V^-1 and
// V_tau^-1.
func TestRestoreContinuesSparse(t *testing.T) {
	z, _ := privacy.NewZCDP(1)
	e, err := env.ParseDataset("dataset:digits", 1)
	if err != nil {
		t.Fatal(err)
	}
	s := Setting{Dim: e.Dim(), Horizon: 400, Bounds: box}
	for _, conf := range []Config{cfg(1, z), cfg(0, privacy.None())} {
		src := rand.NewPCG(3, 3)
		s.Noise = noise.Fast{R: rand.New(src)}
		p, err := New(s, conf)
		if err != nil {
			t.Fatal(err)
		}
		r := e.NewRun(5, 0)
		step := func(p *OFUL, acts [][]float64, reward func(int) float64) int {
			k, err := p.Choose(acts)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Update(reward(k)); err != nil {
				t.Fatal(err)
			}
			return k
		}
		for range 150 {
			step(p, r.Next(), r.Reward)
		}
		b, err := p.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		// The noise stream's position is the service's to keep (its
		// tape); here q draws where p stands.
		at, err := src.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		src2 := rand.NewPCG(0, 0)
		if err := src2.UnmarshalBinary(at); err != nil {
			t.Fatal(err)
		}
		s.Noise = noise.Fast{R: rand.New(src2)}
		q, err := New(s, conf)
		if err != nil {
			t.Fatal(err)
		}
		if err := q.UnmarshalBinary(b); err != nil {
			t.Fatal(err)
		}
		for i := range 150 {
			acts := r.Next()
			kp, kq := step(p, acts, r.Reward), step(q, acts, r.Reward)
			if kp != kq {
				t.Fatalf("%+v, step %d after the restore: %d against %d", conf, i, kq, kp)
			}
			for j := range p.vinv {
				if !sameValue(p.vinv[j], q.vinv[j]) {
					t.Fatalf("%+v, step %d after the restore: V^-1 entry %d %v against %v", conf, i, j, q.vinv[j], p.vinv[j])
				}
			}
		}
	}
}
