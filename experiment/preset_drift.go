package experiment

import (
	"fmt"
	"math"
	"slices"

	"github.com/dpbandit/dpbandit/privacy"
)

// combineDrift draws drift-compare's regret-vs-rho: one panel per
// instance, the dynamic regret at T of every algorithm against rho (a
// non-private one flat across the grid), with 95% bands.
func combineDrift(reps []*Report, points []SweepPoint, dir string) ([]string, error) {
	f := newFigure("regret-vs-rho", "Dynamic regret at T against rho, per instance")
	for i, rep := range reps {
		var rhos []float64
		var algos []string
		for _, r := range rep.Summary.Results {
			if r.Privacy.Notion == privacy.ZCDP && !slices.Contains(rhos, r.Privacy.Rho) {
				rhos = append(rhos, r.Privacy.Rho)
			}
			if !slices.Contains(algos, r.Algorithm) {
				algos = append(algos, r.Algorithm)
			}
		}
		slices.Sort(rhos)
		p := f.panel(fmt.Sprintf("%s, T = %d", points[i].Tag, rep.Summary.Horizon), "rho", "dynamic regret at T", rhos)
		bands := rep.bands(f)
		for k, alg := range algos {
			y, lo, hi := make([]float64, len(rhos)), make([]float64, len(rhos)), make([]float64, len(rhos))
			for e, rho := range rhos {
				y[e], lo[e], hi[e] = math.NaN(), math.NaN(), math.NaN()
				for _, r := range rep.Summary.Results {
					if r.Algorithm == alg && (r.Privacy.Notion == privacy.NonPrivate || r.Privacy.Rho == rho) {
						y[e], lo[e], hi[e] = r.RegretMean, r.RegretCI95[0], r.RegretCI95[1]
					}
				}
			}
			if bands {
				p.band(rhos, lo, hi, styleOf(k))
			}
			p.line(rhos, y, alg, styleOf(k))
		}
	}
	if _, err := f.save(dir); err != nil {
		return nil, err
	}
	return []string{"regret-vs-rho.svg"}, nil
}
