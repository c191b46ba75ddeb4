package service

import (
	"bufio"
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/dpbandit/dpbandit/bandit"
)

// Roles of a token.
const (
	// RoleClient may take decisions and report rewards.
	RoleClient = "client"
	// RoleAdmin may also create experiments and read their state, logs,
	// ledgers, metrics and the dashboard.
	RoleAdmin = "admin"
)

// Token is what a bearer token grants: a role in one tenant.
type Token struct {
	Tenant string
	Role   string
}

// LoadTokens reads a token file: one token per line, "TOKEN TENANT ROLE"
// separated by spaces, ROLE client or admin; blank lines and lines
// starting with # are skipped. Tokens must have at least 16 characters.
func LoadTokens(r io.Reader) (map[string]Token, error) {
	out := map[string]Token{}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 3 || (f[2] != RoleClient && f[2] != RoleAdmin) {
			return nil, fmt.Errorf("token file line %d: want \"TOKEN TENANT client|admin\"", n)
		}
		if strings.Contains(f[1], "/") {
			return nil, fmt.Errorf("token file line %d: a tenant name cannot contain '/'", n)
		}
		if len(f[0]) < 16 {
			return nil, fmt.Errorf("token file line %d: a token needs at least 16 characters", n)
		}
		if _, dup := out[f[0]]; dup {
			return nil, fmt.Errorf("token file line %d: the token is listed twice", n)
		}
		out[f[0]] = Token{Tenant: f[1], Role: f[2]}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, errors.New("the token file lists no token")
	}
	return out, nil
}

// Body limits.
const (
	maxBody  = 1 << 20 // one JSON request
	maxBatch = 8 << 20 // a batch of rewards
	maxCtx   = 64 << 10
)

// Handler returns the service's HTTP handler.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	route := func(pattern, role string, h func(w http.ResponseWriter, r *http.Request, t Token) (any, error)) {
		name := pattern
		lat, ok := s.m.latency.WithLabelValues(name), s.m.requests.WithLabelValues(name, "200")
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			if code := s.serve(w, r, role, h); code == 200 {
				ok.Inc()
			} else {
				s.m.requests.WithLabelValues(name, strconv.Itoa(code)).Inc()
			}
			lat.Observe(time.Since(start).Seconds())
		})
	}
	route("POST /v1/experiments", RoleAdmin, s.handleCreate)
	route("GET /v1/experiments", RoleAdmin, s.handleList)
	route("GET /v1/experiments/{id}", RoleAdmin, s.handleState)
	route("POST /v1/experiments/{id}/decisions", RoleClient, s.handleDecide)
	route("POST /v1/experiments/{id}/rewards", RoleClient, s.handleRewards)
	route("GET /v1/experiments/{id}/log", RoleAdmin, s.handleLog)
	route("GET /v1/units/{unit}/ledger", RoleAdmin, s.handleLedger)
	route("GET /healthz", "", s.handleHealth)
	route("GET /{$}", RoleAdmin, s.handleDashboard)
	metrics := promhttp.HandlerFor(s.m.reg, promhttp.HandlerOpts{})
	route("GET /metrics", RoleAdmin, func(w http.ResponseWriter, r *http.Request, _ Token) (any, error) {
		metrics.ServeHTTP(w, r)
		return nil, nil
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 404, map[string]string{"error": fmt.Sprintf("no route %s %s (see the README's API section)", r.Method, r.URL.Path)})
	})
	return mux
}

// serve authenticates, runs h and writes its result or error as JSON
// (h writes itself and returns nil, nil for other content). It returns
// the status code.
func (s *Server) serve(w http.ResponseWriter, r *http.Request, role string, h func(http.ResponseWriter, *http.Request, Token) (any, error)) (code int) {
	defer func() {
		if p := recover(); p != nil {
			s.cfg.Logger.Error("panic in handler", "path", r.URL.Path, "panic", p)
			code = 500
			writeJSON(w, code, map[string]string{"error": "internal error"})
		}
	}()
	tok, err := s.auth(r, role)
	if err == nil {
		var out any
		out, err = h(w, r, tok)
		if err == nil {
			if out == nil {
				return 200
			}
			writeJSON(w, 200, out)
			return 200
		}
	}
	code = 500
	var ae *apiError
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &ae):
		code = ae.status
	case errors.As(err, &mbe):
		code, err = 413, fmt.Errorf("request body larger than %d bytes", mbe.Limit)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		code = 503
	}
	if code == 401 {
		w.Header().Set("WWW-Authenticate", `Bearer realm="dpbandit"`)
	}
	writeJSON(w, code, map[string]string{"error": err.Error()})
	return code
}

// auth returns the request's token, checking its role. Without a token
// file every request is an admin of tenant "default".
func (s *Server) auth(r *http.Request, role string) (Token, error) {
	if s.cfg.Tokens == nil || role == "" {
		return Token{Tenant: "default", Role: RoleAdmin}, nil
	}
	raw, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok && r.URL.Path == "/" {
		raw = r.URL.Query().Get("token") // the dashboard, from a browser
	}
	var found *Token
	for k, t := range s.cfg.Tokens {
		if subtle.ConstantTimeCompare([]byte(k), []byte(raw)) == 1 {
			found = &t
		}
	}
	if raw == "" || found == nil {
		return Token{}, errorf(401, "missing or unknown bearer token")
	}
	if role == RoleAdmin && found.Role != RoleAdmin {
		return Token{}, errorf(403, "this needs an admin token")
	}
	return *found, nil
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

// decode reads one JSON value into v strictly: unknown fields, trailing
// data and bodies over limit are errors (400, or 413).
func decode(r io.Reader, v any) error {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return err
		}
		return errorf(400, "invalid JSON: %v", err)
	}
	if dec.More() {
		return errorf(400, "invalid JSON: data after the object")
	}
	if _, err := dec.Token(); err != io.EOF {
		return errorf(400, "invalid JSON: data after the object")
	}
	return nil
}

func (s *Server) writable() error {
	if err := s.Err(); err != nil {
		return errorf(503, "the service stopped taking writes after a store failure: %v", err)
	}
	return nil
}

// writableExperiment returns the tenant's experiment named in the path
// (404 when there is none), when the service still takes writes (503
// otherwise).
func (s *Server) writableExperiment(t Token, r *http.Request) (*live, error) {
	l, err := s.get(t.Tenant, r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	return l, s.writable()
}

func (s *Server) handleCreate(w http.ResponseWriter, r *http.Request, t Token) (any, error) {
	if err := s.writable(); err != nil {
		return nil, err
	}
	var sp Spec
	if err := decode(http.MaxBytesReader(w, r.Body, maxBody), &sp); err != nil {
		return nil, err
	}
	l, err := s.create(r.Context(), t.Tenant, sp)
	if err != nil {
		return nil, err
	}
	return s.state(l), nil
}

func (s *Server) handleList(_ http.ResponseWriter, _ *http.Request, t Token) (any, error) {
	out := []State{}
	for _, l := range s.list(t.Tenant) {
		out = append(out, s.state(l))
	}
	return out, nil
}

func (s *Server) handleState(_ http.ResponseWriter, r *http.Request, t Token) (any, error) {
	l, err := s.get(t.Tenant, r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	return s.state(l), nil
}

// checkID checks an event or unit id.
func checkID(name, v string) error {
	if v == "" || len(v) > 128 {
		return errorf(400, "%s must be a string of 1 to 128 bytes", name)
	}
	return nil
}

func (s *Server) handleDecide(w http.ResponseWriter, r *http.Request, t Token) (any, error) {
	l, err := s.writableExperiment(t, r)
	if err != nil {
		return nil, err
	}
	var req struct {
		EventID string          `json:"event_id"`
		UnitID  string          `json:"unit_id"`
		Context json.RawMessage `json:"context"`
	}
	if err := decode(http.MaxBytesReader(w, r.Body, maxBody), &req); err != nil {
		return nil, err
	}
	if err := checkID("event_id", req.EventID); err != nil {
		return nil, err
	}
	if err := checkID("unit_id", req.UnitID); err != nil {
		return nil, err
	}
	ctxt, set, err := checkContext(req.Context, l)
	if err != nil {
		return nil, err
	}
	return s.decide(r.Context(), l, req.EventID, req.UnitID, ctxt, set)
}

// checkContext validates a decision's context and returns it compacted,
// with the decision set of a contextual experiment: there it is required,
// Arms vectors of dimension Dim and norm at most 1. For a linear
// experiment it may be absent or a vector of the actions' dimension with
// norm at most 1; for a finite-armed one, absent or any JSON value. At
// most 64 KiB; it is kept for the log (the non-contextual policies do
// not use it).
func checkContext(raw json.RawMessage, l *live) (string, [][]float64, error) {
	if len(raw) == 0 || string(raw) == "null" {
		if l.def.Dim > 0 {
			return "", nil, errorf(400, "context is required: the decision set, %d vectors of dimension %d", l.def.Arms, l.def.Dim)
		}
		return "", nil, nil
	}
	if len(raw) > maxCtx {
		return "", nil, errorf(413, "context larger than %d bytes", maxCtx)
	}
	var set [][]float64
	switch {
	case l.def.Dim > 0:
		if err := json.Unmarshal(raw, &set); err != nil {
			return "", nil, errorf(400, "context must be the decision set, %d vectors of numbers: %v", l.def.Arms, err)
		}
		if len(set) != l.def.Arms {
			return "", nil, errorf(400, "context has %d actions, the experiment has %d arms", len(set), l.def.Arms)
		}
		for i, v := range set {
			if err := checkVector(fmt.Sprintf("action %d", i), v, l.def.Dim); err != nil {
				return "", nil, err
			}
		}
	case len(l.def.Actions) > 0:
		var v []float64
		if err := json.Unmarshal(raw, &v); err != nil {
			return "", nil, errorf(400, "context must be a vector of numbers: %v", err)
		}
		if err := checkVector("context", v, len(l.def.Actions[0])); err != nil {
			return "", nil, err
		}
	}
	var c bytes.Buffer
	if err := json.Compact(&c, raw); err != nil {
		return "", nil, errorf(400, "invalid context: %v", err)
	}
	return c.String(), set, nil
}

// checkVector checks a vector's dimension and that its norm is at most 1.
func checkVector(name string, v []float64, d int) error {
	if len(v) != d {
		return errorf(400, "%s has dimension %d, want %d", name, len(v), d)
	}
	var n2 float64
	for _, x := range v {
		n2 += x * x
	}
	if n2 > 1+1e-9 {
		return errorf(400, "%s has norm %.6g; it must be at most 1", name, math.Sqrt(n2))
	}
	return nil
}

// rewardReq is one reward.
type rewardReq struct {
	EventID string   `json:"event_id"`
	Reward  *float64 `json:"reward"`
}

func (s *Server) oneReward(ctx context.Context, l *live, q rewardReq) (RewardResult, error) {
	if err := checkID("event_id", q.EventID); err != nil {
		return RewardResult{}, err
	}
	if q.Reward == nil {
		return RewardResult{}, errorf(400, "reward is missing")
	}
	return s.reward(ctx, l, q.EventID, *q.Reward)
}

// handleRewards takes one reward (a JSON object) or a batch (newline-
// delimited JSON, Content-Type application/x-ndjson), answering the batch
// with one status line per line.
func (s *Server) handleRewards(w http.ResponseWriter, r *http.Request, t Token) (any, error) {
	l, err := s.writableExperiment(t, r)
	if err != nil {
		return nil, err
	}
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-ndjson") {
		var q rewardReq
		if err := decode(http.MaxBytesReader(w, r.Body, maxBody), &q); err != nil {
			return nil, err
		}
		return s.oneReward(r.Context(), l, q)
	}
	type line struct {
		Line int `json:"line"`
		RewardResult
		Code  int    `json:"code"`
		Error string `json:"error,omitempty"`
	}
	var out []line
	sc := bufio.NewScanner(http.MaxBytesReader(w, r.Body, maxBatch))
	sc.Buffer(make([]byte, 64<<10), maxBody)
	for n := 1; sc.Scan(); n++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var q rewardReq
		res, err := RewardResult{}, decode(bytes.NewReader(sc.Bytes()), &q)
		if err == nil {
			res, err = s.oneReward(r.Context(), l, q)
		}
		ln := line{Line: n, RewardResult: res, Code: 200}
		if err != nil {
			ln.Code, ln.Error, ln.EventID = 500, err.Error(), q.EventID
			var ae *apiError
			if errors.As(err, &ae) {
				ln.Code = ae.status
			}
		}
		out = append(out, ln)
	}
	if err := sc.Err(); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, err
		}
		return nil, errorf(400, "reading the batch: %v", err)
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	enc := json.NewEncoder(w)
	for _, ln := range out {
		enc.Encode(ln)
	}
	return nil, nil
}

func (s *Server) handleLog(w http.ResponseWriter, r *http.Request, t Token) (any, error) {
	l, err := s.get(t.Tenant, r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	if !s.cfg.KeepLog {
		return nil, errorf(409, "the log is kept only with --keep-log: rewards of released episodes are deleted")
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	enc := json.NewEncoder(w)
	// Field names follow the Open Bandit Pipeline's logged bandit feedback
	// (action, reward, pscore, context, position), with the event, unit
	// and time the service adds.
	return nil, s.cfg.Store.Log(r.Context(), l.def.key(), func(e Event) error {
		rec := map[string]any{"event_id": e.ID, "unit_id": e.Unit, "action": e.Arm, "position": 0, "pscore": 1.0,
			"reward": e.Reward, "status": e.Status, "learned": e.Status == Learned || e.Status == Defaulted,
			"timestamp": time.Unix(0, e.Decided).UTC().Format(time.RFC3339Nano), "policy_version": e.Plan}
		if e.Context != "" {
			rec["context"] = json.RawMessage(e.Context)
		}
		return enc.Encode(rec)
	})
}

// LedgerView is a unit's ledger as the API shows it to a tenant.
type LedgerView struct {
	Unit string `json:"unit_id"`
	// Experiments are the tenant's experiments the unit contributed to.
	Experiments []LedgerRow `json:"experiments"`
	// TotalNanoRho and TotalRho sum them (zCDP composes additively).
	TotalNanoRho int64   `json:"total_nano_rho"`
	TotalRho     float64 `json:"total_rho"`
	// CapNanoRho is the server-wide cap (0: none).
	CapNanoRho int64 `json:"cap_nano_rho"`
}

func (s *Server) handleLedger(_ http.ResponseWriter, r *http.Request, t Token) (any, error) {
	unit := r.PathValue("unit")
	if err := checkID("unit_id", unit); err != nil {
		return nil, err
	}
	rows, err := s.cfg.Store.Ledger(r.Context(), unit)
	if err != nil {
		return nil, err
	}
	v := LedgerView{Unit: unit, Experiments: []LedgerRow{}, CapNanoRho: s.cfg.UnitBudget}
	for _, row := range rows {
		id, ok := strings.CutPrefix(row.Experiment, t.Tenant+"/")
		if !ok {
			continue // another tenant's
		}
		row.Experiment = id
		v.Experiments = append(v.Experiments, row)
		v.TotalNanoRho += row.NanoRho
	}
	v.TotalRho = float64(v.TotalNanoRho) / 1e9
	return v, nil
}

func (s *Server) handleHealth(w http.ResponseWriter, _ *http.Request, _ Token) (any, error) {
	if err := s.Err(); err != nil {
		return nil, errorf(503, "unhealthy: %v", err)
	}
	return map[string]string{"status": "ok"}, nil
}

// State is what the API shows of an experiment: its definition, public
// counts and released (noisy) statistics, never raw rewards.
type State struct {
	Definition
	counts
	// Episodes is the number of plans the policy has started.
	Episodes int64 `json:"episodes"`
	// PolicyVersion is the current plan's number.
	PolicyVersion int64 `json:"policy_version"`
	// Pending counts the current plan's decisions waiting for a reward.
	Pending int64 `json:"pending"`
	// Pulls counts decisions per arm.
	Pulls []int64 `json:"pulls"`
	// Released are the arms' released statistics, for policies that
	// show them (bandit.Releaser).
	Released []bandit.ArmStat `json:"released,omitempty"`
	// Releases counts every release; Recent are the last ones.
	Releases int       `json:"releases"`
	Recent   []Release `json:"recent_releases"`
}

func (s *Server) state(l *live) State {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, v := l.pol.Plan()
	st := State{Definition: l.def, counts: l.n, Episodes: v, PolicyVersion: v, Pending: l.pol.Pending(),
		Pulls: append([]int64(nil), l.pulls...), Releases: len(l.rels)}
	if ep, ok := l.pol.Policy().(bandit.Episodic); ok {
		st.Episodes = ep.Episodes()
	}
	if rl, ok := l.pol.Policy().(bandit.Releaser); ok {
		st.Released = rl.Released()
	}
	st.Recent = append([]Release{}, l.rels[max(0, len(l.rels)-10):]...)
	return st
}
