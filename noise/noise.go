package noise

import "math/rand/v2"

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

// Fast is the textbook floating-point Noise on a seeded stream: fast and
// reproducible, for simulation. It never fails. Built by NewFast, it also
// reaches the stream's PCG directly, for the ziggurat Laplace sampler of
// AddLaplaceVec.
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
	return x + Gaussian(f.R, sigma), nil
}

// AddLaplace returns x + Lap(scale).
func (f Fast) AddLaplace(x, scale, _ float64) (float64, error) {
	return x + Laplace(f.R, scale), nil
}

// AddLaplaceVec adds Lap(scale) to every coordinate: by the ziggurat
// method (two draws per output of the PCG) when built by NewFast, else
// value by value.
func (f Fast) AddLaplaceVec(x []float64, scale, _ float64) error {
	if f.src != nil {
		zigExp.add(f.src, x, scale)
		return nil
	}
	for i := range x {
		x[i] += Laplace(f.R, scale)
	}
	return nil
}
