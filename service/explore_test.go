package service

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/dpbandit/dpbandit/ope"
	"github.com/dpbandit/dpbandit/service/internal/storetest"
	"github.com/dpbandit/dpbandit/service/outcome"
)

// TestExplorationPropensities: with exploration 0.2 over 5 arms, every
// decision's probability is the logging policy's propensity of its arm
// (0.04 for an explored arm, 0.84 for the policy's own), the exported
// log carries it as pscore with the whole distribution (action_prob,
// summing to 1), the fraction of decisions that explore another arm is
// e (1 - 1/K) = 0.16 within 4.5 standard errors, and the inverse
// propensity estimate of the uniform policy's value from the log,
// mean(r 1/K / pscore), covers the uniform policy's true value (the mean
// of the arms' means) within 4 of its standard errors. The exported log
// goes as is into package ope (what `dpbandit evaluate` reads): its IPS
// of the logging policy equals the observed mean reward within its
// standard error (every weight is 1), and its IPS of the uniform policy
// is the hand computation's. The decisions replay after a restart with
// the same propensities.
func TestExplorationPropensities(t *testing.T) {
	statistical(t)
	t.Parallel()
	const n, e = 6000, 0.2
	means := []float64{0.75, 0.625, 0.5, 0.375, 0.25}
	k := float64(len(means))
	h := start(t, storetest.SQLite(t), Config{KeepLog: true, Entropy: rand.NewChaCha8([32]byte{3})})
	sp := storetest.BernoulliSpec("x", len(means), 0.5)
	sp["exploration"] = e
	h.create(sp)
	r := rand.New(rand.NewPCG(8, 8))
	explored := 0
	probs := map[string]float64{}
	for i := range n {
		ev := fmt.Sprint(i)
		d := h.decide("x", ev, ev)
		switch {
		case math.Abs(d.Probability-e/k) < 1e-12:
			explored++
			if d.Learns {
				t.Fatalf("decision %d explored arm %d and learns", i, d.Arm)
			}
		case math.Abs(d.Probability-(1-e+e/k)) > 1e-12:
			t.Fatalf("decision %d: probability %v", i, d.Probability)
		}
		probs[ev] = d.Probability
		rwd := 0.0
		if r.Float64() < means[d.Arm] {
			rwd = 1
		}
		var res outcome.RewardResult
		h.call("POST", "/v1/experiments/x/rewards", map[string]any{"event_id": ev, "reward": rwd}, 200, &res)
		if explores := math.Abs(d.Probability-e/k) < 1e-12; explores != (res.Reason == "exploration") {
			t.Fatalf("decision %d (probability %v): its reward's reason is %q", i, d.Probability, res.Reason)
		}
	}
	// Explored decisions are counted as such, not as overflow, and a
	// decision awaiting its reward is counted whatever its kind:
	// decisions = rewards + defaulted + expired + awaiting.
	for i := range 3 {
		h.decide("x", fmt.Sprint("w", i), fmt.Sprint("w", i))
	}
	if st := h.state("x"); st.Explored != int64(explored) || st.Overflow != 0 || st.Awaiting != 3 ||
		st.Decisions != st.Rewards+st.Defaulted+st.Expired+st.Awaiting {
		t.Errorf("counts %+v: want %d explored, none overflow, 3 awaiting, and the sum", st.Counts, explored)
	}
	p := e * (1 - 1/k)
	if f := float64(explored) / n; math.Abs(f-p) > 4.5*math.Sqrt(p*(1-p)/n) {
		t.Errorf("%d of %d decisions explored another arm, want about %v", explored, n, p*n)
	}
	_, b := h.do("GET", "/v1/experiments/x/log", "", nil)
	var terms []float64
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var rec struct {
			Event  string    `json:"event_id"`
			Action int       `json:"action"`
			PScore float64   `json:"pscore"`
			Prob   []float64 `json:"action_prob"`
			Reward *float64  `json:"reward"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		sum := 0.0
		for _, q := range rec.Prob {
			sum += q
		}
		if len(rec.Prob) != len(means) || math.Abs(sum-1) > 1e-12 || rec.PScore != rec.Prob[rec.Action] || rec.PScore != probs[rec.Event] {
			t.Fatalf("log line %s: pscore %v, action_prob %v (sum %v), decision's probability %v", rec.Event, rec.PScore, rec.Prob, sum, probs[rec.Event])
		}
		terms = append(terms, *rec.Reward/k/rec.PScore)
	}
	if len(terms) != n {
		t.Fatalf("%d log lines, want %d", len(terms), n)
	}
	mean, sq := 0.0, 0.0
	for _, rwd := range terms {
		mean += rwd / n
	}
	for _, rwd := range terms {
		sq += (rwd - mean) * (rwd - mean)
	}
	se := math.Sqrt(sq / (n - 1) / n)
	truth := 0.5 // the mean of the arms' means
	t.Logf("IPS of the uniform policy %.4f ± %.4f (truth %.3f); %d of %d explored", mean, se, truth, explored, n)
	if math.Abs(mean-truth) > 4*se {
		t.Errorf("IPS estimate %v of the uniform policy, true value %v (se %v)", mean, truth, se)
	}
	open := func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	logging, err := ope.Evaluate(open, ope.Logging{}, ope.Options{})
	if err != nil {
		t.Fatal(err)
	}
	observed := 0.0
	for i, rwd := range terms {
		observed += rwd * k * probs[fmt.Sprint(i)] / n // r = term K pscore
	}
	if ips := logging.Estimate[1]; ips.Name != "ips" || logging.Events != n || math.Abs(ips.Value-observed) > ips.SE {
		t.Errorf("ope's %s of the logging policy %v ± %v over %d events, observed mean reward %v", ips.Name, ips.Value, ips.SE, logging.Events, observed)
	}
	uniform, err := ope.Evaluate(open, ope.Uniform{}, ope.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if ips := uniform.Estimate[1]; math.Abs(ips.Value-mean) > 1e-9 || math.Abs(ips.SE-se) > 1e-9 {
		t.Errorf("ope's IPS of the uniform policy %v ± %v, by hand %v ± %v", ips.Value, ips.SE, mean, se)
	}
	before := h.state("x")
	h.restart()
	if after := h.state("x"); after.Pulls[0] != before.Pulls[0] || after.Decisions != before.Decisions {
		t.Fatalf("restart changed the state: %+v, %+v", before.Counts, after.Counts)
	}
	if d := h.decide("x", "17", "17"); d.Probability != probs["17"] {
		t.Errorf("a retry after restart has probability %v, first %v", d.Probability, probs["17"])
	}
}

// TestStoreGainsColumns: a store written before the propensity columns
// (pscore, policy_arm) is migrated in place: its events keep
// probability 1 and new decisions get theirs.
func TestStoreGainsColumns(t *testing.T) {
	t.Parallel()
	storetest.ForStores(t, func(t *testing.T, dsn string) {
		st, err := Open(context.Background(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		db := storetest.DB(t, dsn)
		for _, q := range []string{`ALTER TABLE events DROP COLUMN pscore`, `ALTER TABLE events DROP COLUMN policy_arm`} {
			if _, err := db.Exec(q); err != nil {
				t.Fatal(err)
			}
		}
		st.Close()
		h := start(t, dsn, Config{})
		sp := storetest.BernoulliSpec("old", 3, 0.5)
		sp["exploration"] = 0.5
		h.create(sp)
		if d := h.decide("old", "a", "a"); d.Probability != 0.5/3 && d.Probability != 1-0.5+0.5/3 {
			t.Fatalf("probability %v", d.Probability)
		}
	})
}
