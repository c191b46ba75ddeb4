package experiment

import (
	"context"
	"math"
	"testing"
)

// On the shipped data sets, uniform play loses 1 - 1/K (within 4 standard
// errors of its Bernoulli steps) and non-private OFUL learns: its loss
// lies more than 4 standard errors below uniform's. On a data set without
// flips the loss is the regret (mistakes) over T.
func TestDatasetOFULBeatsUniform(t *testing.T) {
	for _, c := range []struct {
		name string
		k    int
	}{{"iris", 3}, {"wine", 3}, {"breast-cancer", 2}} {
		cfg := Defaults()
		cfg.Env = "dataset:" + c.name
		cfg.Algos = []string{"uniform", "oful"}
		cfg.Horizon, cfg.Runs, cfg.Seed, cfg.Checkpoints = 1000, 10, 3, 10
		rep, err := Run(context.Background(), cfg, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if h := rep.Summary.HindsightLoss; h == nil || *h < 0 || *h > 1 {
			t.Fatalf("%s: hindsight loss %v", c.name, h)
		}
		T, n := float64(cfg.Horizon), float64(cfg.Runs)
		loss := map[string]float64{}
		for _, r := range rep.Summary.Results {
			l, ok := r.Metrics["loss"]
			if !ok {
				t.Fatalf("%s %s: no loss metric", c.name, r.Label)
			}
			if math.Abs(l-r.RegretMean/T) > 1e-9 {
				t.Fatalf("%s %s: loss %v, regret/T %v", c.name, r.Label, l, r.RegretMean/T)
			}
			loss[r.Algorithm] = l
			if r.Algorithm == "oful" {
				se := r.RegretStd / T / math.Sqrt(n)
				loss["oful+4se"] = l + 4*se
			}
		}
		p := 1 / float64(c.k)
		if se := math.Sqrt(p * (1 - p) / (T * n)); math.Abs(loss["uniform"]-(1-p)) > 4*se {
			t.Errorf("%s: uniform loss %v, want %v +- %v", c.name, loss["uniform"], 1-p, 4*se)
		}
		if loss["oful+4se"] >= 1-p {
			t.Errorf("%s: OFUL loss %v (+4 SE: %v) not below uniform's %v", c.name, loss["oful"], loss["oful+4se"], 1-p)
		}
	}
}
