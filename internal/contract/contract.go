// Package contract checks the service's HTTP exchanges against its
// OpenAPI 3.1 document (api.OpenAPI), so that the document cannot drift
// from the code: the service's HTTP tests serve their handlers through
// Handler, which validates every request and its answer, and a route the
// document lacks, an answer it does not describe, or a request it refuses
// that the service accepted fails the test.
//
// The document is loaded and validated as OpenAPI 3.1 by getkin/kin-openapi
// (openapi3). Its schemas are compiled once, as JSON Schema 2020-12 (the
// dialect of OpenAPI 3.1), by santhosh-tekuri/jsonschema, the validator
// kin-openapi itself uses for 3.1 documents: kin-openapi's openapi3filter
// compiles a schema again on every call (2.1 ms for a decision's answer,
// 10.8 ms for a state's, on the 2-core test machine), which would slow the
// service's tests several times over, while a compiled schema validates
// one in microseconds (BenchmarkCheck). Routing is the service's own: the
// document's operations become the patterns of an http.ServeMux, so a
// request reaches the operation that Go's ServeMux, the service's router,
// would give it (escaped slashes in a segment, {$} for "/").
package contract

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/santhosh-tekuri/jsonschema/v6"

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

// Spec is the document, compiled: its operations by ServeMux pattern.
type Spec struct {
	// mux routes a request to its operation's pattern, as the service
	// routes it.
	mux *http.ServeMux
	// ops are the operations by pattern: "METHOD path" for the
	// document's paths; a path ending in "/" alone for a route of its
	// x-catch-all, which takes every request under it that no other
	// route takes (any method), as the service's ServeMux does.
	ops map[string]*operation
	// noRoute is the answer of a request that no route takes, by path
	// prefix (the document's x-no-route: the native API's error, and
	// Personalizer's under its prefix).
	noRoute map[string]*jsonschema.Schema
}

// operation is a documented method on a path.
type operation struct {
	path string
	// body is the request body by media type (nil: the operation reads
	// none); bodyRequired says an empty one is refused.
	body         map[string]*jsonschema.Schema
	bodyRequired bool
	responses    map[string]*response // by status code
}

// response is a documented answer.
type response struct {
	// content is the body by media type (empty: no body).
	content map[string]*jsonschema.Schema
	// headers are the headers it must carry.
	headers []string
}

// Load returns the service's document, loaded, validated as an OpenAPI
// 3.1 document and compiled once per test binary.
var Load = sync.OnceValues(func() (*Spec, error) { return Parse(api.OpenAPI()) })

// docURL names the document as a JSON Schema resource.
const docURL = "file:///openapi.json"

// Parse validates an OpenAPI 3.1 document and compiles its operations.
func Parse(raw []byte) (*Spec, error) {
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
	tree, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	c := &compiler{c: jsonschema.NewCompiler(), tree: tree}
	c.c.DefaultDraft(jsonschema.Draft2020)
	c.c.AssertFormat()
	if err := c.c.AddResource(docURL, tree); err != nil {
		return nil, err
	}
	s := &Spec{mux: http.NewServeMux(), ops: map[string]*operation{}, noRoute: map[string]*jsonschema.Schema{}}
	prefixes, _ := tree.(map[string]any)["x-no-route"].(map[string]any)
	for prefix, ref := range prefixes {
		ptr, ok := ref.(string)
		if ptr, ok = strings.CutPrefix(ptr, "#"); !ok {
			return nil, fmt.Errorf("contract: x-no-route %q: want a reference within the document, got %v", prefix, ref)
		}
		if s.noRoute[prefix], err = c.schema(ptr); err != nil {
			return nil, err
		}
	}
	if s.noRoute["/"] == nil {
		return nil, errors.New(`contract: the document's x-no-route names no schema for "/"`)
	}
	routes, _ := tree.(map[string]any)["x-catch-all"].(map[string]any)
	for path := range routes {
		if strings.ContainsAny(path, " \t") || !strings.HasSuffix(path, "/") {
			return nil, fmt.Errorf(`contract: x-catch-all %q: want a path ending in "/" without a method (a ServeMux route for every method under it)`, path)
		}
		op, err := c.operation("/x-catch-all/"+escape(path), path)
		if err != nil {
			return nil, fmt.Errorf("contract: x-catch-all %s: %w", path, err)
		}
		s.ops[path] = op
		s.mux.HandleFunc(path, func(http.ResponseWriter, *http.Request) {})
	}
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			op, err := c.operation("/paths/"+escape(path)+"/"+strings.ToLower(method), path)
			if err != nil {
				return nil, fmt.Errorf("contract: %s %s: %w", method, path, err)
			}
			pattern := Pattern(method, path)
			s.ops[pattern] = op
			s.mux.HandleFunc(pattern, func(http.ResponseWriter, *http.Request) {})
		}
	}
	return s, nil
}

// compiler compiles the schemas of the document's tree by JSON pointer.
type compiler struct {
	c    *jsonschema.Compiler
	tree any
}

// at returns the node at a JSON pointer and its pointer, following a
// Reference Object ($ref) found there.
func (c *compiler) at(ptr string) (map[string]any, string, error) {
	for range 8 {
		node := c.tree
		for _, tok := range strings.Split(ptr, "/")[1:] {
			tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
			m, ok := node.(map[string]any)
			if !ok {
				return nil, "", fmt.Errorf("no %s", ptr)
			}
			if node, ok = m[tok]; !ok {
				return nil, "", fmt.Errorf("no %s", ptr)
			}
		}
		m, ok := node.(map[string]any)
		if !ok {
			return nil, "", fmt.Errorf("%s is not an object", ptr)
		}
		ref, ok := m["$ref"].(string)
		if !ok {
			return m, ptr, nil
		}
		ptr, ok = strings.CutPrefix(ref, "#")
		if !ok {
			return nil, "", fmt.Errorf("%s: only references within the document are followed, not %s", ptr, ref)
		}
	}
	return nil, "", fmt.Errorf("%s: references nest too deep", ptr)
}

func escape(tok string) string {
	return strings.ReplaceAll(strings.ReplaceAll(tok, "~", "~0"), "/", "~1")
}

func (c *compiler) schema(ptr string) (*jsonschema.Schema, error) {
	return c.c.Compile(docURL + "#" + ptr)
}

// content compiles the schemas of a Content object (the one at ptr).
func (c *compiler) content(ptr string, node map[string]any) (map[string]*jsonschema.Schema, error) {
	out := map[string]*jsonschema.Schema{}
	content, _ := node["content"].(map[string]any)
	for mt := range content {
		sch, err := c.schema(ptr + "/content/" + escape(mt) + "/schema")
		if err != nil {
			return nil, err
		}
		out[strings.ToLower(mt)] = sch
	}
	return out, nil
}

// operation compiles the operation at a JSON pointer, the one of a
// path.
func (c *compiler) operation(ptr, path string) (*operation, error) {
	node, _, err := c.at(ptr)
	if err != nil {
		return nil, err
	}
	op := &operation{path: path, responses: map[string]*response{}}
	if _, ok := node["requestBody"]; ok {
		body, bptr, err := c.at(ptr + "/requestBody")
		if err != nil {
			return nil, err
		}
		op.bodyRequired, _ = body["required"].(bool)
		if op.body, err = c.content(bptr, body); err != nil {
			return nil, err
		}
	}
	codes, _ := node["responses"].(map[string]any)
	for code := range codes {
		r, rptr, err := c.at(ptr + "/responses/" + code)
		if err != nil {
			return nil, err
		}
		res := &response{}
		if res.content, err = c.content(rptr, r); err != nil {
			return nil, err
		}
		headers, _ := r["headers"].(map[string]any)
		for name := range headers {
			h, _, err := c.at(rptr + "/headers/" + escape(name))
			if err != nil {
				return nil, err
			}
			if req, _ := h["required"].(bool); req {
				res.headers = append(res.headers, name)
			}
		}
		op.responses[code] = res
	}
	return op, nil
}

// Pattern returns the http.ServeMux pattern of an operation: the method,
// and the path with a trailing "/" matching only itself ({$}).
func Pattern(method, path string) string {
	if strings.HasSuffix(path, "/") {
		path += "{$}"
	}
	return strings.ToUpper(method) + " " + path
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
// reach an operation (else the answer must be the service's 404, or 405
// with Allow, of a route it does not have, in x-no-route's shape); a request the document refuses
// must be refused (a 4xx, or a 5xx from a service that cannot answer);
// and the answer must be one the operation documents for its status:
// its required headers, its media type, its body valid against the
// schema. The error wraps ErrUndocumented, ErrAccepted or ErrResponse.
func (s *Spec) Check(ex Exchange) error {
	r := ex.Request
	_, pattern := s.mux.Handler(r)
	op := s.ops[pattern]
	if op == nil {
		if ex.Status != http.StatusNotFound && ex.Status != http.StatusMethodNotAllowed {
			return fmt.Errorf("%w: %s %s answered %d", ErrUndocumented, r.Method, r.URL.EscapedPath(), ex.Status)
		}
		if ex.Status == http.StatusMethodNotAllowed && ex.Header.Get("Allow") == "" {
			return fmt.Errorf("%w: a 405 without Allow", ErrResponse)
		}
		if err := validate(map[string]*jsonschema.Schema{"application/json": s.noRouteSchema(r.URL.Path)}, ex.Header.Get("Content-Type"), ex.Body); err != nil {
			return fmt.Errorf("%w: the %d of a route the service does not have: %v", ErrResponse, ex.Status, err)
		}
		return nil
	}
	if err := op.checkRequest(r.Header.Get("Content-Type"), ex.ReqBody); err != nil && ex.Status < 400 {
		return fmt.Errorf("%w: %s %s answered %d: %v", ErrAccepted, r.Method, op.path, ex.Status, err)
	}
	res := op.responses[fmt.Sprint(ex.Status)]
	if res == nil {
		return fmt.Errorf("%w: %s %s: status %d is not documented", ErrResponse, r.Method, op.path, ex.Status)
	}
	for _, h := range res.headers {
		if ex.Header.Get(h) == "" {
			return fmt.Errorf("%w: %s %s answered %d without its %s header", ErrResponse, r.Method, op.path, ex.Status, h)
		}
	}
	if r.Method == http.MethodHead {
		return nil
	}
	if len(res.content) == 0 {
		if len(ex.Body) > 0 {
			return fmt.Errorf("%w: %s %s answered %d with a body, where the document has none", ErrResponse, r.Method, op.path, ex.Status)
		}
		return nil
	}
	if err := validate(res.content, ex.Header.Get("Content-Type"), ex.Body); err != nil {
		return fmt.Errorf("%w: %s %s answered %d: %v", ErrResponse, r.Method, op.path, ex.Status, err)
	}
	return nil
}

// noRouteSchema returns the schema of the answer to a request for a
// path no route takes: x-no-route's of the longest prefix of the path.
func (s *Spec) noRouteSchema(path string) *jsonschema.Schema {
	best := "/"
	for p := range s.noRoute {
		if strings.HasPrefix(path, p) && len(p) > len(best) {
			best = p
		}
	}
	return s.noRoute[best]
}

// checkRequest returns why the document refuses a request's body (nil:
// it does not).
func (op *operation) checkRequest(ctype string, body []byte) error {
	if op.body == nil {
		return nil // the operation reads no body
	}
	if len(body) == 0 && ctype == "" {
		if op.bodyRequired {
			return errors.New("the request has no body")
		}
		return nil
	}
	return validate(op.body, ctype, body)
}

// validate checks a body against the schema of its media type.
func validate(content map[string]*jsonschema.Schema, ctype string, body []byte) error {
	mt, _, err := mime.ParseMediaType(ctype)
	if err != nil {
		return fmt.Errorf("Content-Type %q: %v", ctype, err)
	}
	sch := content[mt]
	if sch == nil {
		return fmt.Errorf("Content-Type %q is not documented here", ctype)
	}
	v, err := decode(mt, body)
	if err != nil {
		return err
	}
	return sch.Validate(v)
}

// decode reads a body of a media type as a JSON value: JSON as itself,
// newline-delimited JSON as the array of its non-blank lines' values (a
// line that is not JSON as its text: the schema then says whether that
// is allowed; a batch of rewards answers such a line in its own status
// line), a form as an object of its fields' first values, anything else
// as its text.
func decode(mt string, body []byte) (any, error) {
	switch mt {
	case "application/json":
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
		if err != nil {
			return nil, fmt.Errorf("the body is not JSON: %v", err)
		}
		return v, nil
	case "application/x-ndjson":
		out := []any{}
		sc := bufio.NewScanner(bytes.NewReader(body))
		sc.Buffer(nil, len(body)+1)
		for sc.Scan() {
			line := bytes.TrimSpace(sc.Bytes())
			if len(line) == 0 {
				continue
			}
			v, err := jsonschema.UnmarshalJSON(bytes.NewReader(line))
			if err != nil {
				v = string(line)
			}
			out = append(out, v)
		}
		return out, sc.Err()
	case "application/x-www-form-urlencoded":
		q, err := url.ParseQuery(string(body))
		if err != nil {
			return nil, fmt.Errorf("the form is not valid: %v", err)
		}
		out := map[string]any{}
		for k, v := range q {
			out[k] = v[0]
		}
		return out, nil
	}
	return string(body), nil
}
