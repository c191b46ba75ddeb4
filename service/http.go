package service

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/dpbandit/dpbandit/service/store"

	"github.com/dpbandit/dpbandit/service/fault"

	"github.com/dpbandit/dpbandit/bandit"
	"github.com/dpbandit/dpbandit/internal/linalg"
	"github.com/dpbandit/dpbandit/mechanism"
)

// Body limits.
const (
	maxBody  = 1 << 20 // one JSON request
	maxBatch = 8 << 20 // a batch of rewards
	maxCtx   = 64 << 10
)

// A route's handler returns a value to write as JSON (nil: it wrote the
// answer itself) or an error (its kind's status: status).
type handler func(w http.ResponseWriter, r *http.Request, t Token) (any, error)

// created is a handler's answer to a create: 201 with a Location.
type created struct {
	location string
	body     any
}

// errorBody is every error's JSON.
type errorBody struct {
	Error string `json:"error"`
}

// Handler returns the service's HTTP handler.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	// route serves pattern to the given roles; body is the content types
	// its POST takes (application/json when nil).
	route := func(pattern string, h handler, roles ...string) {
		lat, ok := s.m.latency.WithLabelValues(pattern), s.m.requests.WithLabelValues(pattern, "200")
		cookie := pattern == "GET /{$}"
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			if code := s.serve(w, r, cookie, roles, h); code == 200 {
				ok.Inc()
			} else {
				s.m.requests.WithLabelValues(pattern, strconv.Itoa(code)).Inc()
			}
			lat.Observe(time.Since(start).Seconds())
		})
	}
	route("POST /v1/experiments", s.handleCreate, RoleAdmin)
	route("GET /v1/experiments", s.handleList, RoleAdmin)
	route("GET /v1/experiments/{id}", s.routed(s.handleState), RoleAdmin)
	route("POST /v1/experiments/{id}/decisions", s.routed(s.handleDecide), RoleClient, RoleAdmin)
	route("POST /v1/experiments/{id}/rewards", s.routed(s.handleRewards), RoleClient, RoleAdmin)
	route("GET /v1/experiments/{id}/log", s.routed(s.handleLog), RoleAdmin)
	for verb, to := range map[string]string{"pause": store.Paused, "resume": store.Active, "archive": store.Archived} {
		route("POST /v1/experiments/{id}/"+verb, s.routed(func(_ http.ResponseWriter, r *http.Request, t Token) (any, error) {
			x, err := s.get(t.Tenant, r.PathValue("id"))
			if err != nil {
				return nil, err
			}
			return s.setStatus(r.Context(), x, to)
		}), RoleAdmin)
	}
	route("GET /v1/units/{unit}/ledger", s.handleLedger, RoleAdmin)
	route("GET /healthz", s.handleHealth)
	route("GET /readyz", s.handleHealth) // ready once New returned: the experiments are loaded
	route("GET /{$}", s.handleDashboard, RoleAdmin)
	route("GET /metrics", s.handleMetrics, RoleAdmin, RoleOperator)
	mux.HandleFunc("POST /login", s.handleLogin)
	mux.HandleFunc("POST /logout", s.handleLogout)
	return s.guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pattern := mux.Handler(r); pattern == "" {
			noRoute(w, r, mux)
			return
		}
		mux.ServeHTTP(w, r)
	}))
}

// noRoute answers a request no route takes: 405 with Allow when the path
// has routes for other methods, 404 otherwise, both as JSON.
func noRoute(w http.ResponseWriter, r *http.Request, mux *http.ServeMux) {
	var allow []string
	for _, m := range []string{"GET", "POST", "PUT", "PATCH", "DELETE"} {
		q := r.Clone(r.Context())
		q.Method = m
		if _, p := mux.Handler(q); p != "" {
			allow = append(allow, m)
		}
	}
	if len(allow) > 0 {
		w.Header().Set("Allow", strings.Join(allow, ", "))
		writeJSON(w, 405, errorBody{fmt.Sprintf("%s is not allowed on %s (allowed: %s)", r.Method, r.URL.Path, strings.Join(allow, ", "))})
		return
	}
	writeJSON(w, 404, errorBody{fmt.Sprintf("no route %s %s (see docs/service.md)", r.Method, r.URL.Path)})
}

// Content types a POST may carry.
const (
	jsonType   = "application/json"
	ndjsonType = "application/x-ndjson"
)

// contentType returns the request's media type, which must be one of
// allowed (415 otherwise): a browser's cross-site form can send only
// text/plain, form or multipart bodies without a preflight.
func contentType(r *http.Request, allowed ...string) (string, error) {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || !slices.Contains(allowed, mt) {
		return "", fault.Errorf(fault.UnsupportedMedia, "Content-Type must be %s, got %q", strings.Join(allowed, " or "), r.Header.Get("Content-Type"))
	}
	return mt, nil
}

// serve authenticates, runs h and writes its result or error as JSON
// (h writes itself and returns nil, nil for other content). It returns
// the status code.
func (s *Server) serve(w http.ResponseWriter, r *http.Request, cookie bool, roles []string, h handler) (code int) {
	defer func() {
		if p := recover(); p != nil {
			s.cfg.Logger.Error("panic in handler", "path", r.URL.Path, "panic", p)
			code = 500
			writeJSON(w, code, errorBody{"internal error"})
		}
	}()
	if cookie && s.cfg.Tokens != nil && r.Header.Get("Authorization") == "" {
		if _, err := r.Cookie(sessionCookie); err != nil || r.URL.Query().Has("token") {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.WriteHeader(401)
			msg := ""
			if r.URL.Query().Has("token") {
				msg = "tokens are not taken in the address (it ends up in logs and history): log in here"
			}
			loginPage.Execute(w, msg)
			return 401
		}
	}
	tok, err := s.auth(r, cookie, roles...)
	if err == nil && r.Method == "POST" && !strings.HasSuffix(r.URL.Path, "/rewards") {
		_, err = contentType(r, jsonType)
	}
	if err == nil {
		var out any
		out, err = h(w, r, tok)
		if c, ok := out.(created); ok && err == nil {
			w.Header().Set("Location", c.location)
			writeJSON(w, 201, c.body)
			return 201
		}
		if err == nil {
			if out == nil {
				return 200
			}
			writeJSON(w, 200, out)
			return 200
		}
	}
	code, err = status(err)
	if fault.Retryable(err) {
		w.Header().Set("Retry-After", "1")
	}
	if code == 401 {
		w.Header().Set("WWW-Authenticate", `Bearer realm="dpbandit"`)
	}
	writeJSON(w, code, errorBody{err.Error()})
	return code
}

// statuses maps the kinds of errors to HTTP statuses.
var statuses = map[fault.Kind]int{
	fault.Internal:         500,
	fault.Invalid:          400,
	fault.Unauthenticated:  401,
	fault.Forbidden:        403,
	fault.NotFound:         404,
	fault.Conflict:         409,
	fault.Gone:             410,
	fault.TooLarge:         413,
	fault.UnsupportedMedia: 415,
	fault.OutOfRange:       422,
	fault.Unavailable:      503,
}

// status returns the HTTP status of an error, and the error as the
// client is told it: its kind's status (fault), 413 for a body over its
// limit, 503 for a request that ended (retry), else 500. It is the one
// place where errors become statuses, for a request and for each line
// of a batch alike.
func status(err error) (int, error) {
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return 413, fmt.Errorf("request body larger than %d bytes", mbe.Limit)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return 503, err
	}
	return statuses[fault.Of(err)], err
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

func (s *Server) writable() error {
	if err := s.Err(); err != nil {
		return fault.Errorf(fault.Unavailable, "the service stopped taking writes after a store failure: %v", err)
	}
	return nil
}

// writableExperiment returns the tenant's experiment named in the path
// (404 when there is none), when the service still takes writes (503
// otherwise).
func (s *Server) writableExperiment(t Token, r *http.Request) (*experiment, error) {
	x, err := s.get(t.Tenant, r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	return x, s.writable()
}

func (s *Server) handleCreate(w http.ResponseWriter, r *http.Request, t Token) (any, error) {
	if err := s.writable(); err != nil {
		return nil, err
	}
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		return nil, err
	}
	var sp Spec
	if err := decodeBytes(raw, &sp); err != nil {
		return nil, err
	}
	if err := checkWritten(raw); err != nil {
		return nil, err
	}
	if to := s.createsOn(t.Tenant+"/"+sp.ID, r); to.ID != "" {
		// Created where it will be served, rather than moved there.
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(raw)), int64(len(raw))
		s.forward(w, r, to)
		return nil, nil
	}
	x, err := s.create(r.Context(), t.Tenant, sp)
	if err != nil {
		return nil, err
	}
	st, err := s.state(r.Context(), x)
	if err != nil {
		return nil, err
	}
	if s.rep != nil {
		st.Replica = s.rep.me.ID
	}
	return created{"/v1/experiments/" + sp.ID, st}, nil
}

func (s *Server) handleList(_ http.ResponseWriter, r *http.Request, t Token) (any, error) {
	out := []State{}
	if s.rep != nil {
		return s.listReplicated(r.Context(), t.Tenant)
	}
	for _, x := range s.list(t.Tenant) {
		st, err := s.state(r.Context(), x)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, nil
}

func (s *Server) handleState(_ http.ResponseWriter, r *http.Request, t Token) (any, error) {
	x, err := s.get(t.Tenant, r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	st, err := s.state(r.Context(), x)
	if s.rep != nil {
		st.Replica = s.rep.me.ID
	}
	return st, err
}

// maxID is the longest event or unit id, in bytes.
const maxID = 128

// checkID checks an event or unit id at the boundary, alike for every
// store: 1 to maxID bytes of valid UTF-8 without control characters
// (NUL, which PostgreSQL's text cannot hold, among them) or U+FFFD.
func checkID(name, v string) error {
	if v == "" || len(v) > maxID {
		return fault.Errorf(fault.Invalid, "%s must be a string of 1 to %d bytes, got %d bytes", name, maxID, len(v))
	}
	if !utf8.ValidString(v) || strings.ContainsRune(v, utf8.RuneError) {
		// U+FFFD is also what JSON decoding makes of a lone surrogate
		// (\ud800): two different ids would become one.
		return fault.Errorf(fault.Invalid, "%s is not valid UTF-8, or has a lone surrogate or U+FFFD", name)
	}
	if i := strings.IndexFunc(v, unicode.IsControl); i >= 0 {
		return fault.Errorf(fault.Invalid, "%s has a control character (%U) at byte %d", name, []rune(v[i:])[0], i)
	}
	return nil
}

// decideReq is the body of a decision request.
type decideReq struct {
	EventID string          `json:"event_id"`
	UnitID  string          `json:"unit_id"`
	Context json.RawMessage `json:"context"`
}

func (s *Server) handleDecide(w http.ResponseWriter, r *http.Request, t Token) (any, error) {
	x, err := s.writableExperiment(t, r)
	if err != nil {
		return nil, err
	}
	var req decideReq
	if err := decode(http.MaxBytesReader(w, r.Body, maxBody), &req); err != nil {
		return nil, err
	}
	if err := checkID("event_id", req.EventID); err != nil {
		return nil, err
	}
	if err := checkPathID("unit_id", req.UnitID); err != nil {
		return nil, err
	}
	ctxt, set, err := checkContext(req.Context, x)
	if err != nil {
		return nil, err
	}
	return s.decide(r.Context(), x, req.EventID, req.UnitID, ctxt, set)
}

// checkContext validates a decision's context and returns it compacted,
// with the decision set of a contextual experiment: there it is required,
// Arms vectors of dimension Dim and norm at most 1. For a linear
// experiment it may be absent or a vector of the actions' dimension with
// norm at most 1; for a finite-armed one, absent or any JSON value. At
// most 64 KiB. The non-contextual policies do not use it: it is stored
// only for the log, with --keep-log.
func checkContext(raw json.RawMessage, x *experiment) (string, [][]float64, error) {
	if len(raw) == 0 || string(raw) == "null" {
		if x.def.Dim > 0 {
			return "", nil, fault.Errorf(fault.Invalid, "context is required: the decision set, %d vectors of dimension %d", x.def.Arms, x.def.Dim)
		}
		return "", nil, nil
	}
	if len(raw) > maxCtx {
		return "", nil, fault.Errorf(fault.TooLarge, "context larger than %d bytes", maxCtx)
	}
	var set [][]float64
	switch {
	case x.def.Dim > 0:
		if err := json.Unmarshal(raw, &set); err != nil {
			return "", nil, fault.Errorf(fault.Invalid, "context must be the decision set, %d vectors of numbers: %v", x.def.Arms, err)
		}
		if len(set) != x.def.Arms {
			return "", nil, fault.Errorf(fault.Invalid, "context has %d actions, the experiment has %d arms", len(set), x.def.Arms)
		}
		for i, v := range set {
			if err := checkVector(fmt.Sprintf("action %d", i), v, x.def.Dim); err != nil {
				return "", nil, err
			}
		}
	case len(x.def.Actions) > 0:
		var v []float64
		if err := json.Unmarshal(raw, &v); err != nil {
			return "", nil, fault.Errorf(fault.Invalid, "context must be a vector of numbers: %v", err)
		}
		if err := checkVector("context", v, len(x.def.Actions[0])); err != nil {
			return "", nil, err
		}
	}
	var c bytes.Buffer
	if err := json.Compact(&c, raw); err != nil {
		return "", nil, fault.Errorf(fault.Invalid, "invalid context: %v", err)
	}
	return c.String(), set, nil
}

// checkVector checks a vector's dimension and that its norm is at most 1
// up to rounding: a vector of norm in (1, 1 + 1e-9] (a unit vector
// computed in floating point, say (cos t, sin t)) is scaled in place
// into the unit ball (mechanism.IntoUnitBall), which the policies then
// check exactly; a larger or non-finite one is an error.
func checkVector(name string, v []float64, d int) error {
	if len(v) != d {
		return fault.Errorf(fault.Invalid, "%s has dimension %d, want %d", name, len(v), d)
	}
	if n2 := linalg.Dot(v, v); !(n2 <= (1+1e-9)*(1+1e-9)) {
		return fault.Errorf(fault.Invalid, "%s has norm %.17g; it must be at most 1 (finite)", name, math.Sqrt(n2))
	}
	mechanism.IntoUnitBall(v)
	return nil
}

// rewardReq is one reward.
type rewardReq struct {
	EventID string   `json:"event_id"`
	Reward  *float64 `json:"reward"`
}

func (s *Server) oneReward(ctx context.Context, x *experiment, q rewardReq) (RewardResult, error) {
	if err := checkID("event_id", q.EventID); err != nil {
		return RewardResult{}, err
	}
	if q.Reward == nil {
		return RewardResult{}, fault.Errorf(fault.Invalid, "reward is missing")
	}
	return s.reward(ctx, x, q.EventID, *q.Reward)
}

// handleRewards takes one reward (a JSON object) or a batch (newline-
// delimited JSON, Content-Type application/x-ndjson), answering the batch
// with one status line per line.
func (s *Server) handleRewards(w http.ResponseWriter, r *http.Request, t Token) (any, error) {
	x, err := s.writableExperiment(t, r)
	if err != nil {
		return nil, err
	}
	mt, err := contentType(r, jsonType, ndjsonType)
	if err != nil {
		return nil, err
	}
	if mt == jsonType {
		var q rewardReq
		if err := decode(http.MaxBytesReader(w, r.Body, maxBody), &q); err != nil {
			return nil, err
		}
		return s.oneReward(r.Context(), x, q)
	}
	// The whole batch is read before any line is applied: one over the
	// limit is refused whole (413) and changes nothing.
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBatch))
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return nil, err
	}
	if err != nil {
		return nil, fault.Errorf(fault.Invalid, "reading the batch: %v", err)
	}
	type line struct {
		Line int `json:"line"`
		RewardResult
		Code  int    `json:"code"`
		Error string `json:"error,omitempty"`
	}
	var out []line
	for n, raw := range bytes.Split(body, []byte("\n")) {
		if len(bytes.TrimSpace(raw)) == 0 {
			continue
		}
		var q rewardReq
		res, err := RewardResult{}, decodeBytes(raw, &q)
		if err == nil {
			res, err = s.oneReward(r.Context(), x, q)
		}
		ln := line{Line: n + 1, RewardResult: res, Code: 200}
		if err != nil {
			ln.Code, err = status(err)
			ln.Error, ln.EventID = err.Error(), q.EventID
		}
		out = append(out, ln)
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	enc := json.NewEncoder(w)
	for _, ln := range out {
		enc.Encode(ln)
	}
	return nil, nil
}

func (s *Server) handleLog(w http.ResponseWriter, r *http.Request, t Token) (any, error) {
	x, err := s.get(t.Tenant, r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	if !s.cfg.KeepLog {
		return nil, fault.Errorf(fault.Conflict, "the log is kept only with --keep-log: rewards of released episodes are deleted")
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	enc := json.NewEncoder(w)
	// Field names follow the Open Bandit Pipeline's logged bandit feedback
	// (action, reward, pscore, context, position), with the event, unit
	// and time the service adds.
	return nil, s.cfg.Store.Log(r.Context(), x.def.key(), func(e store.Event) error {
		rec := map[string]any{"event_id": e.ID, "unit_id": e.Unit, "action": e.Arm, "position": 0, "pscore": e.PScore,
			"reward": e.Reward, "status": e.Status, "learned": e.Status == store.Learned || e.Status == store.Defaulted,
			"timestamp": time.Unix(0, e.Decided).UTC().Format(time.RFC3339Nano), "policy_version": e.Plan}
		if e.PolicyArm >= 0 {
			// The logging policy's whole distribution.
			prob := make([]float64, x.def.Arms)
			for a := range prob {
				prob[a] = x.def.propensity(a, e.PolicyArm)
			}
			rec["action_prob"] = prob
		}
		if e.Context != "" {
			rec["context"] = json.RawMessage(e.Context)
		}
		return enc.Encode(rec)
	})
}

// LedgerView is a unit's ledger as the API shows it to a tenant.
type LedgerView struct {
	Unit string `json:"unit_id"`
	// Experiments are the tenant's experiments the unit contributed to: a
	// unit id is its tenant's own, and another tenant's unit of the same
	// id is another unit.
	Experiments []store.LedgerRow `json:"experiments"`
	// TotalNanoRho and TotalRho sum them (zCDP composes additively).
	TotalNanoRho int64   `json:"total_nano_rho"`
	TotalRho     float64 `json:"total_rho"`
	// CapNanoRho is the server's cap on a unit's total in its tenant (0:
	// none).
	CapNanoRho int64 `json:"cap_nano_rho"`
}

func (s *Server) handleLedger(_ http.ResponseWriter, r *http.Request, t Token) (any, error) {
	unit := r.PathValue("unit")
	if err := checkPathID("unit_id", unit); err != nil {
		return nil, err
	}
	if err := s.foldFirst(r.Context(), s.list(t.Tenant)...); err != nil {
		return nil, err
	}
	rows, err := s.cfg.Store.Ledger(r.Context(), t.Tenant, unit)
	if err != nil {
		return nil, err
	}
	v := LedgerView{Unit: unit, Experiments: []store.LedgerRow{}, CapNanoRho: s.cfg.UnitBudget}
	for _, row := range rows {
		row.Experiment = strings.TrimPrefix(row.Experiment, t.Tenant+"/")
		v.Experiments = append(v.Experiments, row)
		v.TotalNanoRho += row.NanoRho
	}
	v.TotalRho = float64(v.TotalNanoRho) / 1e9
	return v, nil
}

func (s *Server) handleHealth(w http.ResponseWriter, _ *http.Request, _ Token) (any, error) {
	if err := s.Err(); err != nil {
		return nil, fault.Errorf(fault.Unavailable, "unhealthy: %v", err)
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
	// Pending counts the current plan's decisions waiting for a reward;
	// Awaiting every decision waiting for one (overflow and explored
	// ones too), so that decisions = rewards + defaulted + expired +
	// awaiting.
	Pending  int64 `json:"pending"`
	Awaiting int64 `json:"awaiting_rewards"`
	// Pooled counts the rewards learned that wait for their arm's next
	// plan to enter a release (bandit.Pooled; experiments created
	// before it have none).
	Pooled int64 `json:"pooled_rewards"`
	// Pulls counts decisions per arm.
	Pulls []int64 `json:"pulls"`
	// Released are the arms' released statistics, for policies that
	// show them (bandit.Releaser).
	Released []bandit.ArmStat `json:"released,omitempty"`
	// Failed says why the experiment stopped (503), if it did.
	Failed string `json:"failed,omitempty"`
	// Releases counts every release; Recent are the last ones.
	Releases int             `json:"releases"`
	Recent   []store.Release `json:"recent_releases"`
	// Replica is the replica serving the experiment (replicas only; ""
	// when none does at the moment).
	Replica string `json:"replica,omitempty"`
}

// state returns what the API shows of an experiment, once every change
// it reflects is durable: a release is shown only after it is stored.
func (s *Server) state(ctx context.Context, x *experiment) (State, error) {
	st, last := x.view()
	// A change whose submit failed is in the snapshot, never in the
	// store; the writer had failed before that submit returned, and the
	// snapshot was taken after (both under x.mu): checked here, it is
	// seen.
	if p := s.w.failed.Load(); p != nil {
		return State{}, fault.Errorf(fault.Unavailable, "the service stopped after a store failure; its memory may be ahead of the store, so it shows nothing: %v", *p)
	}
	if last != nil {
		if err := s.w.wait(ctx, last); err != nil {
			return State{}, err
		}
	}
	return st, nil
}

// view returns the experiment's state and the durable channel of the
// last change it reflects.
func (x *experiment) view() (State, chan struct{}) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.pol == nil { // it failed to load: only why
		return State{Definition: x.def, Failed: x.failed.Error()}, nil
	}
	_, v := x.pol.Plan()
	st := State{Definition: x.def, counts: x.n, Episodes: v, PolicyVersion: v, Pending: x.pol.Pending(),
		Awaiting: x.n.Decisions - x.n.Rewards - x.n.Defaulted - x.n.Expired,
		Pulls:    append([]int64(nil), x.pulls...), Releases: int(x.nrel)}
	if ep, ok := x.pol.Policy().(bandit.Episodic); ok {
		st.Episodes = ep.Episodes()
	}
	if p, ok := x.pol.(pooledDecider); ok {
		st.Pooled = p.Pooled.Pooled()
	}
	if rl, ok := x.pol.Policy().(bandit.Releaser); ok && x.failed == nil {
		// (a failed policy may hold a draw it never stored)
		st.Released = rl.Released()
	}
	st.Recent = append([]store.Release{}, x.recent...)
	if x.failed != nil {
		st.Failed = x.failed.Error()
	}
	return st, x.last
}
