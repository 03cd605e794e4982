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
//
// Preparing needs a free pool connection, so it must never happen while
// holding the cache lock or a pool connection: a reader inside a read
// transaction holds one, and with every connection held by such readers a
// prepare would wait forever (and, under the lock, stall every reader).
// Misses inside a transaction therefore run unprepared on the
// transaction's own connection; misses outside prepare without the lock.
type readStmts struct {
	db *sql.DB
	mu sync.Mutex
	m  map[string]*sql.Stmt
}

// cached returns the prepared statement for query, or nil.
func (r *readStmts) cached(query string) *sql.Stmt {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.m[query]
}

// get returns the prepared statement for query, preparing it if needed,
// or nil if the cache is full. The caller must hold no pool connection.
func (r *readStmts) get(ctx context.Context, query string) (*sql.Stmt, error) {
	if st := r.cached(query); st != nil {
		return st, nil
	}
	r.mu.Lock()
	full := len(r.m) >= maxStmts
	r.mu.Unlock()
	if full {
		return nil, nil
	}
	st, err := r.db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if cur, ok := r.m[query]; ok {
		// Prepared concurrently by another reader: keep theirs.
		st.Close()
		return cur, nil
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
	if r.tx != nil {
		// Inside a transaction we hold a pool connection: never prepare on
		// the pool (see readStmts). A cached statement is re-prepared on the
		// transaction's connection by database/sql; a miss runs unprepared.
		if st := r.stmts.cached(query); st != nil {
			return r.tx.StmtContext(ctx, st), nil
		}
		return nil, nil
	}
	return r.stmts.get(ctx, query)
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
