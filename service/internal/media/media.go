// Package media checks the media type and the size of a request's body,
// for the service's two HTTP surfaces (service/api and
// service/personalizer).
package media

import (
	"io"
	"mime"
	"net/http"
	"slices"
	"strings"

	"github.com/dpbandit/dpbandit/service/fault"
)

// Media types a request's body may carry.
const (
	JSON   = "application/json"
	NDJSON = "application/x-ndjson"
	CSV    = "text/csv"
	Form   = "application/x-www-form-urlencoded"
)

// MaxBody is the size limit of one JSON request.
const MaxBody = 1 << 20

// Check returns the request's media type, which must be one of allowed
// (an UnsupportedMedia fault, 415, otherwise): a browser's cross-site
// form can send only text/plain, form or multipart bodies without a
// preflight.
func Check(r *http.Request, allowed ...string) (string, error) {
	ct := r.Header.Get("Content-Type")
	if ct == JSON && slices.Contains(allowed, JSON) {
		return JSON, nil // what ParseMediaType makes of it, without its map
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || !slices.Contains(allowed, mt) {
		return "", fault.Errorf(fault.UnsupportedMedia, "Content-Type must be %s, got %q", strings.Join(allowed, " or "), r.Header.Get("Content-Type"))
	}
	return mt, nil
}

// ReadJSON reads a JSON body of at most MaxBody bytes.
func ReadJSON(r *http.Request) ([]byte, error) {
	if _, err := Check(r, JSON); err != nil {
		return nil, err
	}
	return io.ReadAll(http.MaxBytesReader(nil, r.Body, MaxBody))
}
