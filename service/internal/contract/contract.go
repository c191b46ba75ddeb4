// Package contract checks the service's HTTP exchanges against its
// OpenAPI 3.1 document (api.OpenAPI), so that the document cannot drift
// from the code: the service's HTTP tests serve their handlers through
// Handler, which validates every request and its answer, and a route the
// document lacks, an answer it does not describe, or a request it refuses
// that the service accepted fails the test.
//
// Validation is getkin/kin-openapi's openapi3filter, which validates the
// schemas of an OpenAPI 3.1 document as JSON Schema 2020-12 (with
// santhosh-tekuri/jsonschema). Routing is the service's own: the
// document's operations become the patterns of an http.ServeMux, so a
// request reaches the operation that Go's ServeMux, the service's router,
// would give it (escaped slashes in a segment, {$} for "/").
package contract

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"

	"github.com/dpbandit/dpbandit/service/api"
)

// The ways an exchange breaks the contract (errors.Is).
var (
	// ErrUndocumented: the request's method and path match no operation
	// of the document, and the service answered it other than as a
	// route it does not have (404 or 405).
	ErrUndocumented = errors.New("contract: a route the document does not have")
	// ErrAccepted: the document refuses the request, and the service
	// answered it with a success.
	ErrAccepted = errors.New("contract: the service accepted a request the document refuses")
	// ErrResponse: the answer's status, headers or body is not one the
	// document gives the operation.
	ErrResponse = errors.New("contract: an answer the document does not describe")
)

// Spec is the loaded document and its routes.
type Spec struct {
	doc *openapi3.T
	// mux routes a request to its operation's pattern, as the service
	// routes it; ops maps each pattern to its operation.
	mux *http.ServeMux
	ops map[string]*routers.Route
	// errSchema is the native API's error, the answer of a request that
	// no route takes.
	errSchema *openapi3.Schema
}

// Load returns the service's document, loaded, validated as an OpenAPI
// 3.1 document and compiled into routes once per test binary.
var Load = sync.OnceValues(func() (*Spec, error) { return Parse(api.OpenAPI()) })

// Parse loads and validates an OpenAPI 3.1 document.
func Parse(raw []byte) (*Spec, error) {
	registerNDJSON.Do(func() { openapi3filter.RegisterBodyDecoder(ndjsonType, ndjsonDecoder) })
	doc, err := openapi3.NewLoader().LoadFromData(raw)
	if err != nil {
		return nil, fmt.Errorf("contract: loading the document: %w", err)
	}
	if !doc.IsOpenAPI31OrLater() {
		return nil, fmt.Errorf("contract: the document is OpenAPI %s, not 3.1", doc.OpenAPI)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("contract: the document is not valid: %w", err)
	}
	s := &Spec{doc: doc, mux: http.NewServeMux(), ops: map[string]*routers.Route{}}
	if ref := doc.Components.Schemas["Error"]; ref != nil {
		s.errSchema = ref.Value
	} else {
		return nil, errors.New("contract: the document has no Error schema")
	}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			pattern := Pattern(method, path)
			s.ops[pattern] = &routers.Route{Spec: doc, Path: path, PathItem: item, Method: method, Operation: op}
			s.mux.HandleFunc(pattern, func(http.ResponseWriter, *http.Request) {})
		}
	}
	return s, nil
}

// Pattern returns the http.ServeMux pattern of an operation: the method,
// and the path with a trailing "/" matching only itself ({$}).
func Pattern(method, path string) string {
	if strings.HasSuffix(path, "/") {
		path += "{$}"
	}
	return method + " " + path
}

// Patterns returns the ServeMux patterns of the document's operations,
// sorted.
func (s *Spec) Patterns() []string {
	out := make([]string, 0, len(s.ops))
	for p := range s.ops {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// Exchange is one request and its answer.
type Exchange struct {
	// Request is the request as the server read it; ReqBody its body
	// (Request.Body is not read).
	Request *http.Request
	ReqBody []byte
	// Status, Header and Body are the answer.
	Status int
	Header http.Header
	Body   []byte
}

// Check validates an exchange against the document: the request must
// reach an operation (else the answer must be the service's 404 or 405
// of a route it does not have); a request the document refuses must be
// refused (4xx, or 503 from a service that cannot answer yet); and the
// answer must be one the operation documents, for its status. The error
// wraps ErrUndocumented, ErrAccepted or ErrResponse.
func (s *Spec) Check(ex Exchange) error {
	route, params := s.route(ex.Request)
	if route == nil {
		if ex.Status != http.StatusNotFound && ex.Status != http.StatusMethodNotAllowed {
			return fmt.Errorf("%w: %s %s answered %d", ErrUndocumented, ex.Request.Method, ex.Request.URL.EscapedPath(), ex.Status)
		}
		var v any
		if err := json.Unmarshal(ex.Body, &v); err != nil {
			return fmt.Errorf("%w: the %d of a route the service does not have is not JSON: %v", ErrResponse, ex.Status, err)
		}
		if err := s.errSchema.VisitJSON(v, openapi3.EnableJSONSchema2020()); err != nil {
			return fmt.Errorf("%w: the %d of a route the service does not have: %v", ErrResponse, ex.Status, err)
		}
		return nil
	}
	ctx := context.Background()
	req := ex.Request.Clone(ctx)
	req.Body = io.NopCloser(bytes.NewReader(ex.ReqBody))
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, MultiError: true}}
	reqErr := openapi3filter.ValidateRequest(ctx, in)
	if reqErr != nil && ex.Status < 400 {
		return fmt.Errorf("%w: %s %s answered %d: %v", ErrAccepted, route.Method, route.Path, ex.Status, reqErr)
	}
	in.Options = &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, IncludeResponseStatus: true, MultiError: true}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: ex.Status, Header: ex.Header,
		Body: io.NopCloser(bytes.NewReader(ex.Body)), Options: in.Options}
	if err := openapi3filter.ValidateResponse(ctx, out); err != nil {
		return fmt.Errorf("%w: %s %s answered %d: %v", ErrResponse, route.Method, route.Path, ex.Status, err)
	}
	return nil
}

// route returns the operation a request reaches and its path
// parameters, unescaped (nil when it reaches none).
func (s *Spec) route(r *http.Request) (*routers.Route, map[string]string) {
	_, pattern := s.mux.Handler(r)
	rt := s.ops[pattern]
	if rt == nil {
		return nil, nil
	}
	params := map[string]string{}
	want := strings.Split(rt.Path, "/")
	got := strings.Split(r.URL.EscapedPath(), "/")
	for i, seg := range want {
		if name, ok := strings.CutPrefix(seg, "{"); ok && i < len(got) {
			v, err := url.PathUnescape(got[i])
			if err != nil {
				v = got[i]
			}
			params[strings.TrimSuffix(name, "}")] = v
		}
	}
	return rt, params
}

const ndjsonType = "application/x-ndjson"

var registerNDJSON sync.Once

// ndjsonDecoder reads newline-delimited JSON as the array of its
// non-blank lines' values; a line that is not JSON is its text (the
// schema then says whether that is allowed: a batch of rewards answers
// such a line in its own status line).
func ndjsonDecoder(body io.Reader, _ http.Header, _ *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
	out := []any{}
	sc := bufio.NewScanner(body)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var v any
		if err := json.Unmarshal(line, &v); err != nil {
			v = string(line)
		}
		out = append(out, v)
	}
	return out, sc.Err()
}
