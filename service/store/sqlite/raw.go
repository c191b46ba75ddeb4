package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"io"
)

// raw holds Commit's statements prepared on its connection's driver
// connection: Commit runs them on it directly (sql.Conn.Raw), not through
// database/sql, whose every statement checks out the connection, converts
// its arguments into a new slice and wraps its result (about 3% of the
// service's CPU under dpbandit loadtest: docs/performance.md). The
// arguments are converted as database/sql converts them
// (driver.DefaultParameterConverter), into one slice reused.
type raw struct {
	stmts                             []driver.Stmt
	begin, epochNow, commit, rollback driver.Stmt
	args                              []driver.NamedValue
	dest                              []driver.Value
}

// prepareRaw prepares the queries, and begin, epoch, COMMIT and ROLLBACK,
// on the driver connection dc.
func prepareRaw(ctx context.Context, dc any, queries []string, begin, epoch string) (*raw, error) {
	pc, ok := dc.(driver.ConnPrepareContext)
	if !ok {
		return nil, fmt.Errorf("sqlite: the driver's connection %T cannot prepare with a context", dc)
	}
	r := &raw{dest: make([]driver.Value, 1)}
	var err error
	prep := func(q string) driver.Stmt {
		if err != nil {
			return nil
		}
		var st driver.Stmt
		st, err = pc.PrepareContext(ctx, q)
		return st
	}
	for _, q := range queries {
		r.stmts = append(r.stmts, prep(q))
	}
	r.begin, r.epochNow, r.commit, r.rollback = prep(begin), prep(epoch), prep(`COMMIT`), prep(`ROLLBACK`)
	if err != nil {
		return nil, err
	}
	return r, nil
}

// exec runs st with args.
func (r *raw) exec(ctx context.Context, st driver.Stmt, args ...any) error {
	r.args = r.args[:0]
	for i, a := range args {
		v, err := value(a)
		if err != nil {
			return fmt.Errorf("sqlite: argument %d: %w", i+1, err)
		}
		r.args = append(r.args, driver.NamedValue{Ordinal: i + 1, Value: v})
	}
	_, err := st.(driver.StmtExecContext).ExecContext(ctx, r.args)
	return err
}

// value converts a statement's argument as database/sql does, without
// reflection for the types Commit passes.
func value(a any) (driver.Value, error) {
	switch x := a.(type) {
	case nil, int64, float64, bool, []byte, string:
		return x, nil
	case int:
		return int64(x), nil
	}
	return driver.DefaultParameterConverter.ConvertValue(a)
}

// epoch reads the store's owner epoch (sql.ErrNoRows when there is no
// owner row, as database/sql's Row.Scan says).
func (r *raw) epoch(ctx context.Context) (int64, error) {
	rows, err := r.epochNow.(driver.StmtQueryContext).QueryContext(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	switch err := rows.Next(r.dest); {
	case err == io.EOF:
		return 0, sql.ErrNoRows
	case err != nil:
		return 0, err
	}
	e, ok := r.dest[0].(int64)
	if !ok {
		return 0, fmt.Errorf("sqlite: the owner epoch is a %T", r.dest[0])
	}
	return e, nil
}
