package api

import (
	"bytes"
	_ "embed"
	"net/http"
)

// openAPI is the OpenAPI 3.1 document of the service's HTTP API: every
// route of handler and personalizerRoutes, with its requests, answers,
// statuses and error shapes. docs/openapi.json is a copy of it (a test
// keeps them equal), and the service's HTTP tests validate every
// exchange against it (service/internal/contract), so that it cannot
// drift from the code.
//
//go:embed openapi.json
var openAPI []byte

// OpenAPI returns the OpenAPI 3.1 document of the service's API, served
// at GET /openapi.json.
func OpenAPI() []byte { return bytes.Clone(openAPI) }

// handleOpenAPI serves the document to anyone: it describes the routes
// and holds no data of any tenant.
func (a *server) handleOpenAPI(w http.ResponseWriter, _ *http.Request, _ Token) (any, error) {
	w.Header().Set("Content-Type", "application/json")
	w.Write(openAPI)
	return nil, nil
}
