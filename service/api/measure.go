package api

import (
	"net/http"
	"strconv"
	"time"
)

// measured returns a route that writes its own answers (/login,
// /logout) counted and timed under its pattern, as every other route is
// (dpbandit_http_requests_total, dpbandit_http_request_seconds): its
// pattern is among the metrics' routes from the start.
func (a *server) measured(pattern string, h http.HandlerFunc) (string, http.HandlerFunc) {
	lat := a.m.latency.WithLabelValues(pattern)
	return pattern, func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
		h(sw, r)
		a.m.requests.WithLabelValues(pattern, strconv.Itoa(sw.code)).Inc()
		lat.Observe(time.Since(start).Seconds())
	}
}

// statusWriter keeps the status an answer was written with.
type statusWriter struct {
	http.ResponseWriter
	code  int
	wrote bool
}

func (s *statusWriter) WriteHeader(code int) {
	if !s.wrote {
		s.code, s.wrote = code, true
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	s.wrote = true
	return s.ResponseWriter.Write(b)
}

// Unwrap gives http.ResponseController the writer underneath.
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }
