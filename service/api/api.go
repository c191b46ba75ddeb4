// Package api is the service's HTTP surface: routing, authentication
// (bearer tokens, the dashboard's sessions), strict JSON, the dashboard,
// the metrics endpoint and the forwarding of requests between replicas.
// It is the one place where errors become HTTP statuses (status): below
// it, errors carry a kind (package fault), never a status code.
package api

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dpbandit/dpbandit/service/define"
	"github.com/dpbandit/dpbandit/service/engine"
	"github.com/dpbandit/dpbandit/service/outcome"
	"github.com/dpbandit/dpbandit/service/store"
)

// Backend is what the surface serves: the service's experiments, its
// ledger and its replicas (service.Server).
type Backend interface {
	// Get returns a tenant's experiment (NotFound, or Gone when it is
	// archived).
	Get(tenant, id string) (*engine.Experiment, error)
	// List returns the experiments a tenant's requests are served here,
	// by id.
	List(tenant string) []*engine.Experiment
	// States returns what the API shows of every experiment of a tenant
	// (on a replica, the definition and serving replica of those served
	// elsewhere).
	States(ctx context.Context, tenant string) ([]outcome.State, error)
	// Create validates and stores a new experiment of a tenant.
	Create(ctx context.Context, tenant string, sp define.Spec) (*engine.Experiment, error)
	// SetStatus moves an experiment through its lifecycle (archived: it
	// leaves memory).
	SetStatus(ctx context.Context, x *engine.Experiment, to string) error
	// Ledger returns a tenant's unit's ledger rows, whole: every debit
	// folded first.
	Ledger(ctx context.Context, tenant, unit string) ([]store.LedgerRow, error)
	// UnitStats returns the units an experiment learned from and the
	// most rewards it learned from one, whole.
	UnitStats(ctx context.Context, x *engine.Experiment) (units, most int64, err error)
	// Log calls fn for every rewarded event of an experiment, in order.
	Log(ctx context.Context, x *engine.Experiment, fn func(store.Event) error) error
	// Err returns the failure that stopped the service's writes, if any.
	Err() error
	// Route returns the replica that serves an experiment (key
	// "tenant/id"), store.Replica{} when it is this one (or there are no
	// replicas); forwarded says the request came from another replica.
	Route(ctx context.Context, key string, forwarded bool) (store.Replica, error)
	// CreatesOn returns the replica where a new experiment is created
	// (store.Replica{}: here).
	CreatesOn(key string, forwarded bool) store.Replica
	// Replica returns this replica's id ("" without replicas) and the
	// transport of requests forwarded to the others.
	Replica() (id string, forward http.RoundTripper)
}

// Config configures the surface.
type Config struct {
	// Backend is what it serves.
	Backend Backend
	// Tokens maps bearer tokens to their tenant and role; nil serves
	// every request as an admin of tenant "default" (loopback only).
	Tokens map[string]Token
	// Registry is the service's Prometheus registry: the surface
	// registers its own metrics there, and serves it at /metrics.
	Registry *prometheus.Registry
	// UnitBudget is the cap on a unit's ledger, nano-rho (0: none).
	UnitBudget int64
	// Now is the clock; Logger logs.
	Now    func() time.Time
	Logger *slog.Logger
}

// server is the surface: its configuration, its metrics and the
// dashboard's sessions.
type server struct {
	cfg      Config
	b        Backend
	m        *metrics
	sessions *sessions
	// answers and bodies hold the buffers of the answers written by hand
	// (*[]byte; writeAnswer) and of the small bodies read (readSmall)
	answers, bodies sync.Pool
}

// New returns the service's HTTP handler.
func New(cfg Config) (http.Handler, error) {
	ss, err := newSessions()
	if err != nil {
		return nil, err
	}
	a := &server{cfg: cfg, b: cfg.Backend, m: newMetrics(cfg.Registry), sessions: ss}
	return a.handler(), nil
}
