package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/dpbandit/dpbandit/service/store"
	"github.com/dpbandit/dpbandit/service/store/internal/sqldb"
)

// Replicas: several services on one PostgreSQL database, each experiment
// owned by one of them at a time through a lease (owner.go fences a
// whole store; this file fences each experiment).
//
// A lease is a row (exp, holder, epoch, expires). Taking it is one
// statement, an upsert whose update applies only when the row is free or
// expired, and increments the epoch; of two replicas racing for it the
// row lock orders them, and the second re-reads the first's row, now
// held, and takes nothing. The holder renews its leases every third of
// their time to live; expiry is read on the database's clock, so the
// replicas' clocks need not agree. Releasing also increments the epoch.
//
// Every commit of a replica checks, as its transaction's last statements,
// the epoch of each experiment it writes (dpbandit_lease_fence, which
// locks the lease row FOR SHARE), so a replica that lost a lease (paused,
// cut off, killed with a transaction in flight) can never commit for that
// experiment again: the argument of owner.go, per lease row. Whoever
// takes a lease loads the experiment after its increment committed, so
// from a store that holds every commit of the earlier holders.

// The lease tables and fence (PostgreSQL only).
const (
	leaseTable = `CREATE TABLE IF NOT EXISTS leases (
		exp TEXT PRIMARY KEY, holder TEXT NOT NULL, epoch BIGINT NOT NULL, expires TIMESTAMPTZ NOT NULL)`
	replicaTable = `CREATE TABLE IF NOT EXISTS replicas (id TEXT PRIMARY KEY, addr TEXT NOT NULL, seen TIMESTAMPTZ NOT NULL)`
	// replicaTTL is each replica's own lease time: a replica is live
	// for its own lease after it was last seen, not for the reader's
	// (NULL in rows of older versions: the reader's).
	replicaTTL = `ALTER TABLE replicas ADD COLUMN IF NOT EXISTS ttl_ms BIGINT`
	// liveReplica is the condition of a live replica, $1 the reader's
	// lease time in milliseconds.
	liveReplica = `seen > clock_timestamp() - COALESCE(ttl_ms, $1) * interval '1 millisecond'`
	// settingsTable holds what every replica must agree on: the cap on
	// a unit's ledger (name 'unit_budget', nano-rho, 0: none).
	settingsTable = `CREATE TABLE IF NOT EXISTS settings (name TEXT PRIMARY KEY, value BIGINT NOT NULL)`
	leaseFence    = `CREATE OR REPLACE FUNCTION dpbandit_lease_fence(x TEXT, e BIGINT) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	PERFORM 1 FROM leases WHERE exp = x AND epoch = e FOR SHARE;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'dpbandit: experiment % has a holder newer than epoch %', x, e USING ERRCODE = 'DPB01';
	END IF;
END $$`
	leaseFenceCall = `SELECT dpbandit_lease_fence($1, $2)`
	// acquireLease takes a free or expired lease: $1 exp, $2 holder, $3
	// time to live in milliseconds.
	acquireLease = `INSERT INTO leases AS l (exp, holder, epoch, expires)
		VALUES ($1, $2, 1, clock_timestamp() + $3 * interval '1 millisecond')
		ON CONFLICT (exp) DO UPDATE SET holder = excluded.holder, epoch = l.epoch + 1, expires = excluded.expires
		WHERE l.holder = '' OR l.expires < clock_timestamp()
		RETURNING epoch`
	// reserveSpend adds $3 nano-rho to unit $2 of tenant $1 unless the
	// total would exceed $4; a unit without a row starts from its ledger
	// ($5, $6: the tenant's key prefix and its length).
	reserveSpend = `WITH seed AS (SELECT COALESCE(SUM(nano), 0) AS n FROM ledger WHERE unit_id = $2 AND substr(exp, 1, $6) = $5)
		INSERT INTO unit_spend AS u (tenant, unit_id, nano) SELECT $1, $2, seed.n + $3 FROM seed WHERE seed.n + $3 <= $4
		ON CONFLICT (tenant, unit_id) DO UPDATE SET nano = u.nano + $3 WHERE u.nano + $3 <= $4
		RETURNING nano`
	spendTable = `CREATE TABLE IF NOT EXISTS unit_spend (tenant TEXT NOT NULL, unit_id TEXT NOT NULL, nano BIGINT NOT NULL, PRIMARY KEY (tenant, unit_id))`
)

// leaseState is a replica's part of a Store: who it is and the
// epochs of the leases it holds.
type leaseState struct {
	mu     sync.Mutex
	me     store.Replica
	ttl    time.Duration
	epochs map[string]int64
}

// replica reports whether the store is used by a replica.
func (s *Store) replica() bool { return s.lease.me.ID != "" }

// epochOf returns the epoch of an experiment's lease (0: not held).
func (s *Store) epochOf(exp string) int64 {
	s.lease.mu.Lock()
	defer s.lease.mu.Unlock()
	return s.lease.epochs[exp]
}

func (s *Store) setEpoch(exp string, e int64) {
	s.lease.mu.Lock()
	defer s.lease.mu.Unlock()
	if e == 0 {
		delete(s.lease.epochs, exp)
		return
	}
	s.lease.epochs[exp] = e
}

func (s *Store) ttlMillis() int64 { return s.lease.ttl.Milliseconds() }

// Join makes the store a replica's (store.Replicated): it takes the
// liveness lock shared with the other replicas, builds the event-id
// index concurrently, and registers the replica, whose cap on a unit's
// ledger must be the live replicas'.
func (s *Store) Join(ctx context.Context, r store.Replica, ttl time.Duration, unitBudget int64, waiting func()) error {
	if r.ID == "" || ttl < 100*time.Millisecond {
		return fmt.Errorf("service: a replica needs an id and a lease time of at least 100ms (got %q, %v)", r.ID, ttl)
	}
	if s.live.conn == nil {
		// Shared: replicas together, never beside a single service (which
		// takes the lock exclusively, owner.go).
		c, err := s.SQL.Conn(ctx)
		if err != nil {
			return err
		}
		var ok bool
		if err := c.QueryRowContext(ctx, `SELECT pg_try_advisory_lock_shared($1)`, int64(advisoryKey)).Scan(&ok); err != nil {
			c.Close()
			return err
		}
		if !ok {
			if waiting != nil {
				waiting()
			}
			if _, err := c.ExecContext(ctx, `SELECT pg_advisory_lock_shared($1)`, int64(advisoryKey)); err != nil {
				c.Close()
				return err
			}
		}
		s.live.conn = c
	}
	if err := s.indexConcurrently(ctx); err != nil {
		return err
	}
	s.lease.me, s.lease.ttl = r, ttl
	if s.lease.epochs == nil {
		s.lease.epochs = map[string]int64{}
	}
	return s.retryAborted(ctx, func() error { return s.register(ctx, r, ttl, unitBudget) })
}

// register checks the replica's cap against the replicas' and registers
// it, in one transaction that holds the cap's row locked: of replicas
// starting at once, each sees those registered before it.
func (s *Store) register(ctx context.Context, r store.Replica, ttl time.Duration, unitBudget int64) error {
	tx, err := s.SQL.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `INSERT INTO settings (name, value) VALUES ('unit_budget', $1) ON CONFLICT (name) DO NOTHING`, unitBudget); err != nil {
		return err
	}
	var recorded int64
	if err := tx.QueryRowContext(ctx, `SELECT value FROM settings WHERE name = 'unit_budget' FOR UPDATE`).Scan(&recorded); err != nil {
		return err
	}
	if recorded != unitBudget {
		var live []string
		rows, err := tx.QueryContext(ctx, `SELECT id FROM replicas WHERE `+liveReplica+` AND id <> $2 ORDER BY id`, ttl.Milliseconds(), r.ID)
		if err != nil {
			return err
		}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return err
			}
			live = append(live, id)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if len(live) > 0 {
			return &store.UnitBudgetMismatchError{Replica: unitBudget, Recorded: recorded, Live: live, TTL: ttl}
		}
		// No replica is live: this one's cap is the replicas' from now.
		if _, err := tx.ExecContext(ctx, `UPDATE settings SET value = $1 WHERE name = 'unit_budget'`, unitBudget); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO replicas (id, addr, seen, ttl_ms) VALUES ($1, $2, clock_timestamp(), $3)
		ON CONFLICT (id) DO UPDATE SET addr = excluded.addr, seen = excluded.seen, ttl_ms = excluded.ttl_ms`, r.ID, r.Addr, ttl.Milliseconds()); err != nil {
		return err
	}
	return tx.Commit()
}

// Acquire takes an experiment's lease if take and it is free, or
// returns its holder (store.Replicated).
func (s *Store) Acquire(ctx context.Context, exp string, take bool) (store.Replica, error) {
	if take {
		var epoch int64
		err := s.SQL.QueryRowContext(ctx, acquireLease, exp, s.lease.me.ID, s.ttlMillis()).Scan(&epoch)
		if err == nil {
			s.setEpoch(exp, epoch)
			return s.lease.me, nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return store.Replica{}, err
		}
	}
	h, err := s.Holder(ctx, exp)
	if err == nil && h.ID == s.lease.me.ID {
		// A lease of this replica that it does not serve: only a lease
		// it took in a failed request; let it expire.
		return store.Replica{}, fmt.Errorf("experiment %s: this replica holds its lease but does not serve it", exp)
	}
	return h, err
}

// Holder returns the replica that holds an experiment's live lease, or
// the zero Replica (store.Replicated).
func (s *Store) Holder(ctx context.Context, exp string) (store.Replica, error) {
	var h store.Replica
	err := s.SQL.QueryRowContext(ctx, `SELECT CASE WHEN l.expires < clock_timestamp() THEN '' ELSE l.holder END, COALESCE(r.addr, '')
		FROM leases l LEFT JOIN replicas r ON r.id = l.holder WHERE l.exp = $1`, exp).Scan(&h.ID, &h.Addr)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return store.Replica{}, nil // never leased
	case err != nil || h.ID == "":
		return store.Replica{}, err
	}
	return h, nil
}

// Reserve adds nano to a unit's spend unless it would exceed limit
// (store.Replicated).
func (s *Store) Reserve(ctx context.Context, u store.UnitKey, nano, limit int64) (bool, error) {
	prefix := u.Tenant + "/"
	var n int64
	err := s.SQL.QueryRowContext(ctx, reserveSpend, u.Tenant, u.Unit, nano, limit, prefix, len(prefix)).Scan(&n)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// renewLeases extends the leases of holder $1 by $2 milliseconds. The
// rows are locked in key order (the subquery's FOR UPDATE, run before
// the update touches any), the order of the commits' fences
// (fenceLeases): an UPDATE alone locks them in the order it scans them,
// and deadlocked against a fence of the same replica.
const renewLeases = `UPDATE leases SET expires = clock_timestamp() + $2 * interval '1 millisecond'
	WHERE exp IN (SELECT exp FROM leases WHERE holder = $1 ORDER BY exp FOR UPDATE) AND holder = $1
	RETURNING exp, epoch`

// Renew extends the replica's leases, running again a renewal
// PostgreSQL aborted (retryAborted), and returns those it still holds
// (store.Replicated).
func (s *Store) Renew(ctx context.Context) (held map[string]bool, err error) {
	err = s.retryAborted(ctx, func() error {
		held, err = s.renew(ctx)
		return err
	})
	return held, err
}

// renew is Renew's transaction.
func (s *Store) renew(ctx context.Context) (map[string]bool, error) {
	tx, err := s.SQL.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	// (Replicas gone for an hour are forgotten: their ids never return.)
	if _, err := tx.ExecContext(ctx, `DELETE FROM replicas WHERE seen < clock_timestamp() - interval '1 hour' - COALESCE(ttl_ms, 0) * interval '1 millisecond'`); err != nil {
		return nil, err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE replicas SET seen = clock_timestamp(), addr = $2 WHERE id = $1`, s.lease.me.ID, s.lease.me.Addr); err != nil {
		return nil, err
	}
	rows, err := tx.QueryContext(ctx, renewLeases, s.lease.me.ID, s.ttlMillis())
	if err != nil {
		return nil, err
	}
	held := map[string]bool{}
	for rows.Next() {
		var exp string
		var e int64
		if err := rows.Scan(&exp, &e); err != nil {
			rows.Close()
			return nil, err
		}
		if s.epochOf(exp) == e {
			held[exp] = true
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return held, tx.Commit()
}

// Release gives up an experiment's lease, fencing this replica's
// commits for it (store.Replicated).
func (s *Store) Release(ctx context.Context, exp string) error {
	e := s.epochOf(exp)
	if e == 0 {
		return nil
	}
	_, err := s.SQL.ExecContext(ctx, `UPDATE leases SET holder = '', epoch = epoch + 1, expires = clock_timestamp()
		WHERE exp = $1 AND holder = $2 AND epoch = $3`, exp, s.lease.me.ID, e)
	if err == nil {
		s.setEpoch(exp, 0)
	}
	return err
}

// Leave removes the replica from the live ones (store.Replicated).
func (s *Store) Leave(ctx context.Context) error {
	_, err := s.SQL.ExecContext(ctx, `DELETE FROM replicas WHERE id = $1`, s.lease.me.ID)
	return err
}

// Live returns the replicas seen within their own lease time
// (store.Replicated).
func (s *Store) Live(ctx context.Context) ([]store.Replica, error) {
	var out []store.Replica
	err := s.Each(ctx, `SELECT id, addr FROM replicas WHERE `+liveReplica+` ORDER BY id`,
		[]any{s.ttlMillis()}, func(rows *sql.Rows) error {
			var r store.Replica
			err := rows.Scan(&r.ID, &r.Addr)
			out = append(out, r)
			return err
		})
	return out, err
}

// Leases returns each leased experiment's live holder, "" for an
// expired lease (store.Replicated).
func (s *Store) Leases(ctx context.Context) (map[string]string, error) {
	out := map[string]string{}
	err := s.Each(ctx, `SELECT exp, CASE WHEN expires < clock_timestamp() THEN '' ELSE holder END FROM leases`, nil, func(rows *sql.Rows) error {
		var exp, h string
		err := rows.Scan(&exp, &h)
		out[exp] = h
		return err
	})
	return out, err
}

// FreeLeases returns the experiments whose leases are free or expired
// (store.Replicated).
func (s *Store) FreeLeases(ctx context.Context) ([]string, error) {
	var out []string
	err := s.Each(ctx, `SELECT exp FROM leases WHERE holder = '' OR expires < clock_timestamp() ORDER BY exp`, nil, func(rows *sql.Rows) error {
		var exp string
		err := rows.Scan(&exp)
		out = append(out, exp)
		return err
	})
	return out, err
}

// Definition returns an experiment's row, if there is one
// (store.Replicated).
func (s *Store) Definition(ctx context.Context, exp string) (store.Experiment, bool, error) {
	var d store.Experiment
	found := false
	err := s.Each(ctx, `SELECT `+sqldb.ExperimentCols+` FROM experiments WHERE id = ?`, []any{exp}, func(rows *sql.Rows) error {
		var err error
		d, err = sqldb.ScanExperiment(rows)
		found = true
		return err
	})
	return d, found, err
}

// fenceLeases queues, for a replica's commit, the lease fence of every
// experiment the batch writes, in key order (the renewal's, renewLeases:
// each fence locks its lease row until the commit).
func (s *Store) fenceLeases(batch []*store.Change, queue func(q string, args ...any)) error {
	exps := map[string]bool{}
	for _, c := range batch {
		exps[c.Exp] = true
	}
	for _, exp := range slices.Sorted(maps.Keys(exps)) {
		e := s.epochOf(exp)
		if e == 0 {
			return fmt.Errorf("%w (experiment %s: this replica holds no lease on it)", store.ErrFenced, exp)
		}
		queue(leaseFenceCall, exp, e)
	}
	return nil
}
