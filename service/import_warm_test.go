package service

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/dpbandit/dpbandit/service/internal/storetest"
)

// signTestP is the one-sided p-value of the sign test: the probability
// that a Binomial(n, 1/2) count is at least pos, the number of positive
// differences among n non-zero ones, when neither side is better (each
// non-zero difference is then positive with probability 1/2, the runs
// independent).
func signTestP(pos, n int) float64 {
	p := 0.0
	for k := pos; k <= n; k++ {
		lg, _ := math.Lgamma(float64(n + 1))
		lk, _ := math.Lgamma(float64(k + 1))
		lnk, _ := math.Lgamma(float64(n - k + 1))
		p += math.Exp(lg - lk - lnk - float64(n)*math.Ln2)
	}
	return p
}

// warmAgainstCold runs runs pairs of experiments (AdaC-UCB, rho 0.5, two
// Bernoulli arms of means) on the same simulated traffic: one warm-started
// from a uniform log of logN events (its arms' labels swapped when swap
// is set: a log that misleads), one cold. Each then takes m live
// decisions, the s-th pull of an arm given the s-th reward of that arm's
// table, drawn once per run for both. It returns the differences, warm
// minus cold, of the best arm's pulls among the m decisions.
func warmAgainstCold(t *testing.T, h *harness, means []float64, runs, logN, m int, swap bool) []int {
	var diffs []int
	for run := range runs {
		logMeans := means
		if swap {
			logMeans = []float64{means[1], means[0]}
		}
		r := rand.New(rand.NewPCG(uint64(run), 99))
		table := make([][]float64, len(means))
		for a := range table {
			for range m {
				x := 0.0
				if r.Float64() < means[a] {
					x = 1
				}
				table[a] = append(table[a], x)
			}
		}
		best := make([]int, 2)
		for i, warm := range []bool{true, false} {
			id := fmt.Sprintf("run%d-%v-%v", run, swap, warm)
			h.create(storetest.BernoulliSpec(id, len(means), 0.5))
			if warm {
				h.importLog(id, "", "application/x-ndjson", uniformLog(logMeans, logN, uint64(1000+run), "log"), 200)
			}
			x, err := h.srv.Get("default", id)
			if err != nil {
				t.Fatal(err)
			}
			pulls := make([]int, len(means))
			for j := range m {
				ev := fmt.Sprintf("live%d", j)
				d, _, err := x.StartDecide(ev, ev, "", nil)
				if err != nil {
					t.Fatal(err)
				}
				if _, _, err := x.StartReward(ev, table[d.Arm][pulls[d.Arm]]); err != nil {
					t.Fatal(err)
				}
				pulls[d.Arm]++
			}
			best[i] = pulls[0]
		}
		diffs = append(diffs, best[0]-best[1])
	}
	return diffs
}

// signTest returns the sign test's p-value of diffs (warm better) and the
// counts it rests on.
func signTest(diffs []int) (p float64, pos, n int) {
	for _, d := range diffs {
		if d != 0 {
			n++
		}
		if d > 0 {
			pos++
		}
	}
	return signTestP(pos, n), pos, n
}

// warmServesBetter runs the sign test of a warm start against a cold one
// at level alpha on the differences pairs returns (positive: warm
// better) and fails t unless it rejects "warm is no better" on logs that
// tell the truth and does not on logs that mislead (pairs(true)): the
// test's teeth. what names the differences in the test's log.
func warmServesBetter(t *testing.T, what string, alpha float64, pairs func(mislead bool) []int) {
	t.Helper()
	diffs := pairs(false)
	p, pos, n := signTest(diffs)
	t.Logf("%s: %v; %d of %d positive, sign test p = %.2g", what, diffs, pos, n, p)
	if !(p <= alpha) {
		t.Fatalf("the warm start does not serve better: p = %.3g > %g (%d of %d differences positive: %v)", p, alpha, pos, n, diffs)
	}
	misled := pairs(true)
	p, pos, n = signTest(misled)
	t.Logf("misleading log: %v; %d of %d positive, p = %.2g", misled, pos, n, p)
	if p <= alpha {
		t.Fatalf("the test has no teeth: a misleading log passes it too (p = %.3g, %d of %d positive: %v)", p, pos, n, misled)
	}
}

// TestWarmStartServesBetterFromItsFirstDecisions: an experiment
// warm-started from a log of 400 uniformly logged events serves the best
// arm more often in its first 20 live decisions than a cold one on the
// same traffic. Twelve independent pairs (two Bernoulli arms, 0.7 and
// 0.3); the sign test rejects "warm is no better" at the 1e-3 level
// (the one-sided binomial tail of the positive differences, exact, not a
// tolerance chosen to pass: 12 of 12 positive is 2.4e-4, 11 of 12 is
// 3.2e-3 and fails). The test can fail: the same run on logs whose arms'
// labels are swapped (a log that misleads) must not pass it.
func TestWarmStartServesBetterFromItsFirstDecisions(t *testing.T) {
	t.Parallel()
	const runs, logN, m, alpha = 12, 400, 20, 1e-3
	means := []float64{0.7, 0.3}
	h := start(t, storetest.SQLite(t), Config{Entropy: rand.NewChaCha8([32]byte{5})})
	warmServesBetter(t, fmt.Sprintf("best arm's pulls in the first %d decisions, warm minus cold", m), alpha, func(swap bool) []int {
		return warmAgainstCold(t, h, means, runs, logN, m, swap)
	})
}

// contextualWarmAgainstCold runs runs pairs of contextual experiments
// (adac-oful, 4 actions in R^2, theta* = (0.8, -0.6)) on the same
// traffic: one warm-started from a uniformly logged log of logN events
// (its rewards negated when mislead is set), one cold; each then takes m
// live decisions on the run's decision sets and noises. It returns the
// differences of their regrets over those decisions, cold minus warm.
func contextualWarmAgainstCold(t *testing.T, h *harness, runs, logN, m int, mislead bool) []int {
	theta := []float64{0.8, -0.6}
	var diffs []int
	for run := range runs {
		r := rand.New(rand.NewPCG(uint64(run), 77))
		var log strings.Builder
		for i := range logN {
			set, _ := storetest.Directions(r, theta)
			a := r.IntN(4)
			mean := theta[0]*set[a][0] + theta[1]*set[a][1]
			if mislead {
				mean = -mean
			}
			fmt.Fprintf(&log, `{"event_id":"l%d","action":%d,"pscore":0.25,"reward":%v,"context":%s}`+"\n",
				i, a, math.Max(-1, math.Min(1, mean+0.1*r.NormFloat64())), vectors(set))
		}
		type step struct {
			set   [][]float64
			best  float64
			noise float64
		}
		live := make([]step, m)
		for j := range live {
			live[j].set, live[j].best = storetest.Directions(r, theta)
			live[j].noise = 0.1 * r.NormFloat64()
		}
		var regret [2]float64
		for i, warm := range []bool{true, false} {
			id := fmt.Sprintf("ctx%d-%v-%v", run, mislead, warm)
			h.create(map[string]any{"id": id, "algorithm": "adac-oful", "arms": 4, "dim": 2, "horizon": 4000,
				"reward_range": []float64{-1, 1}, "privacy": map[string]float64{"rho": 10}})
			if warm {
				h.importLog(id, "", "application/x-ndjson", log.String(), 200)
			}
			for j, s := range live {
				ev := fmt.Sprint("live", j)
				var d struct{ Arm int }
				h.call("POST", "/v1/experiments/"+id+"/decisions", map[string]any{"event_id": ev, "unit_id": ev, "context": s.set}, 200, &d)
				mean := theta[0]*s.set[d.Arm][0] + theta[1]*s.set[d.Arm][1]
				regret[i] += s.best - mean
				h.reward(id, ev, math.Max(-1, math.Min(1, mean+s.noise)))
			}
		}
		diffs = append(diffs, int(math.Round(1000*(regret[1]-regret[0]))))
	}
	return diffs
}

// vectors writes a decision set as JSON, each number as Go formats it
// (shortest round-trip).
func vectors(set [][]float64) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, v := range set {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "[%v,%v]", v[0], v[1])
	}
	b.WriteByte(']')
	return b.String()
}

// TestContextualWarmStartServesBetter: a contextual experiment
// warm-started by replaying a uniformly logged log of 800 events (about
// 200 matched: TestImportReplaysAContextualLog) has lower regret over its
// first 50 live decisions than a cold one on the same decision sets and
// noise, in a sign test over 12 pairs at level 1e-3 (12 of 12: p =
// 2.4e-4); a log whose rewards are negated must not pass.
func TestContextualWarmStartServesBetter(t *testing.T) {
	statistical(t)
	t.Parallel()
	const runs, logN, m, alpha = 12, 800, 50, 1e-3
	h := start(t, storetest.SQLite(t), Config{Entropy: rand.NewChaCha8([32]byte{6})})
	warmServesBetter(t, fmt.Sprintf("regret over the first %d live decisions, cold minus warm (x1000)", m), alpha, func(mislead bool) []int {
		return contextualWarmAgainstCold(t, h, runs, logN, m, mislead)
	})
}
