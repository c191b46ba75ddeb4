package loadgen

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
)

// Site is a simulated web site that ranks articles through the
// Personalizer surface: each rank call sends Actions articles of Features
// features each and a visitor's context, and the visitor clicks the
// article shown with a probability that depends on both (Best for the
// article of the visitor's segment, Other for the rest).
type Site struct {
	// Actions is the number of articles of every rank call, in [2, 50]
	// (Personalizer's limit).
	Actions int
	// Features is the number of features of each article, in [2, 100]:
	// its title and topic as strings, the rest numbers.
	Features int
	// Key is the Ocp-Apim-Subscription-Key sent (empty: the experiment's
	// id, the key on loopback without a token file).
	Key string
}

// DefaultSite is the load of docs/performance.md: ten articles of twenty
// features each.
func DefaultSite() *Site { return &Site{Actions: 10, Features: 20} }

// The visitors' click-through rates: on the article of their segment,
// and on any other.
const (
	siteBest, siteOther = 0.8, 0.3
	siteSegments        = 4
)

func (s *Site) validate() error {
	switch {
	case s.Actions < 2 || s.Actions > 50:
		return &ConfigError{Field: "actions", Reason: fmt.Sprintf("must lie in [2, 50] (Personalizer's limit), got %d", s.Actions)}
	case s.Features < 2 || s.Features > 100:
		return &ConfigError{Field: "features", Reason: fmt.Sprintf("must lie in [2, 100], got %d", s.Features)}
	}
	return nil
}

func (s *Site) key(experiment string) string {
	if s.Key == "" {
		return experiment
	}
	return s.Key
}

// site is a Site's traffic: the articles, formatted once, and the rank
// and reward paths.
type site struct {
	actions int
	// head and tail enclose a rank call's event id; the visitor's
	// context of each segment follows.
	head, tail string
	contexts   []string
}

func newSite(cfg Config) traffic {
	s := cfg.Site
	r := rand.New(rand.NewPCG(cfg.Seed, 0x5173))
	type article struct {
		ID       string           `json:"id"`
		Features []map[string]any `json:"features"`
	}
	arts := make([]article, s.Actions)
	for k := range arts {
		f := map[string]any{"title": fmt.Sprint("article ", k), "topic": fmt.Sprint("t", k%siteSegments)}
		for j := 2; j < s.Features; j++ {
			f[fmt.Sprint("f", j)] = float64(r.IntN(1000)) / 1000
		}
		arts[k] = article{ID: "a" + strconv.Itoa(k), Features: []map[string]any{{"article": f}}}
	}
	raw, _ := json.Marshal(arts) // (maps of strings and numbers)
	t := &site{actions: s.Actions, head: `{"eventId":`, tail: `,"actions":` + string(raw) + `,"contextFeatures":`}
	for seg := range siteSegments {
		t.contexts = append(t.contexts, fmt.Sprintf(`[{"visitor":{"segment":"s%d","device":"%s"}},{"time":{"hour":%d}}]}`, seg, []string{"mobile", "desktop"}[seg%2], 6*seg))
	}
	return t
}

// mean is the click-through rate of article k for a visitor of segment
// seg: the best for the articles of the segment's topic (k = seg mod 4).
func (t *site) mean(seg, k int) float64 {
	if k%siteSegments == seg {
		return siteBest
	}
	return siteOther
}

// best is the click-through rate of the best article for segment seg.
func (t *site) best(seg int) float64 { return t.mean(seg, seg%t.actions) }

func (t *site) decision(b []byte, r *rand.Rand, ev, _ string) (string, []byte, int) {
	seg := r.IntN(siteSegments)
	b = append(strconv.AppendQuote(append(b, t.head...), ev), t.tail...)
	return "/personalizer/v1.0/rank", append(b, t.contexts[seg]...), seg
}

func (t *site) outcome(resp []byte, r *rand.Rand, seg int) (float64, float64, bool) {
	k := numberAfter(resp, `"rewardActionId":"a`)
	if k < 0 || k >= t.actions {
		return 0, 0, false
	}
	m, x := t.mean(seg, k), 0.0
	if r.Float64() < m {
		x = 1
	}
	return t.best(seg) - m, x, true
}

func (t *site) reward(b []byte, ev string, x float64) (string, []byte) {
	b = append(strconv.AppendFloat(append(b, `{"value":`...), x, 'g', -1, 64), '}')
	return "/personalizer/v1.0/events/" + ev + "/reward", b
}
