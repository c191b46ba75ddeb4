package noise_test

import (
	"errors"
	"fmt"

	"github.com/dpbandit/dpbandit/noise"
)

// In simulation, Fast draws from a seeded stream: the same seed gives the
// same noise. A Fast built without its stream is refused by Check (and
// by every mechanism and private policy when built).
func ExampleNewFast() {
	a, _ := noise.NewFast(7).AddGaussian(0.5, 0.1, 0.01)
	b, _ := noise.NewFast(7).AddGaussian(0.5, 0.1, 0.01)
	fmt.Println(a == b, errors.Is(noise.Check(noise.Fast{}), noise.ErrNoSource))
	// Output: true true
}

// In deployment, Secure draws exact discrete noise on a grid from the
// operating system's entropy: a released value is a multiple of the
// grid step, 2^-20 of the sensitivity's power of two here.
func ExampleSecure() {
	v, err := noise.Secure{}.AddLaplace(0.5, 0.25, 0.01)
	step := 1.0 / (1 << 27) // 2^(floor(log2 0.01) - 20) = 2^-27
	fmt.Println(err, v/step == float64(int64(v/step)))
	// Output: <nil> true
}
