package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"sync"
)

// readStmts caches statements prepared on the reader pool. database/sql
// prepares each on a pool connection the first time it runs there, then
// reuses it.
type readStmts struct {
	db *sql.DB
	mu sync.Mutex
	m  map[string]*sql.Stmt
}

// get returns the prepared statement for query, or nil if the cache is
// full.
func (r *readStmts) get(ctx context.Context, query string) (*sql.Stmt, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if st, ok := r.m[query]; ok {
		return st, nil
	}
	if len(r.m) >= maxStmts {
		return nil, nil
	}
	st, err := r.db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if r.m == nil {
		r.m = map[string]*sql.Stmt{}
	}
	r.m[query] = st
	return st, nil
}

func (r *readStmts) close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var errs []error
	for _, st := range r.m {
		errs = append(errs, st.Close())
	}
	clear(r.m)
	return errors.Join(errs...)
}

// reader runs queries on the reader pool, or in tx if set, with cached
// statements. It implements querier.
type reader struct {
	stmts *readStmts
	tx    *sql.Tx
}

func (r reader) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	st, err := r.stmts.get(ctx, query)
	if err != nil || st == nil || r.tx == nil {
		return st, err
	}
	return r.tx.StmtContext(ctx, st), nil
}

// ExecContext runs a statement; readers are query-only, so this fails
// unless the statement writes nothing.
func (r reader) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	st, err := r.stmt(ctx, query)
	switch {
	case err != nil:
		return nil, err
	case st != nil:
		return st.ExecContext(ctx, args...)
	case r.tx != nil:
		return r.tx.ExecContext(ctx, query, args...)
	}
	return r.stmts.db.ExecContext(ctx, query, args...)
}

// QueryContext runs a query.
func (r reader) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, err := r.stmt(ctx, query)
	switch {
	case err != nil:
		return nil, err
	case st != nil:
		return st.QueryContext(ctx, args...)
	case r.tx != nil:
		return r.tx.QueryContext(ctx, query, args...)
	}
	return r.stmts.db.QueryContext(ctx, query, args...)
}

// QueryRowContext runs a query expected to return at most one row.
func (r reader) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	st, err := r.stmt(ctx, query)
	switch {
	case err == nil && st != nil:
		return st.QueryRowContext(ctx, args...)
	case r.tx != nil:
		// Uncached; a preparation error surfaces again from Scan.
		return r.tx.QueryRowContext(ctx, query, args...)
	}
	return r.stmts.db.QueryRowContext(ctx, query, args...)
}
