// Package audit checks privacy claims: exactly, for finite policies given
// as probability tables (View DP, Table DP and Interactive DP of seed 001,
// Section III), and empirically, for any policy of the library, by
// running it on neighbouring reward tables and bounding the privacy loss
// from below with Clopper-Pearson intervals.
package audit

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/big"
	"strings"
)

// TablePolicy is a finite bandit policy (Definition 2 of seed 001) given by
// its decision rules: K arms, horizon T and a finite reward alphabet.
//
// Rules[t] (t = 0..T-1) holds one row per history of length t, a
// distribution over the K arms. A history (a_1, r_1, ..., a_t, r_t) is
// numbered in base K|R|, most significant pair first, with digit
// a_s |R| + i_s where i_s is the index of r_s in Rewards: for K = 2 and
// rewards {0, 1}, the history (1, 0) is row 2 and (0, 1, 1, 1) is row 7, as
// in the proof of Proposition 1(e) of seed 001.
type TablePolicy struct {
	Name    string        `json:"name"`
	Arms    int           `json:"arms"`
	Horizon int           `json:"horizon"`
	Rewards []float64     `json:"rewards"`
	Rules   [][][]float64 `json:"-"`
}

// Limits on the size of a policy, so that hostile files are rejected
// before any allocation.
const (
	maxArms     = 16
	maxRewards  = 16
	maxHorizon  = 20
	maxRuleRows = 1 << 20
)

// policyFile is the JSON form; probabilities are numbers or exact
// fractions as strings ("2/3").
type policyFile struct {
	Name    string                `json:"name"`
	Arms    int                   `json:"arms"`
	Horizon int                   `json:"horizon"`
	Rewards []float64             `json:"rewards"`
	Rules   [][][]json.RawMessage `json:"rules"`
}

//go:embed policies/prop1e.json
var prop1e []byte

// Proposition1e returns the policy of the proof of Proposition 1(e) of seed
// 001 (T = 3, K = 2, rewards in {0, 1}), which the paper states is
// (0.95, 0.17)-View DP but not (0.95, 0.17)-Table DP, the smallest eps at
// delta = 0.17 being 0.98 under Table DP.
func Proposition1e() *TablePolicy {
	p, err := ParsePolicy(bytes.NewReader(prop1e))
	if err != nil {
		panic("audit: the embedded policy is invalid: " + err.Error())
	}
	return p
}

// pow returns b^e, or ok = false if it exceeds limit.
func pow(b, e, limit int) (int, bool) {
	r := 1
	for range e {
		if r > limit/b {
			return 0, false
		}
		r *= b
	}
	return r, true
}

// parseProb reads a probability given as a number or a fraction string.
func parseProb(raw json.RawMessage) (float64, error) {
	s := strings.TrimSpace(string(raw))
	if strings.HasPrefix(s, `"`) {
		if err := json.Unmarshal(raw, &s); err != nil {
			return 0, err
		}
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return 0, fmt.Errorf("%q is not a number or fraction", s)
	}
	f, _ := r.Float64()
	return f, nil
}

// ParsePolicy reads and validates a policy in the JSON format of
// TablePolicy, with a "rules" array of T arrays of rows.
func ParsePolicy(r io.Reader) (*TablePolicy, error) {
	dec := json.NewDecoder(io.LimitReader(r, 64<<20))
	dec.DisallowUnknownFields()
	var f policyFile
	if err := dec.Decode(&f); err != nil {
		return nil, errorf("policy JSON: %w", err)
	}
	if f.Arms < 2 || f.Arms > maxArms {
		return nil, errorf("arms must lie in [2, %d], got %d", maxArms, f.Arms)
	}
	if f.Horizon < 1 || f.Horizon > maxHorizon {
		return nil, errorf("horizon must lie in [1, %d], got %d", maxHorizon, f.Horizon)
	}
	if len(f.Rewards) < 1 || len(f.Rewards) > maxRewards {
		return nil, errorf("the reward alphabet needs 1 to %d values, got %d", maxRewards, len(f.Rewards))
	}
	seen := map[float64]bool{}
	for _, v := range f.Rewards {
		if math.IsNaN(v) || math.IsInf(v, 0) || seen[v] {
			return nil, errorf("rewards must be distinct finite numbers, got %v", f.Rewards)
		}
		seen[v] = true
	}
	if len(f.Rules) != f.Horizon {
		return nil, errorf("rules must have one entry per step: %d for horizon %d", len(f.Rules), f.Horizon)
	}
	p := &TablePolicy{Name: f.Name, Arms: f.Arms, Horizon: f.Horizon, Rewards: f.Rewards}
	base := f.Arms * len(f.Rewards)
	total := 0
	for t, rows := range f.Rules {
		want, ok := pow(base, t, maxRuleRows)
		if total += want; !ok || total > maxRuleRows {
			return nil, errorf("the policy has more than %d rule rows; it is too large to audit exactly", maxRuleRows)
		}
		if len(rows) != want {
			return nil, errorf("rules[%d] needs %d rows (one per history of length %d), got %d", t, want, t, len(rows))
		}
		rule := make([][]float64, want)
		for h, row := range rows {
			if len(row) != f.Arms {
				return nil, errorf("rules[%d][%d] needs %d probabilities, got %d", t, h, f.Arms, len(row))
			}
			rule[h] = make([]float64, f.Arms)
			sum := 0.0
			for a, raw := range row {
				v, err := parseProb(raw)
				if err != nil {
					return nil, errorf("rules[%d][%d]: %v", t, h, err)
				}
				if math.IsNaN(v) || v < 0 || v > 1 {
					return nil, errorf("rules[%d][%d]: probability %v outside [0,1]", t, h, v)
				}
				rule[h][a] = v
				sum += v
			}
			if math.Abs(sum-1) > 1e-9 {
				return nil, errorf("rules[%d][%d]: probabilities sum to %v, not 1", t, h, sum)
			}
		}
		p.Rules = append(p.Rules, rule)
	}
	return p, nil
}

// outcomes returns K^T, the number of action sequences.
func (p *TablePolicy) outcomes() int {
	n, _ := pow(p.Arms, p.Horizon, math.MaxInt32)
	return n
}

// dist returns the distribution of the action sequence o_1..o_T (numbered
// in base K, o_1 most significant) when at step t the policy observes arm
// query(t, o_1..o_t) and the reward with index reward(t, arm).
// query == nil means the played arm itself.
func (p *TablePolicy) dist(reward func(t, arm int) int, query func(t int, prefix int) int) []float64 {
	out := make([]float64, p.outcomes())
	nr := len(p.Rewards)
	var walk func(t, hist, prefix int, prob float64)
	walk = func(t, hist, prefix int, prob float64) {
		if t == p.Horizon {
			out[prefix] += prob
			return
		}
		for a, pa := range p.Rules[t][hist] {
			if pa == 0 {
				continue
			}
			next := prefix*p.Arms + a
			q := a
			if query != nil {
				q = query(t, next)
			}
			walk(t+1, hist*p.Arms*nr+q*nr+reward(t, q), next, prob*pa)
		}
	}
	walk(0, 0, 0, 1)
	return out
}
