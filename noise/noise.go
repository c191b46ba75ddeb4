package noise

import "math/rand/v2"

// Noise adds calibrated noise to a released value. Mechanisms (package
// mechanism) call it with scales computed by package privacy; policies hold
// one and pass it on. Fast is the seeded floating-point implementation used
// in simulation.
type Noise interface {
	// AddGaussian returns x + N(0, sigma^2).
	AddGaussian(x, sigma float64) (float64, error)
	// AddLaplace returns x + Lap(scale).
	AddLaplace(x, scale float64) (float64, error)
}

// Fast is the textbook floating-point Noise on a seeded stream: fast and
// reproducible, for simulation. It never fails.
type Fast struct{ R *rand.Rand }

// AddGaussian returns x + N(0, sigma^2).
func (f Fast) AddGaussian(x, sigma float64) (float64, error) { return x + Gaussian(f.R, sigma), nil }

// AddLaplace returns x + Lap(scale).
func (f Fast) AddLaplace(x, scale float64) (float64, error) { return x + Laplace(f.R, scale), nil }
