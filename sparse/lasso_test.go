package sparse

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestLassoOrthogonalDesign: with Z^T Z/n = I the LASSO is solved in
// closed form, theta_j = S(z_j^T Y/n, lambda).
func TestLassoOrthogonalDesign(t *testing.T) {
	// Rows: scaled Hadamard-like orthogonal columns, n = 4, d = 3.
	z := [][]float64{{1, 1, 1}, {1, -1, 1}, {1, 1, -1}, {1, -1, -1}}
	y := []float64{3, -1, 2.5, 0.2}
	for _, lam := range []float64{0, 0.1, 0.5, 2} {
		th, _, err := Lasso(z, y, lam, 0, 1e-14, nil)
		if err != nil {
			t.Fatal(err)
		}
		for j := range 3 {
			c := 0.0
			for i := range z {
				c += z[i][j] * y[i] / 4
			}
			if want := softThreshold(c, lam); math.Abs(th[j]-want) > 1e-12 {
				t.Errorf("lambda %v: theta_%d = %v, want %v", lam, j, th[j], want)
			}
		}
	}
}

// kkt returns the largest violation of the LASSO's optimality conditions:
// g_j = (1/n) z_j^T (Y - Z theta) equals lambda sign(theta_j) where
// theta_j != 0 and lies in [-lambda, lambda] where theta_j = 0.
func kkt(z [][]float64, y, th []float64, lambda float64) float64 {
	n := float64(len(z))
	worst := 0.0
	for j := range th {
		g := 0.0
		for i, row := range z {
			r := y[i]
			for k, t := range th {
				r -= row[k] * t
			}
			g += row[j] * r / n
		}
		if th[j] != 0 {
			worst = max(worst, math.Abs(g-lambda*math.Copysign(1, th[j])))
		} else {
			worst = max(worst, math.Abs(g)-lambda)
		}
	}
	return worst
}

// TestLassoKKT: on random correlated problems with sparse truths, the
// solution meets the KKT conditions to 1e-8, recovers the support, and a
// warm start from it converges at once to the same point.
func TestLassoKKT(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 5 {
		n, d := 200, 50
		z := make([][]float64, n)
		for i := range z {
			z[i] = make([]float64, d)
			prev := r.NormFloat64()
			for j := range z[i] {
				prev = 0.5*prev + r.NormFloat64() // correlated columns
				z[i][j] = prev
			}
		}
		truth := make([]float64, d)
		truth[3], truth[17], truth[40] = 2, -1.5, 1
		y := make([]float64, n)
		for i, row := range z {
			for j, tt := range truth {
				y[i] += row[j] * tt
			}
			y[i] += 0.1 * r.NormFloat64()
		}
		lam := 0.05
		th, sweeps, err := Lasso(z, y, lam, 0, 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		if v := kkt(z, y, th, lam); v > 1e-8 {
			t.Errorf("trial %d: KKT violated by %v", trial, v)
		}
		for j, tt := range truth {
			if (tt != 0) != (th[j] != 0) && math.Abs(th[j]) > 0.05 {
				t.Errorf("trial %d: coordinate %d: %v, truth %v", trial, j, th[j], tt)
			}
		}
		again, s2, _ := Lasso(z, y, lam, 0, 0, th)
		if s2 > 2 || kkt(z, y, again, lam) > 1e-8 {
			t.Errorf("trial %d: the warm start took %d sweeps (cold: %d)", trial, s2, sweeps)
		}
	}
}

// TestLassoNormConstraint: a solution outside ||theta|| <= C is scaled
// onto the ball; inside, it is unchanged.
func TestLassoNormConstraint(t *testing.T) {
	z := [][]float64{{1, 0}, {0, 1}, {1, 0}, {0, 1}}
	y := []float64{3, 4, 3, 4}
	th, _, _ := Lasso(z, y, 0, 1, 0, nil)
	if math.Abs(math.Hypot(th[0], th[1])-1) > 1e-12 || math.Abs(th[0]/th[1]-0.75) > 1e-12 {
		t.Errorf("constrained solution %v", th)
	}
	th, _, _ = Lasso(z, y, 0, 10, 0, nil)
	if math.Abs(th[0]-3) > 1e-12 || math.Abs(th[1]-4) > 1e-12 {
		t.Errorf("inactive constraint changed the solution: %v", th)
	}
}

func TestLassoBadInput(t *testing.T) {
	z := [][]float64{{1, 2}, {3, 4}}
	for _, c := range []struct {
		z      [][]float64
		y, th0 []float64
		lam    float64
	}{
		{nil, nil, nil, 1},
		{z, []float64{1}, nil, 1},
		{z, []float64{1, 2}, nil, -1},
		{z, []float64{1, 2}, nil, math.NaN()},
		{z, []float64{1, math.Inf(1)}, nil, 1},
		{[][]float64{{1, 2}, {3}}, []float64{1, 2}, nil, 1},
		{[][]float64{{1, math.NaN()}, {3, 4}}, []float64{1, 2}, nil, 1},
		{z, []float64{1, 2}, []float64{1}, 1},
	} {
		if _, _, err := Lasso(c.z, c.y, c.lam, 0, 0, c.th0); err == nil {
			t.Errorf("Lasso(%v, %v, %v) accepted", c.z, c.y, c.lam)
		}
	}
}

// BenchmarkLasso1000: one support re-estimation at d = 1000, t = 10^4
// rows (the size 002's preset reaches), 5 non-zeros.
func BenchmarkLasso1000(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	n, d := 10000, 1000
	z := make([][]float64, n)
	y := make([]float64, n)
	for i := range z {
		z[i] = make([]float64, d)
		for j := range z[i] {
			z[i][j] = r.NormFloat64() / math.Sqrt(float64(d))
		}
		y[i] = z[i][1] - z[i][500] + 0.5*z[i][999] + 0.01*r.NormFloat64()
	}
	for b.Loop() {
		if _, _, err := Lasso(z, y, 1e-4, 0, 1e-9, nil); err != nil {
			b.Fatal(err)
		}
	}
}
