package noise

import (
	"math/rand/v2"
)

// Noise adds calibrated noise to a released value. Mechanisms (package
// mechanism) call it with scales computed by package privacy and the
// sensitivity those scales were computed for; policies hold one and pass
// it on. Fast is the seeded floating-point implementation used in
// simulation; Secure the deployment one, which needs the sensitivity to
// account for snapping values to a grid.
type Noise interface {
	// AddGaussian returns x + N(0, sigma^2), for a statistic of the given
	// L2 sensitivity.
	AddGaussian(x, sigma, sensitivity float64) (float64, error)
	// AddLaplace returns x + Lap(scale), for a statistic of the given L1
	// sensitivity.
	AddLaplace(x, scale, sensitivity float64) (float64, error)
}

// VecNoise is implemented by the noise sources that add noise to a whole
// vector faster than value by value; mechanisms use it when it is there.
type VecNoise interface {
	// AddLaplaceVec adds an independent Lap(scale) draw to every x[i], for
	// a vector statistic of the given L1 sensitivity.
	AddLaplaceVec(x []float64, scale, sensitivity float64) error
}

// ErrNoSource is returned, wrapped, for a noise source that cannot draw:
// nil, or a Fast without its random stream.
var ErrNoSource = errorf("no random source to draw from")

// Check returns an error for a noise source that cannot be used: one
// wrapping ErrNoSource for nil or a Fast without its stream, and
// Secure's own for a Bits outside [0, 64]. Mechanisms and private
// policies check their source when they are built, so that a bad one is
// an error then, not a panic at the first release. Other
// implementations (wrappers, say) are taken as they are.
func Check(n Noise) error {
	switch s := n.(type) {
	case nil:
		return errorf("%w: the source is nil (noise.Secure{} in deployment, noise.NewFast in simulation)", ErrNoSource)
	case Fast:
		if s.R == nil {
			return errNoStream
		}
	case Secure:
		return s.checkBits()
	}
	return nil
}

var errNoStream = errorf("%w: a Fast without its stream (build it with noise.NewFast, or set R)", ErrNoSource)

// Fast is the textbook floating-point Noise on a seeded stream: fast and
// reproducible, for simulation. It fails only for a scale that is not
// positive and finite, or without its stream (R nil: ErrNoSource).
// Built by NewFast, it also reaches the stream's PCG directly, for the
// ziggurat Laplace sampler of AddLaplaceVec.
type Fast struct {
	R   *rand.Rand
	src *rand.PCG // R's source, when known
}

// NewFast returns the Fast noise of the stream (seed, path...) (see
// Stream).
func NewFast(seed uint64, path ...uint64) Fast {
	src := Reseed(rand.NewPCG(0, 0), seed, path...)
	return Fast{R: rand.New(src), src: src}
}

// AddGaussian returns x + N(0, sigma^2).
func (f Fast) AddGaussian(x, sigma, _ float64) (float64, error) {
	if err := f.check(sigma); err != nil {
		return 0, err
	}
	return x + Gaussian(f.R, sigma), nil
}

// AddLaplace returns x + Lap(scale).
func (f Fast) AddLaplace(x, scale, _ float64) (float64, error) {
	if err := f.check(scale); err != nil {
		return 0, err
	}
	return x + Laplace(f.R, scale), nil
}

// check reports an error for a scale that is not positive and finite, or
// a Fast without its stream.
func (f Fast) check(scale float64) error {
	if f.R == nil {
		return errNoStream
	}
	return check(scale, 1)
}

// AddLaplaceVec adds Lap(scale) to every coordinate: by the ziggurat
// method (two draws per output of the PCG) when built by NewFast, else
// value by value.
func (f Fast) AddLaplaceVec(x []float64, scale, _ float64) error {
	if err := f.check(scale); err != nil {
		return err
	}
	if f.src != nil {
		zigExp.add(f.src, x, scale)
		return nil
	}
	for i := range x {
		x[i] += Laplace(f.R, scale)
	}
	return nil
}
