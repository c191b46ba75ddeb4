package experiment

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot"

	"github.com/dpbandit/dpbandit/privacy"
)

// combineRealdata draws, for each data set, the loss at the horizon
// against rho of AdaC-OFUL (with 95% intervals: on a data set without
// flips the loss is the regret over T), with the non-private algorithms,
// uniform play and the least-squares hindsight loss as flat references;
// and writes the same numbers as a table, realdata.csv.
func combineRealdata(reps []*Report, points []SweepPoint, dir string) ([]string, error) {
	var panels []*plot.Plot
	rows := []string{"dataset,algorithm,rho,loss,ci95_lo,ci95_hi"}
	for i, rep := range reps {
		T := float64(rep.Summary.Horizon)
		var rhos []float64
		for _, r := range rep.Summary.Results {
			if r.Privacy.Notion == privacy.ZCDP && !slices.Contains(rhos, r.Privacy.Rho) {
				rhos = append(rhos, r.Privacy.Rho)
			}
		}
		slices.Sort(rhos)
		p := newPlot(fmt.Sprintf("loss at T = %d against rho (%s)", rep.Summary.Horizon, points[i].Tag), "rho", "loss (1 - average reward)", rhos)
		p.Y.Min = 0
		var l layers
		for k, name := range []string{"adac-oful", "rs-oful", "oful", "uniform"} {
			y, lo, hi := filled(len(rhos), math.NaN()), filled(len(rhos), math.NaN()), filled(len(rhos), math.NaN())
			found := false
			for _, r := range rep.Summary.Results {
				if r.Algorithm != name {
					continue
				}
				found = true
				rho := ""
				for j, x := range rhos {
					if !r.Privacy.IsPrivate() || r.Privacy.Rho == x {
						y[j], lo[j], hi[j] = r.Metrics["loss"], r.RegretCI95[0]/T, r.RegretCI95[1]/T
					}
				}
				if r.Privacy.IsPrivate() {
					rho = fmt.Sprint(r.Privacy.Rho)
				}
				rows = append(rows, fmt.Sprintf("%s,%s,%s,%.6g,%.6g,%.6g", points[i].Tag, name, rho, r.Metrics["loss"], r.RegretCI95[0]/T, r.RegretCI95[1]/T))
			}
			if !found {
				continue
			}
			if name == "adac-oful" {
				l.band(p, rhos, lo, hi, k)
			}
			var dashes = seriesDashes(0)
			if name != "adac-oful" {
				dashes = seriesDashes(1)
			}
			l.line(p, rhos, y, name, k, dashes, false)
		}
		if h := rep.Summary.HindsightLoss; h != nil {
			l.line(p, rhos, filled(len(rhos), *h), "least squares, hindsight", 4, seriesDashes(2), false)
			rows = append(rows, fmt.Sprintf("%s,hindsight-least-squares,,%.6g,,", points[i].Tag, *h))
		}
		l.draw()
		panels = append(panels, p)
	}
	if err := save(panels, dir, "loss-vs-rho"); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "realdata.csv"), []byte(strings.Join(rows, "\n")+"\n"), 0o644); err != nil {
		return nil, err
	}
	return []string{"loss-vs-rho.svg", "realdata.csv"}, nil
}
