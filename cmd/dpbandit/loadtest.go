package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
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
)

// loadtestCmd drives a running service: it creates an experiment on a
// Bernoulli instance and runs closed-loop clients, each taking a
// decision, drawing the arm's reward and reporting it. A load generator
// of our own rather than vegeta: every reward depends on the decision
// before it (its arm and event id), which an open-loop generator of
// fixed targets cannot express; and each client speaks HTTP/1.1 on one
// keep-alive connection with preformatted requests (wire), so that the
// generator takes as little as it can of a machine it shares with the
// service.
func loadtestCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("loadtest", stdout)
	base := fs.String("url", "http://127.0.0.1:8080", "the service's base `URL`")
	token := fs.String("token", "", "admin bearer `token` (when the service has a token file)")
	means := fs.String("means", "0.75,0.625,0.5,0.375,0.25", "Bernoulli arm `means` of the simulated environment")
	algo := fs.String("algo", "adac-ucb", "algorithm `spec` of the experiment")
	rho := fs.Float64("rho", 0.5, "zCDP budget `rho`")
	id := fs.String("experiment", "", "experiment `id` to create (default loadtest-TIME)")
	conc := fs.Int("concurrency", 32, "concurrent `clients`")
	dur := fs.Duration("duration", 30*time.Second, "run for this `duration`")
	total := fs.Int64("decisions", 0, "stop after this many decision+reward `pairs` (0: run for --duration)")
	units := fs.Int64("units", 0, "`number` of distinct unit ids, cycled through (0: one unit per event)")
	seed := fs.Uint64("seed", 1, "`seed` of the simulated rewards")
	quiet := fs.Bool("quiet", false, "no progress line")
	if err := parse(fs, args); err != nil {
		return err
	}
	ms, err := floatList("means", *means)
	if err != nil {
		return usageError{err}
	}
	inst, err := env.NewBernoulli(ms)
	if err != nil {
		return usageError{err}
	}
	if *conc < 1 || *conc > 4096 {
		return usageError{fmt.Errorf("--concurrency must lie in [1, 4096], got %d", *conc)}
	}
	if *id == "" {
		*id = "loadtest-" + time.Now().UTC().Format("20060102T150405.000")
		*id = strings.ReplaceAll(*id, ".", "-")
	}
	c := &client{base: strings.TrimRight(*base, "/"), token: *token, http: &http.Client{
		Timeout:   30 * time.Second,
		Transport: &http.Transport{MaxIdleConns: *conc * 2, MaxIdleConnsPerHost: *conc * 2, IdleConnTimeout: time.Minute}}}
	spec := map[string]any{"id": *id, "algorithm": *algo, "arms": len(ms), "reward_range": []float64{0, 1},
		"privacy": map[string]float64{"rho": *rho}, "max_rewards_per_unit": 1}
	if *units > 0 {
		spec["max_rewards_per_unit"] = 1000000
	}
	raw, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	if _, err := c.post(ctx, "/v1/experiments", raw, nil); err != nil {
		return fmt.Errorf("creating the experiment: %w", err)
	}
	fmt.Fprintf(stdout, "experiment %s: %s, %d arms, rho %g; %d clients\n", *id, *algo, len(ms), *rho, *conc)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if *total == 0 {
		ctx, cancel = context.WithTimeout(ctx, *dur)
		defer cancel()
	}
	var done, fails atomic.Int64
	var firstErr atomic.Pointer[error]
	u, err := url.Parse(c.base)
	if err != nil || u.Scheme != "http" {
		return usageError{fmt.Errorf("--url must be an http:// URL, got %q", c.base)}
	}
	addr, host := u.Host, u.Host
	if u.Port() == "" {
		addr += ":80"
	}
	var mu sync.Mutex
	var latD, latR []time.Duration
	gaps := env.Gaps(ms)
	decisions, rewards := "/v1/experiments/"+*id+"/decisions", "/v1/experiments/"+*id+"/rewards"
	var regret atomicFloat
	start := time.Now()
	var wg sync.WaitGroup
	for w := range *conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(*seed, uint64(w)))
			var body []byte
			wr := &wire{addr: addr, host: host, token: *token}
			defer wr.close()
			var ld, lr []time.Duration
			defer func() {
				mu.Lock()
				latD, latR = append(latD, ld...), append(latR, lr...)
				mu.Unlock()
			}()
			for i := 0; ctx.Err() == nil; i++ {
				n := done.Add(1)
				if *total > 0 && n > *total {
					return
				}
				ev := fmt.Sprintf("%d-%d", w, i)
				unit := ev
				if *units > 0 {
					unit = fmt.Sprint(n % *units)
				}
				t0 := time.Now()
				body = append(strconv.AppendQuote(append(strconv.AppendQuote(append(body[:0], `{"event_id":`...), ev), `,"unit_id":`...), unit), '}')
				resp, err := wr.post(decisions, body)
				arm := armOf(resp)
				if err != nil || arm < 0 || arm >= len(ms) {
					if ctx.Err() == nil {
						fails.Add(1)
						storeFirst(&firstErr, fmt.Errorf("decision: %v %s", err, resp))
					}
					continue
				}
				t1 := time.Now()
				ld = append(ld, t1.Sub(t0))
				regret.add(gaps[arm])
				body = append(strconv.AppendFloat(append(strconv.AppendQuote(append(body[:0], `{"event_id":`...), ev), `,"reward":`...), inst.Draw(r, arm), 'g', -1, 64), '}')
				if resp, err := wr.post(rewards, body); err != nil {
					if ctx.Err() == nil {
						fails.Add(1)
						storeFirst(&firstErr, fmt.Errorf("reward: %v %s", err, resp))
					}
					if ctx.Err() == nil {
						fails.Add(1)
					}
					continue
				}
				lr = append(lr, time.Since(t1))
			}
		}()
	}
	stop := make(chan struct{})
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				if !*quiet {
					n := min(done.Load(), max(*total, done.Load()))
					el := time.Since(start).Seconds()
					fmt.Fprintf(stderr, "\r%5.1f s: %d pairs, %.0f pairs/s, %d errors   ", el, n, float64(n)/el, fails.Load())
				}
			}
		}
	}()
	wg.Wait()
	close(stop)
	el := time.Since(start)
	if !*quiet {
		fmt.Fprintln(stderr)
	}
	pairs := int64(len(latR))
	fmt.Fprintf(stdout, "%d decision+reward pairs in %.2f s: %.0f pairs/s (%.0f requests/s), %d errors\n",
		pairs, el.Seconds(), float64(pairs)/el.Seconds(), float64(len(latD)+len(latR))/el.Seconds(), fails.Load())
	for _, l := range []struct {
		name string
		d    []time.Duration
	}{{"decisions", latD}, {"rewards", latR}} {
		p := quantiles(l.d, 0.5, 0.99, 0.999)
		fmt.Fprintf(stdout, "%-9s latency p50 %s  p99 %s  p999 %s\n", l.name, p[0], p[1], p[2])
	}
	fmt.Fprintf(stdout, "pseudo-regret of the decisions: %.1f\n", regret.load())
	if fails.Load() > 0 {
		return fmt.Errorf("%d requests failed; the first: %v", fails.Load(), *firstErr.Load())
	}
	return nil
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

// client calls the service's JSON API.
type client struct {
	base, token string
	http        *http.Client
}

// post sends a JSON body and decodes a 2xx answer into out (if set).
func (c *client) post(ctx context.Context, path string, body []byte, out any) (int, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", c.base+path, bytes.NewReader(body))
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
// always carry a length).
type wire struct {
	addr, host, token string
	conn              net.Conn
	r                 *bufio.Reader
	buf, resp         []byte
}

func (w *wire) close() {
	if w.conn != nil {
		w.conn.Close()
		w.conn = nil
	}
}

// post sends a JSON body and returns the answer's body; a non-2xx status
// is an error.
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
	if w.token != "" {
		b = append(b, "\r\nAuthorization: Bearer "...)
		b = append(b, w.token...)
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
		return w.resp, fmt.Errorf("status %d", status)
	}
	return w.resp, nil
}

// armOf reads the "arm" of a decision answer (-1 if there is none).
func armOf(b []byte) int {
	_, after, ok := bytes.Cut(b, []byte(`"arm":`))
	if !ok {
		return -1
	}
	a := 0
	for i, c := range after {
		if c < '0' || c > '9' {
			if i == 0 {
				return -1
			}
			break
		}
		a = 10*a + int(c-'0')
	}
	return a
}
