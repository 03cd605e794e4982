package postgres

import (
	"encoding/json"
	"math"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/coffer-storage/coffer/internal/errcode"
)

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
// JSON escapes NUL, and replaces invalid UTF-8, so the text is storable.
func encodeMetadata(m map[string]string) (pgtype.Text, error) {
	if len(m) == 0 {
		return pgtype.Text{}, nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return pgtype.Text{}, errcode.Wrap(errcode.InvalidArgument, err, "invalid object metadata")
	}
	return pgtype.Text{String: string(b), Valid: true}, nil
}

func decodeMetadata(s pgtype.Text) (map[string]string, error) {
	if !s.Valid || s.String == "" {
		return nil, nil
	}
	var m map[string]string
	if err := json.Unmarshal([]byte(s.String), &m); err != nil {
		return nil, errcode.Wrap(errcode.Internal, err, "corrupt object metadata")
	}
	return m, nil
}

// key is how object and upload keys are bound: as bytea. A Go string
// converted to []byte is never nil, so "" is an empty key, not NULL.
func key(k string) []byte { return []byte(k) }
