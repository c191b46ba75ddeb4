package ope

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/dpbandit/dpbandit/featurehash"
	"github.com/dpbandit/dpbandit/internal/decimal"
)

// Formats are the log formats a Reading names: JSON lines and CSV with
// the Open Bandit Pipeline's field names (the package comment), Vowpal
// Wabbit's and Personalizer's decision service JSON (dsjson), and the
// Open Bandit Dataset's CSV (obp).
var Formats = []string{"jsonl", "csv", "dsjson", "obp"}

// Default bits of the features' hashing: a dsjson log of decision sets
// holds one vector of 2^8 (256) coordinates per action, and its reward
// model 2^8 + 1 features; the Open Bandit Dataset's 80 items each have
// a block of 2^4 + 1 in its model (1,360 features, 30 MB).
const (
	DefaultDSJSONBits = 8
	DefaultOBPBits    = 4
)

// Reading is how a log's records are read: its format (Format empty:
// detected from the content, see NewReading) and, for dsjson and obp,
// the bits of the hashing of their features (package featurehash; 0:
// the format's default).
type Reading struct {
	Format   string
	HashBits int
}

// NewReading checks a format and hashing bits.
func NewReading(format string, bits int) (Reading, error) {
	if format != "" && !slices.Contains(Formats, format) {
		return Reading{}, &OptionError{Field: "format", Reason: fmt.Sprintf("unknown format %q (%s)", format, strings.Join(Formats, ", "))}
	}
	if bits != 0 {
		if _, err := featurehash.New(bits); err != nil {
			return Reading{}, &OptionError{Field: "hash-bits", Reason: fmt.Sprintf("must lie in [1, %d] (0: the format's default), got %d", featurehash.MaxBits, bits), Err: err}
		}
		if format == "jsonl" || format == "csv" {
			return Reading{}, &OptionError{Field: "hash-bits", Reason: "is for the hashed features of dsjson and obp logs; " + format + " contexts are vectors already"}
		}
	}
	return Reading{Format: format, HashBits: bits}, nil
}

// String names the reading in a release's key: empty for the default
// reading of any format (the log's content, which the key's digest
// names, then decides), else the bits.
func (r Reading) String() string {
	if r.HashBits == 0 {
		return ""
	}
	return fmt.Sprintf("hash-bits=%d", r.HashBits)
}

// hasher is the reading's hashing for a format.
func (r Reading) hasher(format string) featurehash.Hasher {
	bits := r.HashBits
	if bits == 0 {
		bits = DefaultDSJSONBits
		if format == "obp" {
			bits = DefaultOBPBits
		}
	}
	return featurehash.Hasher{Bits: bits}
}

// dsjsonKeys mark a dsjson record: a first record naming one of them
// (quoted, as a key is) is read as dsjson when no format is named.
var dsjsonKeys = [][]byte{[]byte(`"_label_cost"`), []byte(`"_label_probability"`), []byte(`"_labelIndex"`), []byte(`"_label_Action"`), []byte(`"_outcomes"`), []byte(`"_multi"`)}

// isDSJSON reports whether the first record (a prefix of it) is dsjson's.
func isDSJSON(first []byte) bool {
	if i := bytes.IndexByte(first, '\n'); i >= 0 {
		first = first[:i]
	}
	for _, k := range dsjsonKeys {
		if bytes.Contains(first, k) {
			return true
		}
	}
	return false
}

// obpColumns are the Open Bandit Dataset's columns a CSV log needs to be
// read as obp (its header names them all when no format is named).
var obpColumns = []string{"item_id", "click", "propensity_score"}

// FieldError is a record's field that cannot be used: a LogError's
// cause, naming the field as the format spells it.
type FieldError struct {
	Field, Reason string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Reason }

func fieldError(field, format string, a ...any) error {
	return &FieldError{Field: field, Reason: fmt.Sprintf(format, a...)}
}

// dsRecord is a dsjson record as read: the decision service's fields
// (Vowpal Wabbit's DSJSON format; Personalizer's logs): _label_cost, the
// chosen action's cost (the reward is its negation); _label_probability,
// its probability; _label_Action, its 1-based id and _labelIndex its
// 0-based index in c._multi; a, the action ids (1-based) in the order
// ranked, the chosen first, and p their probabilities; c the context,
// its shared features beside _multi, one object of features per action
// (and _slots, one per slot); _outcomes, for several slots, one object
// per slot with its _label_cost, _a (0-based indices in c._multi, the
// chosen first) and _p; _skipLearn, a decision not to learn from (an
// inactive event).
type dsRecord struct {
	Cost     json.RawMessage   `json:"_label_cost"`
	Prob     json.RawMessage   `json:"_label_probability"`
	Action   json.RawMessage   `json:"_label_Action"`
	Index    json.RawMessage   `json:"_labelIndex"`
	A        []json.RawMessage `json:"a"`
	P        []json.RawMessage `json:"p"`
	C        json.RawMessage   `json:"c"`
	Outcomes []struct {
		Cost json.RawMessage   `json:"_label_cost"`
		A    []json.RawMessage `json:"_a"`
		P    []json.RawMessage `json:"_p"`
	} `json:"_outcomes"`
	Skip bool `json:"_skipLearn"`
}

// jsonNumber reads a field's number: a finite float64.
func jsonNumber(field string, raw json.RawMessage) (float64, error) {
	var x float64
	if err := json.Unmarshal(raw, &x); err != nil {
		return 0, fieldError(field, "%s is not a number", raw)
	}
	return x, nil
}

// jsonInt reads a field's integer.
func jsonInt(field string, raw json.RawMessage) (int, error) {
	a, err := strconv.Atoi(string(raw))
	if err != nil {
		return 0, fieldError(field, "%s is not an integer", raw)
	}
	return a, nil
}

// probability reads a logged probability: a number in (0, 1].
func probability(field string, raw json.RawMessage) (float64, error) {
	p, err := jsonNumber(field, raw)
	if err == nil && !(p > 0 && p <= 1) {
		err = fieldError(field, "%v must lie in (0, 1]: the logged action had a positive probability", p)
	}
	return p, err
}

// parseDSJSON reads a dsjson record into its events (one, or one per
// slot of _outcomes), appended to rd.pending; a decision without a cost
// (no reward came) or marked _skipLearn is an event without a reward.
func (rd *Reader) parseDSJSON(b []byte) error {
	var r dsRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return fmt.Errorf("not a dsjson record (a JSON object with _label_cost, _label_probability, _labelIndex or _label_Action, a, p and c): %v", err)
	}
	if err := duplicateKey(b); err != nil {
		return err
	}
	var c map[string]any
	if len(r.C) == 0 || json.Unmarshal(r.C, &c) != nil || c == nil {
		return fieldError("c", "no context object (c holds the shared features and _multi, one object per action)")
	}
	h := rd.reading.hasher("dsjson")
	if rd.keepText {
		h = featurehash.Hasher{Bits: 1} // (checked, not used: KeepRecords)
	}
	shared := make([]float64, h.Dim())
	if err := h.Add(shared, c); err != nil {
		return hashError("c", err)
	}
	multi, err := objectsOf(c, "_multi")
	if err != nil {
		return err
	}
	slots, err := objectsOf(c, "_slots")
	if err != nil {
		return err
	}
	if r.Outcomes != nil && len(r.Outcomes) == 0 {
		return fieldError("_outcomes", "no slot (an object per slot, with its _label_cost, _a and _p)")
	}
	if r.Outcomes == nil {
		e, ok, err := rd.dsEvent(&r, multi, shared, h)
		if err != nil {
			return err
		}
		rd.pending = append(rd.pending, pendingEvent{e, ok})
		return nil
	}
	if multi == nil {
		return fieldError("c._multi", "a record with _outcomes (several slots) needs the actions, c._multi")
	}
	for j, o := range r.Outcomes {
		field := fmt.Sprintf("_outcomes[%d]", j)
		ctx := shared
		if j < len(slots) {
			ctx = slices.Clone(shared)
			if err := h.Add(ctx, slots[j]); err != nil {
				return hashError(fmt.Sprintf("c._slots[%d]", j), err)
			}
		}
		e := Event{}
		if e.Actions, err = decisionSet(h, ctx, multi); err != nil {
			return err
		}
		if len(o.A) == 0 || len(o.A) != len(o.P) {
			return fieldError(field, "_a and _p must list the slot's actions and their probabilities, as many of each (got %d and %d)", len(o.A), len(o.P))
		}
		if e.Probs, err = rankedProbs(field+"._a", field+"._p", o.A, o.P, len(multi), 0); err != nil {
			return err
		}
		if e.Action, err = jsonInt(field+"._a", o.A[0]); err != nil {
			return err
		}
		if e.PScore, err = probability(field+"._p", o.P[0]); err != nil {
			return err
		}
		if err := snapProbs(field+"._p", e.Probs, e.Action, e.PScore); err != nil {
			return err
		}
		ok := o.Cost != nil && string(o.Cost) != "null" && !r.Skip
		if ok {
			cost, err := jsonNumber(field+"._label_cost", o.Cost)
			if err != nil {
				return err
			}
			e.Reward = -cost
		}
		rd.pending = append(rd.pending, pendingEvent{e, ok})
	}
	return nil
}

// chosenID reads field, a 1-based action id, and returns the 0-based
// chosen action it names; when an earlier field chose one (chosen >= 0)
// they must agree, else the error is mismatch's, formatted with the id
// and the earlier choice's 1-based id.
func chosenID(field string, raw json.RawMessage, chosen int, mismatch string) (int, error) {
	id, err := jsonInt(field, raw)
	if err != nil {
		return 0, err
	}
	if chosen >= 0 && id-1 != chosen {
		return 0, fieldError(field, mismatch, id, chosen+1)
	}
	return id - 1, nil
}

// pendingEvent is an event read from a record of several (a dsjson
// record's slots), waiting for Next.
type pendingEvent struct {
	e        Event
	rewarded bool
}

// dsEvent reads a single-slot dsjson record's event.
func (rd *Reader) dsEvent(r *dsRecord, multi []map[string]any, shared []float64, h featurehash.Hasher) (Event, bool, error) {
	var e Event
	var err error
	k := rd.arms
	if multi != nil {
		if e.Actions, err = decisionSet(h, shared, multi); err != nil {
			return e, false, err
		}
		k = len(multi)
	} else {
		e.X = shared
	}
	if k == 0 {
		k = len(r.A)
	}
	// The chosen action, 0-based: _labelIndex, or _label_Action - 1, or
	// a[0] - 1; those given must agree.
	chosen, from := -1, "" // (from: the first field that names it)
	if r.Index != nil {
		if chosen, err = jsonInt("_labelIndex", r.Index); err != nil {
			return e, false, err
		}
		from = "_labelIndex"
	}
	if r.Action != nil {
		if chosen, err = chosenID("_label_Action", r.Action, chosen, "%d is not _labelIndex + 1 = %d (the id is 1-based, the index 0-based)"); err != nil {
			return e, false, err
		}
		from = cmp.Or(from, "_label_Action")
	}
	if len(r.A) > 0 {
		if chosen, err = chosenID("a[0]", r.A[0], chosen, "%d is not the chosen action's id %d (a lists the chosen action first)"); err != nil {
			return e, false, err
		}
		from = cmp.Or(from, "a[0]")
	}
	if chosen < 0 || k > 0 && chosen >= k {
		if chosen == -1 && r.Index == nil && r.Action == nil && len(r.A) == 0 {
			return e, false, fieldError("_labelIndex", "no chosen action (_labelIndex, _label_Action or a)")
		}
		return e, false, fieldError(from, "the chosen action %d (0-based) is outside the %d actions", chosen, k)
	}
	e.Action = chosen
	switch {
	case r.Prob != nil:
		if e.PScore, err = probability("_label_probability", r.Prob); err != nil {
			return e, false, err
		}
	case len(r.P) > 0:
		if e.PScore, err = probability("p[0]", r.P[0]); err != nil {
			return e, false, err
		}
	default:
		return e, false, fieldError("_label_probability", "missing: the logging policy's probability of the chosen action (_label_probability, or p with a)")
	}
	if len(r.A) > 0 || len(r.P) > 0 {
		if len(r.A) != len(r.P) {
			return e, false, fieldError("p", "%d probabilities for the %d actions of a", len(r.P), len(r.A))
		}
		if k > 0 {
			if e.Probs, err = rankedProbs("a", "p", r.A, r.P, k, 1); err != nil {
				return e, false, err
			}
			if err := snapProbs("p", e.Probs, e.Action, e.PScore); err != nil {
				return e, false, err
			}
		}
	}
	if r.Cost == nil || string(r.Cost) == "null" || r.Skip {
		return e, false, nil
	}
	cost, err := jsonNumber("_label_cost", r.Cost)
	if err != nil {
		return e, false, err
	}
	e.Reward = -cost
	return e, true, nil
}

// rankedProbs is the distribution over k actions that ids (base: 1 for
// a's ids, 0 for _a's indices) and their probabilities p give: 0 for
// the actions they do not list.
func rankedProbs(aField, pField string, ids, p []json.RawMessage, k, base int) ([]float64, error) {
	probs := make([]float64, k)
	seen := make([]bool, k)
	for i := range ids {
		id, err := jsonInt(fmt.Sprintf("%s[%d]", aField, i), ids[i])
		if err != nil {
			return nil, err
		}
		if id-base < 0 || id-base >= k || seen[id-base] {
			return nil, fieldError(fmt.Sprintf("%s[%d]", aField, i), "%d is outside the %d actions, or listed twice", id, k)
		}
		seen[id-base] = true
		x, err := jsonNumber(fmt.Sprintf("%s[%d]", pField, i), p[i])
		if err != nil {
			return nil, err
		}
		if !(x >= 0 && x <= 1) {
			return nil, fieldError(fmt.Sprintf("%s[%d]", pField, i), "%v is not a probability", x)
		}
		probs[id-base] = x
	}
	return probs, nil
}

// probsSlack is how far a logged distribution's sum may be from 1, and
// its chosen entry from the chosen action's probability: Personalizer
// and VW write float32 probabilities (7 significant digits), whose sum
// over dozens of actions drifts by 10^-6 and more.
const probsSlack = 1e-4

// snapProbs makes a logged distribution exact around the chosen action:
// its entry is pscore, and the others are rescaled to sum to 1 -
// pscore; a distribution off by more than probsSlack is refused, naming
// field.
func snapProbs(field string, probs []float64, chosen int, pscore float64) error {
	sum := 0.0
	for _, p := range probs {
		sum += p
	}
	if math.Abs(sum-1) > probsSlack {
		return fieldError(field, "the probabilities sum to %v, not 1", sum)
	}
	if math.Abs(probs[chosen]-pscore) > probsSlack {
		return fieldError(field, "the chosen action's probability %v differs from %v", probs[chosen], pscore)
	}
	others := sum - probs[chosen]
	for a := range probs {
		switch {
		case a == chosen:
			probs[a] = pscore
		case others > 0:
			probs[a] *= (1 - pscore) / others
		}
	}
	return nil
}

// objectsOf reads c[key], an array of objects (nil when absent).
func objectsOf(c map[string]any, key string) ([]map[string]any, error) {
	v, ok := c[key]
	if !ok || v == nil {
		return nil, nil
	}
	arr, ok := v.([]any)
	if !ok || len(arr) == 0 {
		return nil, fieldError("c."+key, "must be a non-empty array of objects")
	}
	out := make([]map[string]any, len(arr))
	for i, x := range arr {
		if out[i], ok = x.(map[string]any); !ok {
			return nil, fieldError(fmt.Sprintf("c.%s[%d]", key, i), "must be an object of features")
		}
	}
	return out, nil
}

// hashError is a feature of the object at field that the hashing
// refuses, named by its path in the record.
func hashError(field string, err error) error {
	var ve *featurehash.ValueError
	if errors.As(err, &ve) {
		return fieldError(field+"."+ve.Path, "%s", ve.Reason)
	}
	return fieldError(field, "%v", err)
}

// decisionSet hashes each action's features, added to the shared ones.
func decisionSet(h featurehash.Hasher, shared []float64, multi []map[string]any) ([][]float64, error) {
	set := make([][]float64, len(multi))
	for i, m := range multi {
		set[i] = slices.Clone(shared)
		if err := h.Add(set[i], m); err != nil {
			return nil, hashError(fmt.Sprintf("c._multi[%d]", i), err)
		}
	}
	return set, nil
}

// obpHeader checks an Open Bandit Dataset header and notes its feature
// columns: user_feature_* (strings, hashed as indicators), user-item_
// affinity_* (numbers, one per item: their count is K unless --arms) and
// position.
func (rd *Reader) obpHeader(names []string, line int) error {
	for _, need := range obpColumns {
		if _, ok := rd.cols[need]; !ok {
			return &LogError{Line: line, Reason: fmt.Sprintf("the Open Bandit Dataset's header has no column %q (it needs item_id, click, propensity_score and optionally position, user_feature_* and user-item_affinity_*)", need)}
		}
	}
	affinity := 0
	for j, n := range names {
		n = strings.TrimSpace(n)
		switch {
		case strings.HasPrefix(n, "user_feature_"), n == "position":
			rd.obpCols = append(rd.obpCols, j)
		case strings.HasPrefix(n, "user-item_affinity_"):
			rd.obpCols = append(rd.obpCols, j)
			affinity++
		}
	}
	if rd.arms == 0 {
		rd.arms = affinity
	}
	return nil
}

// parseOBP reads an Open Bandit Dataset row: item_id the action,
// click the reward, propensity_score the pscore, and the context the
// hashed features of the row's position, user_feature_* and
// user-item_affinity_* columns (namespace "", their column names as
// keys: strings as indicators, numbers as values).
func (rd *Reader) parseOBP(rec []string) (Event, bool, error) {
	var e Event
	col := func(n string) string { return strings.TrimSpace(rec[rd.cols[n]]) }
	if col("click") == "" {
		return e, false, nil
	}
	a, err := strconv.Atoi(col("item_id"))
	if err != nil {
		return e, false, fieldError("item_id", "%q is not an integer", col("item_id"))
	}
	e.Action = a
	if e.Reward, err = decimal.Parse(col("click")); err != nil {
		return e, false, fieldError("click", "%q is not a number", col("click"))
	}
	if e.PScore, err = decimal.Parse(col("propensity_score")); err != nil {
		return e, false, fieldError("propensity_score", "%q is not a number", col("propensity_score"))
	}
	if !(e.PScore > 0 && e.PScore <= 1) {
		return e, false, fieldError("propensity_score", "%v must lie in (0, 1]: the logged item had a positive probability", e.PScore)
	}
	ctx := make(map[string]any, len(rd.obpCols))
	for _, j := range rd.obpCols {
		name, v := strings.TrimSpace(rd.names[j]), strings.TrimSpace(rec[j])
		if strings.HasPrefix(name, "user-item_affinity_") {
			x, err := decimal.Parse(v)
			if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
				return e, false, fieldError(name, "%q is not a finite number", v)
			}
			ctx[name] = x
			continue
		}
		ctx[name] = v
	}
	h := rd.reading.hasher("obp")
	e.X = make([]float64, h.Dim())
	if err := h.Add(e.X, ctx); err != nil {
		return e, false, hashError("context", err)
	}
	return e, true, nil
}
