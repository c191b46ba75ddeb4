package engine

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
	"github.com/dpbandit/dpbandit/service/internal/bloom"
	"github.com/dpbandit/dpbandit/service/internal/storetest"
	"github.com/dpbandit/dpbandit/service/ledger"
	"github.com/dpbandit/dpbandit/service/store"
	"github.com/dpbandit/dpbandit/service/store/memstore"
	"github.com/dpbandit/dpbandit/service/store/stores"
)

func TestMain(m *testing.M) { storetest.Main(m) }

// config is what an engine test sets of its experiments' Env.
type config struct {
	KeepLog       bool
	KeepEvents    int
	KeepUnits     int
	SnapshotEvery int64
	UnitBudget    int64
	Now           func() time.Time
	Entropy       io.Reader
}

// harness runs experiments on a real store, as the service does (a
// group-commit writer, the ledger, loads at each open), without HTTP:
// the engine's own tests.
type harness struct {
	t     testing.TB
	dsn   string
	cfg   config
	store store.Store
	mem   *memstore.Store // the store when dsn is memDSN (kept across restarts)
	w     *commit.Writer
	env   *Env

	mu   sync.Mutex
	exps map[string]*Experiment
}

// memDSN names the in-memory store (memstore) for start.
const memDSN = "mem:"

// forAllStores runs f on a fresh SQLite store, a fresh PostgreSQL one
// and the in-memory fake, which must behave as they do.
func forAllStores(t *testing.T, f func(t *testing.T, dsn string)) {
	storetest.ForStores(t, f)
	t.Run("memstore", func(t *testing.T) { f(t, memDSN) })
}

// start opens a harness on dsn; it closes at the test's end.
func start(t testing.TB, dsn string, cfg config) *harness {
	t.Helper()
	h := &harness{t: t, dsn: dsn, cfg: cfg}
	h.open()
	t.Cleanup(h.close)
	return h
}

// eachStore runs f, in parallel with the other tests, on a harness
// started with cfg on a fresh SQLite store and a fresh PostgreSQL one.
// Both harnesses share cfg, so it holds no Entropy (whose draws the
// first store would take from the second): such a test starts its own.
func eachStore(t *testing.T, cfg config, f func(t *testing.T, h *harness)) {
	t.Parallel()
	if cfg.Entropy != nil {
		t.Fatal("eachStore: an Entropy would be shared by both stores' harnesses")
	}
	storetest.ForStores(t, func(t *testing.T, dsn string) { f(t, start(t, dsn, cfg)) })
}

// newMetrics returns counters on a registry of their own.
func newMetrics() *Metrics {
	return &Metrics{
		Decisions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "d"}, []string{"experiment"}),
		Rewards:   prometheus.NewCounterVec(prometheus.CounterOpts{Name: "r"}, []string{"experiment", "status"}),
		Ignored:   prometheus.NewCounterVec(prometheus.CounterOpts{Name: "i"}, []string{"experiment", "reason"}),
		Releases:  prometheus.NewCounterVec(prometheus.CounterOpts{Name: "l"}, []string{"experiment"}),
	}
}

// open opens the store, owns it and loads every experiment.
func (h *harness) open() {
	h.t.Helper()
	ctx := context.Background()
	var st store.Store
	if h.dsn == memDSN {
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
	h.store = st
	keepUnits := h.cfg.KeepUnits
	if keepUnits == 0 {
		keepUnits = 1 << 16
	}
	h.env = &Env{Store: st, Ledger: ledger.New(st, nil, h.cfg.UnitBudget, keepUnits, ids, logger), IDs: ids, Metrics: newMetrics(),
		Now: now, Entropy: h.cfg.Entropy, Logger: logger, KeepLog: h.cfg.KeepLog, KeepEvents: h.cfg.KeepEvents, KeepUnits: keepUnits,
		SnapshotEvery: h.cfg.SnapshotEvery, Eager: st.WritesAsItGoes()}
	defs, err := define.Read(ctx, st)
	if err != nil {
		h.t.Fatal(err)
	}
	h.exps = map[string]*Experiment{}
	for _, d := range defs {
		x, err := Load(ctx, d, h.env)
		if err != nil {
			x = Broken(d, err, h.env)
		}
		h.exps[d.Key()] = x
	}
	h.w = commit.New(st, func(error) {}, nil, nil)
	h.env.Writer = h.w
}

// close saves every experiment, as the service's stop does, and closes
// the store.
func (h *harness) close() {
	if h.store == nil {
		return
	}
	for _, x := range h.exps {
		x.Save()
	}
	h.w.Close()
	h.store.Close()
	h.store = nil
}

// crash stops the harness as a crash would: the writes in flight are
// committed, nothing is saved or folded at the stop.
func (h *harness) crash() {
	h.w.Close()
	h.store.Close()
	h.store = nil
}

// restart closes the harness and opens it again on the same store.
func (h *harness) restart() {
	h.close()
	h.open()
}

// get returns a loaded experiment of tenant "default".
func (h *harness) get(id string) *Experiment {
	h.t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	x := h.exps["default/"+id]
	if x == nil {
		h.t.Fatalf("no experiment %q", id)
	}
	return x
}

// create creates an experiment of tenant "default" from a client's
// spec, as JSON would carry it.
func (h *harness) create(spec map[string]any) State {
	h.t.Helper()
	b, err := json.Marshal(spec)
	if err != nil {
		h.t.Fatal(err)
	}
	var sp define.Spec
	if err := json.Unmarshal(b, &sp); err != nil {
		h.t.Fatal(err)
	}
	def, err := define.New("default", sp, h.env.Now().UnixNano(), h.cfg.UnitBudget)
	if err != nil {
		h.t.Fatal(err)
	}
	x, err := New(def, h.env)
	if err != nil {
		h.t.Fatal(err)
	}
	row, err := def.Row()
	if err == nil {
		err = h.store.CreateExperiment(context.Background(), row)
	}
	if err != nil {
		h.t.Fatal(err)
	}
	h.mu.Lock()
	h.exps[def.Key()] = x
	h.mu.Unlock()
	return h.state(sp.ID)
}

// state returns an experiment's state.
func (h *harness) state(id string) State {
	h.t.Helper()
	st, err := h.get(id).State(context.Background())
	if err != nil {
		h.t.Fatal(err)
	}
	return st
}

// decideWith takes a decision with a context (JSON; nil for none) and
// returns it once durable.
func (h *harness) decideWith(id, ev, unit string, ctxv any) (Decision, error) {
	h.t.Helper()
	x := h.get(id)
	var raw json.RawMessage
	if ctxv != nil {
		var err error
		if raw, err = json.Marshal(ctxv); err != nil {
			h.t.Fatal(err)
		}
	}
	ctxt, set, err := x.CheckContext(raw)
	if err != nil {
		return Decision{}, err
	}
	return x.Decide(contextBG(), ev, unit, ctxt, set)
}

// decide takes a decision without a context.
func (h *harness) decide(id, ev, unit string) Decision {
	h.t.Helper()
	d, err := h.decideWith(id, ev, unit, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	return d
}

// reward reports a reward and returns its result once durable.
func (h *harness) reward(id, ev string, r float64) RewardResult {
	h.t.Helper()
	res, err := h.get(id).Reward(contextBG(), ev, r)
	if err != nil {
		h.t.Fatal(err)
	}
	return res
}

// expire settles the events whose window has passed as of now, and
// waits until that is durable.
func (h *harness) expire(now time.Time) {
	for _, x := range h.all() {
		for _, c := range x.Expire(now) {
			h.w.Wait(contextBG(), c)
		}
	}
}

// tick settles the events whose window has passed as of now, folds
// every experiment and waits until that is durable, as the service's
// tick does.
func (h *harness) tick(now time.Time) {
	h.t.Helper()
	h.expire(now)
	for _, x := range h.all() {
		ch, err := x.FoldNow()
		if err != nil {
			h.t.Fatal(err)
		}
		if ch != nil {
			h.w.Wait(contextBG(), ch)
		}
	}
}

// all returns the loaded experiments.
func (h *harness) all() []*Experiment {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []*Experiment
	for _, x := range h.exps {
		out = append(out, x)
	}
	return out
}

func contextBG() context.Context { return context.Background() }

// play takes n decisions in sequence, each rewarded with a Bernoulli
// draw of its arm's mean, and returns the pulls per arm (storetest.Play).
func (h *harness) play(id string, means []float64, n int, seed uint64, prefix string) []int {
	return storetest.Play(h.t, means, n, seed, prefix,
		func(ev, unit string) int { return h.decide(id, ev, unit).Arm },
		func(ev string, x float64) bool { return h.reward(id, ev, x).Learned })
}
