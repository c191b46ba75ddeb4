package service

import (
	"context"
	"fmt"
	"hash/fnv"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/dpbandit/dpbandit/service/define"
	"github.com/dpbandit/dpbandit/service/engine"
	"github.com/dpbandit/dpbandit/service/fault"
	"github.com/dpbandit/dpbandit/service/store"
)

// A replica serves the experiments whose leases it holds (store/postgres/lease.go) and
// forwards the requests of the others to their holders, so that any
// replica answers any request:
//
//   - A request for an experiment held here is served here.
//   - One held by another live replica is forwarded to it over HTTP,
//     once (a forwarded request that finds the lease moved again is
//     answered 503 with Retry-After).
//   - One whose lease is free or expired is taken by the replica the
//     experiment prefers among the live ones (rendezvous hashing of the
//     experiment's key and the replicas' ids): this replica when it is
//     the one, else it is forwarded there. The preferred replica loads
//     the experiment from its snapshot and the operations after it.
//
// Every third of the lease time, each replica renews its leases and its
// registration, takes the free leases it is preferred for, and hands
// over up to handovers experiments it holds that prefer another live
// replica (so that experiments spread again when a replica returns).
// Every tenth of the lease time (takeoverEvery) it reads the live
// replicas and the free and expired leases, and takes those it is
// preferred for, without waiting for a request.
//
// Failover. A replica killed at time k renewed its leases last at most
// at k, so they expire by k + ttl; its registration, renewed in the
// same transaction, stops counting it live by then too. The live replica
// an experiment then prefers finds its lease expired at its next poll,
// within takeoverEvery, and loads it: the experiment is served again by
// k + failoverBound(ttl) plus its load time. A request forwarded
// meanwhile to the dead replica (or to one paused or cut off) waits at
// most forwardWait for its connection and its answer's headers, and is
// answered 503 with Retry-After; a killed replica's port refuses at once.
//
// Fail-stop. A replica that finds a lease of its own gone, or cannot
// renew for a whole lease time, stops taking writes (its memory may be
// behind the store): `dpbandit serve` then exits, and its supervisor
// restarts it as a new replica. A commit of a replica that lost a lease
// fails at the fence in any case: nothing it does after can reach the
// store.

// handovers bounds the experiments a replica hands over per renewal, so
// that a returning replica gets its share within a few renewals while
// few experiments are moving (answering 503 to retry) at any moment.
const handovers = 8

// takeoverEvery is how often a replica looks for the free and expired
// leases it is preferred for: a tenth of the lease time.
func takeoverEvery(ttl time.Duration) time.Duration { return ttl / 10 }

// forwardWait bounds a forwarded request's wait for the holder: its
// connection, and then its answer's headers, min(1 s, ttl/5). A holder
// paused or cut off that long is likely losing its lease; the client's
// retry (503, Retry-After) reaches the next holder.
func forwardWait(ttl time.Duration) time.Duration { return min(time.Second, ttl/5) }

// failoverBound is how long after a replica dies its experiments are
// served again, as the protocol bounds it (plus each one's load time):
// the lease's expiry, the next poll (takeoverEvery) and a forwarded
// request's wait (forwardWait).
func failoverBound(ttl time.Duration) time.Duration {
	return ttl + takeoverEvery(ttl) + forwardWait(ttl)
}

// replicas is a Server's replica state.
type replicas struct {
	srv  *Server
	rs   store.Replicated
	me   store.Replica
	ttl  time.Duration
	fwd  http.RoundTripper
	mu   sync.Mutex      // orders the claims and handovers of experiments
	live []store.Replica // as of the last renewal (under mu)
	// draining: SIGTERM; no new leases (free ones go to other replicas)
	draining bool
	renewed  time.Time // the last successful renewal
}

// prefers returns the live replica an experiment prefers: the highest
// FNV-1a hash of its key and the replica's id (rendezvous hashing).
func prefers(exp string, live []store.Replica) store.Replica {
	var best store.Replica
	var top uint64
	for _, r := range live {
		h := fnv.New64a()
		h.Write([]byte(exp))
		h.Write([]byte{0})
		h.Write([]byte(r.ID))
		if v := h.Sum64(); best.ID == "" || v > top {
			best, top = r, v
		}
	}
	return best
}

// join registers the server as a replica (s.rep): it waits while a
// single service holds the store.
func join(ctx context.Context, s *Server) error {
	rs, ok := s.cfg.Store.(store.Replicated)
	if !ok {
		return store.ErrReplicasNeedPostgres
	}
	ttl := s.cfg.LeaseTTL
	if ttl <= 0 {
		ttl = 5 * time.Second
	}
	// A forwarded request waits for the holder a fraction of the lease
	// time (forwardWait). It waited max(ttl, 2 s): a request forwarded to
	// a paused or unreachable holder hung that long, on top of the
	// lease's expiry.
	wait := forwardWait(ttl)
	fwd := http.DefaultTransport.(*http.Transport).Clone()
	fwd.DialContext = (&net.Dialer{Timeout: wait}).DialContext
	fwd.ResponseHeaderTimeout = wait
	// Keep a connection per concurrent forwarded request (the default, 2
	// per replica, opened a new one for most under load: 3.6x fewer
	// pairs per second through a forward).
	fwd.MaxIdleConnsPerHost = 1024
	s.rep = &replicas{srv: s, rs: rs, me: *s.cfg.Replica, ttl: ttl, fwd: fwd}
	err := rs.Join(ctx, s.rep.me, ttl, s.cfg.UnitBudget, func() {
		s.cfg.Logger.Warn("waiting for the store: a single service (not a replica) holds it; replicas start once it stops")
	})
	if err != nil {
		return err
	}
	s.rep.renewed = time.Now()
	s.rep.live, err = rs.Live(ctx)
	return err
}

// route returns the replica that serves an experiment, taking its lease
// if it is free and this replica is the one it prefers: Replica{} when
// this one serves it (or it does not exist, or is archived: the handler
// answers).
func (p *replicas) route(ctx context.Context, key string, forwarded bool) (store.Replica, error) {
	if p.answers(key) {
		return store.Replica{}, nil
	}
	// Held elsewhere (most requests that are not served here): forwarded
	// after one read, without the claims' lock.
	h, err := p.rs.Holder(ctx, key)
	if err != nil {
		return store.Replica{}, fault.Errorf(fault.Unavailable, "store: %v", err)
	}
	if h.ID != "" && h.ID != p.me.ID {
		return heldBy(h, forwarded, key)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.answers(key) {
		return store.Replica{}, nil
	}
	def, ok, err := p.definition(ctx, key)
	switch {
	case err != nil:
		return store.Replica{}, err
	case !ok:
		return store.Replica{}, nil // 404, or 410 once archived
	}
	take := !p.draining
	if pref := prefers(key, p.live); take && !forwarded && pref.ID != "" && pref.ID != p.me.ID {
		take = false // its preferred replica takes it
	}
	if h, err = p.rs.Acquire(ctx, key, take); err != nil {
		return store.Replica{}, fault.Errorf(fault.Unavailable, "store: %v", err)
	}
	switch {
	case h.ID == p.me.ID:
		return store.Replica{}, p.serveLeased(ctx, def)
	case h.ID != "":
		return heldBy(h, forwarded, key)
	}
	// Free, and not for this replica to take.
	if pref := prefers(key, others(p.live, p.me)); pref.ID != "" && !forwarded {
		return pref, nil
	}
	return store.Replica{}, fault.RetryLater("experiment %q has no replica serving it yet", def.ID)
}

// definition reads an experiment's definition to serve it: ok false
// when it does not exist or is archived (which is noted: 410). The
// caller holds rep.mu.
func (p *replicas) definition(ctx context.Context, key string) (define.Definition, bool, error) {
	row, ok, err := p.rs.Definition(ctx, key)
	var def define.Definition
	if err == nil && ok {
		def, err = define.Decode(row)
	}
	switch {
	case err != nil:
		return def, false, fault.Errorf(fault.Unavailable, "store: %v", err)
	case !ok:
		return def, false, nil
	case def.Status == store.Archived:
		p.srv.mu.Lock()
		p.srv.archived[key] = true
		p.srv.mu.Unlock()
		return def, false, nil
	}
	return def, true, nil
}

// answers reports whether this replica answers for an experiment itself:
// it serves it, or knows it archived.
func (p *replicas) answers(key string) bool {
	s := p.srv
	s.mu.RLock()
	defer s.mu.RUnlock()
	_, local := s.exps[key]
	return local || s.archived[key]
}

// heldBy routes a request to the holder of an experiment's lease; a
// request already forwarded once, or a holder without an address, is
// answered 503 to retry.
func heldBy(h store.Replica, forwarded bool, key string) (store.Replica, error) {
	if forwarded || h.Addr == "" {
		return store.Replica{}, fault.RetryLater("experiment %q is moving between replicas", key[strings.IndexByte(key, '/')+1:])
	}
	return h, nil
}

// others returns the live replicas but me.
func others(live []store.Replica, me store.Replica) []store.Replica {
	var out []store.Replica
	for _, r := range live {
		if r.ID != me.ID {
			out = append(out, r)
		}
	}
	return out
}

// serveLeased loads an experiment whose lease this replica just took.
// The caller holds rep.mu.
func (p *replicas) serveLeased(ctx context.Context, def define.Definition) error {
	s := p.srv
	x, err := engine.Load(ctx, def, s.env)
	if err != nil {
		if ctx.Err() != nil {
			p.rs.Release(context.Background(), def.Key())
			return ctx.Err()
		}
		s.cfg.Logger.Error("not loaded: served 503 by this replica until it restarts", "experiment", def.Key(), "err", err)
		x = engine.Broken(def, err, s.env)
	} else {
		ops, replayed, _ := x.Loaded()
		s.cfg.Logger.Info("took over", "experiment", def.Key(), "operations", ops, "replayed", replayed)
	}
	s.mu.Lock()
	s.add(x)
	s.mu.Unlock()
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		x.LoadIDs(s.bgCtx)
	}()
	return nil
}

// handOver stops serving an experiment and releases its lease: every
// change it made is durable, with a snapshot, before the release; a
// request that reached it meanwhile is answered 503 with Retry-After.
// The caller holds rep.mu.
func (p *replicas) handOver(x *engine.Experiment) error {
	s := p.srv
	if last := x.HandOver(); last != nil {
		if err := s.w.Wait(context.Background(), last); err != nil {
			return err
		}
	}
	s.mu.Lock()
	delete(s.exps, x.Key())
	s.mu.Unlock()
	return p.rs.Release(context.Background(), x.Key())
}

// keepLeases renews the leases every third of their time and balances
// the experiments, and takes over the expired leases it is preferred for
// every takeoverEvery, until ctx ends.
func (p *replicas) keepLeases(ctx context.Context) {
	renew := time.NewTicker(p.ttl / 3)
	defer renew.Stop()
	poll := time.NewTicker(takeoverEvery(p.ttl))
	defer poll.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-renew.C:
			p.renew(ctx)
		case <-poll.C:
			p.takeOver(ctx)
		}
	}
}

// takeOver reads the live replicas and takes the free and expired leases
// this replica is preferred for among them.
func (p *replicas) takeOver(ctx context.Context) {
	if p.srv.Err() != nil {
		return
	}
	live, ok := p.refreshLive(ctx)
	if !ok {
		return
	}
	free, err := p.rs.FreeLeases(ctx)
	if err != nil {
		return
	}
	var mine []string
	for _, key := range free {
		if prefers(key, live).ID == p.me.ID {
			mine = append(mine, key)
		}
	}
	p.take(ctx, mine)
}

// take takes the free or expired leases of the experiments keys (this
// replica is preferred for them) and serves them: every lease first,
// each one statement, then the loads, which read histories, so that a
// lease is taken within a poll of its expiry however long the loads of
// the others take. Requests for an experiment claimed and not loaded yet
// wait on rep.mu, as during any load. (Errors: the next round retries.)
func (p *replicas) take(ctx context.Context, keys []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var claimed []define.Definition
	for _, key := range keys {
		if ctx.Err() != nil || p.answers(key) {
			continue
		}
		def, ok, err := p.definition(ctx, key)
		if err != nil || !ok {
			continue
		}
		if h, err := p.rs.Acquire(ctx, key, !p.draining); err == nil && h.ID == p.me.ID {
			claimed = append(claimed, def)
		}
	}
	for _, def := range claimed {
		p.serveLeased(ctx, def)
	}
}

// refreshLive reads the live replicas into rep.live; ok is false on an
// error or while the replica drains (it takes no lease).
func (p *replicas) refreshLive(ctx context.Context) (live []store.Replica, ok bool) {
	live, err := p.rs.Live(ctx)
	if err != nil {
		return nil, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.live = live
	return live, !p.draining
}

// renew renews the leases and registration, fails the server if a lease
// was lost, and balances: it takes the free leases this replica is
// preferred for and hands over up to handovers experiments preferred
// elsewhere.
func (p *replicas) renew(ctx context.Context) {
	s := p.srv
	if s.Err() != nil {
		return
	}
	if !p.renewLeases(ctx) {
		return
	}
	live, ok := p.refreshLive(ctx)
	if !ok {
		return
	}
	leases, err := p.rs.Leases(ctx)
	if err != nil {
		return
	}
	defs, err := define.Read(ctx, s.cfg.Store)
	if err != nil {
		return
	}
	moved := 0
	var mine []string
	for _, d := range defs {
		key := d.Key()
		pref := prefers(key, live)
		switch {
		case d.Status == store.Archived || ctx.Err() != nil:
		case leases[key] == "" && pref.ID == p.me.ID:
			mine = append(mine, key)
		case leases[key] == p.me.ID && pref.ID != p.me.ID && moved < handovers:
			s.mu.RLock()
			x := s.exps[key]
			s.mu.RUnlock()
			if x != nil {
				p.mu.Lock()
				err := p.handOver(x)
				p.mu.Unlock()
				if err != nil {
					s.cfg.Logger.Warn("handover failed", "experiment", key, "err", err)
				}
				moved++
			}
		}
	}
	p.take(ctx, mine)
}

// renewLeases renews the leases and fails the server if one it serves
// is gone, or if none could be renewed for a lease time. It holds rep.mu,
// so that no lease is taken between the renewal and the check.
func (p *replicas) renewLeases(ctx context.Context) bool {
	s := p.srv
	p.mu.Lock()
	defer p.mu.Unlock()
	held, err := p.rs.Renew(ctx)
	if err != nil {
		if ctx.Err() == nil && time.Since(p.renewed) > p.ttl {
			s.fail(fmt.Errorf("%w: the leases could not be renewed for %v: %v", store.ErrFenced, time.Since(p.renewed).Round(time.Millisecond), err))
		}
		return false
	}
	p.renewed = time.Now()
	for _, x := range s.List("") {
		if !held[x.Key()] {
			s.fail(fmt.Errorf("%w: the lease of experiment %s was lost", store.ErrFenced, x.Key()))
			return false
		}
	}
	return true
}

// Drain hands every experiment over (SIGTERM): no new lease is taken,
// each experiment's changes are made durable, snapshotted and its lease
// released, so that the other replicas take over at once; requests that
// arrive meanwhile are forwarded to them.
func (s *Server) Drain() {
	if s.rep == nil {
		return
	}
	s.rep.mu.Lock()
	defer s.rep.mu.Unlock()
	s.rep.draining = true
	for _, x := range s.List("") {
		if err := s.rep.handOver(x); err != nil {
			s.cfg.Logger.Warn("handover failed", "experiment", x.Key(), "err", err)
		}
	}
	s.rep.rs.Leave(context.Background())
}

// CreatesOn returns the replica a new experiment prefers, when it is
// another live one and the request was not forwarded already: the
// creation is forwarded there (store.Replica{}: created here).
func (s *Server) CreatesOn(key string, forwarded bool) store.Replica {
	if s.rep == nil || forwarded {
		return store.Replica{}
	}
	s.rep.mu.Lock()
	defer s.rep.mu.Unlock()
	if pref := prefers(key, s.rep.live); pref.ID != s.rep.me.ID {
		return pref
	}
	return store.Replica{}
}
