package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/coffer-storage/coffer/internal/meta/metasql"
)

// ph is PostgreSQL's placeholder, $n.
var ph = metasql.Dollar

// sq are the statements shared with the other backend, in this dialect.
var sq = metasql.NewStatements(dialect)

// key is how object and upload keys are bound: as bytea. A Go string
// converted to []byte is never nil, so "" is an empty key, not NULL.
func key(k string) any { return []byte(k) }

// dialect is PostgreSQL's SQL: lists are arrays.
var dialect = metasql.Dialect{
	PH:   ph,
	Key:  key,
	In:   func(col string, n int) string { return col + " = ANY(" + ph(n) + ")" },
	List: func(v any) (any, error) { return v, nil },
	// Lock writes take the owner's row lock, as removals do.
	ForUpdate: " FOR UPDATE",
}

// rowTo adapts a metasql scanner to pgx.CollectRows.
func rowTo[T any](scan func(metasql.Row) (T, error)) pgx.RowToFunc[T] {
	return func(r pgx.CollectableRow) (T, error) { return scan(r) }
}

// driver is the backend as metasql.Ops sees it (a metasql.Backend): its
// Runner, and its Driver, whose methods are in the files of their roles.
type driver struct{ *Store }

var _ metasql.Backend = driver{}

func (r driver) Query(ctx context.Context, what, query string, args []any, begin func(), row func(metasql.Row) error) error {
	return r.read(ctx, what, func(c *pgx.Conn) error {
		begin()
		rows, err := c.Query(ctx, query, args...)
		if err != nil {
			return err
		}
		_, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (struct{}, error) { return struct{}{}, row(r) })
		return err
	})
}

func (r driver) Ready() error { return r.ready() }

func (r driver) Write(ctx context.Context, what string, fn func(w metasql.Writer) error) error {
	return r.write(ctx, what, func(t *txn) error { return fn(writer{t}) })
}

// writer is a metasql.Writer on a pipelined transaction: Exec and Query
// flush, Queue waits for the next flush.
type writer struct{ t *txn }

func (w writer) Exec(query string, args ...any) (int64, error) {
	var n int64
	w.t.execN(affected(&n), query, args...)
	return n, w.t.flush()
}

func (w writer) Query(query string, args []any, row func(metasql.Row) error) error {
	queueEach(w.t, func(r metasql.Row) (struct{}, error) { return struct{}{}, row(r) }, func(struct{}) {}, query, args...)
	return w.t.flush()
}

func (w writer) Queue(done func(n int64), query string, args ...any) error {
	if done == nil {
		w.t.exec(query, args...)
		return nil
	}
	w.t.execN(func(n int64) error { done(n); return nil }, query, args...)
	return nil
}

func (r driver) Exec(ctx context.Context, what, query string, args []any, row func(metasql.Row) error) (int64, error) {
	var n int64
	err := r.write(ctx, what, func(t *txn) error {
		if row == nil {
			t.execN(affected(&n), query, args...)
			return nil
		}
		queueEach(t, func(r metasql.Row) (struct{}, error) { return struct{}{}, row(r) }, func(struct{}) { n++ }, query, args...)
		return nil
	})
	return n, err
}

// queueRows queues query in t; once flushed, dst holds every row, as scan
// reads it.
func queueRows[T any](t *txn, dst *[]T, scan func(metasql.Row) (T, error), query string, args ...any) {
	t.batch.Queue(query, args...).Query(func(rows pgx.Rows) error {
		var err error
		if *dst != nil { // room made for the rows (a page of a listing)
			*dst, err = pgx.AppendRows((*dst)[:0], rows, rowTo(scan))
			return err
		}
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
