package api

import (
	"crypto/subtle"
	"net/http"
	"strconv"
	"time"

	"github.com/dpbandit/dpbandit/service/define"
	"github.com/dpbandit/dpbandit/service/engine"
	"github.com/dpbandit/dpbandit/service/fault"
	"github.com/dpbandit/dpbandit/service/personalizer"
)

// The Personalizer surface (service/personalizer) mounted beside /v1: the
// key of each request names its experiment (pzExperiment), the request
// goes to the replica serving it, and the handler's error is written in
// Personalizer's shape with its kind's status (status).

// personalizerRoutes adds the Personalizer routes to mux.
func (a *server) personalizerRoutes(mux *http.ServeMux) {
	for pattern, h := range personalizer.Routes() {
		lat := a.m.latency.WithLabelValues(pattern)
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			if pattern == personalizer.CatchAll && allowed(r, mux) != nil {
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
func (a *server) servePz(w http.ResponseWriter, r *http.Request, h personalizer.Handler) (code int) {
	defer func() {
		if p := recover(); p != nil {
			a.cfg.Logger.Error("panic in handler", "path", r.URL.Path, "panic", p)
			code = 500
			writeJSON(w, code, personalizer.ErrorOf(code, "internal error"))
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
	if hb, ok := body.(personalizer.Headed); ok && err == nil { // an answer with headers (a created evaluation's Location)
		for k, v := range hb.Header {
			w.Header().Set(k, v)
		}
		body = hb.Body
	}
	if raw, ok := body.(personalizer.RawBody); ok && err == nil {
		w.Header().Set("Content-Type", raw.ContentType)
		w.WriteHeader(code)
		w.Write(raw.Data)
		return code
	}
	if err == nil {
		if body == nil {
			w.WriteHeader(code)
			return code
		}
		a.writeAnswer(w, code, body) // (a rank's answer by hand: appendRank)
		return code
	}
	code, err = status(err)
	if code == 422 { // a reward outside [0, 1]: Personalizer's BadRequest
		code = 400
	}
	if fault.Retryable(err) {
		w.Header().Set("Retry-After", "1")
	}
	writeJSON(w, code, personalizer.ErrorFor(code, err))
	return code
}

// pzExperiment returns the experiment of the request's key: without a
// token file (loopback only, guard) the key is the id of an experiment of
// tenant "default"; with one, the key is a line "KEY TENANT personalizer
// EXPERIMENT" and reaches that experiment only. It returns nil, nil when
// it forwarded the request to the replica serving the experiment.
func (a *server) pzExperiment(w http.ResponseWriter, r *http.Request) (*engine.Experiment, error) {
	key := r.Header.Get(personalizer.SubscriptionKeyHeader)
	if key == "" {
		return nil, fault.Errorf(fault.Unauthenticated, "the %s header is missing", personalizer.SubscriptionKeyHeader)
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
