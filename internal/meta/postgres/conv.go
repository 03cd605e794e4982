package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/coffer-storage/coffer/internal/meta/metasql"
)

// ph is PostgreSQL's placeholder, $n.
var ph = metasql.Dollar

// key is how object and upload keys are bound: as bytea. A Go string
// converted to []byte is never nil, so "" is an empty key, not NULL.
func key(k string) any { return []byte(k) }

// rowTo adapts a metasql scanner to pgx.CollectRows.
func rowTo[T any](scan func(metasql.Row) (T, error)) pgx.RowToFunc[T] {
	return func(r pgx.CollectableRow) (T, error) { return scan(r) }
}

// list runs a query outside any transaction and returns every row, as
// scan reads it.
func list[T any](ctx context.Context, s *Store, what string, scan func(metasql.Row) (T, error), sql string, args ...any) ([]T, error) {
	var out []T
	err := s.read(ctx, what, func(c *pgx.Conn) error {
		rows, err := c.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, rowTo(scan))
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// get runs a one-row query outside any transaction and returns its row,
// as scan reads it, or notFound if there is none (nil: pgx.ErrNoRows).
func get[T any](ctx context.Context, s *Store, what string, scan func(metasql.Row) (T, error), notFound error, sql string, args ...any) (T, error) {
	var v T
	err := s.read(ctx, what, func(c *pgx.Conn) (err error) {
		v, err = scan(c.QueryRow(ctx, sql, args...))
		if notFound != nil && errors.Is(err, pgx.ErrNoRows) {
			return notFound
		}
		return err
	})
	if err != nil {
		var zero T
		return zero, err
	}
	return v, nil
}

// queueRows queues query in t; once flushed, dst holds every row, as scan
// reads it.
func queueRows[T any](t *txn, dst *[]T, scan func(metasql.Row) (T, error), query string, args ...any) {
	t.batch.Queue(query, args...).Query(func(rows pgx.Rows) error {
		var err error
		*dst, err = pgx.CollectRows(rows, rowTo(scan))
		return err
	})
}

// queueEach queues query in t; once flushed, each has been called with
// every row, as scan reads it, in order.
func queueEach[T any](t *txn, scan func(metasql.Row) (T, error), each func(T), query string, args ...any) {
	t.batch.Queue(query, args...).Query(func(rows pgx.Rows) error {
		vs, err := pgx.CollectRows(rows, rowTo(scan))
		for _, v := range vs {
			each(v)
		}
		return err
	})
}

// queueRow queues a one-row query in t; once flushed, dst holds its row,
// as scan reads it, and found says whether there was one.
func queueRow[T any](t *txn, dst *T, found *bool, scan func(metasql.Row) (T, error), query string, args ...any) {
	t.batch.Queue(query, args...).QueryRow(func(r pgx.Row) (err error) {
		*dst, err = scan(r)
		*found = err == nil
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		return err
	})
}

// queueGet queues a one-row query in t; once flushed, dst holds its row,
// as scan reads it, and the flush fails with notFound if there is none.
func queueGet[T any](t *txn, dst *T, scan func(metasql.Row) (T, error), notFound error, query string, args ...any) {
	t.batch.Queue(query, args...).QueryRow(func(r pgx.Row) (err error) {
		*dst, err = scan(r)
		if errors.Is(err, pgx.ErrNoRows) {
			return notFound
		}
		return err
	})
}

// mustAffect returns an execN callback that fails with notFound if no row
// changed.
func mustAffect(notFound error) func(n int64) error {
	return func(n int64) error {
		if n == 0 {
			return notFound
		}
		return nil
	}
}

// affected returns an execN callback that stores how many rows changed.
func affected(n *int64) func(int64) error {
	return func(m int64) error { *n = m; return nil }
}
