// Package stores opens the service's store named by a data source name.
package stores

import (
	"context"
	"strings"

	"github.com/dpbandit/dpbandit/service/store"
	"github.com/dpbandit/dpbandit/service/store/postgres"
	"github.com/dpbandit/dpbandit/service/store/sqlite"
)

// Open opens (and creates or migrates) the store at dsn: a postgres://
// or postgresql:// URL (PostgreSQL), or a SQLite file path.
func Open(ctx context.Context, dsn string) (store.Store, error) {
	if Postgres(dsn) {
		return opened(postgres.Open(ctx, dsn))
	}
	return opened(sqlite.Open(ctx, dsn))
}

// opened returns an opened store as a store.Store: nil, not a nil *S,
// with an error.
func opened[S store.Store](s S, err error) (store.Store, error) {
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Postgres reports whether dsn names a PostgreSQL database (a
// postgres:// or postgresql:// URL) rather than a SQLite file.
func Postgres(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
}
