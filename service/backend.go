package service

import (
	"context"
	"errors"
	"net/http"
	"sort"

	"github.com/dpbandit/dpbandit/service/define"
	"github.com/dpbandit/dpbandit/service/engine"
	"github.com/dpbandit/dpbandit/service/fault"
	"github.com/dpbandit/dpbandit/service/outcome"
	"github.com/dpbandit/dpbandit/service/store"
)

// The service as the HTTP surface sees it (api.Backend).

// Get returns a tenant's experiment; another tenant's is not found.
func (s *Server) Get(tenant, id string) (*engine.Experiment, error) {
	var buf [128]byte // the key on the stack: map lookups by string(bytes) do not allocate
	key := append(append(append(buf[:0], tenant...), '/'), id...)
	s.mu.RLock()
	x, ok := s.exps[string(key)]
	gone := s.archived[string(key)]
	s.mu.RUnlock()
	switch {
	case gone:
		return nil, fault.Errorf(fault.Gone, "experiment %q is archived: its ledger stays, nothing else is served", id)
	case !ok:
		return nil, fault.Errorf(fault.NotFound, "unknown experiment %q", id)
	}
	return x, nil
}

// List returns a tenant's experiments ("" for all), by id.
func (s *Server) List(tenant string) []*engine.Experiment {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []*engine.Experiment
	for _, x := range s.exps {
		if tenant == "" || x.Tenant() == tenant {
			out = append(out, x)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID() < out[j].ID() })
	return out
}

// States returns what the API shows of a tenant's experiments. On a
// replica: the state of those served here, and the definition and
// serving replica of the others (their state is at
// GET /v1/experiments/{id}, on any replica).
func (s *Server) States(ctx context.Context, tenant string) ([]outcome.State, error) {
	if s.rep == nil {
		out := []outcome.State{}
		for _, x := range s.List(tenant) {
			st, err := x.State(ctx)
			if err != nil {
				return nil, err
			}
			out = append(out, st)
		}
		return out, nil
	}
	defs, err := define.Read(ctx, s.cfg.Store)
	if err != nil {
		return nil, fault.Errorf(fault.Unavailable, "store: %v", err)
	}
	leases, err := s.rep.rs.Leases(ctx)
	if err != nil {
		return nil, fault.Errorf(fault.Unavailable, "store: %v", err)
	}
	out := []outcome.State{}
	for _, d := range defs {
		if d.Tenant != tenant {
			continue
		}
		s.mu.RLock()
		x := s.exps[d.Key()]
		s.mu.RUnlock()
		if x == nil {
			out = append(out, outcome.State{Definition: d, Replica: leases[d.Key()]})
			continue
		}
		st, err := x.State(ctx)
		if err != nil {
			return nil, err
		}
		st.Replica = s.rep.me.ID
		out = append(out, st)
	}
	return out, nil
}

// Create validates and stores a new experiment.
func (s *Server) Create(ctx context.Context, tenant string, sp define.Spec) (*engine.Experiment, error) {
	def, err := define.New(tenant, sp, s.now().UnixNano(), s.cfg.UnitBudget)
	if err != nil {
		return nil, err
	}
	if s.rep != nil {
		s.rep.mu.Lock()
		defer s.rep.mu.Unlock()
		if s.rep.draining {
			return nil, fault.RetryLater("this replica is shutting down")
		}
	}
	x, err := engine.New(def, s.env)
	if err != nil {
		return nil, fault.Errorf(fault.Invalid, "%v", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.exps[def.Key()]; ok || s.archived[def.Key()] {
		return nil, fault.Errorf(fault.Conflict, "experiment %q exists", sp.ID)
	}
	row, err := def.Row()
	if err == nil {
		err = s.cfg.Store.CreateExperiment(ctx, row)
	}
	if errors.Is(err, store.ErrExists) {
		return nil, fault.Errorf(fault.Conflict, "experiment %q exists", sp.ID)
	} else if err != nil {
		if errors.Is(err, store.ErrFenced) {
			s.fail(err)
		}
		return nil, fault.Errorf(fault.Unavailable, "store: %v", err)
	}
	s.add(x)
	return x, nil
}

// SetStatus moves an experiment through its lifecycle
// (engine.Experiment.SetStatus); an archived experiment leaves memory,
// and a replica releases its lease: nobody serves it any more.
func (s *Server) SetStatus(ctx context.Context, x *engine.Experiment, to string) error {
	if err := x.SetStatus(ctx, to); err != nil {
		return err
	}
	if to == store.Archived {
		s.mu.Lock()
		delete(s.exps, x.Key())
		s.archived[x.Key()] = true
		s.mu.Unlock()
		if s.rep != nil {
			s.rep.rs.Release(context.Background(), x.Key())
		}
	}
	return nil
}

// Ledger returns a tenant's unit's ledger rows, once every debit of the
// tenant's experiments is folded into them.
func (s *Server) Ledger(ctx context.Context, tenant, unit string) ([]store.LedgerRow, error) {
	if err := s.foldFirst(ctx, s.List(tenant)...); err != nil {
		return nil, err
	}
	rows, err := s.cfg.Store.Ledger(ctx, tenant, unit)
	if err != nil {
		return nil, fault.Errorf(fault.Unavailable, "store: %v", err)
	}
	return rows, nil
}

// UnitStats returns the number of units an experiment learned from and
// the most rewards it learned from one, once its debits are folded.
func (s *Server) UnitStats(ctx context.Context, x *engine.Experiment) (units, most int64, err error) {
	if err := s.foldFirst(ctx, x); err != nil {
		return 0, 0, err
	}
	if units, most, err = s.cfg.Store.UnitStats(ctx, x.Key()); err != nil {
		return 0, 0, fault.Errorf(fault.Unavailable, "store: %v", err)
	}
	return units, most, nil
}

// Log calls fn for every rewarded event of an experiment, in order
// (with --keep-log: otherwise the rewards of released episodes are
// deleted, and the log is refused).
func (s *Server) Log(ctx context.Context, x *engine.Experiment, fn func(store.Event) error) error {
	if !s.cfg.KeepLog {
		return fault.Errorf(fault.Conflict, "the log is kept only with --keep-log: rewards of released episodes are deleted")
	}
	cutoff := x.LogCutoff(s.now()) // no event older than the retention (rules.RetentionCutoff)
	return s.cfg.Store.Log(ctx, x.Key(), func(e store.Event) error {
		if e.Decided < cutoff {
			return nil
		}
		return fn(e)
	})
}

// Route returns the replica that serves an experiment, taking its lease
// if it is free and this replica is the one it prefers (replica.go):
// store.Replica{} when this one serves it, or without replicas.
func (s *Server) Route(ctx context.Context, key string, forwarded bool) (store.Replica, error) {
	if s.rep == nil {
		return store.Replica{}, nil
	}
	return s.rep.route(ctx, key, forwarded)
}

// Replica returns this replica's id ("" without replicas) and the
// transport of the requests it forwards.
func (s *Server) Replica() (string, http.RoundTripper) {
	if s.rep == nil {
		return "", nil
	}
	return s.rep.me.ID, s.rep.fwd
}

// Handler returns the service's HTTP handler (package api).
func (s *Server) Handler() http.Handler { return s.handler }
