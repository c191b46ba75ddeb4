package design

import (
	"math"
	"math/rand/v2"
	"testing"
)

func sphere(r *rand.Rand, k, d int) [][]float64 {
	out := make([][]float64, k)
	for i := range out {
		v := make([]float64, d)
		n := 0.0
		for j := range v {
			v[j] = r.NormFloat64()
			n += v[j] * v[j]
		}
		for j := range v {
			v[j] /= math.Sqrt(n)
		}
		out[i] = v
	}
	return out
}

func checkKW(t *testing.T, name string, d *Design, tol float64) {
	t.Helper()
	m := float64(d.Dim)
	if d.G > (1+tol)*m || d.G < m-1e-9 {
		t.Errorf("%s: g = %v, want in [%v, %v] (Kiefer-Wolfowitz)", name, d.G, m, (1+tol)*m)
	}
	if len(d.Support) > d.Dim*(d.Dim+1)/2 {
		t.Errorf("%s: support %d > m(m+1)/2 = %d", name, len(d.Support), d.Dim*(d.Dim+1)/2)
	}
	s := 0.0
	for _, w := range d.Weights {
		if w < 0 {
			t.Fatalf("%s: negative weight", name)
		}
		s += w
	}
	if math.Abs(s-1) > 1e-9 {
		t.Errorf("%s: weights sum to %v", name, s)
	}
}

func TestUnitVectors(t *testing.T) {
	for _, d := range []int{1, 2, 5} {
		a := make([][]float64, d)
		for i := range a {
			a[i] = make([]float64, d)
			a[i][i] = 1
		}
		des, err := GOptimal(a, 1e-6)
		if err != nil {
			t.Fatal(err)
		}
		checkKW(t, "unit vectors", des, 1e-6)
		for _, w := range des.Weights {
			if math.Abs(w-1/float64(d)) > 1e-6 {
				t.Errorf("d=%d: weight %v, want 1/d", d, w)
			}
		}
	}
}

func TestRandomSets(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, c := range [][2]int{{10, 3}, {100, 5}, {300, 8}, {12, 6}} {
		a := sphere(r, c[0], c[1])
		// Redundant copies and a scaled action do not confuse it.
		a = append(a, a[0], []float64{0.5 * a[1][0]})
		a[len(a)-1] = append(a[len(a)-1], make([]float64, c[1]-1)...)
		for _, tol := range []float64{0.01, 1} {
			des, err := GOptimal(a, tol)
			if err != nil {
				t.Fatal(err)
			}
			if des.Dim != c[1] {
				t.Errorf("dim %d, want %d", des.Dim, c[1])
			}
			checkKW(t, "random", des, tol)
		}
	}
}

// TestNonSpanning: actions in a plane of R^4 get a design in that plane,
// with g = 2 at the optimum.
func TestNonSpanning(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	u := []float64{1, 1, 0, 0}
	v := []float64{0, 0, 1, -1}
	var a [][]float64
	for range 20 {
		x, y := r.NormFloat64(), r.NormFloat64()
		a = append(a, []float64{x * u[0], x * u[1], y * v[2], y * v[3]})
	}
	des, err := GOptimal(a, 0.001)
	if err != nil {
		t.Fatal(err)
	}
	if des.Dim != 2 {
		t.Fatalf("dim %d, want 2", des.Dim)
	}
	checkKW(t, "plane", des, 0.001)
	r2, c := des.Basis.Dims()
	if r2 != 4 || c != 2 {
		t.Errorf("basis %dx%d", r2, c)
	}
}

func TestCountsAndErrors(t *testing.T) {
	d := &Design{Weights: []float64{0.5, 0, 0.25, 0.25}}
	n := d.Counts(10)
	if n[0] != 5 || n[1] != 0 || n[2] != 3 || n[3] != 3 {
		t.Errorf("counts %v", n)
	}
	for _, bad := range [][][]float64{nil, {{0, 0}}, {{1, 0}, {1}}, {{math.NaN(), 1}}} {
		if _, err := GOptimal(bad, 0.1); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	if _, err := GOptimal([][]float64{{1}}, 0); err == nil {
		t.Error("tol 0 accepted")
	}
}

func BenchmarkGOptimal1000x10(b *testing.B) {
	a := sphere(rand.New(rand.NewPCG(5, 6)), 1000, 10)
	for b.Loop() {
		if _, err := GOptimal(a, 0.01); err != nil {
			b.Fatal(err)
		}
	}
}

func TestNet(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, c := range []struct {
		kind string
		d    int
		zeta float64
	}{{"sphere", 2, 0.1}, {"sphere", 3, 0.2}, {"ball", 2, 0.1}, {"ball", 3, 0.25}} {
		net, err := Net(c.kind, c.d, c.zeta)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range net {
			n := math.Sqrt(dot(p, p))
			if (c.kind == "sphere" && math.Abs(n-1) > 1e-12) || n > 1+1e-12 {
				t.Fatalf("%s: net point of norm %v", c.kind, n)
			}
		}
		for range 2000 {
			x := sphere(r, 1, c.d)[0]
			if c.kind == "ball" {
				x = scale(x, math.Pow(r.Float64(), 1/float64(c.d)))
			}
			best := math.Inf(1)
			for _, p := range net {
				dx := 0.0
				for i := range p {
					dx += (p[i] - x[i]) * (p[i] - x[i])
				}
				best = math.Min(best, dx)
			}
			if math.Sqrt(best) > c.zeta {
				t.Fatalf("%s d=%d: a point is %v from the %v-net", c.kind, c.d, math.Sqrt(best), c.zeta)
			}
		}
	}
	for _, bad := range []func() error{
		func() error { _, err := Net("cube", 2, 0.1); return err },
		func() error { _, err := Net("ball", 0, 0.1); return err },
		func() error { _, err := Net("ball", 2, 0); return err },
		func() error { _, err := Net("sphere", 10, 1e-3); return err },
	} {
		if bad() == nil {
			t.Error("bad net accepted")
		}
	}
}
