// Package enginetest runs engine experiments on a real store, as the
// service does (a group-commit writer, the ledger, loads at each open),
// without HTTP: the harness of the tests of the engine and of the
// packages built on it.
package enginetest

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dpbandit/dpbandit/service/commit"
	"github.com/dpbandit/dpbandit/service/define"
	"github.com/dpbandit/dpbandit/service/engine"
	"github.com/dpbandit/dpbandit/service/internal/bloom"
	"github.com/dpbandit/dpbandit/service/internal/storetest"
	"github.com/dpbandit/dpbandit/service/ledger"
	"github.com/dpbandit/dpbandit/service/outcome"
	"github.com/dpbandit/dpbandit/service/store"
	"github.com/dpbandit/dpbandit/service/store/memstore"
	"github.com/dpbandit/dpbandit/service/store/stores"
)

// Config is what an engine test sets of its experiments' Env.
type Config struct {
	KeepLog       bool
	KeepEvents    int
	KeepUnits     int
	SnapshotEvery int64
	UnitBudget    int64
	Now           func() time.Time
	Entropy       io.Reader
}

// Harness runs experiments on a real store, as the service does (a
// group-commit writer, the ledger, loads at each open), without HTTP:
// the tests of the engine and of the packages built on it. Store,
// Writer and Env are the running ones (replaced at each Restart).
type Harness struct {
	t      testing.TB
	dsn    string
	cfg    Config
	Store  store.Store
	mem    *memstore.Store // the store when dsn is MemDSN (kept across restarts)
	Writer *commit.Writer
	Env    *engine.Env

	mu   sync.Mutex
	exps map[string]*engine.Experiment
}

// MemDSN names the in-memory store (memstore) for Start.
const MemDSN = "mem:"

// ForAllStores runs f on a fresh SQLite store, a fresh PostgreSQL one
// and the in-memory fake, which must behave as they do.
func ForAllStores(t *testing.T, f func(t *testing.T, dsn string)) {
	storetest.ForStores(t, f)
	t.Run("memstore", func(t *testing.T) { f(t, MemDSN) })
}

// Start opens a harness on dsn; it closes at the test's end.
func Start(t testing.TB, dsn string, cfg Config) *Harness {
	t.Helper()
	h := &Harness{t: t, dsn: dsn, cfg: cfg}
	h.Open()
	t.Cleanup(h.Close)
	return h
}

// EachStore runs f, in parallel with the other tests, on a harness
// started with cfg on a fresh SQLite store and a fresh PostgreSQL one.
// Both harnesses share cfg, so it holds no Entropy (whose draws the
// first store would take from the second): such a test starts its own.
func EachStore(t *testing.T, cfg Config, f func(t *testing.T, h *Harness)) {
	t.Parallel()
	if cfg.Entropy != nil {
		t.Fatal("EachStore: an Entropy would be shared by both stores' harnesses")
	}
	storetest.ForStores(t, func(t *testing.T, dsn string) { f(t, Start(t, dsn, cfg)) })
}

// NewMetrics returns counters on a registry of their own.
func NewMetrics() *engine.Metrics {
	return &engine.Metrics{
		Decisions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "d"}, []string{"experiment"}),
		Rewards:   prometheus.NewCounterVec(prometheus.CounterOpts{Name: "r"}, []string{"experiment", "status"}),
		Ignored:   prometheus.NewCounterVec(prometheus.CounterOpts{Name: "i"}, []string{"experiment", "reason"}),
		Releases:  prometheus.NewCounterVec(prometheus.CounterOpts{Name: "l"}, []string{"experiment"}),
	}
}

// Open opens the store, owns it and loads every experiment.
func (h *Harness) Open() {
	h.t.Helper()
	ctx := context.Background()
	var st store.Store
	if h.dsn == MemDSN {
		if h.mem == nil {
			h.mem = memstore.New()
		}
		st = h.mem
	} else {
		var err error
		if st, err = stores.Open(ctx, h.dsn); err != nil {
			h.t.Fatal(err)
		}
	}
	if err := st.Own(ctx, "engine test", nil); err != nil {
		h.t.Fatal(err)
	}
	now := h.cfg.Now
	if now == nil {
		now = time.Now
	}
	ids := bloom.NewFilter(1 << 20)
	logger := slog.New(slog.DiscardHandler)
	h.Store = st
	keepUnits := h.cfg.KeepUnits
	if keepUnits == 0 {
		keepUnits = 1 << 16
	}
	h.Env = &engine.Env{Store: st, Ledger: ledger.New(st, nil, h.cfg.UnitBudget, keepUnits, ids, logger), IDs: ids, Metrics: NewMetrics(),
		Now: now, Entropy: h.cfg.Entropy, Logger: logger, KeepLog: h.cfg.KeepLog, KeepEvents: h.cfg.KeepEvents, KeepUnits: keepUnits,
		SnapshotEvery: h.cfg.SnapshotEvery, Eager: st.WritesAsItGoes()}
	defs, err := define.Read(ctx, st)
	if err != nil {
		h.t.Fatal(err)
	}
	h.exps = map[string]*engine.Experiment{}
	for _, d := range defs {
		x, err := engine.Load(ctx, d, h.Env)
		if err != nil {
			x = engine.Broken(d, err, h.Env)
		}
		h.exps[d.Key()] = x
	}
	h.Writer = commit.New(st, func(error) {}, nil, nil)
	h.Env.Writer = h.Writer
}

// Close saves every experiment, as the service's stop does, and closes
// the store.
func (h *Harness) Close() {
	if h.Store == nil {
		return
	}
	for _, x := range h.exps {
		x.Save()
	}
	h.Writer.Close()
	h.Store.Close()
	h.Store = nil
}

// Crash stops the harness as a crash would: the writes in flight are
// committed, nothing is saved or folded at the stop.
func (h *Harness) Crash() {
	h.Writer.Close()
	h.Store.Close()
	h.Store = nil
}

// Restart closes the harness and opens it again on the same store.
func (h *Harness) Restart() {
	h.Close()
	h.Open()
}

// Get returns a loaded experiment of tenant "default".
func (h *Harness) Get(id string) *engine.Experiment {
	h.t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	x := h.exps["default/"+id]
	if x == nil {
		h.t.Fatalf("no experiment %q", id)
	}
	return x
}

// Create creates an experiment of tenant "default" from a client's
// spec, as JSON would carry it.
func (h *Harness) Create(spec map[string]any) outcome.State {
	h.t.Helper()
	b, err := json.Marshal(spec)
	if err != nil {
		h.t.Fatal(err)
	}
	var sp define.Spec
	if err := json.Unmarshal(b, &sp); err != nil {
		h.t.Fatal(err)
	}
	def, err := define.New("default", sp, h.Env.Now().UnixNano(), h.cfg.UnitBudget)
	if err != nil {
		h.t.Fatal(err)
	}
	x, err := engine.New(def, h.Env)
	if err != nil {
		h.t.Fatal(err)
	}
	row, err := def.Row()
	if err == nil {
		err = h.Store.CreateExperiment(context.Background(), row)
	}
	if err != nil {
		h.t.Fatal(err)
	}
	h.mu.Lock()
	h.exps[def.Key()] = x
	h.mu.Unlock()
	return h.State(sp.ID)
}

// State returns an experiment's state.
func (h *Harness) State(id string) outcome.State {
	h.t.Helper()
	st, err := h.Get(id).State(context.Background())
	if err != nil {
		h.t.Fatal(err)
	}
	return st
}

// DecideWith takes a decision with a context (JSON; nil for none) and
// returns it once durable.
func (h *Harness) DecideWith(id, ev, unit string, ctxv any) (outcome.Decision, error) {
	h.t.Helper()
	x := h.Get(id)
	var raw json.RawMessage
	if ctxv != nil {
		var err error
		if raw, err = json.Marshal(ctxv); err != nil {
			h.t.Fatal(err)
		}
	}
	ctxt, set, err := x.CheckContext(raw)
	if err != nil {
		return outcome.Decision{}, err
	}
	return x.Decide(context.Background(), ev, unit, ctxt, set)
}

// Decide takes a decision without a context.
func (h *Harness) Decide(id, ev, unit string) outcome.Decision {
	h.t.Helper()
	d, err := h.DecideWith(id, ev, unit, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	return d
}

// Reward reports a reward and returns its result once durable.
func (h *Harness) Reward(id, ev string, r float64) outcome.RewardResult {
	h.t.Helper()
	res, err := h.Get(id).Reward(context.Background(), ev, r)
	if err != nil {
		h.t.Fatal(err)
	}
	return res
}

// Expire settles the events whose window has passed as of now, and
// waits until that is durable.
func (h *Harness) Expire(now time.Time) {
	for _, x := range h.All() {
		for _, c := range x.Expire(now) {
			h.Writer.Wait(context.Background(), c)
		}
	}
}

// Tick settles the events whose window has passed as of now, folds
// every experiment and waits until that is durable, as the service's
// Tick does.
func (h *Harness) Tick(now time.Time) {
	h.t.Helper()
	h.Expire(now)
	for _, x := range h.All() {
		ch, err := x.FoldNow()
		if err != nil {
			h.t.Fatal(err)
		}
		if ch != nil {
			h.Writer.Wait(context.Background(), ch)
		}
	}
}

// All returns the loaded experiments.
func (h *Harness) All() []*engine.Experiment {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []*engine.Experiment
	for _, x := range h.exps {
		out = append(out, x)
	}
	return out
}

// Play takes n decisions in sequence, each rewarded with a Bernoulli
// draw of its arm's mean, and returns the pulls per arm (storetest.Play).
func (h *Harness) Play(id string, means []float64, n int, seed uint64, prefix string) []int {
	return storetest.Play(h.t, means, n, seed, prefix,
		func(ev, unit string) int { return h.Decide(id, ev, unit).Arm },
		func(ev string, x float64) bool { return h.Reward(id, ev, x).Learned })
}
