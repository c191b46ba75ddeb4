package engine

import (
	"testing"

	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/catalog"
	"github.com/dpbandit/dpbandit/service/define"
)

// Every algorithm of the catalogue that the service accepts builds a
// policy with snapshots, so that no experiment's restart replays its
// whole history; the ones it refuses are the non-private, the locally
// private and the other kinds.
func TestEveryServedAlgorithmHasSnapshots(t *testing.T) {
	rho, eps := 1.0, 1.0
	served := 0
	for _, a := range catalog.All() {
		for _, p := range []define.Privacy{{Rho: &rho}, {Eps: &eps}} {
			sp := define.Spec{ID: "x", Algorithm: a.Name, RewardRange: [2]float64{0, 1}, Privacy: p, Horizon: 1000}
			switch a.Kind {
			case catalog.Contextual:
				sp.Arms, sp.Dim = 3, 2
			case catalog.Linear:
				sp.Actions = [][]float64{{1, 0}, {0, 1}, {0.6, 0.8}}
			default:
				sp.Arms = 3
			}
			def, err := define.New("t", sp, 0, 0)
			if err != nil {
				continue
			}
			d, err := build(def, newTape(nil))
			if err != nil { // refused by create too (a Gaussian algorithm at pure eps)
				continue
			}
			served++
			if _, err := bandit.Save(d.Policy()); err != nil {
				t.Errorf("%s (%v): %v", a.Name, p, err)
			}
		}
	}
	if served < 7 {
		t.Fatalf("%d algorithm and budget pairs served, want at least the 7 algorithms of docs/service.md", served)
	}
}
