package experiment

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/privacy"
)

// Summary is the content of summary.json. Every number in it except the
// wall_seconds fields is a deterministic function of the config: the same
// seed gives the same summary whatever the number of workers.
type Summary struct {
	Name    string `json:"name,omitempty"`
	Env     string `json:"env"`
	Horizon int64  `json:"horizon"`
	// Runs is the number of completed runs.
	Runs int    `json:"runs"`
	Seed uint64 `json:"seed"`
	Mode string `json:"mode"`
	// Delay is the reward delay, when there is one (see Config.Delay).
	Delay string `json:"delay,omitempty"`
	// Noise is "fast" or "secure" (then the numbers are not reproducible).
	Noise string `json:"noise,omitempty"`
	// Bounds is the declared reward range every private statistic assumes.
	Bounds mechanism.Bounds `json:"reward_range"`
	// HindsightLoss, on a data set, is the loss of the least-squares
	// linear policy fit on all its rows (env.Dataset.HindsightLoss): a
	// policy's regret against it is T (loss - HindsightLoss), its
	// "loss" metric being 1 minus its average reward (progressive
	// validation), while Regret counts against the labels themselves.
	HindsightLoss *float64 `json:"hindsight_loss,omitempty"`
	// ClippedFeatures, on a data set, counts the feature values that
	// lay outside their declared ranges and were clipped to them.
	ClippedFeatures int `json:"clipped_features,omitempty"`
	// DataRows, Classes and ClassCounts, on a data set, are its number
	// of rows, its classes (the arms, in order) and each class's rows.
	DataRows    int      `json:"data_rows,omitempty"`
	Classes     []string `json:"classes,omitempty"`
	ClassCounts []int    `json:"class_counts,omitempty"`
	// Interrupted is set when the experiment was cancelled before all runs.
	Interrupted bool     `json:"interrupted,omitempty"`
	WallSeconds float64  `json:"wall_seconds"`
	Results     []Result `json:"results"`
}

// Result is one (algorithm, budget) entry of summary.json. Regret is the
// pseudo-regret at the horizon over runs.
type Result struct {
	measured
	// Metrics are the runs' further measures by name (sim.Record), each
	// averaged over the runs (one that some run lacks is left out). They
	// are written as keys of their own after episodes_mean, e.g.
	// "support_recall" and "support_size" for the sparse policies: the
	// fraction of theta*'s non-zeros in the final estimated support and
	// that support's size (sim.SupportMetrics).
	Metrics map[string]float64 `json:"-"`
	compared
}

// measured are a Result's fields before its metrics.
type measured struct {
	Algorithm string         `json:"algorithm"`
	Label     string         `json:"label"`
	Params    map[string]any `json:"params"`
	Privacy   privacy.Budget `json:"privacy"`
	// RegretMean and RegretStd are the mean and standard deviation over
	// runs; RegretCI95 the 95% confidence interval of the mean; RegretQ05
	// and RegretQ95 the 5% and 95% quantiles over runs.
	RegretMean float64    `json:"regret_mean"`
	RegretStd  float64    `json:"regret_std"`
	RegretCI95 [2]float64 `json:"regret_ci95"`
	RegretQ05  float64    `json:"regret_q05"`
	RegretQ95  float64    `json:"regret_q95"`
	// EpisodesMean is the mean number of episodes (episodic policies).
	EpisodesMean float64 `json:"episodes_mean,omitempty"`
}

// compared are a Result's fields after its metrics.
type compared struct {
	// DiffVs names the entry this one is paired with; DiffMean and DiffSE
	// are the mean paired difference of regret and its standard error,
	// and PoP the price of privacy (Reg_priv - Reg_ref)/Reg_ref.
	DiffVs string `json:"diff_vs,omitempty"`
	// DiffNote says why DiffVs is not the entry's counterpart of the
	// same parameters, when the default pairing found none.
	DiffNote string   `json:"diff_note,omitempty"`
	DiffMean *float64 `json:"diff_mean,omitempty"`
	DiffSE   *float64 `json:"diff_se,omitempty"`
	PoP      *float64 `json:"pop,omitempty"`
	// Bound is the paper's regret upper bound at the horizon, where one
	// applies: Theorem 10 of seed 001 for AdaC-UCB with beta > 3, the
	// converted bound of its Table II for AdaP-UCB, the high-probability
	// bound of Lemma 4.1 of seed 000 for DP-SE; for the online learners,
	// the explicit forms of Theorem 3.4 of seed 003 (Hedge, FTRL on the
	// ball and the cube, private or not) and of the proof of its Theorem
	// 4.1 (EXP2, private or not); see olo.Bounder.
	Bound *float64 `json:"bound,omitempty"`
	// LowerBound is the minimax lower bound of Theorem 17 of seed 001 at
	// the horizon (for rho <= 1, or non-private).
	LowerBound *float64 `json:"lower_bound,omitempty"`
	// WallSeconds is the compute time spent in this entry, over all runs.
	WallSeconds float64 `json:"wall_seconds"`
}

// MarshalJSON writes the fields in order, each metric as a key of its
// own (sorted) between episodes_mean and diff_vs.
func (r Result) MarshalJSON() ([]byte, error) {
	head, err := json.Marshal(r.measured)
	if err != nil {
		return nil, err
	}
	tail, err := json.Marshal(r.compared)
	if err != nil {
		return nil, err
	}
	b := bytes.NewBuffer(head[:len(head)-1])
	for _, k := range slices.Sorted(maps.Keys(r.Metrics)) {
		key, _ := json.Marshal(k)
		v, err := json.Marshal(r.Metrics[k])
		if err != nil {
			return nil, err
		}
		b.WriteByte(',')
		b.Write(key)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte(',')
	b.Write(tail[1:])
	return b.Bytes(), nil
}

func (r *Report) writeSummary(dir string) error {
	b, err := json.MarshalIndent(r.Summary, "", "  ")
	if err != nil {
		return err
	}
	return writeBytes(filepath.Join(dir, "summary.json"), append(b, '\n'))
}

// writeCSV writes regret.csv in long form: one row per entry and
// checkpoint, with the regret statistics and, for paired entries, the
// difference to the reference and the price of privacy.
func (r *Report) writeCSV(dir string) error {
	return writeFile(filepath.Join(dir, "regret.csv"), r.csv)
}

// csv writes the rows of regret.csv.
func (r *Report) csv(out io.Writer) error {
	w := csv.NewWriter(out)
	_ = w.Write([]string{"label", "notion", "rho", "eps", "delta", "alpha", "t",
		"mean", "std", "ci95_lo", "ci95_hi", "q05", "q95", "diff_mean", "diff_se", "pop"})
	num := func(x float64) string { return strconv.FormatFloat(x, 'g', 10, 64) }
	opt := func(v []float64, c int) string {
		if v == nil || v[c] != v[c] {
			return ""
		}
		return num(v[c])
	}
	bud := func(x float64) string {
		if x == 0 {
			return ""
		}
		return num(x)
	}
	for _, cv := range r.Curves {
		s, b := cv.Regret, cv.Budget
		for c, t := range r.Checkpoints {
			_ = w.Write([]string{cv.Label, string(b.Notion), bud(b.Rho), bud(b.Eps), bud(b.Delta), bud(b.Alpha),
				strconv.FormatInt(t, 10), num(s.Mean[c]), num(s.Std[c]), num(s.CILo[c]), num(s.CIHi[c]),
				num(s.Q05[c]), num(s.Q95[c]), opt(cv.DiffMean, c), opt(cv.DiffSE, c), opt(cv.PoP, c)})
		}
	}
	w.Flush()
	return w.Error()
}
