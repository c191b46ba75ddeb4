package experiment

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpbandit/dpbandit/catalog"
	"github.com/dpbandit/dpbandit/sim"
)

// matrixEnvs returns a small spec of every environment kind (a csv one
// on a file in dir); the test fails for a kind without one, so that a new
// kind joins the matrix.
func matrixEnvs(t *testing.T, dir string) []string {
	t.Helper()
	path := filepath.Join(dir, "m.csv")
	if err := os.WriteFile(path, []byte("a,b,y\n0.1,0.9,x\n0.5,0.2,z\n0.3,0.4,x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	specs := map[string][]string{
		"bernoulli":           {"bernoulli:0.5,0.4"},
		"gaussian":            {"gaussian:0.5,0.4"},
		"piecewise-bernoulli": {"piecewise-bernoulli:0.5,0.4/0.4,0.5@500"},
		"piecewise-gaussian":  {"piecewise-gaussian:0.5,0.4/0.4,0.5@500:sigma=0.5"},
		"drift-bernoulli":     {"drift-bernoulli:sine:0.5,0.5/0.3,-0.3@400"},
		"drift-gaussian":      {"drift-gaussian:linear:0.2,0.6/0.6,0.2@1000"},
		"linear-sphere":       {"linear-sphere:k=6,d=3", "linear-sphere:k=6,d=3,corrupt=0.2,adversary=far"},
		"linear-net":          {"linear-net"},
		"contextual-gauss":    {"contextual-gauss:k=5,d=3"},
		"sparse-gauss":        {"sparse-gauss:k=10,d=40,s=4"},
		"dataset":             {"dataset:iris"},
		"csv":                 {"csv:" + path + ",lo=0,hi=1"},
		"experts-iid":         {"experts-iid:n=5"},
		"experts-switching":   {"experts-switching"},
		"ball":                {"ball:d=3"},
		"cube":                {"cube:d=3"},
	}
	var out []string
	for _, k := range EnvKinds() {
		s, ok := specs[k]
		if !ok {
			t.Fatalf("no spec of environment kind %s in the matrix", k)
		}
		out = append(out, s...)
	}
	return out
}

// TestMatrixNoPanic runs every algorithm of the catalogue on every
// environment kind at every kind of budget (none, rho, eps, eps with
// delta) through validation: each combination is accepted or refused
// with a FieldError, never a panic, and an algorithm outside its
// environment's family is refused as ErrWrongFamily.
func TestMatrixNoPanic(t *testing.T) {
	budgets := []struct {
		name     string
		rho, eps []float64
		delta    []float64
	}{{"none", nil, nil, nil}, {"rho", []float64{0.5}, nil, nil}, {"eps", nil, []float64{1}, nil}, {"eps+delta", nil, []float64{1}, []float64{1e-6}}}
	envs := matrixEnvs(t, t.TempDir())
	combos, refused := 0, 0
	for _, a := range catalog.All() {
		for _, spec := range envs {
			w, err := parseWorld(spec, 1)
			if err != nil {
				t.Fatalf("%s: %v", spec, err)
			}
			runs := familyOf(a.Kind).Runs(w)
			for _, b := range budgets {
				c := Defaults()
				c.Env, c.Algos, c.Horizon, c.Runs, c.Workers = spec, []string{a.Name}, 1000, 2, 1
				c.Rho, c.Eps, c.Delta = b.rho, b.eps, b.delta
				combos++
				err := validateNoPanic(c)
				var fe *FieldError
				switch {
				case err == nil:
				case !errors.As(err, &fe):
					t.Errorf("%s on %s, budget %s: untyped error %v", a.Name, spec, b.name, err)
				default:
					refused++
				}
				if !runs && !errors.Is(err, ErrWrongFamily) {
					t.Errorf("%s on %s, budget %s: %v, want ErrWrongFamily", a.Name, spec, b.name, err)
				}
			}
		}
	}
	if want := len(catalog.All()) * len(envs) * len(budgets); combos != want || refused == 0 || refused == combos || len(envs) < len(EnvKinds()) {
		t.Errorf("%d combinations (%d refused), want %d with some accepted and some refused", combos, refused, want)
	}
}

// validateNoPanic is c.Validate with a panic turned into an error.
func validateNoPanic(c Config) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return c.Validate()
}

// TestMemoryCountsResults: the memory estimate counts the results the
// runs keep (entries x runs x checkpoints): 10^6 runs at 10^4
// checkpoints (75 GiB of curves) and 1000 budgets of 100 runs at 10^4
// checkpoints (7.5 GiB) are refused before any run, naming the results;
// a shard holds only its share of the runs.
func TestMemoryCountsResults(t *testing.T) {
	rho := make([]float64, 1000)
	for i := range rho {
		rho[i] = 0.001 * float64(i+1)
	}
	many := Defaults()
	many.Env, many.Algos, many.Runs, many.Checkpoints = "bernoulli:0.5,0.4", []string{"ucb1"}, 1_000_000, 10_000
	budgets := Defaults()
	budgets.Env, budgets.Algos, budgets.Checkpoints, budgets.Rho = "bernoulli:0.5,0.4", []string{"adac-ucb"}, 10_000, rho
	for name, c := range map[string]Config{"runs": many, "budgets": budgets} {
		var fe *FieldError
		if err := c.Validate(); !errors.As(err, &fe) || fe.Field != "max-memory" || !strings.Contains(err.Error(), "results") {
			t.Errorf("%s: %v, want a max-memory error counting the results", name, err)
		}
	}
	// 10^6 runs in 100 shards: 10^4 runs of 10^4 checkpoints each, 763 MiB.
	if err := many.ValidateShard(sim.Shard{Index: 3, Count: 100}); err != nil {
		t.Errorf("one shard of 100: %v", err)
	}
	if err := Defaults().ValidateShard(sim.Shard{}); err == nil {
		t.Error("a config without env accepted")
	}
}
