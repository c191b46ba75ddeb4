package contract

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"testing"
)

// maxRecorded bounds the request bodies Handler reads ahead (the
// service's own limit is 8 MiB).
const maxRecorded = 64 << 20

// Handler returns h behind a check of every exchange against the
// document: a request and its answer that break the contract fail t
// (Check). The answer is written through as h writes it (streaming and
// flushes unchanged) and checked once h returns.
func Handler(t testing.TB, h http.Handler) http.Handler {
	s, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	return s.Handler(t, h)
}

// Handler is the package's Handler against this document.
func (s *Spec) Handler(t testing.TB, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, maxRecorded))
		if err != nil {
			// A client that broke off: nothing to check.
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		rec := &recorder{ResponseWriter: w}
		h.ServeHTTP(rec, r)
		if rec.code == 0 {
			rec.code, rec.header = http.StatusOK, w.Header().Clone()
		}
		if err := s.Check(Exchange{Request: r, ReqBody: body, Status: rec.code, Header: rec.header, Body: rec.body.Bytes()}); err != nil {
			t.Errorf("%s %s: %v\nrequest: %.2000s\nanswer: %.2000s", r.Method, r.URL, err, body, rec.body.Bytes())
		}
	})
}

// recorder copies an answer as it is written.
type recorder struct {
	http.ResponseWriter
	code   int
	header http.Header
	body   bytes.Buffer
}

func (rec *recorder) WriteHeader(code int) {
	if rec.code == 0 {
		rec.code, rec.header = code, rec.ResponseWriter.Header().Clone()
	}
	rec.ResponseWriter.WriteHeader(code)
}

func (rec *recorder) Write(b []byte) (int, error) {
	if rec.code == 0 {
		rec.WriteHeader(http.StatusOK)
	}
	rec.body.Write(b)
	return rec.ResponseWriter.Write(b)
}

// Flush passes flushes through (streamed logs, forwarded answers).
func (rec *recorder) Flush() {
	if f, ok := rec.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap gives http.ResponseController the writer underneath.
func (rec *recorder) Unwrap() http.ResponseWriter { return rec.ResponseWriter }

// Breaches is a testing.TB whose Errorf records the breaches Handler
// reports instead of failing the test: for tests of the check itself.
type Breaches struct {
	testing.TB
	mu   sync.Mutex
	list []string
}

// Errorf records a breach.
func (b *Breaches) Errorf(format string, args ...any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.list = append(b.list, fmt.Sprintf(format, args...))
}

// List returns the breaches recorded.
func (b *Breaches) List() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.list)
}
