package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"strings"
	"time"
)

// checkPprofAddr refuses a --pprof address that is not a loopback host
// with a port: the profiles are served without a token, so only this
// machine's processes (an operator's shell, an ssh or kubectl tunnel)
// may reach them.
func checkPprofAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--pprof: %v", err)
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return fmt.Errorf("--pprof: %q needs a port in [0, 65535] (0 picks one): %v", addr, err)
	}
	if !isLoopback(host) {
		return fmt.Errorf("--pprof %s is not a loopback address: the profiles are served to this machine only (reach them through ssh or kubectl port-forward)", addr)
	}
	return nil
}

// isLoopback reports whether host (no port) names this machine.
func isLoopback(host string) bool {
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return strings.EqualFold(host, "localhost") || ip != nil && ip.IsLoopback()
}

// pprofHandler serves net/http/pprof's pages under /debug/pprof/ on a mux
// of its own (never http.DefaultServeMux), to requests addressed to a
// loopback host only: a web page whose name resolves to 127.0.0.1 (DNS
// rebinding) is refused.
func pprofHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, err := net.SplitHostPort(r.Host)
		if err != nil {
			host = r.Host
		}
		if !isLoopback(host) {
			http.Error(w, "the profiles answer requests for a loopback host only", http.StatusForbidden)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// servePprof listens on addr (checked by checkPprofAddr) and serves the
// profiles until the returned server is closed; it says where on stdout.
func servePprof(addr string, stdout io.Writer) (*http.Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--pprof: %w", err)
	}
	// No WriteTimeout: a CPU profile or trace answers after its seconds.
	hs := &http.Server{Handler: pprofHandler(), ReadHeaderTimeout: 10 * time.Second}
	go hs.Serve(ln)
	fmt.Fprintf(stdout, "dpbandit serve: profiles (pprof, loopback only) on http://%s/debug/pprof/\n", ln.Addr())
	return hs, nil
}
