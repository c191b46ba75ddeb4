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

// Fast is the textbook floating-point Noise on a seeded stream: fast and
// reproducible, for simulation. It never fails.
type Fast struct{ R *rand.Rand }

// AddGaussian returns x + N(0, sigma^2).
func (f Fast) AddGaussian(x, sigma, _ float64) (float64, error) {
	return x + Gaussian(f.R, sigma), nil
}

// AddLaplace returns x + Lap(scale).
func (f Fast) AddLaplace(x, scale, _ float64) (float64, error) {
	return x + Laplace(f.R, scale), nil
}
