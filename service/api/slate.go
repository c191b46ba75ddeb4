package api

import (
	"net/http"

	"github.com/dpbandit/dpbandit/service/fault"
	"github.com/dpbandit/dpbandit/service/rank"
)

// handleSlate is the native POST /v1/experiments/{id}/slates: a slate's
// decisions for event_id and unit_id, context a multi-slot rank request.
func (a *server) handleSlate(w http.ResponseWriter, r *http.Request, t Token) (any, error) {
	x, req, err := a.readDecide(w, r, t)
	if err != nil {
		return nil, err
	}
	if len(req.Context) == 0 || string(req.Context) == "null" {
		return nil, fault.Errorf(fault.Invalid, "context is required: a multi-slot rank request (docs/service.md, slates)")
	}
	return rank.DecideSlate(r.Context(), x, req.EventID, req.UnitID, req.Context)
}
