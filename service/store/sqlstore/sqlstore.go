package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/dpbandit/dpbandit/service/internal/sqlq"
	"github.com/dpbandit/dpbandit/service/store"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
	_ "modernc.org/sqlite"           // database/sql driver "sqlite"
)

// sqlStore is the Store on database/sql.
type sqlStore struct {
	db       *sql.DB
	postgres bool
	path     string // the SQLite file
	// ownership (owner.go): the epoch this service took, and the liveness
	// lock it holds
	epoch    int64
	liveConn *sql.Conn
	lockFile *os.File
	lease    leaseState // a replica's leases (lease.go)
	aborted  atomic.Int64
	// Commit's connection and statements, prepared on it once (SQLite;
	// wmu: one transaction on it at a time)
	wmu   sync.Mutex
	wconn *sql.Conn
	stmts []*sql.Stmt
	// the transaction's own statements, prepared on wconn once too (a
	// statement run by its text is compiled anew each time)
	begin, epochNow, commit *sql.Stmt
}

// prepare takes Commit's connection and prepares its statements on it.
// Commit runs its transactions on that connection with BEGIN and COMMIT
// rather than through database/sql's Tx: a Tx registers each statement it
// takes from a prepared one (Tx.StmtContext) in a map of the database,
// whose memory grew with the number of statements ever run (about 10
// bytes a decision+reward pair in BenchmarkMemoryFlat).
func (s *sqlStore) prepare(ctx context.Context) error {
	var err error
	if s.wconn, err = s.db.Conn(ctx); err != nil {
		return err
	}
	for _, q := range queries[:stmtSpend] {
		st, err := s.wconn.PrepareContext(ctx, s.rebind(q))
		if err != nil {
			return err
		}
		s.stmts = append(s.stmts, st)
	}
	// IMMEDIATE: the write lock from the start, under which the fence
	// reads the owner's epoch.
	for st, q := range map[**sql.Stmt]string{&s.begin: `BEGIN IMMEDIATE`, &s.epochNow: ownerEpoch, &s.commit: `COMMIT`} {
		if *st, err = s.wconn.PrepareContext(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// Open opens (and creates or migrates) the store at dsn: a postgres://
// or postgresql:// URL, or a SQLite file path.
func Open(ctx context.Context, dsn string) (store.Store, error) {
	s := &sqlStore{postgres: strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")}
	var err error
	if s.postgres {
		s.db, err = sql.Open("pgx", dsn)
		// Keep the connections of concurrent reads (database/sql keeps 2
		// idle by default; each new one is a PostgreSQL backend started:
		// forwarded requests fell from 2,450 to 460 pairs/s without).
		s.db.SetMaxIdleConns(64)
	} else {
		// WAL: readers do not block the writer; synchronous FULL: a
		// commit is on disk when it returns; busy_timeout: a second
		// process waits instead of failing; temp_store(MEMORY): the
		// statement journal of a fold's update of many events (fold.go)
		// is kept in memory, not written to a temporary file;
		// _txlock=immediate: a write transaction holds the write lock
		// from its start (the fence reads the owner's epoch under it).
		s.path = canonicalPath(dsn)
		s.db, err = sql.Open("sqlite", "file:"+dsn+"?_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=busy_timeout(5000)&_pragma=foreign_keys(ON)&_pragma=temp_store(MEMORY)&_txlock=immediate")
		s.db.SetMaxOpenConns(4)
	}
	if err != nil {
		return nil, err
	}
	if err := s.db.PingContext(ctx); err != nil {
		s.db.Close()
		return nil, fmt.Errorf("service: cannot open the store: %w", err)
	}
	if err := s.migrate(ctx); err != nil {
		s.db.Close()
		return nil, err
	}
	if !s.postgres {
		if err := s.prepare(ctx); err != nil {
			s.db.Close()
			return nil, err
		}
	}
	return s, nil
}

// canonicalPath resolves the symbolic links of a SQLite file's path (of
// its directory, when the file does not exist yet), so that every name
// of one database locks one lock file (owner.go). Hard links to one file
// remain two names: do not make them.
func canonicalPath(p string) string {
	// A link whose target does not exist yet (the first open creates
	// it) is followed by hand, a bounded chain of them.
	for range 40 {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return r
		}
		t, err := os.Readlink(p)
		if err != nil {
			break // p does not exist, or is not a link
		}
		if !filepath.IsAbs(t) {
			t = filepath.Join(filepath.Dir(p), t)
		}
		p = t
	}
	if dir, err := filepath.EvalSymlinks(filepath.Dir(p)); err == nil {
		return filepath.Join(dir, filepath.Base(p))
	}
	return p
}

// WritesAsItGoes reports whether the store is PostgreSQL, where every
// change folds its own writes (store.Fold): replicas share it, and read
// one another's ledger rows.
func (s *sqlStore) WritesAsItGoes() bool { return s.postgres }

// rebind rewrites ? placeholders as $n for PostgreSQL.
func (s *sqlStore) rebind(query string) string {
	if !s.postgres {
		return query
	}
	return sqlq.Dollar(query)
}

// has reports whether the store has the index or table (typ) name.
func (s *sqlStore) has(ctx context.Context, tx *sql.Tx, typ, name string) (bool, error) {
	q, args := `SELECT COUNT(*) FROM sqlite_master WHERE type = ? AND name = ?`, []any{typ, name}
	switch {
	case s.postgres && typ == "table":
		q, args = `SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = $1`, args[1:]
	case s.postgres:
		q, args = `SELECT COUNT(*) FROM pg_indexes WHERE schemaname = current_schema() AND indexname = $1`, args[1:]
	}
	var n int
	err := tx.QueryRowContext(ctx, q, args...).Scan(&n)
	return n > 0, err
}

// execAll runs stmts in tx, in order.
func execAll(ctx context.Context, tx *sql.Tx, stmts ...string) error {
	for _, st := range stmts {
		if _, err := tx.ExecContext(ctx, st); err != nil {
			return err
		}
	}
	return nil
}

func (s *sqlStore) migrate(ctx context.Context) error {
	// Tables keyed by their primary key (WITHOUT ROWID in SQLite: one
	// b-tree per table instead of two). store.Event ids are unique per
	// experiment by the service's own rule, and the store's (the unique
	// index events_id_exp_folded, eventindex.go).
	real, blob, norowid := "REAL", "BLOB", " WITHOUT ROWID"
	if s.postgres {
		real, blob, norowid = "DOUBLE PRECISION", "BYTEA", ""
	}
	stmts := []string{
		`CREATE TABLE IF NOT EXISTS experiments (
			id TEXT PRIMARY KEY, tenant TEXT NOT NULL, definition TEXT NOT NULL, created BIGINT NOT NULL)`,
		`CREATE TABLE IF NOT EXISTS events (
			exp TEXT NOT NULL, seq BIGINT NOT NULL, event_id TEXT NOT NULL, unit_id TEXT NOT NULL,
			context TEXT, arm INTEGER NOT NULL, plan BIGINT NOT NULL, decided BIGINT NOT NULL,
			status TEXT NOT NULL, reason TEXT NOT NULL DEFAULT '', reward ` + real + `, rseq BIGINT NOT NULL DEFAULT 0,
			at BIGINT NOT NULL DEFAULT 0, pscore ` + real + ` NOT NULL DEFAULT 1, policy_arm INTEGER NOT NULL DEFAULT -1,
			debit BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (exp, seq))` + norowid,
		`CREATE TABLE IF NOT EXISTS releases (
			exp TEXT NOT NULL, idx BIGINT NOT NULL, seq BIGINT NOT NULL, kind TEXT NOT NULL,
			scale ` + real + ` NOT NULL, sensitivity ` + real + ` NOT NULL, value ` + real + ` NOT NULL,
			arm INTEGER NOT NULL, at BIGINT NOT NULL, PRIMARY KEY (exp, idx))` + norowid,
		`CREATE TABLE IF NOT EXISTS draws (exp TEXT NOT NULL, idx BIGINT NOT NULL, word BIGINT NOT NULL, PRIMARY KEY (exp, idx))` + norowid,
		`CREATE TABLE IF NOT EXISTS ledger (
			unit_id TEXT NOT NULL, exp TEXT NOT NULL, rewards BIGINT NOT NULL, nano BIGINT NOT NULL,
			PRIMARY KEY (unit_id, exp))` + norowid,
		`CREATE TABLE IF NOT EXISTS snapshots (exp TEXT PRIMARY KEY, seq BIGINT NOT NULL, state ` + blob + ` NOT NULL, sum ` + blob + ` NOT NULL)` + norowid,
		ownerTable,
		ownerRow,
	}
	if s.postgres {
		// Processes opening the same database at once migrate one at a
		// time: concurrent DDL on one catalogue row fails.
		stmts = append([]string{`SELECT pg_advisory_xact_lock(` + strconv.Itoa(advisoryKey+1) + `)`}, append(stmts, fenceFunction, leaseTable, replicaTable, settingsTable, spendTable, leaseFence)...)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("service: migrating the store: %w", err)
	}
	defer tx.Rollback()
	if err := execAll(ctx, tx, stmts...); err != nil {
		return fmt.Errorf("service: migrating the store: %w", err)
	}
	// The event-id index is built once the store is held (Own, Join):
	// see indexEvents.
	// Columns added since the first version, to stores that lack them.
	for _, col := range []struct{ table, name, def string }{
		{"events", "pscore", real + " NOT NULL DEFAULT 1"}, {"events", "policy_arm", "INTEGER NOT NULL DEFAULT -1"},
		{"events", "debit", "BIGINT NOT NULL DEFAULT 0"},
		{"experiments", "status", "TEXT NOT NULL DEFAULT '" + store.Active + "'"},
		// Rows written before folds (fold.go) were indexed and debited as
		// they were written: folded through every operation.
		{"events", "indexed", "INTEGER NOT NULL DEFAULT 1"},
		{"experiments", "folded", "BIGINT NOT NULL DEFAULT " + strconv.FormatInt(math.MaxInt64, 10)},
	} {
		var n int
		q := `SELECT COUNT(*) FROM pragma_table_info(?) WHERE name = ?`
		if s.postgres {
			q = `SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1 AND column_name = $2`
		}
		if err := tx.QueryRowContext(ctx, q, col.table, col.name).Scan(&n); err != nil {
			return fmt.Errorf("service: migrating the store: %w", err)
		}
		if n == 0 {
			if _, err := tx.ExecContext(ctx, `ALTER TABLE `+col.table+` ADD COLUMN `+col.name+` `+col.def); err != nil {
				return fmt.Errorf("service: migrating the store: %w", err)
			}
		}
	}
	// Stores of earlier versions kept each reward's debit in a table of
	// their own (debits); it moves to the reward's event (events.debit),
	// which the reward's update writes anyway.
	debits, err := s.has(ctx, tx, "table", "debits")
	if err == nil && debits {
		err = execAll(ctx, tx, `UPDATE events SET debit = (SELECT d.nano FROM debits d WHERE d.exp = events.exp AND d.seq = events.seq)
			WHERE EXISTS (SELECT 1 FROM debits d WHERE d.exp = events.exp AND d.seq = events.seq)`, `DROP TABLE debits`)
	}
	if err != nil {
		return fmt.Errorf("service: migrating the store: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("service: migrating the store: %w", err)
	}
	return nil
}

func (s *sqlStore) Close() error {
	s.release()
	if s.wconn != nil {
		s.wconn.Close()
	}
	return s.db.Close()
}

func (s *sqlStore) CreateExperiment(ctx context.Context, e store.Experiment) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	// Folded through nothing yet, on SQLite; through all it writes on
	// PostgreSQL, which folds as it goes (fold.go).
	folded := int64(0)
	if s.postgres {
		folded = math.MaxInt64
	}
	res, err := tx.ExecContext(ctx, s.rebind(`INSERT INTO experiments (id, tenant, definition, created, folded) VALUES (?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`),
		e.Key, e.Tenant, e.Definition, e.Created, folded)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return store.ErrExists
	}
	if s.replica() {
		// The creator holds the new experiment's lease.
		var epoch int64
		if err := tx.QueryRowContext(ctx, acquireLease, e.Key, s.lease.me.ID, s.ttlMillis()).Scan(&epoch); err != nil {
			return err
		}
		if err := tx.Commit(); err != nil {
			return err
		}
		s.setEpoch(e.Key, epoch)
		return nil
	}
	if err := s.fence(ctx, tx); err != nil {
		return err
	}
	return tx.Commit()
}

// each runs a query and calls scan on every row.
func (s *sqlStore) each(ctx context.Context, query string, args []any, scan func(*sql.Rows) error) error {
	rows, err := s.db.QueryContext(ctx, s.rebind(query), args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

func (s *sqlStore) Experiments(ctx context.Context) ([]store.Experiment, error) {
	var out []store.Experiment
	err := s.each(ctx, `SELECT `+experimentCols+` FROM experiments ORDER BY created, id`, nil, func(rows *sql.Rows) error {
		d, err := scanExperiment(rows)
		out = append(out, d)
		return err
	})
	return out, err
}

// experimentCols are the columns scanExperiment reads.
const experimentCols = `id, tenant, definition, created, status, folded`

// scanExperiment reads a row of experimentCols.
func scanExperiment(rows *sql.Rows) (store.Experiment, error) {
	var e store.Experiment
	err := rows.Scan(&e.Key, &e.Tenant, &e.Definition, &e.Created, &e.Status, &e.Folded)
	return e, err
}

const eventCols = `seq, event_id, unit_id, COALESCE(context, ''), arm, plan, decided, status, reason, reward, rseq, at, pscore, policy_arm, debit`

func scanEvent(rows *sql.Rows) (store.Event, error) {
	var e store.Event
	var r sql.NullFloat64
	err := rows.Scan(&e.Seq, &e.ID, &e.Unit, &e.Context, &e.Arm, &e.Plan, &e.Decided, &e.Status, &e.Reason, &r, &e.RSeq, &e.At, &e.PScore, &e.PolicyArm, &e.Debit)
	if r.Valid {
		e.Reward = &r.Float64
	}
	return e, err
}

func (s *sqlStore) History(ctx context.Context, id string, from store.Mark) (*store.History, error) {
	h := &store.History{}
	scan := func(rows *sql.Rows) error {
		e, err := scanEvent(rows)
		h.Events = append(h.Events, e)
		return err
	}
	// The pending events of the mark, by their primary key, a few at a
	// time; then those decided after it.
	for ps := from.Pending; len(ps) > 0; {
		n := min(len(ps), 256)
		args := []any{id}
		for _, p := range ps[:n] {
			args = append(args, p)
		}
		q := `SELECT ` + eventCols + ` FROM events WHERE exp = ? AND seq IN (?` + strings.Repeat(", ?", n-1) + `) ORDER BY seq`
		if err := s.each(ctx, q, args, scan); err != nil {
			return nil, err
		}
		ps = ps[n:]
	}
	if err := s.each(ctx, `SELECT `+eventCols+` FROM events WHERE exp = ? AND seq > ? ORDER BY seq`, []any{id, from.Seq}, scan); err != nil {
		return nil, err
	}
	err := s.each(ctx, `SELECT seq, kind, scale, sensitivity, value, arm, at FROM releases WHERE exp = ? AND idx >= ? ORDER BY idx`, []any{id, from.Releases}, func(rows *sql.Rows) error {
		var r store.Release
		err := rows.Scan(&r.Seq, &r.Kind, &r.Scale, &r.Sensitivity, &r.Value, &r.Arm, &r.At)
		h.Releases = append(h.Releases, r)
		return err
	})
	if err != nil {
		return nil, err
	}
	err = s.each(ctx, `SELECT word FROM draws WHERE exp = ? AND idx >= ? ORDER BY idx`, []any{id, from.Draws}, func(rows *sql.Rows) error {
		var w int64
		err := rows.Scan(&w)
		h.Draws = append(h.Draws, uint64(w))
		return err
	})
	return h, err
}

func (s *sqlStore) Snapshot(ctx context.Context, id string) (*store.Snapshot, error) {
	var out *store.Snapshot
	err := s.each(ctx, `SELECT seq, state, sum FROM snapshots WHERE exp = ?`, []any{id}, func(rows *sql.Rows) error {
		out = &store.Snapshot{}
		return rows.Scan(&out.Seq, &out.State, &out.Sum)
	})
	return out, err
}

// Commit's statements, in the order of sqlStore.stmts and queries.
const (
	stmtInsertEvent = iota
	stmtUpdateEvent
	stmtLedger
	stmtRelease
	stmtDraw
	stmtForget
	stmtStatus
	stmtSnapshot
	stmtIndex
	stmtFolded
	stmtSpend // the replicas' (PostgreSQL only): the last, not prepared on SQLite
)

// queries are Commit's statements (with ? placeholders).
var queries = []string{
	stmtInsertEvent: `INSERT INTO events (exp, seq, event_id, unit_id, context, arm, plan, decided, status, pscore, policy_arm, indexed) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
	stmtUpdateEvent: `UPDATE events SET status = ?, reason = ?, reward = ?, rseq = ?, at = ?, debit = ? WHERE exp = ? AND seq = ?`,
	stmtLedger: `INSERT INTO ledger (unit_id, exp, rewards, nano) VALUES (?, ?, ?, ?)
		ON CONFLICT (unit_id, exp) DO UPDATE SET rewards = ledger.rewards + excluded.rewards, nano = ledger.nano + excluded.nano`,
	stmtRelease: `INSERT INTO releases (exp, idx, seq, kind, scale, sensitivity, value, arm, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
	stmtDraw:    `INSERT INTO draws (exp, idx, word) VALUES (?, ?, ?)`,
	stmtForget:  `UPDATE events SET reward = NULL WHERE exp = ? AND seq BETWEEN ? AND ? AND reward IS NOT NULL`,
	stmtStatus:  `UPDATE experiments SET status = ? WHERE id = ?`,
	stmtSnapshot: `INSERT INTO snapshots (exp, seq, state, sum) VALUES (?, ?, ?, ?)
		ON CONFLICT (exp) DO UPDATE SET seq = excluded.seq, state = excluded.state, sum = excluded.sum`,
	stmtIndex:  `UPDATE events SET indexed = 1 WHERE exp = ? AND seq BETWEEN ? AND ? AND indexed = 0`,
	stmtFolded: `UPDATE experiments SET folded = ? WHERE id = ?`,
	// A unit without a spend row starts from its ledger, which holds the
	// debits already (written before, in the same transaction: store.Fold).
	stmtSpend: `INSERT INTO unit_spend AS u (tenant, unit_id, nano) VALUES (?, ?, (` + queryUnitTotal + `))
		ON CONFLICT (tenant, unit_id) DO UPDATE SET nano = u.nano + ?`,
}

// writes calls exec for every statement of a batch, in order; with
// cursors, the folds' cursors too (SQLite's: PostgreSQL folds as it
// goes, and reads none, fold.go).
func writes(batch []*store.Change, cursors bool, exec func(st int, args ...any) error) error {
	var folded map[string]int64       // each experiment's cursor, written once a batch
	var spent map[store.UnitKey]int64 // the unreserved debits of each unit (store.Fold.Unreserved)
	for _, c := range batch {
		f := c.Fold
		if e := c.Insert; e != nil {
			var ctxt any
			if e.Context != "" {
				ctxt = e.Context
			}
			indexed := 0
			if f != nil {
				indexed = 1 // a change that folds folds its own decision: indexed as it is written
			}
			if err := exec(stmtInsertEvent, c.Exp, e.Seq, e.ID, e.Unit, ctxt, e.Arm, e.Plan, e.Decided, e.Status, e.PScore, e.PolicyArm, indexed); err != nil {
				return err
			}
		}
		if e := c.Update; e != nil {
			var r any
			if e.Reward != nil {
				r = *e.Reward
			}
			if err := exec(stmtUpdateEvent, e.Status, e.Reason, r, e.RSeq, e.At, c.Debit, c.Exp, e.Seq); err != nil {
				return err
			}
		}
		for i, r := range c.Releases {
			if err := exec(stmtRelease, c.Exp, c.RelBase+int64(i), r.Seq, r.Kind, r.Scale, r.Sensitivity, r.Value, r.Arm, r.At); err != nil {
				return err
			}
		}
		for i, w := range c.Draws {
			if err := exec(stmtDraw, c.Exp, c.DrawBase+int64(i), int64(w)); err != nil {
				return err
			}
		}
		for _, p := range c.Forget.Except(c.Keep) {
			if err := exec(stmtForget, c.Exp, p.Lo, p.Hi); err != nil {
				return err
			}
		}
		if c.Status != "" {
			if err := exec(stmtStatus, c.Status, c.Exp); err != nil {
				return err
			}
		}
		if sn := c.Snapshot; sn != nil {
			if err := exec(stmtSnapshot, c.Exp, sn.Seq, sn.State, sn.Sum); err != nil {
				return err
			}
		}
		if f != nil {
			if err := foldWrites(f, c, exec); err != nil {
				return err
			}
			if cursors {
				if folded == nil {
					folded = map[string]int64{}
				}
				folded[c.Exp] = f.Upto
			}
			if f.Unreserved && len(f.Debits) > 0 {
				if spent == nil {
					spent = map[store.UnitKey]int64{}
				}
				tenant, _, _ := strings.Cut(c.Exp, "/")
				for _, d := range f.Debits {
					spent[store.UnitKey{Tenant: tenant, Unit: d.Unit}] += d.Nano
				}
			}
		}
	}
	// In one order (concurrent transactions that update rows in
	// different orders can deadlock on PostgreSQL): the cursors, and the
	// units' spend rows, which every replica's commits share, after the
	// ledger rows they start from.
	for _, exp := range slices.Sorted(maps.Keys(folded)) {
		if err := exec(stmtFolded, folded[exp], exp); err != nil {
			return err
		}
	}
	for _, u := range slices.SortedFunc(maps.Keys(spent), func(a, b store.UnitKey) int {
		return cmp.Or(strings.Compare(a.Tenant, b.Tenant), strings.Compare(a.Unit, b.Unit))
	}) {
		prefix := u.Tenant + "/"
		if err := exec(stmtSpend, u.Tenant, u.Unit, u.Unit, len(prefix), prefix, spent[u]); err != nil {
			return err
		}
	}
	return nil
}

// Commit writes a batch in one transaction: on SQLite through prepared
// statements; on PostgreSQL as one pipelined pgx batch (one round trip
// for the whole group, run by the server as one implicit transaction).
// Either checks the owner's epoch in the same transaction (owner.go): on
// SQLite first, under the write lock; on PostgreSQL last. A PostgreSQL
// transaction aborted for a deadlock or a serialisation failure is run
// again (retryAborted): nothing of it was committed.
func (s *sqlStore) Commit(ctx context.Context, batch []*store.Change) error {
	if s.epoch == 0 && !s.replica() {
		return errors.New("service: the store is written before it is owned (Own)")
	}
	if s.postgres {
		return s.retryAborted(ctx, func() error { return s.commitPostgres(ctx, batch) })
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if _, err := s.begin.ExecContext(ctx); err != nil {
		return err
	}
	err := s.fenceWith(s.epochNow.QueryRowContext(ctx))
	if err == nil {
		err = writes(batch, true, func(st int, args ...any) error {
			_, err := s.stmts[st].ExecContext(ctx, args...)
			return err
		})
	}
	if err == nil {
		_, err = s.commit.ExecContext(ctx)
	}
	if err != nil {
		// Nothing of a failed transaction stays (a failed COMMIT leaves
		// it open in SQLite).
		s.wconn.ExecContext(context.Background(), `ROLLBACK`)
	}
	return err
}

// commitPostgres is Commit's transaction on PostgreSQL, one pipelined
// batch: a statement that fails rolls the whole batch back (Commit runs
// it again if PostgreSQL aborted it: retryAborted).
func (s *sqlStore) commitPostgres(ctx context.Context, batch []*store.Change) error {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		pc := dc.(*stdlib.Conn).Conn()
		b := &pgx.Batch{}
		writes(batch, false, func(st int, args ...any) error {
			b.Queue(s.rebind(queries[st]), args...)
			return nil
		})
		if s.replica() {
			if err := s.fenceLeases(batch, func(q string, args ...any) { b.Queue(q, args...) }); err != nil {
				return err
			}
			return fenced(pc.SendBatch(ctx, b).Close())
		}
		b.Queue(fenceCall, s.epoch)
		return s.whyFailed(ctx, fenced(pc.SendBatch(ctx, b).Close()))
	})
}

// The reads on the request path (TestLookupsUseTheirKeys: each finds
// its rows by an index on every column it matches).
const (
	queryEvent = `SELECT ` + eventCols + ` FROM events WHERE exp = ? AND event_id = ?`
	// foldedOnly ends a lookup by id on SQLite, whose index holds the
	// folded events only (eventindex.go).
	foldedOnly       = ` AND indexed = 1`
	queryLedger      = `SELECT exp, rewards, nano FROM ledger WHERE unit_id = ? AND substr(exp, 1, ?) = ? ORDER BY exp`
	queryUnitRewards = `SELECT rewards FROM ledger WHERE unit_id = ? AND exp = ?`
	queryUnitTotal   = `SELECT COALESCE(SUM(nano), 0) FROM ledger WHERE unit_id = ? AND substr(exp, 1, ?) = ?`
)

func (s *sqlStore) Ledger(ctx context.Context, tenant, unit string) ([]store.LedgerRow, error) {
	var out []store.LedgerRow
	// The tenant's keys start with "tenant/": an equality, which every
	// deterministic collation decides byte for byte (a range such as
	// exp >= 'a/' AND exp < 'a0' would, under a language-aware collation,
	// take tenant "A"'s keys too). Tenant names are ASCII.
	prefix := tenant + "/"
	err := s.each(ctx, queryLedger, []any{unit, len(prefix), prefix}, func(rows *sql.Rows) error {
		r := store.LedgerRow{Unit: unit}
		err := rows.Scan(&r.Experiment, &r.Rewards, &r.NanoRho)
		out = append(out, r)
		return err
	})
	return out, err
}

func (s *sqlStore) UnitRewards(ctx context.Context, id, unit string) (int64, error) {
	var n int64
	err := s.each(ctx, queryUnitRewards, []any{unit, id}, func(rows *sql.Rows) error { return rows.Scan(&n) })
	return n, err
}

func (s *sqlStore) UnitTotal(ctx context.Context, tenant, unit string) (int64, error) {
	var n int64
	prefix := tenant + "/" // as in Ledger
	err := s.each(ctx, queryUnitTotal, []any{unit, len(prefix), prefix},
		func(rows *sql.Rows) error { return rows.Scan(&n) })
	return n, err
}

func (s *sqlStore) UnitStats(ctx context.Context, id string) (units, most int64, err error) {
	err = s.each(ctx, `SELECT COUNT(*), COALESCE(MAX(rewards), 0) FROM ledger WHERE exp = ?`, []any{id}, func(rows *sql.Rows) error { return rows.Scan(&units, &most) })
	return units, most, err
}

func (s *sqlStore) LedgerUnits(ctx context.Context, fn func(store.UnitKey, string)) error {
	return s.each(ctx, `SELECT unit_id, exp FROM ledger`, nil, func(rows *sql.Rows) error {
		var u, exp string
		err := rows.Scan(&u, &exp)
		tenant, _, _ := strings.Cut(exp, "/")
		fn(store.UnitKey{Tenant: tenant, Unit: u}, exp)
		return err
	})
}

func (s *sqlStore) Event(ctx context.Context, exp, eventID string) (*store.Event, error) {
	var out *store.Event
	q := queryEvent
	if !s.postgres {
		q += foldedOnly
	}
	err := s.each(ctx, q, []any{exp, eventID}, func(rows *sql.Rows) error {
		e, err := scanEvent(rows)
		out = &e
		return err
	})
	return out, err
}

func (s *sqlStore) EventIDs(ctx context.Context, id string, upTo int64, fn func(string)) error {
	return s.each(ctx, `SELECT event_id FROM events WHERE exp = ? AND seq <= ?`, []any{id, upTo}, func(rows *sql.Rows) error {
		var e string
		err := rows.Scan(&e)
		fn(e)
		return err
	})
}

func (s *sqlStore) Log(ctx context.Context, id string, fn func(store.Event) error) error {
	return s.each(ctx, `SELECT `+eventCols+` FROM events WHERE exp = ? AND status <> ? ORDER BY seq`, []any{id, store.Pending}, func(rows *sql.Rows) error {
		e, err := scanEvent(rows)
		if err != nil {
			return err
		}
		return fn(e)
	})
}

// foldWrites calls exec for the fold's statements but the cursor's and the units'
// spend (writes, which writes them last, in key order).
func foldWrites(f *store.Fold, c *store.Change, exec func(st int, args ...any) error) error {
	lo, hi := f.Index.Lo, f.Index.Hi
	if e := c.Insert; e != nil && e.Seq == hi {
		hi-- // written indexed (writes)
	}
	if !f.Index.Empty() && lo <= hi {
		if err := exec(stmtIndex, c.Exp, lo, hi); err != nil {
			return err
		}
	}
	for _, d := range f.Debits {
		if err := exec(stmtLedger, d.Unit, c.Exp, d.Rewards, d.Nano); err != nil {
			return err
		}
	}
	return nil
}
