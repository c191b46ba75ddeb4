// Package noise provides the randomness of dpbandit: seeded splittable
// streams for reproducible simulation, a cryptographically seeded source for
// deployments, exact samplers (Laplace, Gaussian, Bernoulli, Binomial,
// Hypergeometric) and the Noise interface through which mechanisms add
// calibrated noise.
//
// Every policy, environment and mechanism takes its randomness from a
// *rand.Rand (math/rand/v2) handed to it; nothing in dpbandit reads a global
// source.
package noise

import (
	crand "crypto/rand"
	"math/rand/v2"
)

// splitmix64 is the finaliser of Steele, Lea and Flood's SplitMix64: a
// bijective mixer whose outputs are statistically independent for distinct
// inputs.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// Key hashes a seed and a path of keys (for example run, arm, level, index)
// into two 64-bit words. Distinct paths give independent-looking words; the
// same path always gives the same words.
func Key(seed uint64, path ...uint64) (uint64, uint64) {
	a := splitmix64(seed)
	b := splitmix64(seed ^ 0x6a09e667f3bcc909)
	for _, k := range path {
		a = splitmix64(a ^ k)
		b = splitmix64(b + k*0x9e3779b97f4a7c15)
	}
	return a, b
}

// Stream returns the deterministic generator of the path (seed, path...).
// Run i of an experiment uses Stream(seed, i, ...): its randomness does not
// depend on which worker runs it or in which order, so results are
// bit-identical whatever the number of workers.
func Stream(seed uint64, path ...uint64) *rand.Rand {
	a, b := Key(seed, path...)
	return rand.New(rand.NewPCG(a, b))
}

// Reseed resets an existing PCG source to the path (seed, path...), avoiding
// an allocation in hot loops. It returns the source for convenience.
func Reseed(src *rand.PCG, seed uint64, path ...uint64) *rand.PCG {
	a, b := Key(seed, path...)
	src.Seed(a, b)
	return src
}

// NewSecure returns a generator for deployments: a ChaCha8 stream (a
// cryptographically secure generator) seeded with 32 bytes from the
// operating system's entropy source. An entropy failure is returned as an
// error. Note that the samplers' floating-point outputs are still subject
// to the attacks on textbook samplers; see the secure mechanisms for that.
func NewSecure() (*rand.Rand, error) {
	var seed [32]byte
	if _, err := crand.Read(seed[:]); err != nil {
		return nil, errorf("reading entropy: %w", err)
	}
	return rand.New(rand.NewChaCha8(seed)), nil
}
