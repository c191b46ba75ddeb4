package api

import (
	"math"
	"net/http"
	"time"

	"github.com/dpbandit/dpbandit/service/engine"
	"github.com/dpbandit/dpbandit/service/evaluation"
	"github.com/dpbandit/dpbandit/service/fault"
)

// evaluationLog is GET /v1/experiments/{id}/log?format=evaluation: the
// log a Personalizer experiment's evaluations read, as `dpbandit
// evaluate` reads it (evaluation.WriteLog), over the
// whole log or [start, end) (RFC 3339 date-times).
func evaluationLog(w http.ResponseWriter, r *http.Request, x *engine.Experiment) (any, error) {
	q := r.URL.Query()
	if f := q.Get("format"); f != "evaluation" {
		return nil, fault.Errorf(fault.Invalid, "format must be \"evaluation\" (the log an evaluation reads) or absent, got %q", f)
	}
	span := [2]time.Time{time.Unix(0, 0), time.Unix(0, math.MaxInt64)}
	for i, name := range []string{"start", "end"} {
		if v := q.Get(name); v != "" {
			t, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				return nil, fault.Errorf(fault.Invalid, "%s is not an RFC 3339 date-time: %v", name, err)
			}
			span[i] = t
		}
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	return nil, evaluation.WriteLog(r.Context(), x, span[0], span[1], w)
}
