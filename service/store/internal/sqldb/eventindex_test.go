package sqldb_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/dpbandit/dpbandit/service/internal/storetest"
	"github.com/dpbandit/dpbandit/service/store"
	"github.com/dpbandit/dpbandit/service/store/internal/sqldb"
	"github.com/dpbandit/dpbandit/service/store/postgres"
	"github.com/dpbandit/dpbandit/service/store/sqlite"
)

// held is a store of either package.
type held interface {
	store.Owner
	Close() error
}

// target is a store package under TestOldEventIndexReplaced.
type target struct {
	name string
	dsn  func(testing.TB) string
	// open opens the store at dsn, and returns its shared part
	open func(ctx context.Context, dsn string) (held, *sqldb.DB, error)
	// replicas: the store is store.Replicated; invalidate marks the
	// index %s invalid, valid reads whether it is (both: "" for none)
	replicas            bool
	invalidate, isValid string
}

// The two stores: SQLite, and PostgreSQL, which replicas share and
// whose concurrent builds may leave an index invalid.
var targets = []target{
	{name: "sqlite", dsn: storetest.SQLite, open: func(ctx context.Context, dsn string) (held, *sqldb.DB, error) {
		s, err := sqlite.Open(ctx, dsn)
		if err != nil {
			return nil, nil, err
		}
		return s, s.DB, nil
	}},
	{name: "postgres", dsn: storetest.Postgres, open: func(ctx context.Context, dsn string) (held, *sqldb.DB, error) {
		s, err := postgres.Open(ctx, dsn)
		if err != nil {
			return nil, nil, err
		}
		return s, s.DB, nil
	}, replicas: true,
		invalidate: `UPDATE pg_index SET indisvalid = false WHERE indexrelid = '%s'::regclass`,
		isValid:    `SELECT indisvalid FROM pg_index WHERE indexrelid = '%s'::regclass`},
}

// TestOldEventIndexReplaced: a store with the event-id indexes of earlier
// versions (alone, or beside the new one, which an older version started
// after an upgrade builds again) has the new index alone once a service
// owns it, on either store, or once a replica joins it (PostgreSQL,
// CONCURRENTLY); an index left invalid by an interrupted concurrent build
// is built again. Before the store is held, nothing is built.
func TestOldEventIndexReplaced(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	indexes := func(t *testing.T, db *sqldb.DB) (names []string) {
		t.Helper()
		tx, err := db.SQL.Begin()
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		ix := db.Dialect().Index
		for _, n := range append([]string{ix.Name}, ix.Old...) {
			if has, err := db.Has(ctx, tx, "index", n); err != nil {
				t.Fatal(err)
			} else if has {
				names = append(names, n)
			}
		}
		return names
	}
	// The cases run in turn on one store, each leaving it with the new
	// index alone.
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			dsn := tg.dsn(t)
			// each case's setup, given the store's event-id index
			oldOnes := func(eventIndex string) []string {
				return []string{`DROP INDEX ` + eventIndex, `CREATE UNIQUE INDEX events_by_event_id ON events (exp, event_id)`, `CREATE INDEX events_by_id ON events (exp, event_id)`}
			}
			both := func(eventIndex string) []string { return oldOnes(eventIndex)[1:] }
			invalid := func(eventIndex string) []string { return []string{fmt.Sprintf(tg.invalidate, eventIndex)} }
			cases := []struct {
				name    string
				setup   func(eventIndex string) []string
				replica bool
				oldOnes bool // the setup leaves old indexes (to be replaced)
			}{
				{"old-only", oldOnes, false, true},
				{"old-beside-new", both, false, true},
				{"old-only-replica", oldOnes, true, true},
				{"old-beside-new-replica", both, true, true},
				{"invalid-replica", invalid, true, false},
			}
			for _, c := range cases {
				if c.replica && !tg.replicas {
					continue
				}
				t.Run(c.name, func(t *testing.T) {
					if err := func() error {
						pre, db, err := tg.open(ctx, dsn)
						if err != nil {
							return err
						}
						defer pre.Close()
						if err := pre.Own(ctx, "setup", nil); err != nil {
							return err
						}
						for _, st := range c.setup(db.Dialect().Index.Name) {
							if _, err := db.SQL.Exec(st); err != nil {
								return err
							}
						}
						return nil
					}(); err != nil {
						t.Fatal(err)
					}
					st, db, err := tg.open(ctx, dsn)
					if err != nil {
						t.Fatal(err)
					}
					defer st.Close()
					eventIndex := db.Dialect().Index.Name
					before := indexes(t, db)
					if c.replica {
						err = st.(store.Replicated).Join(ctx, store.Replica{ID: "r", Addr: "http://127.0.0.1:1/r"}, time.Second, 0, nil)
					} else {
						err = st.Own(ctx, "test", nil)
					}
					if err != nil {
						t.Fatal(err)
					}
					if got := indexes(t, db); !slices.Equal(got, []string{eventIndex}) {
						t.Errorf("indexes %v before the store was held, %v after; want only %s", before, got, eventIndex)
					}
					if tg.isValid != "" {
						var valid bool
						if err := db.SQL.QueryRow(fmt.Sprintf(tg.isValid, eventIndex)).Scan(&valid); err != nil || !valid {
							t.Errorf("the index is not valid (%v)", err)
						}
					}
					if c.oldOnes && slices.Equal(before, indexes(t, db)) {
						t.Errorf("nothing to replace: the setup left %v", before)
					}
				})
			}
		})
	}
}

func TestMain(m *testing.M) { storetest.Main(m) }
