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

// scanner is *sql.Row or *sql.Rows.
type scanner interface{ Scan(dest ...any) error }

// queryRows runs query on q and returns every row, as scan reads it.
func queryRows[T any](ctx context.Context, q querier, scan func(scanner) (T, error), query string, args ...any) ([]T, error) {
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

// encodeMetadata stores user metadata as a JSON object, NULL when empty.
func encodeMetadata(m map[string]string) (any, error) {
	s, ok, err := metasql.EncodeMetadata(m)
	if !ok || err != nil {
		return nil, err
	}
	return s, nil
}

func decodeMetadata(s sql.NullString) (map[string]string, error) {
	return metasql.DecodeMetadata(s.String)
}

// ready fails once the store is closed.
func (s *Store) ready() error {
	if s.closed.Load() {
		return errClosed
	}
	return nil
}
