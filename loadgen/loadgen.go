// Package loadgen drives a running dpbandit decision service with
// closed-loop clients, for `dpbandit loadtest`: it creates an experiment
// on a Bernoulli instance, and each client takes a decision, draws the
// arm's reward and reports it, then the next.
//
// A generator of our own rather than vegeta: every reward depends on the
// decision before it (its arm and event id), which an open-loop
// generator of fixed targets cannot express; and each client speaks
// HTTP/1.1 on one keep-alive connection with preformatted requests
// (wire), so that the generator takes as little as it can of a machine
// it shares with the service.
package loadgen

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dpbandit/dpbandit/env"
	"github.com/dpbandit/dpbandit/privacy"
)

// Config describes a load test.
type Config struct {
	// URL is the service's base URL (http:// only).
	URL string
	// Token is an admin bearer token (empty: the service has none).
	Token string
	// Means are the Bernoulli arms' means of the simulated environment.
	Means []float64
	// Algorithm and Rho define the experiment created.
	Algorithm string
	Rho       float64
	// Experiment is the id of the experiment created.
	Experiment string
	// Concurrency is the number of clients, in [1, 4096].
	Concurrency int
	// Duration bounds the run when Pairs is 0.
	Duration time.Duration
	// Pairs stops the run after this many decision+reward pairs (0:
	// run for Duration).
	Pairs int64
	// Units is the number of distinct unit ids, cycled through (0: one
	// unit per event).
	Units int64
	// Seed seeds the simulated rewards.
	Seed uint64
	// Site, if set, drives the experiment through the Personalizer
	// surface (rank and reward, docs/personalizer.md) on a simulated
	// site instead of the native API on the Bernoulli arms of Means.
	Site *Site
	// Progress, if set, is called every second with the pairs done and
	// the errors so far.
	Progress func(elapsed time.Duration, pairs, errors int64)
}

// Report is what a load test measured.
type Report struct {
	// Pairs completed, and the requests (decisions and rewards) answered.
	Pairs, Requests int64
	// Errors counts failed requests; First is the first one.
	Errors int64
	First  error
	// Retries counts the requests sent again after a 503 (a replica
	// handing an experiment over, or one that died: docs/service.md).
	Retries int64
	// Late counts the rewards answered 409: their event was settled
	// without them (past its reward window; or, in an experiment created
	// before pooled rewards, overdue, the others' rewards having come
	// long before: docs/service.md), as a late conversion is. Not errors: the pair is done (Err bounds them).
	Late int64
	// Elapsed is the wall time of the run.
	Elapsed time.Duration
	// Decisions and Rewards are latency quantiles: p50, p99, p999.
	Decisions, Rewards [3]time.Duration
	// Regret is the pseudo-regret of the decisions taken.
	Regret float64
	// Learned and Ignored are the experiment's own counts of its
	// rewards at the end (GET /v1/experiments/ID): a run whose rewards
	// the policy does not learn (a unit's limit, the server's cap on a
	// unit's ledger) shows it here, not in its regret alone.
	Learned, Ignored int64
}

// maxLate bounds the share of late rewards of a sound run: a few in 10^6
// pairs come late when a client stalls while the others go on
// (docs/performance.md); many more mean slots settled before their
// rewards could come.
const maxLate = 1e-3

// Err reports what went wrong in the run: failed requests, or more late
// rewards than maxLate of the pairs.
func (r *Report) Err() error {
	switch {
	case r.Errors > 0:
		return fmt.Errorf("%d requests failed; the first: %v", r.Errors, r.First)
	case float64(r.Late) > maxLate*float64(r.Pairs):
		return fmt.Errorf("%d of %d rewards came after their events were settled without them (more than %g): the service resolves slots before their rewards can come", r.Late, r.Pairs, maxLate)
	}
	return nil
}

// ErrConfig is returned (wrapped) for a Config that cannot run.
var ErrConfig = errors.New("loadgen: bad config")

// ConfigError is a Config field that cannot run (ErrConfig), named as
// the flag of dpbandit loadtest that sets it: means, concurrency, url,
// decisions (Pairs), duration, units, rho.
type ConfigError struct {
	Field, Reason string
}

func (e *ConfigError) Error() string { return "loadgen: bad config: " + e.Field + ": " + e.Reason }

// Unwrap makes a ConfigError an ErrConfig.
func (e *ConfigError) Unwrap() error { return ErrConfig }

// Validate reports a *ConfigError for a config that cannot run, or
// would run other than asked; Run calls it before any request.
func (cfg Config) Validate() error {
	bad := func(field, format string, a ...any) error {
		return &ConfigError{Field: field, Reason: fmt.Sprintf(format, a...)}
	}
	if cfg.Site != nil {
		if err := cfg.Site.validate(); err != nil {
			return err
		}
	} else if _, err := env.NewBernoulli(cfg.Means); err != nil {
		return bad("means", "%v", err)
	}
	if cfg.Concurrency < 1 || cfg.Concurrency > 4096 {
		return bad("concurrency", "must lie in [1, 4096], got %d", cfg.Concurrency)
	}
	if u, err := url.Parse(cfg.URL); err != nil || u.Scheme != "http" {
		return bad("url", "must be an http:// URL, got %q", cfg.URL)
	}
	switch {
	case cfg.Pairs < 0:
		return bad("decisions", "must be a number of pairs >= 0 (0: run for the duration), got %d", cfg.Pairs)
	case cfg.Pairs == 0 && cfg.Duration <= 0:
		return bad("duration", "must be positive to bound a run without a number of decisions, got %v", cfg.Duration)
	case cfg.Units < 0:
		return bad("units", "must be a number of unit ids >= 0 (0: one unit per event), got %d", cfg.Units)
	}
	if _, err := privacy.NewZCDP(cfg.Rho); err != nil {
		return bad("rho", "must be positive and finite, got %v", cfg.Rho)
	}
	return nil
}

// Run creates the experiment and runs the clients until Pairs are done,
// Duration has passed, or ctx ends.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	base := strings.TrimRight(cfg.URL, "/")
	c := &client{base: base, token: cfg.Token, http: &http.Client{
		Timeout:   30 * time.Second,
		Transport: &http.Transport{MaxIdleConns: cfg.Concurrency * 2, MaxIdleConnsPerHost: cfg.Concurrency * 2, IdleConnTimeout: time.Minute}}}
	if err := create(ctx, c, cfg); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if cfg.Pairs == 0 {
		ctx, cancel = context.WithTimeout(ctx, cfg.Duration)
		defer cancel()
	}
	u, _ := url.Parse(base)
	addr := u.Host
	if u.Port() == "" {
		addr += ":80"
	}
	l := &load{cfg: cfg, addr: addr, host: u.Host, start: time.Now()}
	if cfg.Site != nil {
		l.traffic, l.auth = newSite(cfg), "Ocp-Apim-Subscription-Key: "+cfg.Site.key(cfg.Experiment)
	} else {
		l.traffic, l.auth = newArms(cfg), bearer(cfg.Token)
	}
	var wg sync.WaitGroup
	for w := range cfg.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l.worker(ctx, w)
		}()
	}
	stop := make(chan struct{})
	if cfg.Progress != nil {
		go l.progress(stop)
	}
	wg.Wait()
	close(stop)
	rep := l.report()
	var st struct{ Learned, Ignored int64 }
	if err := c.get(context.WithoutCancel(ctx), "/v1/experiments/"+cfg.Experiment, &st); err != nil {
		return rep, fmt.Errorf("reading the experiment's counts: %w", err)
	}
	rep.Learned, rep.Ignored = st.Learned, st.Ignored
	return rep, nil
}

// create creates the load's experiment.
func create(ctx context.Context, c *client, cfg Config) error {
	spec := map[string]any{"id": cfg.Experiment, "privacy": map[string]float64{"rho": cfg.Rho}}
	if cfg.Algorithm != "" {
		spec["algorithm"] = cfg.Algorithm
	}
	if cfg.Site != nil {
		spec["surface"] = "personalizer"
	} else {
		spec["arms"], spec["reward_range"], spec["max_rewards_per_unit"] = len(cfg.Means), []float64{0, 1}, 1
		if cfg.Units > 0 {
			spec["max_rewards_per_unit"] = 1000000
		}
	}
	raw, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	if _, err := c.post(ctx, "/v1/experiments", raw, nil); err != nil {
		return fmt.Errorf("creating the experiment: %w", err)
	}
	return nil
}

// load is one run's shared state: its configuration, its counts and the
// latencies its workers measured.
type load struct {
	cfg              Config
	traffic          traffic
	addr, host, auth string // auth: the header line of the key or token
	start            time.Time

	done, fails, retries, late atomic.Int64
	firstErr                   atomic.Pointer[error]
	regret                     atomicFloat

	mu         sync.Mutex
	latD, latR []time.Duration
}

// worker sends decision and reward pairs on a connection of its own
// until ctx ends or the pairs are all sent.
func (l *load) worker(ctx context.Context, w int) {
	r := rand.New(rand.NewPCG(l.cfg.Seed, uint64(w)))
	var body []byte
	wr := &wire{addr: l.addr, host: l.host, auth: l.auth}
	defer wr.close()
	var ld, lr []time.Duration
	defer func() {
		l.mu.Lock()
		l.latD, l.latR = append(l.latD, ld...), append(l.latR, lr...)
		l.mu.Unlock()
	}()
	fail := func(what string, err error, resp []byte) {
		if ctx.Err() == nil {
			l.fails.Add(1)
			storeFirst(&l.firstErr, fmt.Errorf("%s: %v %s", what, err, resp))
		}
	}
	for i := 0; ctx.Err() == nil; i++ {
		n := l.done.Add(1)
		if l.cfg.Pairs > 0 && n > l.cfg.Pairs {
			return
		}
		ev := fmt.Sprintf("%d-%d", w, i)
		unit := ev
		if l.cfg.Units > 0 {
			unit = fmt.Sprint(n % l.cfg.Units)
		}
		t0 := time.Now()
		path, b, seen := l.traffic.decision(body[:0], r, ev, unit)
		body = b
		resp, err := wr.retry(ctx, path, body, &l.retries)
		gap, reward, ok := l.traffic.outcome(resp, r, seen)
		if err != nil || !ok {
			fail("decision", err, resp)
			continue
		}
		t1 := time.Now()
		ld = append(ld, t1.Sub(t0))
		l.regret.add(gap)
		path, body = l.traffic.reward(body[:0], ev, reward)
		resp, err = wr.retry(ctx, path, body, &l.retries)
		var se statusError
		switch {
		case errors.As(err, &se) && se == 409:
			l.late.Add(1) // (answered without a commit: not among the latencies)
		case err != nil:
			fail("reward", err, resp)
			continue
		default:
			lr = append(lr, time.Since(t1))
		}
	}
}

// progress reports the load every second until stop is closed.
func (l *load) progress(stop chan struct{}) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			done := l.done.Load()
			l.cfg.Progress(time.Since(l.start), min(done, max(l.cfg.Pairs, done)), l.fails.Load())
		}
	}
}

// report returns the load's report once its workers are done (but the
// experiment's counts).
func (l *load) report() *Report {
	rep := &Report{Pairs: int64(len(l.latR)) + l.late.Load(), Requests: int64(len(l.latD)+len(l.latR)) + l.late.Load(), Errors: l.fails.Load(),
		Retries: l.retries.Load(), Late: l.late.Load(), Elapsed: time.Since(l.start), Regret: l.regret.load()}
	copy(rep.Decisions[:], quantiles(l.latD, 0.5, 0.99, 0.999))
	copy(rep.Rewards[:], quantiles(l.latR, 0.5, 0.99, 0.999))
	if p := l.firstErr.Load(); p != nil {
		rep.First = *p
	}
	return rep
}

// quantiles returns the q-quantiles of d (nearest rank), rounded to µs.
func quantiles(d []time.Duration, qs ...float64) []time.Duration {
	out := make([]time.Duration, len(qs))
	if len(d) == 0 {
		return out
	}
	s := slices.Clone(d)
	slices.Sort(s)
	for i, q := range qs {
		out[i] = s[min(len(s)-1, int(q*float64(len(s))))].Round(time.Microsecond)
	}
	return out
}

// atomicFloat is a float64 sum updated by many goroutines.
type atomicFloat struct {
	mu sync.Mutex
	x  float64
}

func (a *atomicFloat) add(v float64) { a.mu.Lock(); a.x += v; a.mu.Unlock() }
func (a *atomicFloat) load() float64 { a.mu.Lock(); defer a.mu.Unlock(); return a.x }

// client calls the service's JSON API (the experiment's creation).
type client struct {
	base, token string
	http        *http.Client
}

// get decodes the 2xx answer to a GET into out.
func (c *client) get(ctx context.Context, path string, out any) error {
	_, err := c.do(ctx, "GET", path, nil, out)
	return err
}

// post sends a JSON body and decodes a 2xx answer into out (if set).
func (c *client) post(ctx context.Context, path string, body []byte, out any) (int, error) {
	return c.do(ctx, "POST", path, body, out)
}

// do sends a request and decodes a 2xx answer into out (if set).
func (c *client) do(ctx context.Context, method, path string, body []byte, out any) (int, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, err
	}
	if resp.StatusCode/100 != 2 {
		return resp.StatusCode, fmt.Errorf("%s: %d %s", path, resp.StatusCode, strings.TrimSpace(string(raw)))
	}
	if out != nil {
		return resp.StatusCode, json.Unmarshal(raw, out)
	}
	return resp.StatusCode, nil
}

// storeFirst keeps the first error.
func storeFirst(p *atomic.Pointer[error], err error) { p.CompareAndSwap(nil, &err) }

// wire is one client's keep-alive HTTP/1.1 connection: it writes each
// POST as one preformatted buffer and reads the answer's status line,
// Content-Length and body (the service's JSON answers are short and
// always carry a length; a 204 has no body).
type wire struct {
	addr, host, auth string // auth: a header line, or ""
	conn             net.Conn
	r                *bufio.Reader
	buf, resp        []byte
}

// bearer is the header line of an admin token ("" without one).
func bearer(token string) string {
	if token == "" {
		return ""
	}
	return "Authorization: Bearer " + token
}

func (w *wire) close() {
	if w.conn != nil {
		w.conn.Close()
		w.conn = nil
	}
}

// retry posts until the answer is not a 503, as clients are told to
// (the same request, after a pause, for at most 30 s), counting the
// retries.
func (w *wire) retry(ctx context.Context, path string, body []byte, retries *atomic.Int64) ([]byte, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := w.post(path, body)
		var se statusError
		if !errors.As(err, &se) || se != 503 || ctx.Err() != nil || time.Now().After(deadline) {
			return resp, err
		}
		retries.Add(1)
		time.Sleep(20 * time.Millisecond)
	}
}

// statusError is a non-2xx answer's status.
type statusError int

func (e statusError) Error() string { return fmt.Sprintf("status %d", int(e)) }

// post sends a JSON body and returns the answer's body; a non-2xx status
// is an error (statusError).
func (w *wire) post(path string, body []byte) ([]byte, error) {
	if w.conn == nil {
		c, err := net.DialTimeout("tcp", w.addr, 10*time.Second)
		if err != nil {
			return nil, err
		}
		w.conn, w.r = c, bufio.NewReaderSize(c, 8192)
	}
	w.conn.SetDeadline(time.Now().Add(30 * time.Second))
	b := append(w.buf[:0], "POST "...)
	b = append(b, path...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, w.host...)
	b = append(b, "\r\nContent-Type: application/json\r\nContent-Length: "...)
	b = strconv.AppendInt(b, int64(len(body)), 10)
	if w.auth != "" {
		b = append(b, "\r\n"...)
		b = append(b, w.auth...)
	}
	b = append(b, "\r\n\r\n"...)
	b = append(b, body...)
	w.buf = b
	if _, err := w.conn.Write(b); err != nil {
		w.close()
		return nil, err
	}
	status, n := 0, -1
	for first := true; ; first = false {
		line, err := w.r.ReadSlice('\n')
		if err != nil {
			w.close()
			return nil, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if first {
			if f := bytes.Fields(line); len(f) >= 2 {
				status, _ = strconv.Atoi(string(f[1]))
			}
			continue
		}
		if len(line) == 0 {
			break
		}
		if k, v, ok := bytes.Cut(line, []byte(":")); ok && strings.EqualFold(string(k), "Content-Length") {
			n, _ = strconv.Atoi(strings.TrimSpace(string(v)))
		}
	}
	if status == 204 {
		n = 0
	}
	if n < 0 || n > 1<<20 {
		w.close()
		return nil, fmt.Errorf("answer without a usable Content-Length (status %d)", status)
	}
	w.resp = append(w.resp[:0], make([]byte, n)...)
	if _, err := io.ReadFull(w.r, w.resp); err != nil {
		w.close()
		return nil, err
	}
	if status/100 != 2 {
		return w.resp, statusError(status)
	}
	return w.resp, nil
}
