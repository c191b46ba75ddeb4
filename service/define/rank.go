package define

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/dpbandit/dpbandit/featurehash"
	"github.com/dpbandit/dpbandit/internal/jsonscan"
	"github.com/dpbandit/dpbandit/mechanism"
	"github.com/dpbandit/dpbandit/service/fault"
	"github.com/dpbandit/dpbandit/service/store"
)

// SurfacePersonalizer is the Spec.Surface of an experiment served through
// Azure Personalizer's REST API (Rank, Reward, Activate; docs/personalizer.md):
// each decision's context is a rank request, whose JSON features are
// hashed into the decision set (RankSet).
const SurfacePersonalizer = "personalizer"

// Limits and defaults of the Personalizer surface. MaxRankActions,
// maxActionID and the reward range are Personalizer's own (its v1.0
// specification: at most 50 actions, ids of at most 256 characters,
// rewards of Personalizer's default range [0, 1]).
const (
	// MaxRankActions bounds a rank request's actions.
	MaxRankActions = 50
	maxActionID    = 256
	// maxFeatureDepth bounds how deep a feature object nests (an object
	// in a namespace in a feature object is depth 3).
	maxFeatureDepth = 4
	// defaultHashBits: 2^5 = 32 dimensions; maxHashBits 6, 64, below
	// the contextual algorithms' maxDim of 100 (d x d matrices).
	// defaultAlgorithm is AdaC-OFUL with the ridge lambda = 30 (the
	// catalogue's default is 0.1) choosing with 0.3 times its radius
	// (adac-oful-scaled, our tuning; docs/personalizer.md, "The default
	// learner"). Both were chosen on the simulated site of
	// TestPersonalizerLearnsSite (3 articles, 5,000 events, rho = 1,
	// rewards at once). Without exploration (click rates, best fixed
	// article 0.40): lambda 0.1 gave 0.36 to 0.38 at 2^4 to 2^6
	// dimensions (it does not learn at this budget: its noise-widened
	// radius dominates), lambda 10, 30, 100 gave 0.54, 0.56, 0.51 at
	// 2^4, 0.52, 0.57, 0.58 at 2^5 and 0.42, 0.44, 0.46 at 2^6; the
	// non-private rs-oful 0.67, 0.68, 0.51. With the surface's
	// exploration 0.2 (the last 1,000 events' clicks over the best
	// context-aware policy's, 64 runs each): adac-oful:lambda=30 0.758
	// (sd 0.043), with the radius times 0.3 0.872 (sd 0.030; 0.25: 0.881,
	// 0.4: 0.852; lambda 20 and 50 at 0.3: 0.869, 0.875).
	defaultHashBits    = 5
	maxHashBits        = 6
	defaultAlgorithm   = "adac-oful-scaled:lambda=30:beta=0.3"
	defaultExploration = 0.2
	// defaultHorizon is T for the learner's confidence radius, which
	// AdaC-OFUL needs: 2^20 decisions (its log T grows slowly beyond).
	defaultHorizon      = 1 << 20
	personalizerRewardH = 1
)

// personalizerDefaults fills a Personalizer experiment's spec: the
// algorithm (AdaC-OFUL, lambda 30, radius times 0.3), Arms (the most
// actions a rank takes), Dim (2^HashBits), the horizon (2^20), the
// reward range [0, 1], default reward 0 and exploration 0.2 (Personalizer's defaults; the reward window's default,
// ten minutes, is every experiment's). An exploration of 0 is taken as
// absent: the surface always explores, so that every logged propensity
// is positive.
func (s *Spec) personalizerDefaults() error {
	if s.Algorithm == "" {
		s.Algorithm = defaultAlgorithm
	}
	if s.HashBits == 0 {
		s.HashBits = defaultHashBits
	}
	if s.HashBits < 1 || s.HashBits > maxHashBits {
		return fmt.Errorf("hash_bits must lie in [1, %d] (2^hash_bits dimensions, at most the contextual learners' %d), got %d", maxHashBits, maxDim, s.HashBits)
	}
	if s.Arms != 0 || s.Dim != 0 || len(s.Actions) > 0 {
		return errors.New("a personalizer experiment takes no arms, dim or actions: each rank request brings its actions (1 to 50), hashed into 2^hash_bits dimensions")
	}
	if s.RewardRange != [2]float64{} && s.RewardRange != [2]float64{0, personalizerRewardH} {
		return fmt.Errorf("a personalizer experiment's rewards lie in [0, 1], got reward_range %v", s.RewardRange)
	}
	s.Arms, s.Dim, s.RewardRange = MaxRankActions, 1<<s.HashBits, [2]float64{0, personalizerRewardH}
	if s.DefaultReward == nil {
		zero := 0.0
		s.DefaultReward = &zero
	}
	if s.Exploration == 0 {
		s.Exploration = defaultExploration
	}
	if s.Horizon == 0 {
		s.Horizon = defaultHorizon
	}
	return nil
}

// RankRequest is a Personalizer rank request (RankRequest of its v1.0
// specification).
type RankRequest struct {
	ContextFeatures []json.RawMessage `json:"contextFeatures"`
	Actions         []RankableAction  `json:"actions"`
	ExcludedActions []string          `json:"excludedActions"`
	EventID         string            `json:"eventId"`
	DeferActivation bool              `json:"deferActivation"`
	// Slot marks the stored rank of a slate's slot (slate.go); a
	// client's request that carries it is refused (CheckClientContext,
	// and the surface's Rank).
	Slot *SlotRef `json:"slot,omitempty"`
}

// RankableAction is an action of a rank request, its features a list of
// JSON objects.
type RankableAction struct {
	ID       string            `json:"id"`
	Features []json.RawMessage `json:"features"`
}

// RankSet is a rank request read as a decision: the request, the indexes
// of its eligible (not excluded) actions and their vectors, in order.
type RankSet struct {
	Request  RankRequest
	Eligible []int
	Set      [][]float64
	// Shared is the request's action list in its stored context
	// (ReadRankContext), for the store to keep once; nil: none.
	Shared *store.Shared
}

// ReadRank reads a rank request and hashes it into the decision set of
// its eligible actions, 2^bits dimensions each (featurehash):
//
//	x_a = c + f_a + q(c, f_a), then clipped into the unit ball,
//
// c the sum of the hashed contextFeatures objects, f_a the sum of action
// a's hashed features objects, and q the quadratic interactions (every
// context coordinate with every action coordinate, as Personalizer's
// default interactions of every context namespace with every action
// namespace): for c_i != 0 and f_j != 0, q adds c_i f_j at coordinate
// featurehash Index("^", "i^j"). Clipping divides x_a by its norm when
// that exceeds 1 (mechanism.IntoUnitBall). Errors are fault.Invalid and
// name the field.
func ReadRank(raw []byte, bits int) (*RankSet, error) {
	rs, _, err := readRank(raw, bits, nil)
	return rs, err
}

// actionsAt is where a rank request's action list lies in its text
// (at < 0: not known), and the list, once a rankCache holds it (known:
// it held it before the request).
type actionsAt struct {
	at, end int
	list    *knownList
	known   bool
}

// readRank is ReadRank with the action lists of rc (nil: none): a list
// rc knows is not read again, and a request read whole without error
// adds its list to rc. It returns where the list lies in raw.
func readRank(raw []byte, bits int, rc *rankCache) (*RankSet, actionsAt, error) {
	req, where, err := decodeRank(raw, rc)
	if err != nil {
		return nil, where, err
	}
	h, err := featurehash.New(bits)
	if err != nil {
		return nil, where, err
	}
	if n := len(req.Actions); n < 1 || n > MaxRankActions {
		return nil, where, fault.Errorf(fault.Invalid, "actions: a rank takes 1 to %d actions, got %d", MaxRankActions, n)
	}
	if err := checkRankID("eventId", req.EventID, true); err != nil {
		return nil, where, err
	}
	rd := h.Reader()
	c := make([]float64, h.Dim())
	for i, f := range req.ContextFeatures {
		if err := addFeatures(rd, c, f); err != nil {
			return nil, where, featuresError(fmt.Sprintf("contextFeatures[%d]", i), err)
		}
	}
	list := where.list
	var index map[string]int
	if list != nil {
		index = list.index // (its ids checked when it was kept)
	} else {
		index = make(map[string]int, len(req.Actions))
		for i, a := range req.Actions {
			if checkRankID("", a.ID, false) != nil { // (the field's name made only for the error)
				return nil, where, checkRankID(fmt.Sprintf("actions[%d].id", i), a.ID, false)
			}
			if j, dup := index[a.ID]; dup {
				return nil, where, fault.Errorf(fault.Invalid, "actions[%d].id: %q is also the id of actions[%d]", i, a.ID, j)
			}
			index[a.ID] = i
		}
	}
	excluded := make([]bool, len(req.Actions))
	for i, id := range req.ExcludedActions {
		j, ok := index[id]
		if !ok {
			return nil, where, fault.Errorf(fault.Invalid, "excludedActions[%d]: no action has id %q", i, id)
		}
		excluded[j] = true
	}
	var quad []int
	if rc != nil && rc.bits == bits {
		quad = rc.quad
	}
	rs := &RankSet{Request: req, Eligible: make([]int, 0, len(req.Actions)), Set: make([][]float64, 0, len(req.Actions))}
	var vectors [][]float64 // every action's f, for rc
	for i, a := range req.Actions {
		var f []float64
		if list != nil {
			f = list.vectors[i]
		} else {
			f = make([]float64, h.Dim())
			for k, raw := range a.Features {
				if err := addFeatures(rd, f, raw); err != nil {
					return nil, where, featuresError(fmt.Sprintf("actions[%d].features[%d]", i, k), err)
				}
			}
			vectors = append(vectors, f)
		}
		if excluded[i] {
			continue
		}
		rs.Eligible = append(rs.Eligible, i)
		rs.Set = append(rs.Set, interact(h, quad, c, f))
	}
	if len(rs.Set) == 0 {
		return nil, where, fault.Errorf(fault.Invalid, "excludedActions: every action is excluded, none is left to rank")
	}
	if list == nil && where.at >= 0 && rc != nil && rc.bits == bits {
		where.list = rc.put(raw[where.at:where.end], req.Actions, index, vectors)
	}
	return rs, where, nil
}

// decodeRank decodes a rank request: in place when it can
// (readRankFast), by encoding/json otherwise.
func decodeRank(raw []byte, rc *rankCache) (RankRequest, actionsAt, error) {
	if req, where, ok := readRankFast(raw, rc); ok {
		return req, where, nil
	}
	var req RankRequest
	err := decodeStrict(raw, &req, "the rank request")
	return req, actionsAt{at: -1}, err
}

// decodeStrict decodes raw, one JSON object without unknown fields, into
// v; errors are fault.Invalid and name what it is.
func decodeStrict(raw []byte, v any, what string) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fault.Errorf(fault.Invalid, "%s is not valid: %v", what, err)
	}
	if dec.More() {
		return fault.Errorf(fault.Invalid, "%s has data after its object", what)
	}
	return nil
}

// checkRankID checks an id of a rank request: at most 256 characters of
// valid UTF-8 (Personalizer's maxLength), not empty unless optional. An
// event id also meets the service's CheckPathID (at most 1,024 bytes, not
// "." or ".."), as it is the decision's event_id and a segment of its
// reward's path.
func checkRankID(name, v string, optional bool) error {
	switch {
	case v == "" && optional:
		return nil
	case v == "":
		return fault.Errorf(fault.Invalid, "%s is required", name)
	case !utf8.ValidString(v):
		return fault.Errorf(fault.Invalid, "%s is not valid UTF-8", name)
	case utf8.RuneCountInString(v) > maxActionID:
		return fault.Errorf(fault.Invalid, "%s has %d characters, at most %d are accepted", name, utf8.RuneCountInString(v), maxActionID)
	case optional:
		return CheckPathID(name, v) // (the event's reward and activation paths hold it)
	}
	return nil
}

// addFeatures adds one features object (at most maxFeatureDepth deep,
// numbers finite) into dst; featuresError names it in an error.
func addFeatures(rd *featurehash.Reader, dst []float64, raw json.RawMessage) error {
	if d := jsonscan.Depth(raw); d > maxFeatureDepth {
		return tooDeepError(d)
	}
	return rd.AddJSON(dst, raw)
}

// tooDeepError is a features object nested deeper than maxFeatureDepth.
type tooDeepError int

func (e tooDeepError) Error() string {
	return fmt.Sprintf("nests %d levels deep, at most %d are accepted", int(e), maxFeatureDepth)
}

// featuresError is addFeatures' error about the features object name:
// Invalid, naming the object or the feature.
func featuresError(name string, err error) error {
	var ve *featurehash.ValueError
	var deep tooDeepError
	switch {
	case errors.As(err, &deep):
		return fault.Errorf(fault.Invalid, "%s %v", name, deep)
	case errors.Is(err, featurehash.ErrNotObject):
		return fault.Errorf(fault.Invalid, "%s must be a JSON object of features", name)
	case errors.As(err, &ve):
		return fault.Errorf(fault.Invalid, "%s.%s: %s", name, ve.Path, ve.Reason)
	}
	return fault.Errorf(fault.Invalid, "%s: %v", name, err)
}

// interact returns c + f + q(c, f) clipped into the unit ball (ReadRank);
// quad, when given, holds q's coordinates (rankCache).
func interact(h featurehash.Hasher, quad []int, c, f []float64) []float64 {
	x := make([]float64, len(c))
	for i := range x {
		x[i] = c[i] + f[i]
	}
	for i, ci := range c {
		if ci == 0 {
			continue
		}
		if quad != nil {
			row := quad[i*len(f) : (i+1)*len(f)]
			for j, fj := range f {
				if fj != 0 {
					x[row[j]] += ci * fj
				}
			}
			continue
		}
		var buf [24]byte
		pre := append(strconv.AppendInt(buf[:0], int64(i), 10), '^')
		for j, fj := range f {
			if fj != 0 {
				x[h.IndexBytes("^", strconv.AppendInt(pre, int64(j), 10))] += ci * fj
			}
		}
	}
	mechanism.IntoUnitBall(x)
	return x
}

// checkRank is CheckContext for the Personalizer surface: the context is
// the rank request, stored compacted, and the decision set its eligible
// actions' vectors.
func (d *Definition) checkRank(raw json.RawMessage) (string, [][]float64, error) {
	ctxt, rs, err := d.ReadRankContext(raw)
	if err != nil {
		return "", nil, err
	}
	return ctxt, rs.Set, nil
}

// ReadRankContext reads a rank request (at most maxCtx bytes) and returns it
// compacted, as it is stored, with its decision set.
func (d *Definition) ReadRankContext(raw json.RawMessage) (string, *RankSet, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil, fault.Errorf(fault.Invalid, "the rank request is required")
	}
	if len(raw) > maxCtx {
		return "", nil, fault.Errorf(fault.TooLarge, "a rank request of at most %d bytes is accepted", maxCtx)
	}
	rs, where, err := readRank(raw, d.HashBits, d.ranks)
	if err != nil {
		return "", nil, err
	}
	// (readRank read it whole: valid JSON.) A list seen for the first
	// time is stored whole: one that never repeats would only add a row.
	if !where.known {
		return string(jsonscan.Compact(make([]byte, 0, len(raw)), raw)), rs, nil
	}
	// Compacted in three parts, the action list's being its list's text:
	// the context with its list stored once (store.Shared). (b is the
	// string's own: nothing writes it after.)
	text := where.list.shared.Text
	b := jsonscan.Compact(make([]byte, 0, len(raw)-(where.end-where.at)+len(text)), raw[:where.at])
	at := len(b)
	b = jsonscan.Compact(append(b, text...), raw[where.end:])
	sh := where.list.shared
	sh.At = at
	rs.Shared = &sh
	return jsonscan.UnsafeString(b), rs, nil
}

// Distribution is the logging policy's whole distribution for a stored
// decision whose policy's arm is recorded (PolicyArm >= 0), over the
// experiment's arms, or on the Personalizer surface over the rank's
// eligible actions (in the request's order, the excluded ones left out),
// computed by Propensity's rule so that it agrees with PScore to the bit.
func (d *Definition) Distribution(e store.Event) []float64 {
	k := d.Arms
	if d.Surface == SurfacePersonalizer {
		if rs, err := ReadRank([]byte(e.Context), d.HashBits); err == nil {
			k = len(rs.Eligible)
		}
	}
	at, _ := d.Effective(e.Seq) // the exploration it was decided under (settings.go)
	prob := make([]float64, k)
	for a := range prob {
		prob[a] = at.PropensityOf(a, e.PolicyArm, k)
	}
	return prob
}
