package api

import (
	"fmt"
	"net/http"
	"net/http/httputil"
	"net/url"

	"github.com/dpbandit/dpbandit/service/store"
)

// ForwardedHeader marks a request one replica forwarded to another.
const ForwardedHeader = "X-Dpbandit-Forwarded-By"

// forward sends a request to the replica that serves its experiment and
// copies the answer back; an unreachable replica is answered 503 with
// Retry-After.
func (a *server) forward(w http.ResponseWriter, r *http.Request, to store.Replica) {
	me, transport := a.b.Replica()
	u, err := url.Parse(to.Addr)
	if err != nil {
		writeRetry(w, r, fmt.Sprintf("replica %s has a bad address %q", to.ID, to.Addr))
		return
	}
	a.m.forwarded.Inc()
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(u)
			pr.Out.Host = r.Host
			pr.Out.Header.Set(ForwardedHeader, me)
		},
		Transport: transport,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			writeRetry(w, r, fmt.Sprintf("the replica serving this experiment (%s) did not answer: %v", to.ID, err))
		},
	}
	rp.ServeHTTP(w, r)
}

func writeRetry(w http.ResponseWriter, r *http.Request, msg string) {
	w.Header().Set("Retry-After", "1")
	writeError(w, r, 503, msg+": retry")
}

// routed wraps a handler of an experiment's route for a replica: the
// request is served here, or forwarded to the replica that serves the
// experiment.
func (a *server) routed(h handler) handler {
	if me, _ := a.b.Replica(); me == "" {
		return h
	}
	return func(w http.ResponseWriter, r *http.Request, t Token) (any, error) {
		to, err := a.b.Route(r.Context(), t.Tenant+"/"+r.PathValue("id"), r.Header.Get(ForwardedHeader) != "")
		if err != nil {
			return nil, err
		}
		if to.ID == "" {
			return h(w, r, t)
		}
		a.forward(w, r, to)
		return nil, nil
	}
}
