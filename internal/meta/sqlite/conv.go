package sqlite

import (
	"context"
	"database/sql"

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
