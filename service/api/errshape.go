package api

import (
	"net/http"
	"strings"
)

// writeError writes an error answered before any route runs (the
// guard's, a route the service does not have, a replica that did not
// answer) in the shape of the surface the request addressed: Personalizer's
// ErrorResponse under /personalizer/, which its SDKs parse, else the
// native {"error": "..."}.
func writeError(w http.ResponseWriter, r *http.Request, code int, msg string) {
	if strings.HasPrefix(r.URL.Path, "/personalizer/") {
		writeJSON(w, code, pzErrorOf(code, msg))
		return
	}
	writeJSON(w, code, errorBody{msg})
}

// pzErrorOf is Personalizer's ErrorResponse for a status: its code
// names the status (pzCodes, else HTTP's reason phrase).
func pzErrorOf(code int, msg string) pzError {
	name := pzCodes[code]
	if name == "" {
		name = http.StatusText(code)
	}
	return pzError{pzErrorBody{name, msg}}
}
