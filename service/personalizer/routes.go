// Package personalizer is Azure Personalizer's REST surface: the routes
// of its v1.0 and v1.1-preview.3 specifications (Personalizer.json of
// Azure/azure-rest-api-specs: rank, reward and activate, multi-slot, the
// management operations), served on the experiments created with
// "surface": "personalizer" (docs/personalizer.md). Its handlers take the
// experiment the request's key names; the key, the replica routing, the
// metrics and the errors' statuses are service/api's, which mounts them.
package personalizer

import (
	"crypto/rand"
	"net/http"

	"github.com/dpbandit/dpbandit/service/define"
	"github.com/dpbandit/dpbandit/service/engine"
	"github.com/dpbandit/dpbandit/service/fault"
	"github.com/dpbandit/dpbandit/service/internal/media"
	"github.com/dpbandit/dpbandit/service/rank"
)

// The surface's base paths and its key's header.
const (
	// SubscriptionKeyHeader carries a Personalizer key.
	SubscriptionKeyHeader = "Ocp-Apim-Subscription-Key"
	// Base is the v1.0 routes' base path.
	Base = "/personalizer/v1.0"
	// PreviewBase is the v1.1-preview.3 routes' base path.
	PreviewBase = "/personalizer/v1.1-preview.3"
	// CatchAll is the pattern of the Personalizer paths no route takes:
	// a 404 in the surface's shape once the key is checked, or a 405 for
	// a route's path asked by another method.
	CatchAll = "/personalizer/"
)

// Handler serves a Personalizer route for the experiment its key names
// and returns the status and the body to write (nil: none; a RawBody:
// those bytes; a Headed: its headers, then its body; else JSON) or an
// error (a fault: its kind's status, in Personalizer's error shape; a
// Coded error with its own code).
type Handler func(r *http.Request, x *engine.Experiment) (int, any, error)

// RawBody is an answer that is not JSON (the model's octet stream).
type RawBody struct {
	ContentType string
	Data        []byte
}

// Headed is an answer with headers (a created evaluation's Location)
// and its body.
type Headed struct {
	Header map[string]string
	Body   any
}

// Routes returns the surface's routes by their patterns (method and
// path, as http.ServeMux takes them), CatchAll among them.
func Routes() map[string]Handler {
	routes := map[string]Handler{}
	for _, base := range []string{Base, PreviewBase} {
		routes["POST "+base+"/rank"] = handleRank
		routes["POST "+base+"/events/{eventId}/reward"] = handleReward
		routes["POST "+base+"/events/{eventId}/activate"] = handleActivate
		management(routes, base, base == PreviewBase)  // config.go
		evaluations(routes, base, base == PreviewBase) // evaluations.go
	}
	multiSlot(routes) // slate.go
	routes[CatchAll] = func(r *http.Request, x *engine.Experiment) (int, any, error) {
		return 0, nil, fault.Errorf(fault.NotFound, "%s %s is not a Personalizer operation this service offers (docs/personalizer.md)", r.Method, r.URL.Path)
	}
	return routes
}

// handleRank is Rank: 201 with the ranking.
func handleRank(r *http.Request, x *engine.Experiment) (int, any, error) {
	raw, err := media.ReadJSON(r)
	if err != nil {
		return 0, nil, err
	}
	res, err := rank.Decide(r.Context(), x, raw, rand.Text())
	return 201, res, err
}

// handleReward is Reward: 204. A reward in [0, 1] for an event that
// was settled without it (its window passed) is acknowledged and not
// learned, as Personalizer did.
func handleReward(r *http.Request, x *engine.Experiment) (int, any, error) {
	raw, err := media.ReadJSON(r)
	if err != nil {
		return 0, nil, err
	}
	value, err := define.DecodePzReward(raw)
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
func handleActivate(r *http.Request, x *engine.Experiment) (int, any, error) {
	id := r.PathValue("eventId")
	if err := define.CheckID("eventId", id); err != nil {
		return 0, nil, err
	}
	return 204, nil, x.Activate(r.Context(), id)
}
