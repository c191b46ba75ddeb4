package api

import (
	"crypto/rand"
	"crypto/subtle"
	"io"
	"maps"
	"net/http"
	"strconv"
	"time"

	"github.com/dpbandit/dpbandit/service/define"
	"github.com/dpbandit/dpbandit/service/engine"
	"github.com/dpbandit/dpbandit/service/fault"
)

// The Personalizer surface: Azure Personalizer's v1.0 REST routes for
// Rank, Reward and Activate (its specification, Personalizer.json of
// Azure/azure-rest-api-specs), served at the root beside /v1, on the
// experiments created with "surface": "personalizer" (docs/personalizer.md).
const (
	// SubscriptionKeyHeader carries a Personalizer key.
	SubscriptionKeyHeader = "Ocp-Apim-Subscription-Key"
	personalizerBase      = "/personalizer/v1.0"
)

// pzError is Personalizer's ErrorResponse.
type pzError struct {
	Error pzErrorBody `json:"error"`
}

type pzErrorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// pzCodes names the statuses in Personalizer's error codes (its
// specification's ErrorCode: BadRequest, ResourceNotFound,
// InternalServerError; the others are HTTP's reason phrases).
var pzCodes = map[int]string{
	400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "ResourceNotFound", 409: "Conflict",
	410: "ResourceNotFound", 413: "BadRequest", 415: "BadRequest", 500: "InternalServerError", 503: "ServiceUnavailable",
}

// pzHandler serves a Personalizer route for the experiment its key names
// and returns the status and the body to write (nil: none).
type pzHandler func(r *http.Request, x *engine.Experiment) (int, any, error)

// pzCatchAll is the pattern of the Personalizer paths no route takes:
// a 404 in the surface's shape once the key is checked (pconfig.go),
// or a 405 for a route's path asked by another method.
const pzCatchAll = "/personalizer/"

// personalizerRoutes adds the Personalizer routes to mux.
func (a *server) personalizerRoutes(mux *http.ServeMux) {
	routes := map[string]pzHandler{
		"POST " + personalizerBase + "/rank":                      a.handleRank,
		"POST " + personalizerBase + "/events/{eventId}/reward":   a.handlePzReward,
		"POST " + personalizerBase + "/events/{eventId}/activate": a.handleActivate,
	}
	maps.Copy(routes, a.slateRoutes())        // v1.1-preview.3 (slate.go)
	maps.Copy(routes, a.pzManagementRoutes()) // pconfig.go
	for pattern, h := range routes {
		lat := a.m.latency.WithLabelValues(pattern)
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			if pattern == pzCatchAll && allowed(r, mux) != nil {
				noRoute(w, r, mux) // a route's path by another method: 405
				return
			}
			start := time.Now()
			code := a.servePz(w, r, h)
			a.m.requests.WithLabelValues(pattern, strconv.Itoa(code)).Inc()
			lat.Observe(time.Since(start).Seconds())
		})
	}
}

// servePz authenticates the key, finds its experiment (forwarding the
// request to the replica that serves it), runs h and writes its answer,
// or the error in Personalizer's shape. It returns the status.
func (a *server) servePz(w http.ResponseWriter, r *http.Request, h pzHandler) (code int) {
	defer func() {
		if p := recover(); p != nil {
			a.cfg.Logger.Error("panic in handler", "path", r.URL.Path, "panic", p)
			code = 500
			writeJSON(w, code, pzError{pzErrorBody{"InternalServerError", "internal error"}})
		}
	}()
	x, err := a.pzExperiment(w, r)
	if x == nil && err == nil {
		return 200 // forwarded: the other replica answered
	}
	var body any
	if err == nil {
		code, body, err = h(r, x)
	}
	if raw, ok := body.(rawBody); ok && err == nil {
		w.Header().Set("Content-Type", raw.ctype)
		w.WriteHeader(code)
		w.Write(raw.data)
		return code
	}
	if err == nil {
		if body == nil {
			w.WriteHeader(code)
			return code
		}
		a.writeAnswer(w, code, body)
		return code
	}
	code, err = status(err)
	if code == 422 { // a reward outside [0, 1]: Personalizer's BadRequest
		code = 400
	}
	if fault.Retryable(err) {
		w.Header().Set("Retry-After", "1")
	}
	writeJSON(w, code, pzErrorOf(code, err.Error()))
	return code
}

// pzExperiment returns the experiment of the request's key: without a
// token file (loopback only, guard) the key is the id of an experiment of
// tenant "default"; with one, the key is a line "KEY TENANT personalizer
// EXPERIMENT" and reaches that experiment only. It returns nil, nil when
// it forwarded the request to the replica serving the experiment.
func (a *server) pzExperiment(w http.ResponseWriter, r *http.Request) (*engine.Experiment, error) {
	key := r.Header.Get(SubscriptionKeyHeader)
	if key == "" {
		return nil, fault.Errorf(fault.Unauthenticated, "the %s header is missing", SubscriptionKeyHeader)
	}
	t := Token{Tenant: openAccess.Tenant, Role: RolePersonalizer, Experiment: key}
	if a.cfg.Tokens != nil {
		found := a.lookupKey(key)
		if found == nil {
			return nil, fault.Errorf(fault.Unauthenticated, "unknown subscription key")
		}
		t = *found
	}
	if me, _ := a.b.Replica(); me != "" {
		to, err := a.b.Route(r.Context(), t.Tenant+"/"+t.Experiment, r.Header.Get(ForwardedHeader) != "")
		if err != nil {
			return nil, err
		}
		if to.ID != "" {
			a.forward(w, r, to)
			return nil, nil
		}
	}
	x, err := a.b.Get(t.Tenant, t.Experiment)
	if err != nil {
		return nil, err
	}
	if x.Definition().Surface != define.SurfacePersonalizer {
		return nil, fault.Errorf(fault.NotFound, "experiment %q is not a personalizer experiment (create it with \"surface\": \"personalizer\")", x.ID())
	}
	return x, a.writable()
}

// lookupKey finds a Personalizer key in constant time per token.
func (a *server) lookupKey(raw string) *Token {
	var found *Token
	for k, t := range a.cfg.Tokens {
		if subtle.ConstantTimeCompare([]byte(k), []byte(raw)) == 1 && t.Role == RolePersonalizer {
			found = &t
		}
	}
	return found
}

// readBody reads a JSON body of at most maxBody bytes.
func readBody(r *http.Request) ([]byte, error) {
	if _, err := contentType(r, jsonType); err != nil {
		return nil, err
	}
	return io.ReadAll(http.MaxBytesReader(nil, r.Body, maxBody))
}

// handleRank is Rank: 201 with the ranking.
func (a *server) handleRank(r *http.Request, x *engine.Experiment) (int, any, error) {
	raw, buf, err := a.readPooled(r)
	if err != nil {
		return 0, nil, err
	}
	res, err := x.Rank(r.Context(), raw, rand.Text())
	a.putBody(buf, raw)
	return 201, res, err
}

// handlePzReward is Reward: 204. A reward in [0, 1] for an event that
// was settled without it (its window passed) is acknowledged and not
// learned, as Personalizer did.
func (a *server) handlePzReward(r *http.Request, x *engine.Experiment) (int, any, error) {
	raw, buf, err := a.readPooled(r)
	if err != nil {
		return 0, nil, err
	}
	value, err := decodePzReward(raw)
	a.putBody(buf, raw)
	if err != nil {
		return 0, nil, err
	}
	id := r.PathValue("eventId")
	if err := define.CheckID("eventId", id); err != nil {
		return 0, nil, err
	}
	_, err = x.Reward(r.Context(), id, value)
	if fault.Of(err) == fault.Conflict {
		err = nil
	}
	return 204, nil, err
}

// handleActivate is Activate: 204.
func (a *server) handleActivate(r *http.Request, x *engine.Experiment) (int, any, error) {
	id := r.PathValue("eventId")
	if err := define.CheckID("eventId", id); err != nil {
		return 0, nil, err
	}
	return 204, nil, x.Activate(r.Context(), id)
}
