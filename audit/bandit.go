package audit

import (
	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/contextual"
	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/olo"
)

// Neighbours are two tables of rewards over Horizon steps (one row per
// user, one column per arm) that differ in one row: every reward of arm a
// is Base[a], except the first row's reward of arm Target, which is
// First[0] in table 0 and First[1] in table 1.
type Neighbours struct {
	Base    []float64
	Target  int
	First   [2]float64
	Horizon int64
	// Bounds is the declared reward range (zero: [0, 1]).
	Bounds mechanism.Bounds
	// Actions, for linear policies, are the arms' vectors.
	Actions [][]float64
}

// UnitVectors returns e_1, ..., e_k in R^k: served as actions (or as
// every step's decision set), they make a linear (or contextual) bandit a
// K-armed one, on which the finite-armed tables apply.
func UnitVectors(k int) [][]float64 {
	out := make([][]float64, k)
	for i := range out {
		out[i] = make([]float64, k)
		out[i][i] = 1
	}
	return out
}

// Hard returns the default audit tables for K arms: every reward 1/2 (the
// middle of [0,1]), and the first reward of arm 0 equal to 1 or 0, so that
// a policy's early choices hinge on that one reward of the arm it tries
// first. With K = 10 the target's first release is looked at by about ten
// decisions before it is pulled again.
func Hard(k int, horizon int64) Neighbours {
	base := make([]float64, k)
	for a := range base {
		base[a] = 0.5
	}
	return Neighbours{Base: base, Target: 0, First: [2]float64{1, 0}, Horizon: horizon}
}

// trialNoise is the privacy noise of trial run on table which: seeded,
// and passed through wrap (a deliberately broken variant) when set.
func trialNoise(seed uint64, which int, run uint64, wrap func(noise.Noise) noise.Noise) noise.Noise {
	var nz noise.Noise = noise.NewFast(seed, uint64(which), run, 1)
	if wrap != nil {
		nz = wrap(nz)
	}
	return nz
}

// bounds returns the declared reward range, [0, 1] by default.
func (nb Neighbours) bounds() mechanism.Bounds {
	if nb.Bounds == (mechanism.Bounds{}) {
		return mechanism.Unit
	}
	return nb.Bounds
}

// sum returns the sum of the rewards of arm a over steps [t, t+n) of table
// which (steps count from 0).
func (nb Neighbours) sum(which, a int, t, n int64) float64 {
	s := nb.Base[a] * float64(n)
	if a == nb.Target && t == 0 {
		s += nb.First[which] - nb.Base[a]
	}
	return s
}

// MaxPlans is the most plans a PolicyTrial follows.
const MaxPlans = 1 << 16

// PolicyTrial returns the Trial that runs the policy built by build on
// table which of nb, with privacy noise from wrap(seeded noise) (wrap may
// be nil), and outputs the index of the first plan after the first that
// plays the target arm again (plans if none does within plans plans or
// the horizon). Every policy of the library pulls arm 0 first, so the
// differing reward is the first one it sees, and how long the policy
// waits before returning to the target is what that reward, through its
// noisy release, decides; an implementation that releases the same data
// again at every decision leaks through this wait. Plans are played whole.
func PolicyTrial(build func(bandit.Setting) (bandit.Policy, error), nb Neighbours,
	plans int, seed uint64, wrap func(noise.Noise) noise.Noise) (Trial, error) {
	bounds := nb.bounds()
	if plans < 1 || plans > MaxPlans {
		return nil, errorf("plans must lie in [1, %d], got %d", MaxPlans, plans)
	}
	if nb.Horizon < 1 || nb.Target < 0 || nb.Target >= len(nb.Base) {
		return nil, errorf("bad neighbouring tables %+v", nb)
	}
	return func(which int, run uint64) (uint64, error) {
		nz := trialNoise(seed, which, run, wrap)
		p, err := build(bandit.Setting{Arms: len(nb.Base), Horizon: nb.Horizon, Bounds: bounds,
			Rand: noise.Stream(seed, uint64(which), run, 2), Noise: nz, Actions: nb.Actions})
		if err != nil {
			return 0, err
		}
		var t int64
		for j := 0; j < plans && t < nb.Horizon; j++ {
			pl := p.Next()
			if pl.Arm == nb.Target && t > 0 {
				return uint64(j), nil
			}
			n := min(pl.Count, nb.Horizon-t)
			if err := p.Update(bandit.Feedback{Arm: pl.Arm, Count: n, Sum: nb.sum(which, pl.Arm, t, n)}); err != nil {
				return 0, err
			}
			t += n
		}
		return uint64(plans), nil
	}, nil
}

// Scaled is a deliberately broken Noise: it multiplies every noise scale
// by Factor (0.1 divides the noise by 10), so that audits can show they
// catch a mechanism calibrated wrong. Never deploy it.
type Scaled struct {
	Noise  noise.Noise
	Factor float64
}

// AddGaussian adds Gaussian noise of Factor times the standard deviation.
func (s Scaled) AddGaussian(x, sigma, sens float64) (float64, error) {
	return s.Noise.AddGaussian(x, sigma*s.Factor, sens)
}

// AddLaplace adds Laplace noise of Factor times the scale.
func (s Scaled) AddLaplace(x, scale, sens float64) (float64, error) {
	return s.Noise.AddLaplace(x, scale*s.Factor, sens)
}

// Noiseless is a Noise that adds nothing: the statistic without noise
// (a Scaled with Factor 0 would ask its noise for a scale of 0, which
// the noise sources refuse). Checks use it to show their power, and the
// OPE trial to centre its bins.
type Noiseless struct{}

// AddGaussian returns x.
func (Noiseless) AddGaussian(x, _, _ float64) (float64, error) { return x, nil }

// AddLaplace returns x.
func (Noiseless) AddLaplace(x, _, _ float64) (float64, error) { return x, nil }

// ContextualTrial is PolicyTrial for contextual policies: every step
// serves the decision set nb.Actions (the unit vectors, say, which make
// the contextual bandit a K-armed one) and the reward of the chosen
// action from table which, and the output is the first step after the
// first that chooses the target again (steps if none does).
func ContextualTrial(build func(contextual.Setting) (contextual.Policy, error), nb Neighbours,
	steps int, seed uint64, wrap func(noise.Noise) noise.Noise) (Trial, error) {
	if steps < 1 || len(nb.Actions) != len(nb.Base) || nb.Target < 0 || nb.Target >= len(nb.Base) {
		return nil, errorf("a contextual trial needs the actions of the %d arms and steps >= 1", len(nb.Base))
	}
	bounds := nb.bounds()
	cal := &mechanism.Calibrations{}
	return func(which int, run uint64) (uint64, error) {
		nz := trialNoise(seed, which, run, wrap)
		p, err := build(contextual.Setting{Dim: len(nb.Actions[0]), Horizon: int64(steps), Bounds: bounds, Noise: nz, Calibrations: cal})
		if err != nil {
			return 0, err
		}
		for t := range steps {
			k, err := p.Choose(nb.Actions)
			if err != nil {
				return 0, err
			}
			if k == nb.Target && t > 0 {
				return uint64(t), nil
			}
			if err := p.Update(nb.sum(which, k, int64(t), 1)); err != nil {
				return 0, err
			}
		}
		return uint64(steps), nil
	}, nil
}

// OLOTrial is PolicyTrial for online learners over n experts (set
// "simplex") or on the ball or cube. On the simplex the losses are 1/2 for
// every expert at every step except expert 0's at the first step, which is
// first[which], and the output is the first step t >= 1 at which the
// learner plays expert 0 (its drawn arm for bandit learners, its most
// likely expert for full-information ones), steps if none. On the ball and
// the cube the first loss is +e_0 or -e_0 (the two tables), the later ones
// 0, and the output is the sign of the second prediction's first
// coordinate.
func OLOTrial(build func(olo.Setting) (olo.Learner, error), set string, n, steps int, first [2]float64,
	seed uint64, wrap func(noise.Noise) noise.Noise) (Trial, error) {
	if n < 2 || steps < 2 {
		return nil, errorf("an online-learning trial needs n >= 2 and steps >= 2")
	}
	// learner builds the learner of a run on table which.
	learner := func(which int, run uint64) (olo.Learner, error) {
		return build(olo.Setting{N: n, T: int64(steps), Set: set, Rand: noise.Stream(seed, uint64(which), run, 2), Noise: trialNoise(seed, which, run, wrap)})
	}
	if set == "ball" || set == "cube" {
		return func(which int, run uint64) (uint64, error) {
			l, err := learner(which, run)
			if err != nil {
				return 0, err
			}
			if _, _, err := l.Play(); err != nil {
				return 0, err
			}
			loss := make([]float64, n)
			loss[0] = float64(1 - 2*which)
			if err := l.Observe(loss); err != nil {
				return 0, err
			}
			x, _, err := l.Play()
			if err != nil || x[0] > 0 {
				return 1, err
			}
			return 0, nil
		}, nil
	}
	return func(which int, run uint64) (uint64, error) {
		l, err := learner(which, run)
		if err != nil {
			return 0, err
		}
		loss := make([]float64, n)
		for t := range steps {
			x, arm, err := l.Play()
			if err != nil {
				return 0, err
			}
			if arm < 0 { // full information: the most likely expert
				arm = 0
				for i, v := range x {
					if v > x[arm] {
						arm = i
					}
				}
			}
			if t > 0 && arm == 0 {
				return uint64(t), nil
			}
			for i := range loss {
				loss[i] = 0.5
			}
			if t == 0 {
				loss[0] = first[which]
			}
			if err := l.Observe(loss); err != nil {
				return 0, err
			}
		}
		return uint64(steps), nil
	}, nil
}
