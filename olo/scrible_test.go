package olo

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/dpbandit/dpbandit/noise"
	"github.com/dpbandit/dpbandit/privacy"
)

func ballSetting(n int, T int64, seed uint64) Setting {
	s := setting(n, T, seed)
	s.Set = "ball"
	return s
}

// TestSCRiBLEGeometry: at random points of the ball, the N directions are
// orthonormal eigenvectors of the barrier's Hessian 2I/(1-r^2) +
// 4xx^T/(1-r^2)^2 with the eigenvalues used, and the played point lies
// inside the ball, on the Dikin ellipsoid.
func TestSCRiBLEGeometry(t *testing.T) {
	const n = 4
	f, _ := NewSCRiBLE(ballSetting(n, 1000, 1), privacy.None())
	r := noise.Stream(9)
	for trial := range 50 {
		for k := range f.x {
			f.x[k] = r.NormFloat64()
		}
		rad := 0.99 * r.Float64()
		if trial == 0 {
			rad = 0
		}
		floats.Scale(rad/floats.Norm(f.x, 2), f.x)
		if rad == 0 {
			clear(f.x)
		}
		r2 := rad * rad
		h := mat.NewDense(n, n, nil)
		for i := range n {
			for j := range n {
				v := 4 * f.x[i] * f.x[j] / ((1 - r2) * (1 - r2))
				if i == j {
					v += 2 / (1 - r2)
				}
				h.Set(i, j, v)
			}
		}
		basis := mat.NewDense(n, n, nil)
		for i := range n {
			lam := math.Pow(f.eigen(i, r2), 2)
			var hd mat.VecDense
			hd.MulVec(h, mat.NewVecDense(n, append([]float64(nil), f.dir...)))
			for k := range n {
				if math.Abs(hd.AtVec(k)-lam*f.dir[k]) > 1e-9*lam {
					t.Fatalf("x=%v dir %d: H dir = %v, lambda dir = %v", f.x, i, hd.RawVector().Data, lam)
				}
			}
			basis.SetCol(i, f.dir)
		}
		for range 10 {
			f.Play()
			if ny := floats.Norm(f.y, 2); ny >= 1 {
				t.Fatalf("x=%v: played point of norm %v", f.x, ny)
			}
		}
		var g mat.Dense
		g.Mul(basis.T(), basis)
		if !mat.EqualApprox(&g, eye(n), 1e-12) {
			t.Fatalf("x=%v: directions not orthonormal", f.x)
		}
	}
}

func eye(n int) *mat.Dense {
	m := mat.NewDense(n, n, nil)
	for i := range n {
		m.Set(i, i, 1)
	}
	return m
}

// TestSCRiBLEUnbiased: at a fixed point x, the estimate N <l, y> eps
// lambda_i^1/2 e_i averages to l (Monte Carlo over 2 10^5 draws, each
// coordinate within 4 standard errors; dropping the factor N or the square
// root would move the mean by many standard errors).
func TestSCRiBLEUnbiased(t *testing.T) {
	const n, m = 3, 200_000
	f, _ := NewSCRiBLE(ballSetting(n, 1000, 2), privacy.None())
	copy(f.x, []float64{0.5, -0.3, 0.2})
	l := []float64{0.6, 0.0, -0.8}
	var sum, sq [n]float64
	for range m {
		f.Play()
		obs := floats.Dot(l, f.y)
		for k := range n {
			e := n * obs * f.sign * f.sqrtLam * f.dir[k]
			sum[k] += e
			sq[k] += e * e
		}
	}
	for k := range n {
		mean := sum[k] / m
		se := math.Sqrt((sq[k]/m - mean*mean) / m)
		if math.Abs(mean-l[k]) > 4*se || se > 0.05 {
			t.Errorf("coordinate %d: mean estimate %v ± %v, want %v", k, mean, se, l[k])
		}
	}
}

// TestSCRiBLELearns: after Observe, x is the FTRL minimiser (the gradient
// eta L~ + 2x/(1-||x||^2) vanishes); on i.i.d. losses on the ball the
// regret per step falls from T = 10^4 to 10^5 and x ends near the best
// point -E[l]/||E[l]||, privately too at eps = 10; the private learner
// draws Lap(2 sqrt(N)/eps) and uses Theorem 4.5's eta.
func TestSCRiBLELearns(t *testing.T) {
	losses, _ := ParseLosses("ball:d=3", 11)
	e10, _ := privacy.NewPure(10)
	for _, b := range []privacy.Budget{privacy.None(), e10} {
		var perStep []float64
		for _, T := range []int64{10_000, 100_000} {
			f, err := NewSCRiBLE(ballSetting(3, T, 3), b)
			if err != nil {
				t.Fatal(err)
			}
			perStep = append(perStep, regret(t, f, losses, T, 3)/float64(T))
			eta := f.Eta()
			grad := 0.0
			r2 := floats.Dot(f.x, f.x)
			for k := range f.x {
				grad = math.Max(grad, math.Abs(eta*f.L[k]+2*f.x[k]/(1-r2)))
			}
			if grad > 1e-9*(1+eta*floats.Norm(f.L, 2)) {
				t.Errorf("%v: gradient %v at the FTRL point", b, grad)
			}
			if T == 100_000 {
				if cos := -floats.Dot(f.x, losses.Theta) / floats.Norm(f.x, 2); cos < 0.9 {
					t.Errorf("%v: x_T at cosine %v from the best direction", b, cos)
				}
			}
		}
		if perStep[1] >= perStep[0] {
			t.Errorf("%v: regret per step %v at 10^4, %v at 10^5", b, perStep[0], perStep[1])
		}
	}
	f, _ := NewSCRiBLE(ballSetting(4, 1000, 1), e10)
	if want := 2 * 2.0 / 10; math.Abs(f.lap.Scale()-want) > 1e-12 {
		t.Errorf("Laplace scale %v, want 2 sqrt(N)/eps = %v", f.lap.Scale(), want)
	}
	lambda := 0.4
	if want := math.Sqrt(math.Log(1000) / (2 * 16 * 1000 * (1 + lambda*lambda*4))); math.Abs(f.Eta()-want) > 1e-15 {
		t.Errorf("eta %v, want Theorem 4.5's %v", f.Eta(), want)
	}
	if err := f.Observe([]float64{0, 0, 0, 0}); err == nil {
		t.Error("Observe without Play accepted")
	}
	f.Play()
	if err := f.Observe([]float64{0, math.NaN(), 0, 0}); err == nil {
		t.Error("NaN loss accepted")
	}
	if _, err := NewSCRiBLE(setting(4, 1000, 1), privacy.None()); err == nil {
		t.Error("SCRiBLE on the simplex accepted")
	}
}
