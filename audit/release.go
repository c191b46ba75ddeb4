package audit

import (
	"math"
	"math/big"

	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/contextual"
	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/olo"
)

// A policy's decisions can drown the one datum on which two neighbouring
// inputs differ (a tree's sums move by one loss against noise L times
// larger, a learning rate makes one loss barely move the decisions), so
// that an audit of the decisions has no power. ReleaseTrial audits the
// releases instead: every value the mechanism draws noise for, observed
// as the noise source returns it. A mechanism built on the Laplace and
// Gaussian mechanisms is private because the sequence of its noisy
// releases is (the rest is post-processing), so auditing that sequence
// audits the calibration of every release the pair moves.

// ErrNoRelease is returned by ReleaseTrial when the two neighbouring
// inputs move none of the mechanism's releases.
var ErrNoRelease = errorf("the neighbouring inputs move no release of the mechanism")

// Drive runs the mechanism under audit on input which (0 or 1, two
// neighbouring inputs), drawing all its privacy noise from nz and its
// own coins from run. It may return early with the error nz returned.
type Drive func(which int, run uint64, nz noise.Noise) error

// release is one draw of noise: the statistic x, the value returned y,
// and the draw's distribution.
type release struct {
	x, y, scale float64
	laplace     bool
}

// errEnough stops a mechanism once the releases the trial reads are in.
var errEnough = errorf("enough releases recorded")

// recorder is a noise source that records every release it makes and
// refuses to make more than limit (0: no limit). With replay set it
// draws nothing: it returns the replayed releases in turn, and stops the
// mechanism at the first whose noise differs from the replayed one's
// (from there on the two runs are not the same mechanism).
type recorder struct {
	inner    noise.Noise
	out      []release
	limit    int
	replay   []release
	diverged bool
}

func (r *recorder) add(x, scale, sens float64, laplace bool) (float64, error) {
	i := len(r.out)
	if r.limit > 0 && i >= r.limit {
		return 0, errEnough
	}
	var y float64
	var err error
	switch {
	case r.replay != nil && (i >= len(r.replay) || r.replay[i].scale != scale || r.replay[i].laplace != laplace):
		r.diverged = true
		return 0, errEnough
	case r.replay != nil:
		y = r.replay[i].y
	case laplace:
		y, err = r.inner.AddLaplace(x, scale, sens)
	default:
		y, err = r.inner.AddGaussian(x, scale, sens)
	}
	if err != nil {
		return 0, err
	}
	r.out = append(r.out, release{x: x, y: y, scale: scale, laplace: laplace})
	return y, nil
}

// AddGaussian records x + N(0, sigma^2).
func (r *recorder) AddGaussian(x, sigma, sens float64) (float64, error) {
	return r.add(x, sigma, sens, false)
}

// AddLaplace records x + Lap(scale).
func (r *recorder) AddLaplace(x, scale, sens float64) (float64, error) {
	return r.add(x, scale, sens, true)
}

// exactRecorder is a recorder that also takes exact statistics
// (noise.Exact), so that mechanisms take the path they take on a
// snapping source in deployment, on which every release goes through the
// noise source (SCRiBLE's l + Z, say). The statistic is rounded to a
// float for the audit's noise.
type exactRecorder struct{ *recorder }

// AddGaussianRat records x + N(0, sigma^2).
func (r exactRecorder) AddGaussianRat(x *big.Rat, sigma, sens float64) (float64, error) {
	f, _ := x.Float64()
	return r.add(f, sigma, sens, false)
}

// AddLaplaceRat records x + Lap(scale).
func (r exactRecorder) AddLaplaceRat(x *big.Rat, scale, sens float64) (float64, error) {
	f, _ := x.Float64()
	return r.add(f, scale, sens, true)
}

// recording returns a recorder around inner, as a noise.Noise that takes
// exact statistics when exact is set.
func recording(inner noise.Noise, exact bool, limit int) (*recorder, noise.Noise) {
	r := &recorder{inner: inner, limit: limit, out: make([]release, 0, limit)}
	if exact {
		return r, exactRecorder{r}
	}
	return r, r
}

// counterpart runs drive on input which with run's coins, its noise
// source replaying the releases of a run on the other input: the
// statistics it records are those input which would have released after
// the same releases (the mechanism's later statistics depend on the data
// and on the earlier releases only). It records up to the first release
// whose noise differs from the replayed one.
func counterpart(drive Drive, which int, run uint64, exact bool, replay []release) []release {
	rec, nz := recording(nil, exact, len(replay))
	rec.replay = replay
	_ = drive(which, run, nz) // stopped at the end of the replay, or where it diverges
	return rec.out
}

// lossOf returns the privacy loss ln p_0(y)/p_1(y) of the releases y of a
// run on input which, given the counterpart's statistics (those of the
// other input after the same releases), over the releases both hold.
func lossOf(which int, y, other []release) float64 {
	l := 0.0
	for i := range min(len(y), len(other)) {
		if y[i].x == other[i].x {
			continue
		}
		t := lossTerm{mu0: y[i].x, mu1: other[i].x, scale: y[i].scale, laplace: y[i].laplace}
		if which == 1 {
			t.mu0, t.mu1 = t.mu1, t.mu0
		}
		t.lossPerUnit = math.Abs(t.mu0-t.mu1) / t.scale
		l += t.loss(y[i].y)
	}
	return l
}

// lossTerm is one release the pair moves: its statistic on each input
// and its noise, from which its share of the privacy loss is computed.
type lossTerm struct {
	mu0, mu1    float64
	scale       float64
	laplace     bool
	lossPerUnit float64 // |mu0 - mu1| / scale
}

// loss returns ln p_0(y)/p_1(y) for the release y.
func (t lossTerm) loss(y float64) float64 {
	if t.laplace {
		// Clamped to its range [-|Delta|/b, |Delta|/b]: computed in
		// floating point, a release beyond both statistics can land an
		// ulp outside, on one input more often than on the other (where
		// the release is near 0), an artefact the tail events would
		// pick up.
		return min(max((math.Abs(y-t.mu1)-math.Abs(y-t.mu0))/t.scale, -t.lossPerUnit), t.lossPerUnit)
	}
	return (t.mu0 - t.mu1) * (y - (t.mu0+t.mu1)/2) / (t.scale * t.scale)
}

// lossBins is the number of bins of the privacy loss on each side of 0.
const lossBins = 4096

// ReleaseTrial returns the Trial that audits a mechanism through its
// releases: drive runs it on either input, and every draw of its noise
// source (seeded noise passed through wrap, the deliberately broken
// variant, when set) is recorded as the mechanism gets it back. The
// output is the privacy loss of the releases, L = sum_i ln p_0(y_i |
// y_<i)/p_1(y_i | y_<i) under the claimed calibration (the scales the
// mechanism asked for): for each release, the statistic input 0 and
// input 1 would release after the same earlier releases, the one from
// the run itself and the other from a run of the other input whose noise
// source replays them (counterpart), so that releases chosen adaptively
// from earlier ones count for the data they hold, not for the choice.
// It is binned by 1/64 of sqrt(sum (Delta_i/scale_i)^2) of a run without
// noise (for Gaussian releases the standard deviation of L). L is the
// most powerful statistic for the sound mechanism, and a function of the
// releases, the public inputs and the mechanism's own coins (drawn
// from run alone), taken as public: the mechanisms audited this way owe
// their privacy to their noise alone. Larger outputs favour input 0:
// audit it with Options.Ordered.
//
// A run without noise finds the last release the pair moves; trials stop
// the mechanism after as many releases. The mechanism must be one whose
// every noisy value is a release its claim covers (Laplace and Gaussian
// mechanisms, padding that sees no data): the noisy answers of a sparse
// vector pass or of a report-noisy-max are not releases, and auditing
// them as such would fail a sound mechanism. Where the other input's run
// asks for another noise than the replayed release had (its schedule
// depends on the data), the sum stops. With exact, the noise source
// takes exact statistics (noise.Exact), so that mechanisms take their
// deployment path.
func ReleaseTrial(drive Drive, exact bool, seed uint64, wrap func(noise.Noise) noise.Noise) (Trial, error) {
	rec, nz := recording(Noiseless{}, exact, 0)
	if err := drive(0, 0, nz); err != nil {
		return nil, err
	}
	ref := rec.out
	other := counterpart(drive, 1, 0, exact, ref)
	last, s2 := -1, 0.0
	for i, o := range other {
		if d := (ref[i].x - o.x) / ref[i].scale; d != 0 {
			last, s2 = i, s2+d*d
		}
	}
	if last < 0 || !(s2 > 0) || math.IsInf(s2, 0) {
		return nil, ErrNoRelease
	}
	width := math.Sqrt(s2) / 64
	return func(which int, run uint64) (uint64, error) {
		rec, nz := recording(trialNoise(seed, which, run, wrap), exact, last+1)
		if err := drive(which, run, nz); err != nil && len(rec.out) <= last {
			return 0, err // not stopped by the recorder
		}
		l := lossOf(which, rec.out, counterpart(drive, 1-which, run, exact, rec.out))
		return uint64(min(max(math.Floor(l/width)+lossBins+1, 0), 2*lossBins+2)), nil
	}, nil
}

// OLODrive returns the Drive of an online learner (build) over n experts
// (set "simplex") or on the ball or the cube, over steps steps (its
// horizon): the two inputs differ in the first loss vector, as far apart
// as the loss set allows in L1 and in L2 at once, the sensitivities the
// learners calibrate for: all zeros or all ones on the simplex
// ([0,1]^n), +-(1, ..., 1)/sqrt(n) on the ball (the unit L2 ball),
// +-e_0 on the cube (its losses lie in the unit L1 ball). Every later
// loss is 0. The learner's own coins depend on run only, so that both
// inputs' noiseless runs play the same points.
func OLODrive(build func(olo.Setting) (olo.Learner, error), set string, n, steps int, seed uint64) (Drive, error) {
	if n < 2 || steps < 2 {
		return nil, errorf("an online-learning drive needs n >= 2 and steps >= 2, got %d and %d", n, steps)
	}
	var first [2][]float64
	for w := range first {
		first[w] = make([]float64, n)
	}
	switch set {
	case "simplex", "":
		for i := range n {
			first[1][i] = 1
		}
	case "ball":
		for i := range n {
			first[0][i], first[1][i] = 1/math.Sqrt(float64(n)), -1/math.Sqrt(float64(n))
		}
	case "cube":
		first[0][0], first[1][0] = 1, -1
	default:
		return nil, errorf("unknown decision set %q", set)
	}
	return func(which int, run uint64, nz noise.Noise) error {
		l, err := build(olo.Setting{N: n, T: int64(steps), Set: set, Rand: noise.Stream(seed, 3, run), Noise: nz})
		if err != nil {
			return err
		}
		zero := make([]float64, n)
		for t := range steps {
			if _, _, err := l.Play(); err != nil {
				return err
			}
			loss := zero
			if t == 0 {
				loss = first[which]
			}
			if err := l.Observe(loss); err != nil {
				return err
			}
		}
		return nil
	}, nil
}

// BanditDrive returns the Drive of a bandit policy (build) on the tables
// of nb, played plan by plan over the horizon: give nb.First the two
// ends of the reward range, so that the first reward of the target moves
// its release by the whole sensitivity. The policy's own coins depend on
// run only.
func BanditDrive(build func(bandit.Setting) (bandit.Policy, error), nb Neighbours, seed uint64) (Drive, error) {
	if nb.Horizon < 1 || nb.Target < 0 || nb.Target >= len(nb.Base) {
		return nil, errorf("bad neighbouring tables %+v", nb)
	}
	return func(which int, run uint64, nz noise.Noise) error {
		p, err := build(bandit.Setting{Arms: len(nb.Base), Horizon: nb.Horizon, Bounds: nb.bounds(),
			Rand: noise.Stream(seed, 3, run), Noise: nz, Actions: nb.Actions})
		if err != nil {
			return err
		}
		for t := int64(0); t < nb.Horizon; {
			pl := p.Next()
			n := min(pl.Count, nb.Horizon-t)
			if n < 1 {
				return errorf("a plan of %d pulls", pl.Count)
			}
			if err := p.Update(bandit.Feedback{Arm: pl.Arm, Count: n, Sum: nb.sum(which, pl.Arm, t, n)}); err != nil {
				return err
			}
			t += n
		}
		return nil
	}, nil
}

// ContextualDrive is BanditDrive for contextual policies: every step
// serves the decision set nb.Actions and the reward of the chosen action
// from table which, for steps steps (the policy's horizon).
func ContextualDrive(build func(contextual.Setting) (contextual.Policy, error), nb Neighbours, steps int) (Drive, error) {
	if steps < 1 || len(nb.Actions) != len(nb.Base) || nb.Target < 0 || nb.Target >= len(nb.Base) {
		return nil, errorf("a contextual drive needs the actions of the %d arms and steps >= 1", len(nb.Base))
	}
	cal := &mechanism.Calibrations{}
	return func(which int, _ uint64, nz noise.Noise) error {
		p, err := build(contextual.Setting{Dim: len(nb.Actions[0]), Horizon: int64(steps), Bounds: nb.bounds(), Noise: nz, Calibrations: cal})
		if err != nil {
			return err
		}
		for t := range steps {
			k, err := p.Choose(nb.Actions)
			if err != nil {
				return err
			}
			if err := p.Update(nb.sum(which, k, int64(t), 1)); err != nil {
				return err
			}
		}
		return nil
	}, nil
}
