package experiment

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dpbandit/dpbandit/privacy"
)

// combineRealdata draws, for each data set, the loss at the horizon
// against rho of AdaC-OFUL (with 95% intervals: on a data set without
// flips the loss is the regret over T), with the non-private algorithms,
// uniform play and the least-squares hindsight loss as flat references;
// and writes the same numbers as a table, realdata.csv.
func combineRealdata(reps []*Report, points []SweepPoint, dir string) ([]string, error) {
	f := newFigure("loss-vs-rho", fmt.Sprintf("Loss at T = %d against rho, per data set", reps[0].Summary.Horizon))
	f.note("Loss: 1 - the average reward over the T rounds; adac-oful solid (95%% intervals), the non-private references dashed")
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
		fp := f.panel(points[i].Tag, "rho", "loss", rhos)
		fp.p.Y.Min = 0
		bands := rep.bands(f)
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
			st := styleOf(k)
			if name == "adac-oful" && bands {
				fp.band(rhos, lo, hi, st)
			}
			if name != "adac-oful" {
				st = st.withDash(dashDashed) // the non-private references, flat
			}
			fp.line(rhos, y, name, st)
		}
		if h := rep.Summary.HindsightLoss; h != nil {
			fp.line(rhos, filled(len(rhos), *h), "least squares, hindsight", referenceStyle)
			rows = append(rows, fmt.Sprintf("%s,hindsight-least-squares,,%.6g,,", points[i].Tag, *h))
		}
	}
	if _, err := f.save(dir); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "realdata.csv"), []byte(strings.Join(rows, "\n")+"\n"), 0o644); err != nil {
		return nil, err
	}
	return []string{"loss-vs-rho.svg", "realdata.csv"}, nil
}
