package design

import (
	"math"

	"github.com/dpbandit/dpbandit/mechanism"
)

// maxNet bounds the size of a net.
const maxNet = 1 << 20

// Net returns a zeta-net of the unit sphere ("sphere") or the closed unit
// ball ("ball") of R^d (Definition 5.1 of seed 000): a finite subset N of
// the set such that every point of the set is within zeta of a point of N.
// It is built from the grid of spacing h = zeta/sqrt(d) (every point of
// R^d is within zeta/2 of the grid): for the ball, grid points within
// zeta/2 of the ball are projected onto it (projection onto a convex set
// does not increase distances); for the sphere, grid points within zeta/2
// of the sphere are normalised (which moves them by at most zeta/2).
// Nets of more than 2^20 points are refused: zeta = 1/T, as Algorithm 4
// of seed 000 takes it, is only practical for small d and T.
func Net(kind string, d int, zeta float64) ([][]float64, error) {
	if d < 1 {
		return nil, errorf("dimension must be positive, got %d", d)
	}
	if !(zeta > 0 && zeta <= 2) {
		return nil, errorf("zeta must lie in (0, 2], got %v", zeta)
	}
	if kind != "sphere" && kind != "ball" {
		return nil, errorf("unknown set %q (known: sphere, ball)", kind)
	}
	h := zeta / math.Sqrt(float64(d))
	n := int(math.Ceil((1+zeta)/h)) + 1 // grid indices -n..n per axis
	if math.Pow(float64(2*n+1), float64(d)) > 64*maxNet {
		return nil, errorf("a %v-net of the %d-dimensional %s is too large", zeta, d, kind)
	}
	var out [][]float64
	idx := make([]int, d)
	for i := range idx {
		idx[i] = -n
	}
	for {
		p := make([]float64, d)
		r := 0.0
		for i, k := range idx {
			p[i] = float64(k) * h
			r += p[i] * p[i]
		}
		r = math.Sqrt(r)
		switch {
		case kind == "ball" && r <= 1+zeta/2, kind == "sphere" && r > 0 && math.Abs(r-1) <= zeta/2:
			if kind == "sphere" {
				scale(p, 1/r)
			}
			mechanism.IntoUnitBall(p) // inside the ball exactly, as the policies check
			out = append(out, p)
		}
		if len(out) > maxNet {
			return nil, errorf("a %v-net of the %d-dimensional %s has more than %d points", zeta, d, kind, maxNet)
		}
		// Next grid index.
		i := 0
		for ; i < d; i++ {
			idx[i]++
			if idx[i] <= n {
				break
			}
			idx[i] = -n
		}
		if i == d {
			return out, nil
		}
	}
}

func scale(p []float64, c float64) []float64 {
	for i := range p {
		p[i] *= c
	}
	return p
}
