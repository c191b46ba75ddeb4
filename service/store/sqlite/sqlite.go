// Package sqlite is the service's store on a SQLite file: one service
// writes it at a time (store.Owner), and folds its experiments' events
// into the ledger itself (store.Fold). It is not store.Replicated:
// replicas need PostgreSQL (service/store/postgres).
package sqlite

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"sync"

	"github.com/dpbandit/dpbandit/service/store"
	"github.com/dpbandit/dpbandit/service/store/internal/sqldb"

	_ "modernc.org/sqlite" // database/sql driver "sqlite"
)

// Store is the store on a SQLite file.
type Store struct {
	*sqldb.DB
	// Commit's connection and its statements, prepared on its driver
	// connection once (raw.go; a statement run by its text is compiled
	// anew each time); wmu: one transaction on it at a time
	wmu   sync.Mutex
	wconn *sql.Conn
	raw   *raw
}

// dialect is SQLite's SQL.
var dialect = sqldb.Dialect{
	Real: "REAL", Blob: "BLOB", TableEnd: " WITHOUT ROWID",
	Bind: func(q string) string { return q },
	Has: func(typ, name string) (string, []any) {
		return `SELECT COUNT(*) FROM sqlite_master WHERE type = ? AND name = ?`, []any{typ, name}
	},
	Columns: `SELECT COUNT(*) FROM pragma_table_info(?) WHERE name = ?`,
	Index:   eventIndex,
}

// Open opens (and creates or migrates) the store in the SQLite file at
// path.
func Open(ctx context.Context, path string) (*Store, error) {
	// WAL: readers do not block the writer; synchronous FULL: a
	// commit is on disk when it returns; busy_timeout: a second
	// process waits instead of failing; temp_store(MEMORY): the
	// statement journal of a fold's update of many events (fold.go)
	// is kept in memory, not written to a temporary file;
	// _txlock=immediate: a write transaction holds the write lock
	// from its start (the fence reads the owner's epoch under it).
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=busy_timeout(5000)&_pragma=foreign_keys(ON)&_pragma=temp_store(MEMORY)&_txlock=immediate")
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(4)
	shared, err := sqldb.Open(ctx, db, dialect, &flock{path: canonicalPath(path)}, sqldb.Schema(dialect))
	if err != nil {
		return nil, err
	}
	s := &Store{DB: shared}
	if err := s.prepare(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// prepare takes Commit's connection and prepares its statements on it.
// Commit runs its transactions on that connection with BEGIN and COMMIT
// rather than through database/sql's Tx: a Tx registers each statement it
// takes from a prepared one (Tx.StmtContext) in a map of the database,
// whose memory grew with the number of statements ever run (about 10
// bytes a decision+reward pair in BenchmarkMemoryFlat).
func (s *Store) prepare(ctx context.Context) error {
	var err error
	if s.wconn, err = s.SQL.Conn(ctx); err != nil {
		return err
	}
	// IMMEDIATE: the write lock from the start, under which the fence
	// reads the owner's epoch.
	return s.wconn.Raw(func(dc any) error {
		s.raw, err = prepareRaw(ctx, dc, sqldb.Queries[:sqldb.StmtSpend], `BEGIN IMMEDIATE`, sqldb.OwnerEpoch)
		return err
	})
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

// Close releases the database.
func (s *Store) Close() error {
	if s.wconn != nil {
		s.wconn.Close()
	}
	return s.DB.Close()
}

// WritesAsItGoes is false: the service folds a SQLite store's events
// and ledger rows (store.Fold).
func (s *Store) WritesAsItGoes() bool { return false }

// CreateExperiment stores a new experiment, folded through nothing yet
// (fold.go).
func (s *Store) CreateExperiment(ctx context.Context, e store.Experiment) error {
	return s.Create(ctx, e, 0, func(tx *sql.Tx) (func(), error) { return nil, s.fence(ctx, tx) })
}

// Commit writes a batch in one transaction through prepared statements,
// checking the owner's epoch first, under the write lock (owner.go).
func (s *Store) Commit(ctx context.Context, batch []*store.Change) error {
	if _, err := s.Writer(); err != nil {
		return err
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return s.wconn.Raw(func(any) error {
		r := s.raw
		if err := r.exec(ctx, r.begin); err != nil {
			return err
		}
		e, err := r.epoch(ctx)
		if err == nil {
			err = s.CheckEpochIs(e)
		}
		if err == nil {
			err = sqldb.Writes(batch, true, true, func(st int, args ...any) error {
				return r.exec(ctx, r.stmts[st], args...)
			})
		}
		if err == nil {
			err = r.exec(ctx, r.commit)
		}
		if err != nil {
			// Nothing of a failed transaction stays (a failed COMMIT
			// leaves it open in SQLite).
			r.exec(context.Background(), r.rollback)
		}
		return err
	})
}
