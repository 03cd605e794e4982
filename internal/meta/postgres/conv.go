package postgres

import (
	"github.com/coffer-storage/coffer/internal/meta/metasql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// encodeMetadata stores user metadata as a JSON object, NULL when empty.
func encodeMetadata(m map[string]string) (pgtype.Text, error) {
	s, ok, err := metasql.EncodeMetadata(m)
	return pgtype.Text{String: s, Valid: ok}, err
}

func decodeMetadata(s pgtype.Text) (map[string]string, error) {
	return metasql.DecodeMetadata(s.String)
}

// key is how object and upload keys are bound: as bytea. A Go string
// converted to []byte is never nil, so "" is an empty key, not NULL.
func key(k string) []byte { return []byte(k) }

// scanner is a row pgx returns (pgx.Row, pgx.Rows, pgx.CollectableRow).
type scanner interface{ Scan(dest ...any) error }

// queueRows queues query in t; once flushed, dst holds every row, as scan
// reads it.
func queueRows[T any](t *txn, dst *[]T, scan func(scanner) (T, error), query string, args ...any) {
	t.batch.Queue(query, args...).Query(func(rows pgx.Rows) error {
		var err error
		*dst, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (T, error) { return scan(r) })
		return err
	})
}
