// Package stores opens the service's store named by a data source name.
package stores

import (
	"context"

	"github.com/dpbandit/dpbandit/service/store"
	"github.com/dpbandit/dpbandit/service/store/sqlstore"
)

// Open opens (and creates or migrates) the store at dsn: a postgres://
// or postgresql:// URL (PostgreSQL), or a SQLite file path.
func Open(ctx context.Context, dsn string) (store.Store, error) { return sqlstore.Open(ctx, dsn) }
