package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/dpbandit/dpbandit/service/define"
	"github.com/dpbandit/dpbandit/service/engine"
	"github.com/dpbandit/dpbandit/service/fault"
	"github.com/dpbandit/dpbandit/service/internal/media"
	"github.com/dpbandit/dpbandit/service/outcome"
	"github.com/dpbandit/dpbandit/service/personalizer"
	"github.com/dpbandit/dpbandit/service/rank"
	"github.com/dpbandit/dpbandit/service/store"
)

// maxBatch is the size limit of a batch of rewards (one request:
// media.MaxBody).
const maxBatch = 8 << 20

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

// handler returns the routes, behind the guard.
func (a *server) handler() http.Handler {
	mux := http.NewServeMux()
	// route serves pattern to the given roles (none: anyone).
	route := func(pattern string, h handler, roles ...string) {
		lat, ok := a.m.latency.WithLabelValues(pattern), a.m.requests.WithLabelValues(pattern, "200")
		cookie := pattern == "GET /{$}"
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			if code := a.serve(w, r, cookie, roles, h); code == 200 {
				ok.Inc()
			} else {
				a.m.requests.WithLabelValues(pattern, strconv.Itoa(code)).Inc()
			}
			lat.Observe(time.Since(start).Seconds())
		})
	}
	route("POST /v1/experiments", a.handleCreate, RoleAdmin)
	route("GET /v1/experiments", a.handleList, RoleAdmin)
	route("GET /v1/experiments/{id}", a.routed(a.handleState), RoleAdmin)
	route("POST /v1/experiments/{id}/decisions", a.routed(a.handleDecide), RoleClient, RoleAdmin)
	route("POST /v1/experiments/{id}/rewards", a.routed(a.handleRewards), RoleClient, RoleAdmin)
	route("POST /v1/experiments/{id}/slates", a.routed(a.handleSlate), RoleClient, RoleAdmin)
	route("GET /v1/experiments/{id}/log", a.routed(a.handleLog), RoleAdmin)
	route("POST /v1/experiments/{id}/import", longer(a.routed(a.handleImport)), RoleAdmin)
	for verb, to := range map[string]string{"pause": store.Paused, "resume": store.Active, "archive": store.Archived} {
		route("POST /v1/experiments/{id}/"+verb, a.routed(func(_ http.ResponseWriter, r *http.Request, t Token) (any, error) {
			x, err := a.b.Get(t.Tenant, r.PathValue("id"))
			if err != nil {
				return nil, err
			}
			if err := a.b.SetStatus(r.Context(), x, to); err != nil {
				return nil, err
			}
			return map[string]string{"id": x.ID(), "status": to}, nil
		}), RoleAdmin)
	}
	route("GET /v1/units/{unit}/ledger", a.handleLedger, RoleAdmin)
	route("GET /healthz", a.handleHealth)
	route("GET /readyz", a.handleHealth) // ready once New returned: the experiments are loaded
	route("GET /{$}", a.handleDashboard, RoleAdmin)
	route("GET /metrics", a.handleMetrics, RoleAdmin, RoleOperator)
	route("GET /openapi.json", a.handleOpenAPI)
	a.personalizerRoutes(mux)
	mux.HandleFunc(a.measured("POST /login", a.handleLogin))
	mux.HandleFunc(a.measured("POST /logout", a.handleLogout))
	// What no route takes (a clean path: the mux matches it once) ...
	mux.HandleFunc(catchAll, func(w http.ResponseWriter, r *http.Request) { noRoute(w, r, mux) })
	return a.guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// ... and a path the mux would clean (redirect) or a CONNECT,
		// found before the catch-all could take it.
		if r.Method == "CONNECT" || !cleanPath(r.URL.Path) {
			if _, pattern := mux.Handler(r); pattern == "" || isCatchAll(pattern) {
				noRoute(w, r, mux)
				return
			}
		}
		mux.ServeHTTP(w, r)
	}))
}

// catchAll is the pattern of the route of requests no other route takes.
const catchAll = "/"

// isCatchAll reports whether a pattern takes what no route takes: the
// root's catch-all, or the Personalizer surface's (personalizer.CatchAll).
func isCatchAll(pattern string) bool { return pattern == catchAll || pattern == personalizer.CatchAll }

// cleanPath reports whether the mux takes p as it is, without redirecting
// to a cleaned path (http.ServeMux's cleaning: path.Clean, keeping a
// trailing slash).
func cleanPath(p string) bool {
	if p == "" || p[0] != '/' {
		return false
	}
	c := path.Clean(p)
	if p[len(p)-1] == '/' && c != "/" {
		c += "/"
	}
	return c == p
}

// noRoute answers a request no route takes: 405 with Allow when the path
// has routes for other methods, 404 otherwise, both as JSON.
func noRoute(w http.ResponseWriter, r *http.Request, mux *http.ServeMux) {
	if allow := allowed(r, mux); len(allow) > 0 {
		w.Header().Set("Allow", strings.Join(allow, ", "))
		writeError(w, r, 405, fmt.Sprintf("%s is not allowed on %s (allowed: %s)", r.Method, r.URL.Path, strings.Join(allow, ", ")))
		return
	}
	writeError(w, r, 404, fmt.Sprintf("no route %s %s (see docs/service.md)", r.Method, r.URL.Path))
}

// allowed returns the methods of the routes of r's path (none: no route
// has it).
func allowed(r *http.Request, mux *http.ServeMux) []string {
	var allow []string
	for _, m := range []string{"GET", "POST", "PUT", "PATCH", "DELETE"} {
		q := r.Clone(r.Context())
		q.Method = m
		if _, p := mux.Handler(q); p != "" && !isCatchAll(p) {
			allow = append(allow, m)
		}
	}
	return allow
}

// serve authenticates, runs h and writes its result or error as JSON
// (h writes itself and returns nil, nil for other content). It returns
// the status code.
func (a *server) serve(w http.ResponseWriter, r *http.Request, cookie bool, roles []string, h handler) (code int) {
	defer func() {
		if p := recover(); p != nil {
			a.cfg.Logger.Error("panic in handler", "path", r.URL.Path, "panic", p)
			code = 500
			writeJSON(w, code, errorBody{"internal error"})
		}
	}()
	if cookie && a.cfg.Tokens != nil && r.Header.Get("Authorization") == "" {
		if _, err := r.Cookie(SessionCookie); err != nil || r.URL.Query().Has("token") {
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
	tok, err := a.auth(r, cookie, roles...)
	if err == nil && r.Method == "POST" && !strings.HasSuffix(r.URL.Path, "/rewards") && !strings.HasSuffix(r.URL.Path, "/import") {
		_, err = media.Check(r, media.JSON)
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
			a.writeAnswer(w, 200, out)
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

// writeAnswer is writeJSON, by hand for a decision's and a reward's
// answers (appendAnswer), into a buffer used again.
func (a *server) writeAnswer(w http.ResponseWriter, code int, v any) {
	p, _ := a.answers.Get().(*[]byte)
	if p == nil {
		p = new([]byte)
	}
	b, ok := appendAnswer((*p)[:0], v)
	if !ok {
		a.answers.Put(p)
		writeJSON(w, code, v)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	w.Write(b)
	*p = b
	a.answers.Put(p)
}

func (a *server) writable() error {
	if err := a.b.Err(); err != nil {
		return fault.Errorf(fault.Unavailable, "the service stopped taking writes after a store failure: %v", err)
	}
	return nil
}

// writableExperiment returns the tenant's experiment named in the path
// (404 when there is none), when the service still takes writes (503
// otherwise).
func (a *server) writableExperiment(t Token, r *http.Request) (*engine.Experiment, error) {
	x, err := a.b.Get(t.Tenant, r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	return x, a.writable()
}

func (a *server) handleCreate(w http.ResponseWriter, r *http.Request, t Token) (any, error) {
	if err := a.writable(); err != nil {
		return nil, err
	}
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, media.MaxBody))
	if err != nil {
		return nil, err
	}
	var sp define.Spec
	if err := requests.Decode(raw, &sp); err != nil {
		return nil, err
	}
	if err := define.CheckWritten(raw); err != nil {
		return nil, err
	}
	if to := a.b.CreatesOn(t.Tenant+"/"+sp.ID, r.Header.Get(ForwardedHeader) != ""); to.ID != "" {
		// Created where it will be served, rather than moved there.
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(raw)), int64(len(raw))
		a.forward(w, r, to)
		return nil, nil
	}
	x, err := a.b.Create(r.Context(), t.Tenant, sp)
	if err != nil {
		return nil, err
	}
	st, err := a.stateHere(r.Context(), x)
	if err != nil {
		return nil, err
	}
	return created{"/v1/experiments/" + sp.ID, st}, nil
}

func (a *server) handleList(_ http.ResponseWriter, r *http.Request, t Token) (any, error) {
	return a.b.States(r.Context(), t.Tenant)
}

func (a *server) handleState(_ http.ResponseWriter, r *http.Request, t Token) (any, error) {
	x, err := a.b.Get(t.Tenant, r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	return a.stateHere(r.Context(), x)
}

// stateHere returns experiment x's state as this replica answers it
// (State.Replica: its id; none without replicas).
func (a *server) stateHere(ctx context.Context, x *engine.Experiment) (outcome.State, error) {
	st, err := x.State(ctx)
	st.Replica, _ = a.b.Replica()
	return st, err
}

// decideReq is the body of a decision request.
type decideReq struct {
	EventID string          `json:"event_id"`
	UnitID  string          `json:"unit_id"`
	Context json.RawMessage `json:"context"`
}

// readDecide returns the experiment of a decision's request (or a
// slate's) and the request, its ids checked.
func (a *server) readDecide(w http.ResponseWriter, r *http.Request, t Token) (*engine.Experiment, decideReq, error) {
	var req decideReq
	x, err := a.writableExperiment(t, r)
	if err != nil {
		return nil, req, err
	}
	data, buf, err := a.readSmall(w, r)
	if err == nil {
		err = decodeDecide(data, &req)
	}
	a.putBody(buf, data)
	if err != nil {
		return nil, req, err
	}
	if err := define.CheckID("event_id", req.EventID); err != nil {
		return nil, req, err
	}
	return x, req, define.CheckPathID("unit_id", req.UnitID)
}

func (a *server) handleDecide(w http.ResponseWriter, r *http.Request, t Token) (any, error) {
	x, req, err := a.readDecide(w, r, t)
	if err != nil {
		return nil, err
	}
	ctxt, set, err := x.CheckContext(req.Context)
	if err != nil {
		return nil, err
	}
	return x.Decide(r.Context(), req.EventID, req.UnitID, ctxt, set)
}

// rewardReq is one reward.
type rewardReq struct {
	EventID string   `json:"event_id"`
	Reward  *float64 `json:"reward"`
	Slot    string   `json:"slot"` // a slot of a slate (slate.go)
}

func (a *server) oneReward(ctx context.Context, x *engine.Experiment, q rewardReq) (outcome.RewardResult, error) {
	if err := define.CheckID("event_id", q.EventID); err != nil {
		return outcome.RewardResult{}, err
	}
	if q.Reward == nil {
		return outcome.RewardResult{}, fault.Errorf(fault.Invalid, "reward is missing")
	}
	if q.Slot != "" {
		return rank.RewardSlot(ctx, x, q.EventID, q.Slot, *q.Reward)
	}
	return x.Reward(ctx, q.EventID, *q.Reward)
}

// handleRewards takes one reward (a JSON object) or a batch (newline-
// delimited JSON, Content-Type application/x-ndjson), answering the batch
// with one status line per line.
func (a *server) handleRewards(w http.ResponseWriter, r *http.Request, t Token) (any, error) {
	x, err := a.writableExperiment(t, r)
	if err != nil {
		return nil, err
	}
	mt, err := media.Check(r, media.JSON, media.NDJSON)
	if err != nil {
		return nil, err
	}
	if mt == media.JSON {
		data, buf, err := a.readSmall(w, r)
		var q rewardReq
		if err == nil {
			err = decodeReward(data, &q)
		}
		a.putBody(buf, data)
		if err != nil {
			return nil, err
		}
		return a.oneReward(r.Context(), x, q)
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
		outcome.RewardResult
		Code  int    `json:"code"`
		Error string `json:"error,omitempty"`
	}
	var out []line
	for n, raw := range bytes.Split(body, []byte("\n")) {
		if len(bytes.TrimSpace(raw)) == 0 {
			continue
		}
		var q rewardReq
		res, err := outcome.RewardResult{}, decodeReward(raw, &q)
		if err == nil {
			res, err = a.oneReward(r.Context(), x, q)
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

func (a *server) handleLog(w http.ResponseWriter, r *http.Request, t Token) (any, error) {
	x, err := a.b.Get(t.Tenant, r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	if r.URL.Query().Has("format") {
		return evaluationLog(w, r, x) // evallog.go
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	enc := json.NewEncoder(w)
	// Field names follow the Open Bandit Pipeline's logged bandit feedback
	// (action, reward, pscore, context, position), with the event, unit
	// and time the service adds.
	def := x.Definition()
	return nil, a.b.Log(r.Context(), x, func(e store.Event) error {
		rec := map[string]any{"event_id": e.ID, "unit_id": e.Unit, "action": e.Arm, "position": 0, "pscore": e.PScore,
			"reward": e.Reward, "status": e.Status, "learned": e.Status == store.Learned || e.Status == store.Defaulted,
			"timestamp": time.Unix(0, e.Decided).UTC().Format(time.RFC3339Nano), "policy_version": e.Plan}
		if e.PolicyArm >= 0 {
			// The logging policy's whole distribution.
			rec["action_prob"] = def.Distribution(e)
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

func (a *server) handleLedger(_ http.ResponseWriter, r *http.Request, t Token) (any, error) {
	unit := r.PathValue("unit")
	if err := define.CheckPathID("unit_id", unit); err != nil {
		return nil, err
	}
	rows, err := a.b.Ledger(r.Context(), t.Tenant, unit)
	if err != nil {
		return nil, err
	}
	v := LedgerView{Unit: unit, Experiments: []store.LedgerRow{}, CapNanoRho: a.cfg.UnitBudget}
	for _, row := range rows {
		row.Experiment = strings.TrimPrefix(row.Experiment, t.Tenant+"/")
		v.Experiments = append(v.Experiments, row)
		v.TotalNanoRho += row.NanoRho
	}
	v.TotalRho = float64(v.TotalNanoRho) / 1e9
	return v, nil
}

func (a *server) handleHealth(w http.ResponseWriter, _ *http.Request, _ Token) (any, error) {
	if err := a.b.Err(); err != nil {
		return nil, fault.Errorf(fault.Unavailable, "unhealthy: %v", err)
	}
	return map[string]string{"status": "ok"}, nil
}
