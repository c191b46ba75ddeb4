package api

import (
	"net/http"
	"strings"

	"github.com/dpbandit/dpbandit/service/personalizer"
)

// writeError writes an error answered before any route runs (the
// guard's, a route the service does not have, a replica that did not
// answer) in the shape of the surface the request addressed: Personalizer's
// ErrorResponse under /personalizer/, which its SDKs parse, else the
// native {"error": "..."}.
func writeError(w http.ResponseWriter, r *http.Request, code int, msg string) {
	if strings.HasPrefix(r.URL.Path, personalizer.CatchAll) {
		writeJSON(w, code, personalizer.ErrorOf(code, msg))
		return
	}
	writeJSON(w, code, errorBody{msg})
}
