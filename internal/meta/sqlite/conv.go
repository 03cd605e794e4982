package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"math"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
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

var (
	minTime = time.Unix(0, math.MinInt64)
	maxTime = time.Unix(0, math.MaxInt64)
)

// toNanos is how times are stored: unix nanoseconds, 0 for the zero time,
// clamped to the representable range.
func toNanos(t time.Time) int64 {
	switch {
	case t.IsZero():
		return 0
	case t.Before(minTime):
		return math.MinInt64
	case t.After(maxTime):
		return math.MaxInt64
	}
	return t.UnixNano()
}

// fromNanos is the inverse of toNanos, in UTC.
func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// orNow returns t, or now if t is zero.
func orNow(t, now time.Time) time.Time {
	if t.IsZero() {
		return now
	}
	return t
}

// encodeMetadata stores user metadata as a JSON object, NULL when empty.
func encodeMetadata(m map[string]string) (any, error) {
	if len(m) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, errcode.Wrap(errcode.InvalidArgument, err, "invalid object metadata")
	}
	return string(b), nil
}

func decodeMetadata(s sql.NullString) (map[string]string, error) {
	if !s.Valid || s.String == "" {
		return nil, nil
	}
	var m map[string]string
	if err := json.Unmarshal([]byte(s.String), &m); err != nil {
		return nil, errcode.Wrap(errcode.Internal, err, "corrupt object metadata")
	}
	return m, nil
}

// ready fails once the store is closed.
func (s *Store) ready() error {
	if s.closed.Load() {
		return errClosed
	}
	return nil
}
