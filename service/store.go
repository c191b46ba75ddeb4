package service

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

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
	_ "modernc.org/sqlite"           // database/sql driver "sqlite"
)

// Store is the service's durable state. One implementation, on
// database/sql, serves SQLite (modernc.org/sqlite, pure Go, WAL) and
// PostgreSQL (pgx/v5); the schema and the statements are the same but
// for placeholders and column types.
type Store interface {
	// Own makes the caller the store's only writer, waiting while another
	// live service holds it (waiting is called once, with that service's
	// description) and fencing every earlier owner: see ErrFenced. Commit
	// and CreateExperiment fail before Own.
	Own(ctx context.Context, holder string, waiting func(current string)) error
	// Owned returns ErrFenced once another service has taken the store.
	Owned(ctx context.Context) error
	// CreateExperiment stores a new experiment; ErrExists if its id is taken.
	CreateExperiment(ctx context.Context, e Definition) error
	// Experiments returns every experiment's definition.
	Experiments(ctx context.Context) ([]Definition, error)
	// History returns what is needed to rebuild an experiment from a
	// mark (the zero Mark: from its start): the events decided after
	// the mark and those it lists, in decision order, and the releases
	// and draws from the mark's, in order.
	History(ctx context.Context, id string, from Mark) (*History, error)
	// Snapshot returns an experiment's last snapshot, or nil.
	Snapshot(ctx context.Context, id string) (*Snapshot, error)
	// UnitRewards returns the rewards of a unit an experiment learned.
	UnitRewards(ctx context.Context, id, unit string) (int64, error)
	// UnitTotal returns a unit's spend over its tenant's experiments.
	UnitTotal(ctx context.Context, tenant, unit string) (int64, error)
	// UnitStats returns the number of units an experiment learned from
	// and the most rewards it learned from one.
	UnitStats(ctx context.Context, id string) (units, most int64, err error)
	// LedgerUnits calls fn for every unit the ledger holds, with each
	// experiment it has a row in.
	LedgerUnits(ctx context.Context, fn func(u UnitKey, exp string)) error
	// Commit writes a batch of changes in one transaction, which fails
	// with ErrFenced, changing nothing, if another service owns the store.
	Commit(ctx context.Context, batch []*Change) error
	// Ledger returns a tenant's unit's ledger rows.
	Ledger(ctx context.Context, tenant, unit string) ([]LedgerRow, error)
	// Log calls fn for every rewarded event of an experiment, in order.
	Log(ctx context.Context, id string, fn func(Event) error) error
	// EventIDs calls fn with the event id of every event of an
	// experiment decided up to operation upTo.
	EventIDs(ctx context.Context, id string, upTo int64, fn func(string)) error
	// Event returns an experiment's event of an event id, or nil.
	Event(ctx context.Context, exp, eventID string) (*Event, error)
	// Close releases the database.
	Close() error
}

// ErrExists is returned when an experiment id is already taken.
var ErrExists = errors.New("service: the experiment exists")

// Experiment lifecycle statuses, as stored.
const (
	// Active: decisions and rewards are served.
	Active = "active"
	// Paused: new decisions are refused (409); rewards of earlier ones
	// are still taken and learned.
	Paused = "paused"
	// Archived: every request about the experiment answers 410; it is
	// not loaded, and its ledger rows stay (its debits stay spent).
	Archived = "archived"
)

// Event statuses, as stored.
const (
	// Pending: decided, no reward yet.
	Pending = "pending"
	// Learned: the reward reached the policy.
	Learned = "learned"
	// Defaulted: no reward in the window; the default reward was learned.
	Defaulted = "defaulted"
	// Ignored: the reward was acknowledged, not learned (see Reason).
	Ignored = "ignored"
	// Expired: no reward in the window and no default: not learned.
	Expired = "expired"
)

// Event is one decision and what became of its reward.
type Event struct {
	Seq     int64    // the decision's operation number
	ID      string   // the client's event_id
	Unit    string   // the privacy unit
	Context string   // the context, as JSON, when given
	Arm     int      // the arm decided
	Plan    int64    // the plan (policy version) it belongs to; 0: overflow
	Decided int64    // unix nanoseconds
	Status  string   // Pending, Learned, ...
	Reason  string   // why an Ignored reward was not learned
	Reward  *float64 // the reward; nil while pending, or once deleted
	RSeq    int64    // the operation number of its reward or drop; 0: none
	At      int64    // when the reward (or expiry) was recorded, unix ns
	// PScore is the probability with which the logging policy chose Arm
	// (1 without exploration), and PolicyArm the arm the policy itself
	// chose (-1 when not recorded): with an exploration rate e over K
	// arms, every arm has probability e/K and PolicyArm 1 - e more.
	PScore    float64
	PolicyArm int
	// Debit is the nano-rho its learned reward debited from its unit.
	Debit int64
}

// Release is one value released by a policy's noise: persisted before
// any decision uses it, and returned as is on replay, never re-drawn.
type Release struct {
	Seq         int64   `json:"operation"`   // the operation that released it
	Kind        string  `json:"mechanism"`   // "gaussian" or "laplace"
	Scale       float64 `json:"noise_scale"` // sigma or Laplace scale
	Sensitivity float64 `json:"sensitivity"`
	Value       float64 `json:"value"`
	Arm         int     `json:"arm"` // the arm of the plan it was released in (-1: none)
	At          int64   `json:"at_unix_nano"`
}

// History is an experiment's durable state, from a Mark.
type History struct {
	Events   []Event
	Releases []Release
	Draws    []uint64
}

// Mark is where a History starts: after operation Seq, at release
// Releases and draw Draws, with the earlier events Pending (by seq) too.
type Mark struct {
	Seq, Releases, Draws int64
	Pending              []int64
}

// Snapshot is an experiment's state after operation Seq (engine.go's
// snapshot), with the SHA-256 of State: a restart loads it and replays
// only the operations after Seq.
type Snapshot struct {
	Seq   int64
	State []byte
	Sum   []byte
}

// LedgerRow is what one unit spent in one experiment: Rewards learned,
// NanoRho the zCDP they cost, in units of 1e-9 rho.
type LedgerRow struct {
	Unit       string `json:"unit_id"`
	Experiment string `json:"experiment"`
	Rewards    int64  `json:"rewards"`
	NanoRho    int64  `json:"nano_rho"`
}

// Change is one operation's writes: at most one event insert or update,
// releases and draws, and at times a snapshot and a fold (fold.go).
type Change struct {
	Exp      string
	Insert   *Event // a new decision
	Update   *Event // a reward, an expiry or a deletion of the reward
	Debit    int64  // nano-rho debited from Update's unit (0: none), stored with it
	Releases []Release
	Draws    []uint64
	DrawBase int64   // index of the first draw
	RelBase  int64   // index of the first release
	Forget   seqSpan // the decisions whose stored rewards are deleted lie in it
	// Keep lists, in order, decisions in Forget whose rewards stay: under
	// the pooled rule, those that wait for a release (experiment.cover).
	Keep     []int64
	Status   string // the experiment's new lifecycle status ("": unchanged)
	Snapshot *Snapshot
	Fold     *Fold // what the change folds into the event-id index and the ledger (fold.go)

	durable chan struct{} // closed by the writer once committed
	folded  chan struct{} // closed by the writer once committed, when Fold is set: the fold's (fold.go)
}

// seqSpan is the smallest interval of decision seqs that holds a set of
// events; the zero value is empty (seqs start at 1). It holds the learned
// events whose rewards are stored and not yet released: without
// --keep-log only learned rewards are stored, and once the policy holds
// no unreleased reward (Forgetter.Unreleased is 0) every stored reward
// is covered by a release, so that all of those in the span may be
// deleted. The span, unlike a list of the events, does not grow with an
// episode (AdaC-UCB's last one holds up to half the history), neither in
// memory nor in each snapshot.
type seqSpan struct{ Lo, Hi int64 }

// add widens the span to hold seq.
func (p *seqSpan) add(seq int64) {
	if p.empty() || seq < p.Lo {
		p.Lo = seq
	}
	p.Hi = max(p.Hi, seq)
}

// empty reports whether the span holds no seq.
func (p seqSpan) empty() bool { return p.Hi == 0 }

// except returns the spans that cover p but the seqs of keep (in
// increasing order).
func (p seqSpan) except(keep []int64) []seqSpan {
	if p.empty() {
		return nil
	}
	var out []seqSpan
	lo := p.Lo
	for _, k := range keep {
		if k > p.Hi {
			break
		}
		if k > lo {
			out = append(out, seqSpan{lo, k - 1})
		}
		lo = max(lo, k+1)
	}
	if lo <= p.Hi {
		out = append(out, seqSpan{lo, p.Hi})
	}
	return out
}

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
func Open(ctx context.Context, dsn string) (Store, error) {
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

// eagerFolds reports whether st is PostgreSQL, where every change folds
// its own writes (fold.go).
func eagerFolds(st Store) bool {
	s, ok := st.(*sqlStore)
	return ok && s.postgres
}

// rebind rewrites ? placeholders as $n for PostgreSQL.
func (s *sqlStore) rebind(query string) string {
	if !s.postgres {
		return query
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
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
	// b-tree per table instead of two). Event ids are unique per
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
		{"experiments", "status", "TEXT NOT NULL DEFAULT '" + Active + "'"},
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

func (s *sqlStore) CreateExperiment(ctx context.Context, e Definition) error {
	def, err := e.encode()
	if err != nil {
		return err
	}
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
		e.key(), e.Tenant, def, e.Created, folded)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrExists
	}
	if s.replica() {
		// The creator holds the new experiment's lease.
		var epoch int64
		if err := tx.QueryRowContext(ctx, acquireLease, e.key(), s.lease.me.ID, s.ttlMillis()).Scan(&epoch); err != nil {
			return err
		}
		if err := tx.Commit(); err != nil {
			return err
		}
		s.setEpoch(e.key(), epoch)
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

func (s *sqlStore) Experiments(ctx context.Context) ([]Definition, error) {
	var out []Definition
	err := s.each(ctx, `SELECT definition, status, folded FROM experiments ORDER BY created, id`, nil, func(rows *sql.Rows) error {
		d, err := scanDefinition(rows)
		out = append(out, d)
		return err
	})
	return out, err
}

// scanDefinition reads a row of (definition, status, folded).
func scanDefinition(rows *sql.Rows) (Definition, error) {
	var raw, status string
	var folded int64
	if err := rows.Scan(&raw, &status, &folded); err != nil {
		return Definition{}, err
	}
	d, err := decodeDefinition(raw)
	d.Status, d.Folded = status, folded
	return d, err
}

const eventCols = `seq, event_id, unit_id, COALESCE(context, ''), arm, plan, decided, status, reason, reward, rseq, at, pscore, policy_arm, debit`

func scanEvent(rows *sql.Rows) (Event, error) {
	var e Event
	var r sql.NullFloat64
	err := rows.Scan(&e.Seq, &e.ID, &e.Unit, &e.Context, &e.Arm, &e.Plan, &e.Decided, &e.Status, &e.Reason, &r, &e.RSeq, &e.At, &e.PScore, &e.PolicyArm, &e.Debit)
	if r.Valid {
		e.Reward = &r.Float64
	}
	return e, err
}

func (s *sqlStore) History(ctx context.Context, id string, from Mark) (*History, error) {
	h := &History{}
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
		var r Release
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

func (s *sqlStore) Snapshot(ctx context.Context, id string) (*Snapshot, error) {
	var out *Snapshot
	err := s.each(ctx, `SELECT seq, state, sum FROM snapshots WHERE exp = ?`, []any{id}, func(rows *sql.Rows) error {
		out = &Snapshot{}
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
	// debits already (written before, in the same transaction: Fold).
	stmtSpend: `INSERT INTO unit_spend AS u (tenant, unit_id, nano) VALUES (?, ?, (` + queryUnitTotal + `))
		ON CONFLICT (tenant, unit_id) DO UPDATE SET nano = u.nano + ?`,
}

// writes calls exec for every statement of a batch, in order; with
// cursors, the folds' cursors too (SQLite's: PostgreSQL folds as it
// goes, and reads none, fold.go).
func writes(batch []*Change, cursors bool, exec func(st int, args ...any) error) error {
	var folded map[string]int64 // each experiment's cursor, written once a batch
	var spent map[UnitKey]int64 // the unreserved debits of each unit (Fold.Unreserved)
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
		for _, p := range c.Forget.except(c.Keep) {
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
			if err := f.writes(c, exec); err != nil {
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
					spent = map[UnitKey]int64{}
				}
				tenant, _, _ := strings.Cut(c.Exp, "/")
				for _, d := range f.Debits {
					spent[UnitKey{tenant, d.Unit}] += d.Nano
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
	for _, u := range slices.SortedFunc(maps.Keys(spent), func(a, b UnitKey) int {
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
func (s *sqlStore) Commit(ctx context.Context, batch []*Change) error {
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
func (s *sqlStore) commitPostgres(ctx context.Context, batch []*Change) error {
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

// UnitKey names a unit: unit ids are their tenant's own.
type UnitKey struct{ Tenant, Unit string }

func (s *sqlStore) Ledger(ctx context.Context, tenant, unit string) ([]LedgerRow, error) {
	var out []LedgerRow
	// The tenant's keys start with "tenant/": an equality, which every
	// deterministic collation decides byte for byte (a range such as
	// exp >= 'a/' AND exp < 'a0' would, under a language-aware collation,
	// take tenant "A"'s keys too). Tenant names are ASCII.
	prefix := tenant + "/"
	err := s.each(ctx, queryLedger, []any{unit, len(prefix), prefix}, func(rows *sql.Rows) error {
		r := LedgerRow{Unit: unit}
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

func (s *sqlStore) LedgerUnits(ctx context.Context, fn func(UnitKey, string)) error {
	return s.each(ctx, `SELECT unit_id, exp FROM ledger`, nil, func(rows *sql.Rows) error {
		var u, exp string
		err := rows.Scan(&u, &exp)
		tenant, _, _ := strings.Cut(exp, "/")
		fn(UnitKey{tenant, u}, exp)
		return err
	})
}

func (s *sqlStore) Event(ctx context.Context, exp, eventID string) (*Event, error) {
	var out *Event
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

func (s *sqlStore) Log(ctx context.Context, id string, fn func(Event) error) error {
	return s.each(ctx, `SELECT `+eventCols+` FROM events WHERE exp = ? AND status <> ? ORDER BY seq`, []any{id, Pending}, func(rows *sql.Rows) error {
		e, err := scanEvent(rows)
		if err != nil {
			return err
		}
		return fn(e)
	})
}
