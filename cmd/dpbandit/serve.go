package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/dpbandit/dpbandit/experiment"
	"github.com/dpbandit/dpbandit/internal/regfile"
	"github.com/dpbandit/dpbandit/service"
	"github.com/dpbandit/dpbandit/service/api"
	"github.com/dpbandit/dpbandit/service/define"
	"github.com/dpbandit/dpbandit/service/store"
	"github.com/dpbandit/dpbandit/service/store/stores"
)

// serveCmd runs the decision service until ctx ends (SIGTERM, Ctrl-C),
// then shuts down gracefully: it stops accepting, finishes the requests
// in flight, waits for their writes and closes the store.
func serveCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	a, err := parseServeArgs(args, stdout)
	if err != nil {
		return err
	}
	cfg, err := a.config()
	if err != nil {
		return err
	}
	cfg.Logger = slog.New(slog.NewTextHandler(stderr, nil))
	st, err := service.Open(ctx, a.db)
	if err != nil {
		return fmt.Errorf("store %s: %w", describeDB(a.db), err)
	}
	defer st.Close()
	cfg.Store = st
	if a.pprof != "" {
		ps, err := servePprof(a.pprof, stdout)
		if err != nil {
			return err
		}
		defer ps.Close()
	}
	return a.serve(ctx, cfg, stdout)
}

// serveArgs are dpbandit serve's flags.
type serveArgs struct {
	addr, db, tokenFile, advertise string
	pprof                          string // the profiles' loopback address ("": none)
	unitBudget                     float64
	keepLog, replica               bool
	tick, leaseTTL                 time.Duration
	snapEvery                      int64
	set                            map[string]bool // the flags given
}

// parseServeArgs reads dpbandit serve's flags.
func parseServeArgs(args []string, stdout io.Writer) (*serveArgs, error) {
	a := &serveArgs{}
	fs := newFlags("serve", stdout)
	fs.StringVar(&a.addr, "addr", "127.0.0.1:8080", "listen `address` (host:port; port 0 picks one)")
	fs.StringVar(&a.db, "db", "dpbandit.db", "store: a SQLite `file`, or a postgres:// URL")
	fs.StringVar(&a.tokenFile, "token-file", "", "bearer tokens, one \"TOKEN TENANT client|admin\" or \"TOKEN * operator\" per line; without it the service listens on loopback only")
	fs.Float64Var(&a.unitBudget, "unit-budget", 0, "server-wide cap on each unit's ledger, in zCDP `rho` (0: none)")
	fs.BoolVar(&a.keepLog, "keep-log", false, "keep every reward for off-policy evaluation (GET /v1/experiments/{id}/log) instead of deleting released ones")
	fs.DurationVar(&a.tick, "tick", time.Second, "`period` of the reward-window loop")
	fs.Int64Var(&a.snapEvery, "snapshot-every", 1<<14, "save each experiment's state every `n` operations: a restart replays at most that many per experiment")
	fs.BoolVar(&a.replica, "replica", false, "run as one of several replicas on a PostgreSQL store: experiments are spread over the replicas by leases, and any replica answers any request (docs/service.md#replicas)")
	fs.StringVar(&a.advertise, "advertise", "", "with --replica: the base `URL` at which the other replicas reach this one (default: http:// and the listening address)")
	fs.DurationVar(&a.leaseTTL, "lease-ttl", 5*time.Second, "with --replica: how long an experiment's lease lives without renewal; a dead replica's experiments are served again within lease-ttl + lease-ttl/10 + min(1s, lease-ttl/5), plus their load time (6.5s at 5s; docs/service.md#replicas)")
	fs.StringVar(&a.pprof, "pprof", "", "serve Go's profiles (net/http/pprof) at /debug/pprof/ on this loopback `address` (host:port), without a token; off by default")
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	a.set = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { a.set[f.Name] = true })
	return a, nil
}

// config checks the flags together, before the store opens, and returns
// the service's configuration but its store and logger.
func (a *serveArgs) config() (service.Config, error) {
	var cfg service.Config
	if a.tokenFile != "" {
		f, err := os.Open(a.tokenFile)
		if err != nil {
			return cfg, usageError{err}
		}
		if err := privateFile(f); err != nil {
			f.Close()
			return cfg, &experiment.FieldError{Field: "token-file", Err: err}
		}
		cfg.Tokens, err = api.LoadTokens(f)
		f.Close()
		if err != nil {
			return cfg, usageError{fmt.Errorf("%s: %v", a.tokenFile, err)}
		}
	}
	capNano, err := define.CapNano(a.unitBudget)
	if err != nil {
		return cfg, usageError{fmt.Errorf("--unit-budget: %v", err)}
	}
	switch {
	case a.tick <= 0:
		return cfg, usageError{fmt.Errorf("--tick must be a positive period, got %v", a.tick)}
	case a.set["lease-ttl"] && !a.replica:
		return cfg, usageError{errors.New("--lease-ttl is for --replica")}
	case a.snapEvery < 1:
		return cfg, usageError{fmt.Errorf("--snapshot-every must be at least 1, got %d", a.snapEvery)}
	}
	host, port, err := net.SplitHostPort(a.addr)
	if err != nil {
		return cfg, usageError{fmt.Errorf("addr: %v", err)}
	}
	if _, err := net.LookupPort("tcp", port); err != nil { // before the store opens
		return cfg, usageError{fmt.Errorf("addr: %q needs a port in [0, 65535] (0 picks one): %v", a.addr, err)}
	}
	if cfg.Tokens == nil {
		if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return cfg, usageError{fmt.Errorf("--addr %s is not a loopback address: without --token-file the service serves only this machine (give tokens to listen elsewhere)", a.addr)}
		}
	}
	if a.pprof != "" {
		if err := checkPprofAddr(a.pprof); err != nil {
			return cfg, usageError{err}
		}
	}
	postgres := stores.Postgres(a.db)
	if a.replica && !postgres {
		return cfg, usageError{store.ErrReplicasNeedPostgres}
	}
	if !postgres {
		if err := checkSQLitePath(a.db); err != nil {
			return cfg, &experiment.FieldError{Field: "db", Err: err}
		}
	}
	if a.advertise != "" && !a.replica {
		return cfg, usageError{errors.New("--advertise is for --replica")}
	}
	if u, err := url.Parse(a.advertise); a.advertise != "" && (err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == "") {
		return cfg, usageError{fmt.Errorf("--advertise %q: want a base URL such as http://10.0.0.7:8080", a.advertise)}
	}
	if a.leaseTTL < 100*time.Millisecond {
		return cfg, usageError{fmt.Errorf("--lease-ttl must be at least 100ms, got %v", a.leaseTTL)}
	}
	cfg.UnitBudget, cfg.KeepLog, cfg.Tick, cfg.SnapshotEvery = capNano, a.keepLog, a.tick, a.snapEvery
	return cfg, nil
}

// serve listens once the service owns the store (a second service
// waiting for it never listens), answering 503 while the experiments
// load (/healthz 200: alive; /readyz 503), then serves until ctx ends
// (SIGTERM, Ctrl-C) or, on a replica, until it stops taking writes.
func (a *serveArgs) serve(ctx context.Context, cfg service.Config, stdout io.Writer) error {
	var handler atomic.Pointer[http.Handler]
	loadingH := http.Handler(loading{})
	handler.Store(&loadingH)
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*handler.Load()).ServeHTTP(w, r) }),
		ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute,
		WriteTimeout: time.Minute, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10}
	var ln net.Listener
	served := make(chan error, 1)
	listen := func() error {
		var err error
		if ln, err = net.Listen("tcp", a.addr); err != nil {
			return err
		}
		go func() { served <- hs.Serve(ln) }()
		return nil
	}
	cfg.Owned = listen
	if a.replica {
		// A replica listens first: the others forward to the address it
		// registers, and it answers 503 until it has joined.
		if err := listen(); err != nil {
			return err
		}
		cfg.Owned = nil
		if a.advertise == "" {
			a.advertise = "http://" + ln.Addr().String()
		}
		host, _ := os.Hostname()
		cfg.Replica = &store.Replica{ID: fmt.Sprintf("%s-%d-%x", host, os.Getpid(), time.Now().UnixNano()&0xffffff), Addr: a.advertise}
		cfg.LeaseTTL = a.leaseTTL
	}
	srv, err := service.New(ctx, cfg)
	if err != nil && ctx.Err() != nil {
		// Ctrl-C or SIGTERM while waiting for another service's store, or
		// while loading: nothing was written.
		hs.Close()
		fmt.Fprintln(stdout, "dpbandit serve: stopped before serving; nothing was written")
		return nil
	}
	if err != nil {
		hs.Close()
		return err
	}
	ready := srv.Handler()
	handler.Store(&ready)
	if cfg.Tokens == nil {
		fmt.Fprintln(stdout, "dpbandit serve: no --token-file: listening on loopback only; every request acts as an admin of tenant \"default\"")
	}
	fmt.Fprintf(stdout, "dpbandit serve: listening on http://%s (store %s)\n", ln.Addr(), describeDB(a.db))
	return a.until(ctx, srv, hs, served, stdout)
}

// until runs the reward-window loop until the server stops: its
// listener failed, it stopped taking writes (a replica exits then: its
// supervisor restarts it), or ctx ended (a replica hands its
// experiments over first); then it finishes the requests in flight and
// closes the service.
func (a *serveArgs) until(ctx context.Context, srv *service.Server, hs *http.Server, served chan error, stdout io.Writer) error {
	loop, stopLoop := context.WithCancel(context.Background())
	loopDone := make(chan struct{})
	go func() { srv.Run(loop); close(loopDone) }()
	var failed <-chan struct{} // nil: a single service stays up, unhealthy
	if a.replica {
		failed = srv.Failed()
	}
	var err error
	select {
	case err = <-served:
	case <-failed:
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		hs.Shutdown(sctx)
		cancel()
		err = fmt.Errorf("stopped taking writes: %w", srv.Err())
	case <-ctx.Done():
		if a.replica {
			fmt.Fprintln(stdout, "dpbandit serve: handing the experiments over to the other replicas")
			srv.Drain()
		}
		fmt.Fprintln(stdout, "dpbandit serve: shutting down: finishing requests in flight")
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err = hs.Shutdown(sctx)
		cancel()
	}
	stopLoop()
	<-loopDone
	srv.Close()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	if err == nil {
		fmt.Fprintln(stdout, "dpbandit serve: stopped; every acknowledged write is in the store")
	}
	return err
}

// loading answers while the experiments load: /healthz 200 (the process
// is alive), everything else 503 (/readyz: not ready yet).
type loading struct{}

func (loading) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	if r.URL.Path == "/healthz" {
		w.Write([]byte(`{"status":"loading"}` + "\n"))
		return
	}
	w.Header().Set("Retry-After", "1")
	w.WriteHeader(http.StatusServiceUnavailable)
	w.Write([]byte(`{"error":"loading the experiments: retry"}` + "\n"))
}

// privateFile refuses a file of secrets that others could read or
// change, by the rule PostgreSQL applies to its key file: owned by the
// service's own user, group and others may not read or write it (0600
// or less, as ssh wants of a private key); owned by root, it may be
// group-readable and nothing more (0640 or less: a group an
// administrator granted, as Kubernetes does with a Secret's defaultMode
// 0440 and the pod's fsGroup); owned by anyone else, it is refused.
func privateFile(f *os.File) error {
	info, err := f.Stat()
	if err != nil {
		return err
	}
	perm, owner := info.Mode().Perm(), -1
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		owner = int(st.Uid)
	}
	name := f.Name()
	switch me := os.Geteuid(); {
	case owner == me && perm&0o077 != 0:
		return fmt.Errorf("%s holds bearer tokens but group or others may read or write it (mode %04o): make it yours alone: chmod 600 %s", name, perm, name)
	case owner == 0 && owner != me && perm&0o037 != 0:
		return fmt.Errorf("%s holds bearer tokens but others may read it or group write it (mode %04o): chmod 600 %s (or 640, root-owned, for a group granted to the service)", name, perm, name)
	case owner != me && owner != 0:
		return fmt.Errorf("%s holds bearer tokens but belongs to user %d, not to this service's user %d nor to root: chown it, then chmod 600 %s", name, owner, me, name)
	}
	return nil
}

// checkSQLitePath refuses a SQLite path that the store could not open
// as a database file, before anything is created: empty (the store
// would make "..lock" in the current folder), a directory, a device or
// a FIFO, a file in a folder that does not exist or is not writable,
// and characters that would end the path in the store's file: URI.
func checkSQLitePath(path string) error {
	if path == "" {
		return errors.New("needs a SQLite file or a postgres:// URL, got an empty path")
	}
	if strings.ContainsAny(path, "?#") {
		return fmt.Errorf("%q: a SQLite path may not hold '?' or '#' (they would end it in the store's file: URI)", path)
	}
	f, err := regfile.Open(path) // non-blocking: a FIFO does not hang
	var nr *regfile.NotRegularError
	switch {
	case errors.As(err, &nr):
		return fmt.Errorf("%s is %s, not a SQLite database file", nr.Path, nr.Kind)
	case err == nil:
		return f.Close()
	case !errors.Is(err, os.ErrNotExist):
		return err
	}
	return creatable(path)
}

// creatable checks that the file path, which does not exist, can be
// created: its folder exists and may be written.
func creatable(path string) error {
	dir := filepath.Dir(path)
	if d, err := os.Stat(dir); err != nil || !d.IsDir() {
		return fmt.Errorf("%s: the folder %s does not exist (the file is created, not its folders)", path, dir)
	}
	const wOK = 2 // access(2)'s W_OK: may create files in dir
	if err := syscall.Access(dir, wOK); err != nil {
		return fmt.Errorf("%s: cannot create it in %s: %v", path, dir, err)
	}
	return nil
}

// describeDB names a store without its password.
func describeDB(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && u.Scheme != "" {
		u.User = nil
		return u.Redacted()
	}
	return "sqlite:" + dsn
}
