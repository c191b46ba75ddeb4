package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	neturl "net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dpbandit/dpbandit/internal/contract"
	"github.com/dpbandit/dpbandit/service"
)

// start serves a fresh SQLite-backed service on a loopback port.
func start(t *testing.T) string { return startWith(t, service.Config{}) }

// startWith is start with the service's configuration (its Store set
// here).
func startWith(t *testing.T, cfg service.Config) string {
	t.Helper()
	st, err := service.Open(context.Background(), filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Store = st
	srv, err := service.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	web := httptest.NewServer(contract.Handler(t, srv.Handler()))
	ctx, cancel := context.WithCancel(context.Background())
	go srv.Run(ctx) // the reward windows
	t.Cleanup(func() { cancel(); web.Close(); srv.Close(); st.Close() })
	return web.URL
}

// proxy serves a proxy to the service at url on a loopback port, which
// lets hook answer a request first (true: answered).
func proxy(t *testing.T, url string, hook func(http.ResponseWriter, *http.Request) bool) string {
	u, _ := neturl.Parse(url)
	rp := httputil.NewSingleHostReverseProxy(u)
	p := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !hook(w, r) {
			rp.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(p.Close)
	return p.URL
}

// TestRunCountsPairs: a bounded run completes exactly its pairs without
// errors, measures latencies, and its decisions learn (the best arm is
// played more than the worst).
func TestRunCountsPairs(t *testing.T) {
	url := start(t)
	rep, err := Run(context.Background(), Config{URL: url, Means: []float64{0.9, 0.1}, Algorithm: "adac-ucb", Rho: 1,
		Experiment: "lt", Concurrency: 4, Pairs: 400, Seed: 1, Duration: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Pairs != 400 || rep.Requests != 800 || rep.Errors != 0 || rep.First != nil {
		t.Fatalf("report %+v", rep)
	}
	if rep.Decisions[0] <= 0 || rep.Decisions[1] < rep.Decisions[0] || rep.Rewards[2] < rep.Rewards[1] {
		t.Fatalf("latency quantiles %v %v", rep.Decisions, rep.Rewards)
	}
	// Regret is 0.8 per pull of the bad arm: at most 400 x 0.8, and well
	// below half of it once the policy learns.
	if !(rep.Regret >= 0 && rep.Regret < 0.5*400*0.8) {
		t.Fatalf("pseudo-regret %v", rep.Regret)
	}
}

// TestRunReportsFailures: every failed request counts once, and a bad
// config is ErrConfig before anything is sent.
func TestRunReportsFailures(t *testing.T) {
	url := start(t)
	if _, err := Run(context.Background(), Config{URL: url, Means: []float64{0.5, 0.5}, Concurrency: 0}); !errors.Is(err, ErrConfig) {
		t.Fatalf("concurrency 0: %v", err)
	}
	if _, err := Run(context.Background(), Config{URL: "https://x", Means: []float64{0.5, 0.5}, Concurrency: 1}); !errors.Is(err, ErrConfig) {
		t.Fatalf("https: %v", err)
	}
	// A unit contributes one reward (max_rewards_per_unit 1 without
	// Units); with one unit, later rewards are acknowledged (200), so
	// nothing fails. A second run on the same experiment id fails at
	// creation.
	cfg := Config{URL: url, Means: []float64{0.5, 0.5}, Algorithm: "adac-ucb", Rho: 1, Experiment: "dup", Concurrency: 2, Pairs: 20, Duration: time.Minute}
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Every reward came; the experiment's own counts say what became
	// of each (overflow decisions of the two clients are ignored).
	if rep.Learned+rep.Ignored != 20 || rep.Learned == 0 {
		t.Fatalf("learned %d, ignored %d of 20 rewards", rep.Learned, rep.Ignored)
	}
	if _, err := Run(context.Background(), cfg); err == nil {
		t.Fatal("a second experiment of the same id was created")
	}
}

// TestRunRetries503: a 503 (a replica handing the experiment over) is
// sent again and counted as a retry, not an error; other failures are
// errors.
func TestRunRetries503(t *testing.T) {
	url := start(t)
	var n atomic.Int64
	proxy := proxy(t, url, func(w http.ResponseWriter, r *http.Request) bool {
		if strings.HasSuffix(r.URL.Path, "/decisions") && n.Add(1)%3 == 0 {
			w.Header().Set("Retry-After", "1")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(503)
			w.Write([]byte(`{"error":"moving: retry"}`))
			return true
		}
		return false
	})
	rep, err := Run(context.Background(), Config{URL: proxy, Means: []float64{0.5, 0.5}, Algorithm: "adac-ucb", Rho: 1,
		Experiment: "r", Concurrency: 1, Pairs: 30, Duration: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	// Every third decision request is a 503: the 30th pair's decision is
	// request 44 (3k+1 and 3k+2 answer), after 14 retries.
	if rep.Errors != 0 || rep.Pairs != 30 || rep.Retries != 14 {
		t.Fatalf("report %+v, want 30 pairs, 14 retries, no error", rep)
	}
}

// TestRunCountsLateRewards: a reward that comes after its event was
// settled without it (its reward window passed) is answered 409 by the
// service, as a late conversion would be: counted as late, not as an
// error. The proxy gives the experiment a window of 1 s and holds one
// reward back 2 s while the other clients go on (the service settles
// windows every 50 ms).
func TestRunCountsLateRewards(t *testing.T) {
	url := startWith(t, service.Config{Tick: 50 * time.Millisecond})
	var held atomic.Bool
	proxy := proxy(t, url, func(_ http.ResponseWriter, r *http.Request) bool {
		switch {
		case r.URL.Path == "/v1/experiments" && r.Method == "POST":
			var spec map[string]any
			if err := json.NewDecoder(r.Body).Decode(&spec); err != nil {
				t.Error(err)
			}
			spec["reward_window_seconds"] = 1
			b, _ := json.Marshal(spec)
			r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(b)), int64(len(b))
		case strings.HasSuffix(r.URL.Path, "/rewards") && held.CompareAndSwap(false, true):
			time.Sleep(2 * time.Second)
		}
		return false
	})
	rep, err := Run(context.Background(), Config{URL: proxy, Means: []float64{0.9, 0.1}, Algorithm: "adac-ucb", Rho: 1,
		Experiment: "late", Concurrency: 4, Pairs: 1500, Duration: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Errors != 0 || rep.Late != 1 || rep.Pairs != 1500 {
		t.Fatalf("report %+v (first error %v), want 1500 pairs, one late reward, no error", rep, rep.First)
	}
}

// TestReportErr: a run fails on any failed request, and on late rewards
// past one in a thousand pairs.
func TestReportErr(t *testing.T) {
	for _, c := range []struct {
		rep  Report
		fail bool
	}{
		{Report{Pairs: 1e6}, false},
		{Report{Pairs: 1e6, Late: 6}, false},
		{Report{Pairs: 1e6, Late: 1000}, false},
		{Report{Pairs: 1e6, Late: 1001}, true},
		{Report{Pairs: 1e6, Errors: 1, First: errors.New("x")}, true},
	} {
		if err := c.rep.Err(); (err != nil) != c.fail {
			t.Errorf("%+v: %v", c.rep, err)
		}
	}
}

// A config that would run other than asked is refused before any
// request, as a *ConfigError naming its field as loadtest's flag: a
// negative number of pairs (not "run for the duration"), no duration to
// run for, a negative number of units, and a rho that is not a budget.
func TestValidateRefusesBadConfigs(t *testing.T) {
	var requests atomic.Int64
	web := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { requests.Add(1) }))
	defer web.Close()
	good := Config{URL: web.URL, Means: []float64{0.5, 0.4}, Algorithm: "adac-ucb", Rho: 0.5, Experiment: "x", Concurrency: 1, Duration: time.Second}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		field string
		edit  func(*Config)
	}{
		{"decisions", func(c *Config) { c.Pairs = -1 }},
		{"duration", func(c *Config) { c.Duration = 0 }},
		{"duration", func(c *Config) { c.Duration = -time.Second }},
		{"units", func(c *Config) { c.Units = -1 }},
		{"rho", func(c *Config) { c.Rho = 0 }},
		{"rho", func(c *Config) { c.Rho = -1 }},
		{"rho", func(c *Config) { c.Rho = math.NaN() }},
		{"rho", func(c *Config) { c.Rho = math.Inf(1) }},
	} {
		cfg := good
		c.edit(&cfg)
		_, err := Run(context.Background(), cfg)
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Field != c.field || !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: %v, want a ConfigError on %s", cfg, err, c.field)
		}
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("%d requests sent by refused configs", n)
	}
}

// TestRunPersonalizerSite: a run on the simulated site ranks ten
// articles of twenty features through the Personalizer surface and
// rewards each rank: every pair completes (a rank answers 201 with a
// rewardActionId among the articles, a reward 204 without a body), and
// the experiment counts every reward.
func TestRunPersonalizerSite(t *testing.T) {
	url := start(t)
	rep, err := Run(context.Background(), Config{URL: url, Site: DefaultSite(), Rho: 1,
		Experiment: "site", Concurrency: 4, Pairs: 400, Seed: 1, Duration: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Pairs != 400 || rep.Errors != 0 || rep.Late != 0 {
		t.Fatalf("report %+v (first error %v)", rep, rep.First)
	}
	// The pseudo-regret of a pair is at most 0.8 - 0.3.
	if !(rep.Regret >= 0 && rep.Regret <= 400*0.5) {
		t.Fatalf("pseudo-regret %v", rep.Regret)
	}
	if rep.Learned+rep.Ignored != 400 {
		t.Fatalf("learned %d, ignored %d of 400 rewards", rep.Learned, rep.Ignored)
	}
}

// TestSiteValidate: a site's articles and features are bounded as
// Personalizer's are, named as loadtest's flags.
func TestSiteValidate(t *testing.T) {
	for _, s := range []Site{{Actions: 1, Features: 20}, {Actions: 51, Features: 20}, {Actions: 10, Features: 1}, {Actions: 10, Features: 101}} {
		cfg := Config{URL: "http://127.0.0.1:1", Site: &s, Rho: 1, Experiment: "x", Concurrency: 1, Duration: time.Second}
		var ce *ConfigError
		if err := cfg.Validate(); !errors.As(err, &ce) {
			t.Errorf("%+v: %v, want a ConfigError", s, err)
		}
	}
}
