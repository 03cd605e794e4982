package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"github.com/coffer-storage/coffer/internal/meta/metasql"
)

// querier is what *sql.Conn, *sql.DB, *sql.Tx, the writer conn and reader
// have in common.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// ph is SQLite's placeholder, ?n.
var ph = metasql.Question

// key binds an object or upload key: as TEXT, in the BINARY collation.
func key(k string) any { return k }

// queryRows runs query on q and returns every row, as scan reads it.
func queryRows[T any](ctx context.Context, q querier, scan func(metasql.Row) (T, error), query string, args ...any) ([]T, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, errors.Join(rows.Err(), rows.Close())
}

// queryRow runs a one-row query on q and returns its row as scan reads
// it, or notFound if there is none (nil: sql.ErrNoRows).
func queryRow[T any](ctx context.Context, q querier, scan func(metasql.Row) (T, error), notFound error, query string, args ...any) (T, error) {
	v, err := scan(q.QueryRowContext(ctx, query, args...))
	if notFound != nil && errors.Is(err, sql.ErrNoRows) {
		err = notFound
	}
	if err != nil {
		var zero T
		return zero, err
	}
	return v, nil
}

// list is queryRows on the reader pool, its error classified as what.
func list[T any](ctx context.Context, s *Store, what string, scan func(metasql.Row) (T, error), query string, args ...any) ([]T, error) {
	if err := s.ready(); err != nil {
		return nil, err
	}
	out, err := queryRows(ctx, s.read(), scan, query, args...)
	if err != nil {
		return nil, classify(err, "%s", what)
	}
	return out, nil
}

// get is queryRow on the reader pool, its error classified as what.
func get[T any](ctx context.Context, s *Store, what string, scan func(metasql.Row) (T, error), notFound error, query string, args ...any) (T, error) {
	if err := s.ready(); err != nil {
		var zero T
		return zero, err
	}
	v, err := queryRow(ctx, s.read(), scan, notFound, query, args...)
	return v, classify(err, "%s", what)
}

// exists reports whether query returns a row.
func exists(ctx context.Context, q querier, query string, args ...any) (bool, error) {
	var one int
	err := q.QueryRowContext(ctx, query, args...).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// execN runs a statement on the writer and returns how many rows it
// changed.
func execN(ctx context.Context, c *conn, query string, args ...any) (int64, error) {
	res, err := c.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// mustAffect runs a statement on the writer and returns notFound if it
// changed no row; other errors are classified as what.
func mustAffect(ctx context.Context, c *conn, notFound error, what, query string, args ...any) error {
	n, err := execN(ctx, c, query, args...)
	if err != nil {
		return classify(err, "%s", what)
	}
	if n == 0 {
		return notFound
	}
	return nil
}

// ready fails once the store is closed.
func (s *Store) ready() error {
	if s.closed.Load() {
		return errClosed
	}
	return nil
}
