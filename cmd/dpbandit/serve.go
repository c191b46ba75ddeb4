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
	"github.com/dpbandit/dpbandit/service/engine"
	"github.com/dpbandit/dpbandit/service/store"
)

// serveCmd runs the decision service until ctx ends (SIGTERM, Ctrl-C),
// then shuts down gracefully: it stops accepting, finishes the requests
// in flight, waits for their writes and closes the store.
func serveCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("serve", stdout)
	addr := fs.String("addr", "127.0.0.1:8080", "listen `address` (host:port; port 0 picks one)")
	db := fs.String("db", "dpbandit.db", "store: a SQLite `file`, or a postgres:// URL")
	tokenFile := fs.String("token-file", "", "bearer tokens, one \"TOKEN TENANT client|admin\" or \"TOKEN * operator\" per line; without it the service listens on loopback only")
	unitBudget := fs.Float64("unit-budget", 0, "server-wide cap on each unit's ledger, in zCDP `rho` (0: none)")
	keepLog := fs.Bool("keep-log", false, "keep every reward for off-policy evaluation (GET /v1/experiments/{id}/log) instead of deleting released ones")
	tick := fs.Duration("tick", time.Second, "`period` of the reward-window loop")
	snapEvery := fs.Int64("snapshot-every", 1<<14, "save each experiment's state every `n` operations: a restart replays at most that many per experiment")
	replica := fs.Bool("replica", false, "run as one of several replicas on a PostgreSQL store: experiments are spread over the replicas by leases, and any replica answers any request (docs/service.md#replicas)")
	advertise := fs.String("advertise", "", "with --replica: the base `URL` at which the other replicas reach this one (default: http:// and the listening address)")
	leaseTTL := fs.Duration("lease-ttl", 5*time.Second, "with --replica: how long an experiment's lease lives without renewal; a dead replica's experiments are served again within lease-ttl + lease-ttl/10 + min(1s, lease-ttl/5), plus their load time (6.5s at 5s; docs/service.md#replicas)")
	if err := parse(fs, args); err != nil {
		return err
	}
	var tokens map[string]api.Token
	if *tokenFile != "" {
		f, err := os.Open(*tokenFile)
		if err != nil {
			return usageError{err}
		}
		if err := privateFile(f); err != nil {
			f.Close()
			return &experiment.FieldError{Field: "token-file", Err: err}
		}
		tokens, err = api.LoadTokens(f)
		f.Close()
		if err != nil {
			return usageError{fmt.Errorf("%s: %v", *tokenFile, err)}
		}
	}
	capNano, err := engine.CapNano(*unitBudget)
	if err != nil {
		return usageError{fmt.Errorf("--unit-budget: %v", err)}
	}
	if *tick <= 0 {
		return usageError{fmt.Errorf("--tick must be a positive period, got %v", *tick)}
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if set["lease-ttl"] && !*replica {
		return usageError{errors.New("--lease-ttl is for --replica")}
	}
	if *snapEvery < 1 {
		return usageError{fmt.Errorf("--snapshot-every must be at least 1, got %d", *snapEvery)}
	}
	host, port, err := net.SplitHostPort(*addr)
	if err != nil {
		return usageError{fmt.Errorf("addr: %v", err)}
	}
	if _, err := net.LookupPort("tcp", port); err != nil { // before the store opens
		return usageError{fmt.Errorf("addr: %q needs a port in [0, 65535] (0 picks one): %v", *addr, err)}
	}
	if tokens == nil {
		if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return usageError{fmt.Errorf("--addr %s is not a loopback address: without --token-file the service serves only this machine (give tokens to listen elsewhere)", *addr)}
		}
	}
	postgres := strings.HasPrefix(*db, "postgres://") || strings.HasPrefix(*db, "postgresql://")
	if *replica && !postgres {
		return usageError{store.ErrReplicasNeedPostgres}
	}
	if !postgres {
		if err := checkSQLitePath(*db); err != nil {
			return &experiment.FieldError{Field: "db", Err: err}
		}
	}
	if *advertise != "" && !*replica {
		return usageError{errors.New("--advertise is for --replica")}
	}
	if u, err := url.Parse(*advertise); *advertise != "" && (err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == "") {
		return usageError{fmt.Errorf("--advertise %q: want a base URL such as http://10.0.0.7:8080", *advertise)}
	}
	if *leaseTTL < 100*time.Millisecond {
		return usageError{fmt.Errorf("--lease-ttl must be at least 100ms, got %v", *leaseTTL)}
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	st, err := service.Open(ctx, *db)
	if err != nil {
		return fmt.Errorf("store %s: %w", describeDB(*db), err)
	}
	defer st.Close()
	// The service listens once it owns the store (a second service
	// waiting for it never listens), answering 503 while the experiments
	// load (/healthz 200: alive; /readyz 503), then serves.
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
		if ln, err = net.Listen("tcp", *addr); err != nil {
			return err
		}
		go func() { served <- hs.Serve(ln) }()
		return nil
	}
	cfg := service.Config{Store: st, Tokens: tokens, UnitBudget: capNano, KeepLog: *keepLog, Logger: log, Tick: *tick, Owned: listen,
		SnapshotEvery: *snapEvery}
	if *replica {
		// A replica listens first: the others forward to the address it
		// registers, and it answers 503 until it has joined.
		if err := listen(); err != nil {
			return err
		}
		cfg.Owned = nil
		if *advertise == "" {
			*advertise = "http://" + ln.Addr().String()
		}
		host, _ := os.Hostname()
		cfg.Replica = &store.Replica{ID: fmt.Sprintf("%s-%d-%x", host, os.Getpid(), time.Now().UnixNano()&0xffffff), Addr: *advertise}
		cfg.LeaseTTL = *leaseTTL
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
	if tokens == nil {
		fmt.Fprintln(stdout, "dpbandit serve: no --token-file: listening on loopback only; every request acts as an admin of tenant \"default\"")
	}
	fmt.Fprintf(stdout, "dpbandit serve: listening on http://%s (store %s)\n", ln.Addr(), describeDB(*db))
	loop, stopLoop := context.WithCancel(context.Background())
	loopDone := make(chan struct{})
	go func() { srv.Run(loop); close(loopDone) }()
	var failed <-chan struct{} // nil: a single service stays up, unhealthy
	if *replica {
		failed = srv.Failed()
	}
	select {
	case err = <-served:
	case <-failed:
		// Fail-stop: a replica that lost a lease or whose store failed a
		// commit exits, so that its clients go to the others; its
		// supervisor restarts it.
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		hs.Shutdown(sctx)
		cancel()
		err = fmt.Errorf("stopped taking writes: %w", srv.Err())
	case <-ctx.Done():
		if *replica {
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
