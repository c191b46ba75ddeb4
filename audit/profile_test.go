package audit

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func mustProfile(t *testing.T, p *TablePolicy, d Definition) *Profile {
	t.Helper()
	pr, err := p.Profile(d)
	if err != nil {
		t.Fatal(err)
	}
	return pr
}

// TestProposition1e checks the statement of seed 001 (Appendix B-A): the
// policy is (0.95, 0.17)-View DP, not (0.95, 0.17)-Table DP, and the
// smallest eps at delta = 0.17 under Table DP is 0.98.
func TestProposition1e(t *testing.T) {
	p := Proposition1e()
	view, table := mustProfile(t, p, View), mustProfile(t, p, Table)
	inter := mustProfile(t, p, Interactive)
	if d := view.Delta(0.95); d > 0.17 {
		t.Errorf("View delta(0.95) = %v > 0.17", d)
	}
	if d := table.Delta(0.95); d <= 0.17 {
		t.Errorf("Table delta(0.95) = %v <= 0.17", d)
	}
	if e := table.MinEps(0.17); math.Abs(e-0.98) > 0.005 {
		t.Errorf("Table min eps at 0.17 = %v, paper: 0.98", e)
	}
	if e := view.MinEps(0.17); e > 0.95 {
		t.Errorf("View min eps at 0.17 = %v > 0.95", e)
	}
	// The identity adversary makes Interactive DP at least Table DP.
	if inter.Delta(0.95) < table.Delta(0.95) || len(inter.pairs) != 64*len(table.pairs) {
		t.Errorf("interactive %v < table %v, or %d pairs", inter.Delta(0.95), table.Delta(0.95), len(inter.pairs))
	}
}

// randomPolicy builds a full-support policy with K arms, T steps and
// rewards {0, 1}.
func randomPolicy(r *rand.Rand, k, T int) *TablePolicy {
	p := &TablePolicy{Arms: k, Horizon: T, Rewards: []float64{0, 1}}
	rows := 1
	for range T {
		rule := make([][]float64, rows)
		for h := range rule {
			rule[h] = make([]float64, k)
			s := 0.0
			for a := range rule[h] {
				rule[h][a] = 0.05 + r.Float64()
				s += rule[h][a]
			}
			for a := range rule[h] {
				rule[h][a] /= s
			}
		}
		p.Rules = append(p.Rules, rule)
		rows *= 2 * k
	}
	return p
}

// TestProposition1Relations checks parts (a), (b) and (d) of Proposition 1
// on random policies: pure DP coincides under View and Table DP; Table DP
// implies View DP; View (eps, delta) implies Table (eps, K^T delta).
func TestProposition1Relations(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 20 {
		k, T := 2+trial%2, 2+trial%3
		p := randomPolicy(r, k, T)
		view, table := mustProfile(t, p, View), mustProfile(t, p, Table)
		if a, b := view.MinEps(0), table.MinEps(0); math.Abs(a-b) > 1e-9 {
			t.Errorf("trial %d: pure eps view %v != table %v (Prop. 1a)", trial, a, b)
		}
		for _, eps := range []float64{0, 0.1, 0.5, 1} {
			dv, dt := view.Delta(eps), table.Delta(eps)
			kt := math.Pow(float64(k), float64(T))
			if dv > dt+1e-12 || dt > kt*dv+1e-12 {
				t.Errorf("trial %d eps %v: view %v, table %v (Prop. 1b, 1d)", trial, eps, dv, dt)
			}
		}
	}
}

// TestRandomizedResponse: arm 0 first, then arm 1 with probability
// e^eps/(1+e^eps) if the first reward was 1 (and 1/(1+e^eps) if 0). Its
// privacy loss is exactly eps, and its Renyi divergence that of
// randomized response.
func TestRandomizedResponse(t *testing.T) {
	const eps = 0.7
	p, q := math.Exp(eps)/(1+math.Exp(eps)), 1/(1+math.Exp(eps))
	pol := &TablePolicy{Arms: 2, Horizon: 2, Rewards: []float64{0, 1}, Rules: [][][]float64{
		{{1, 0}},
		{{p, q}, {q, p}, {0.5, 0.5}, {0.5, 0.5}},
	}}
	for _, d := range []Definition{View, Table, Interactive} {
		pr := mustProfile(t, pol, d)
		if e := pr.MinEps(0); math.Abs(e-eps) > 1e-9 {
			t.Errorf("%s: eps %v, want %v", d, e, eps)
		}
		want := math.Log(math.Pow(p, 3)*math.Pow(q, -2)+math.Pow(q, 3)*math.Pow(p, -2)) / 2
		if got := pr.Renyi(3); math.Abs(got-want) > 1e-12 {
			t.Errorf("%s: D_3 = %v, want %v", d, got, want)
		}
		if pr.Delta(eps) > 1e-12 || pr.Delta(eps/2) <= 0 {
			t.Errorf("%s: delta(eps) = %v, delta(eps/2) = %v", d, pr.Delta(eps), pr.Delta(eps/2))
		}
	}
	// An output impossible on a neighbour: no eps suffices at delta = 0.
	det := &TablePolicy{Arms: 2, Horizon: 2, Rewards: []float64{0, 1}, Rules: [][][]float64{
		{{1, 0}}, {{1, 0}, {0, 1}, {0.5, 0.5}, {0.5, 0.5}},
	}}
	pr := mustProfile(t, det, View)
	if !math.IsInf(pr.MinEps(0.5), 1) || pr.MinEps(1) != 0 || !math.IsInf(pr.Renyi(2), 1) {
		t.Errorf("deterministic policy: %v %v %v", pr.MinEps(0.5), pr.MinEps(1), pr.Renyi(2))
	}
}

func TestParsePolicyRejectsHostileInput(t *testing.T) {
	rows := func(n int, row string) string {
		return "[" + strings.TrimSuffix(strings.Repeat(row+",", n), ",") + "]"
	}
	good := `{"arms":2,"horizon":2,"rewards":[0,1],"rules":[[["1/2","1/2"]],` + rows(4, `[0.5,0.5]`) + `]}`
	if _, err := ParsePolicy(strings.NewReader(good)); err != nil {
		t.Fatalf("good policy rejected: %v", err)
	}
	for name, s := range map[string]string{
		"malformed":    `{"arms":2,`,
		"unknown key":  `{"arms":2,"horizon":1,"rewards":[0,1],"rules":[[[1,0]]],"extra":1}`,
		"sum != 1":     `{"arms":2,"horizon":1,"rewards":[0,1],"rules":[[[0.5,0.6]]]}`,
		"NaN":          `{"arms":2,"horizon":1,"rewards":[0,1],"rules":[[["NaN",1]]]}`,
		"negative":     `{"arms":2,"horizon":1,"rewards":[0,1],"rules":[[[-0.5,1.5]]]}`,
		"huge T":       `{"arms":2,"horizon":1000000,"rewards":[0,1],"rules":[]}`,
		"many rows":    `{"arms":16,"horizon":20,"rewards":[0,1],"rules":[]}`,
		"row count":    `{"arms":2,"horizon":2,"rewards":[0,1],"rules":[[[1,0]],[[1,0]]]}`,
		"row width":    `{"arms":2,"horizon":1,"rewards":[0,1],"rules":[[[1]]]}`,
		"rules length": `{"arms":2,"horizon":2,"rewards":[0,1],"rules":[[[1,0]]]}`,
		"dup rewards":  `{"arms":2,"horizon":1,"rewards":[1,1],"rules":[[[1,0]]]}`,
		"one arm":      `{"arms":1,"horizon":1,"rewards":[0,1],"rules":[[[1]]]}`,
	} {
		if _, err := ParsePolicy(strings.NewReader(s)); err == nil {
			t.Errorf("%s accepted", name)
		} else if !strings.HasPrefix(err.Error(), "audit:") {
			t.Errorf("%s: error %q", name, err)
		}
	}
	// Errors name the rule as the docs index it: rules[t], from 0 (they
	// said "step 2" for rules[1]; found by an auditor's trial).
	if _, err := ParsePolicy(strings.NewReader(`{"arms":2,"horizon":2,"rewards":[0,1],"rules":[[[1,0]],[[1,0]]]}`)); err == nil || !strings.Contains(err.Error(), "rules[1] needs 4 rows") {
		t.Errorf("row count: %v", err)
	}
	if _, err := ParsePolicy(strings.NewReader(`{"arms":2,"horizon":1,"rewards":[0,1],"rules":[[[0.5,0.6]]]}`)); err == nil || !strings.Contains(err.Error(), "rules[0][0]") {
		t.Errorf("sum: %v", err)
	}
	// A valid but large policy: interactive DP is refused, not attempted.
	p := randomPolicy(rand.New(rand.NewPCG(3, 4)), 3, 5)
	if _, err := p.Profile(Interactive); err == nil {
		t.Error("an enumeration of 3^(3+9+27+81) adversaries was attempted")
	}
}
