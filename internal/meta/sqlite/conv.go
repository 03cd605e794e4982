package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
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

// sq are the statements shared with the other backend, in this dialect.
var sq = metasql.NewStatements(dialect)

// key binds an object or upload key: as TEXT, in the BINARY collation.
func key(k string) any { return k }

// dialect is SQLite's SQL: lists are JSON arrays read with json_each.
var dialect = metasql.Dialect{
	PH:  ph,
	Key: key,
	In:  func(col string, n int) string { return col + " IN (SELECT value FROM json_each(" + ph(n) + "))" },
	// Inline bytes live in inline_data.
	InlineTable: true,
	IndexedBy:   true,
	List: func(v any) (any, error) {
		b, err := json.Marshal(v)
		return string(b), err
	},
}

// eachRow runs query on q and calls row with every row, in order: the
// driver's one row loop.
func eachRow(ctx context.Context, q querier, query string, args []any, row func(metasql.Row) error) error {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := row(rows); err != nil {
			return err
		}
	}
	return errors.Join(rows.Err(), rows.Close())
}

// queryRows runs query on q and returns every row, as scan reads it.
func queryRows[T any](ctx context.Context, q querier, scan func(metasql.Row) (T, error), query string, args ...any) ([]T, error) {
	return appendRows(ctx, nil, q, scan, query, args...)
}

// appendRows is queryRows appending to out (a page's rows into a slice
// sized for them, not grown row by row).
func appendRows[T any](ctx context.Context, out []T, q querier, scan func(metasql.Row) (T, error), query string, args ...any) ([]T, error) {
	err := eachRow(ctx, q, query, args, func(r metasql.Row) error {
		v, err := scan(r)
		out = append(out, v)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// driver is the backend as metasql.Ops sees it (a metasql.Backend): its
// Runner, and its Driver, whose methods are in the files of their roles.
type driver struct{ *Store }

var _ metasql.Backend = driver{}

func (r driver) Query(ctx context.Context, what, query string, args []any, begin func(), row func(metasql.Row) error) error {
	if err := r.ready(); err != nil {
		return err
	}
	begin()
	return classify(eachRow(ctx, r.read(), query, args, row), "%s", what)
}

func (r driver) Ready() error { return r.ready() }

func (r driver) Write(ctx context.Context, what string, fn func(w metasql.Writer) error) error {
	return r.write(ctx, func(ctx context.Context, c *conn) error {
		return classify(fn(writer{ctx, c}), "%s", what)
	})
}

// writer is a metasql.Writer on the writer connection: every statement
// runs at once.
type writer struct {
	ctx context.Context
	c   *conn
}

func (w writer) Exec(query string, args ...any) (int64, error) {
	return execN(w.ctx, w.c, query, args...)
}

func (w writer) Query(query string, args []any, row func(metasql.Row) error) error {
	return eachRow(w.ctx, w.c, query, args, row)
}

func (w writer) Queue(done func(n int64), query string, args ...any) error {
	n, err := execN(w.ctx, w.c, query, args...)
	if err == nil && done != nil {
		done(n)
	}
	return err
}

func (r driver) Exec(ctx context.Context, what, query string, args []any, row func(metasql.Row) error) (int64, error) {
	var n int64
	err := r.write(ctx, func(ctx context.Context, c *conn) error {
		var err error
		if row == nil {
			n, err = execN(ctx, c, query, args...)
		} else {
			n = 0
			err = eachRow(ctx, c, query, args, func(r metasql.Row) error { n++; return row(r) })
		}
		return classify(err, "%s", what)
	})
	return n, err
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
