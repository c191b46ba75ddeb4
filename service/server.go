// Package service is dpbandit's private decision service: an HTTP/JSON
// API (under /v1) that takes decisions for an application, learns from
// the rewards it reports later, and keeps its privacy guarantee across
// retries, restarts and crashes. `dpbandit serve` runs it.
//
// Durable state. Every operation that changes a policy (a decision, a
// learned reward, a dropped slot) is numbered, and written with the
// releases and random words it drew (see tape) in one transaction before
// its answer is sent; operations reach the store in the order they were
// made (one writer, group commit). A restart rebuilds each policy by
// replaying its operations on the recorded releases: a release is drawn
// once, and never re-drawn. Rewards are debited from their unit's ledger
// in the transaction that stores them on PostgreSQL, and in folds on
// SQLite (engine/fold.go): until its fold, a debit is counted from memory, and
// a restart folds what a crash left before it serves.
//
// Fail-stop. If the store fails a commit, the service stops taking writes
// (503) and reports itself unhealthy: its memory may then be ahead of
// the store, and only a restart, which rebuilds from the store, is safe.
package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dpbandit/dpbandit/service/api"
	"github.com/dpbandit/dpbandit/service/commit"
	"github.com/dpbandit/dpbandit/service/define"
	"github.com/dpbandit/dpbandit/service/engine"
	"github.com/dpbandit/dpbandit/service/fault"
	"github.com/dpbandit/dpbandit/service/internal/bloom"
	"github.com/dpbandit/dpbandit/service/ledger"
	"github.com/dpbandit/dpbandit/service/store"
	"github.com/dpbandit/dpbandit/service/store/stores"
)

// Config configures a Server.
type Config struct {
	// Store is the durable state (Open).
	Store store.Store
	// Tokens maps bearer tokens to their tenant and role; nil serves
	// every request as an admin of tenant "default" (loopback only: the
	// command refuses other addresses without tokens).
	Tokens map[string]api.Token
	// UnitBudget caps, in nano-rho, what a unit's ledger may reach across
	// its tenant's experiments (0: no cap).
	UnitBudget int64
	// KeepLog keeps every reward (for off-policy evaluation and the log
	// export) instead of deleting those of released blocks.
	KeepLog bool
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Entropy is the randomness of noise and policies (nil: crypto/rand).
	Entropy io.Reader
	// Logger logs (nil: discard).
	Logger *slog.Logger
	// Tick is the period of the reward-window loop (0: one second).
	Tick time.Duration
	// Owned, if set, is called once the store is owned, before the
	// experiments load: dpbandit serve starts listening there, and
	// answers 503 (/readyz too) until New returns.
	Owned func() error
	// KeepEvents is the number of settled events each experiment keeps
	// in memory for retries (0: 16384), besides those decided since its
	// last fold (at most foldEvery, engine/fold.go); older ones are looked up
	// in the store, so that memory does not grow with the history.
	KeepEvents int
	// KeepUnits bounds the units whose counts and spend are cached in
	// memory, per experiment and across experiments (0: 65536); the
	// others are read from the ledger when they come back (ledger/cache.go).
	KeepUnits int
	// SnapshotEvery is the number of operations between an experiment's
	// snapshots (0: 16384): a restart replays at most that many (and
	// the events pending then) per experiment (engine/snapshot.go).
	SnapshotEvery int64
	// Replica, if set, makes the service one of several replicas on a
	// PostgreSQL store (replica.go): this replica's id and the address
	// the others forward requests to. Experiments load when their lease
	// is taken, not at the start.
	Replica *store.Replica
	// LeaseTTL is how long a replica's lease on an experiment lives
	// without renewal (0: 5s): after a replica dies, its experiments are
	// served again by others within LeaseTTL + LeaseTTL/10 +
	// min(1s, LeaseTTL/5), plus their load time (replica.go).
	LeaseTTL time.Duration
}

// Server is the decision service.
type Server struct {
	cfg Config
	w   *commit.Writer
	m   *metrics

	mu   sync.RWMutex
	exps map[string]*engine.Experiment
	// archived holds the keys of archived experiments: 410, never loaded.
	archived map[string]bool

	// env is what the experiments share: the store, the writer, the
	// ledger, the id filter (engine.Env).
	env    *engine.Env
	ledger *ledger.Ledger

	handler http.Handler // the HTTP surface (package api)

	// the background work started by New (buildFilters, keepLeases)
	bg     sync.WaitGroup
	bgCtx  context.Context
	stopBG context.CancelFunc

	rep *replicas // nil unless Config.Replica (replica.go)

	fatal  atomic.Pointer[error]
	failed chan struct{} // closed by the first fail
}

// New owns the store (or, as a replica, joins the others), loads every
// experiment from it (engine.Load: a snapshot and the operations after
// it, replayed on their recorded releases), and starts the writer and
// the background work (the filters of known ids and units; a replica's
// leases). Run the reward-window loop with Run; stop with Close.
func New(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Tick <= 0 {
		cfg.Tick = time.Second
	}
	if cfg.KeepEvents <= 0 {
		cfg.KeepEvents = 1 << 14
	}
	if cfg.KeepUnits <= 0 {
		cfg.KeepUnits = 1 << 16
	}
	s := &Server{cfg: cfg, exps: map[string]*engine.Experiment{}, archived: map[string]bool{}, m: newMetrics(), failed: make(chan struct{})}
	s.bgCtx, s.stopBG = context.WithCancel(context.Background())
	var err error
	if cfg.Replica != nil {
		err = join(ctx, s)
	} else {
		host, _ := os.Hostname()
		holder := fmt.Sprintf("dpbandit serve on %s, pid %d", host, os.Getpid())
		err = cfg.Store.Own(ctx, holder, func(cur string) {
			cfg.Logger.Warn("waiting for the store: another service holds it; it is taken over once that service stops", "holder", cur)
		})
	}
	if err != nil {
		s.stopBG()
		return nil, err
	}
	if cfg.Owned != nil {
		if err := cfg.Owned(); err != nil {
			return nil, err
		}
	}
	s.handler, err = api.New(api.Config{Backend: s, Tokens: cfg.Tokens, Registry: s.m.reg, UnitBudget: cfg.UnitBudget,
		Now: cfg.Now, Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	ids := bloom.NewFilter(bloom.DefaultBits)
	var rs store.Replicated
	if s.rep != nil {
		rs = s.rep.rs
	}
	s.ledger = ledger.New(cfg.Store, rs, cfg.UnitBudget, cfg.KeepUnits, ids, cfg.Logger)
	s.env = &engine.Env{Store: cfg.Store, Ledger: s.ledger, IDs: ids, Metrics: s.m.engine,
		Now: cfg.Now, Entropy: cfg.Entropy, Logger: cfg.Logger, KeepLog: cfg.KeepLog, KeepEvents: cfg.KeepEvents, KeepUnits: cfg.KeepUnits,
		SnapshotEvery: cfg.SnapshotEvery, Eager: cfg.Store.WritesAsItGoes(), Unreserved: s.rep != nil && cfg.UnitBudget == 0}
	if s.rep != nil {
		s.env.Holds = s.rep.holds
	}
	var defs []define.Definition
	if s.rep == nil { // (a replica loads each experiment as it takes its lease)
		if defs, err = define.Read(ctx, cfg.Store); err != nil {
			return nil, err
		}
	}
	for _, d := range defs {
		if d.Status == store.Archived {
			s.archived[d.Key()] = true // 410, not loaded
			continue
		}
		x, err := engine.Load(ctx, d, s.env)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if errors.Is(err, engine.ErrHistory) {
			return nil, err // the store failed: its ledger would miss what the experiment spent
		}
		if err != nil {
			// An experiment that fails to load is served 503 alone; the
			// others start.
			cfg.Logger.Error("not restored: served 503 until a restart loads it", "experiment", d.Key(), "err", err)
			x = engine.Broken(d, err, s.env)
		} else {
			ops, replayed, releases := x.Loaded()
			cfg.Logger.Info("restored", "experiment", d.Key(), "operations", ops, "replayed", replayed, "releases", releases)
		}
		s.add(x)
	}
	s.w = commit.New(cfg.Store, s.fail, s.m.commits, s.m.group)
	s.env.Writer = s.w // (the loads above committed their folds directly)
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		if s.rep != nil {
			s.rep.keepLeases(s.bgCtx)
			return
		}
		s.ledger.Load(s.bgCtx)
		for _, x := range s.List("") {
			x.LoadIDs(s.bgCtx)
		}
	}()
	return s, nil
}

func (s *Server) now() time.Time { return s.cfg.Now() }

// fail stops the service's writes after a store failure.
func (s *Server) fail(err error) {
	if s.fatal.CompareAndSwap(nil, &err) {
		close(s.failed)
		s.cfg.Logger.Error("store failure: the service stops taking writes; restart it", "err", err)
	}
}

// Failed is closed once the service stops taking writes (Err).
func (s *Server) Failed() <-chan struct{} { return s.failed }

// Err returns the failure that stopped the service, if any.
func (s *Server) Err() error {
	if p := s.fatal.Load(); p != nil {
		return *p
	}
	return nil
}

// Run enforces the reward windows until ctx ends: every Tick, it checks
// that the service still owns the store (else it stops taking writes),
// and events whose window has passed get the default reward or are
// dropped. The
// loop keeps no state of its own: pending events are in the store, and a
// restarted service expires them at its first tick.
func (s *Server) Run(ctx context.Context) { every(ctx, s.cfg.Tick, s.Expire) }

// every calls f every period until ctx ends.
func every(ctx context.Context, period time.Duration, f func()) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f()
		}
	}
}

// Expire settles every event whose reward window has passed and waits
// until that is durable.
func (s *Server) Expire() {
	if s.Err() != nil {
		return
	}
	if err := s.cfg.Store.Owned(context.Background()); errors.Is(err, store.ErrFenced) {
		s.fail(err)
		return
	}
	now := s.now()
	ls := s.List("")
	for _, x := range ls {
		for _, c := range x.Expire(now) {
			s.w.Wait(context.Background(), c)
		}
	}
	s.foldFirst(context.Background(), ls...) // (an error: the writes stopped)
}

// Close waits for the writes in flight and stops the writer. The store
// stays open.
func (s *Server) Close() {
	s.stopBG()
	s.bg.Wait()
	if s.rep != nil && s.Err() == nil {
		s.Drain()
	}
	s.saveAll()
	s.w.Close()
}

// saveAll writes a snapshot of each experiment changed since its last,
// so that the next start replays nothing (the requests are done).
func (s *Server) saveAll() {
	for _, x := range s.List("") {
		x.Save()
	}
}

// add serves an experiment; the caller holds s.mu or is New.
func (s *Server) add(x *engine.Experiment) {
	s.exps[x.Key()] = x
	s.m.budget.WithLabelValues(x.Key()).Set(float64(x.Definition().NanoRho) / 1e9)
	// Every experiment's series exist from its load, at 0, also for one
	// that failed to load (an alert on absent() sees no difference).
	s.m.engine.Decisions.WithLabelValues(x.Key())
	s.m.engine.Rewards.WithLabelValues(x.Key(), store.Learned)
}

// Open opens (and creates or migrates) the store at dsn: a postgres://
// or postgresql:// URL (PostgreSQL), or a SQLite file path.
func Open(ctx context.Context, dsn string) (store.Store, error) { return stores.Open(ctx, dsn) }

// foldFirst folds the experiments xs and waits until that is durable:
// what the ledger shows of them is then whole. The folds are submitted
// first and waited for after, so that they commit together.
func (s *Server) foldFirst(ctx context.Context, xs ...*engine.Experiment) error {
	var pending []chan struct{}
	for _, x := range xs {
		ch, err := x.FoldNow()
		if err != nil {
			return fault.Errorf(fault.Unavailable, "%v", err)
		}
		if ch != nil {
			pending = append(pending, ch)
		}
	}
	for _, ch := range pending {
		if err := s.w.Wait(ctx, ch); err != nil {
			return err
		}
	}
	return nil
}
