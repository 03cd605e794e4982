// Package metasql is the SQL the two metadata backends (sqlite, postgres)
// share: statement text built with a placeholder function (Question for
// SQLite, Dollar for PostgreSQL) or over SQL expressions, how each row
// maps to a meta record (Scan*, over Row, which both drivers' rows
// satisfy), how times and user metadata are encoded, and how the numbered
// migration files are read. It holds no decision: the checks and
// decisions of every write are package meta's, and each backend only
// runs these statements in its own transactions.
//
// Files go by role, like meta's: users.go (accounts, refresh tokens),
// accesskeys.go, invites.go, buckets.go, objects.go, uploads.go (uploads
// and their parts), staging.go (reservations), garbage.go (blob
// references), shares.go, tus.go, limits.go (user limits, rates),
// kmsjobs.go, kmsgrants.go, migrations.go.
package metasql

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

// Row is a row as both drivers return it (*sql.Row, *sql.Rows, pgx.Row,
// pgx.CollectableRow): what the Scan functions read. A nullable column is
// scanned into a pointer (nil for NULL), which both drivers support.
type Row interface{ Scan(dest ...any) error }

// PH makes the n-th (1-based) placeholder of a dialect.
type PH func(n int) string

// Question is SQLite's numbered placeholder, ?n.
func Question(n int) string { return "?" + strconv.Itoa(n) }

// Dollar is PostgreSQL's placeholder, $n.
func Dollar(n int) string { return "$" + strconv.Itoa(n) }

// Values is the list of the placeholders from to to (inclusive), for
// INSERT … VALUES (…).
func Values(ph PH, from, to int) string {
	var b strings.Builder
	for n := from; n <= to; n++ {
		if n > from {
			b.WriteString(", ")
		}
		b.WriteString(ph(n))
	}
	return b.String()
}

// ToNanos is how times are stored: unix nanoseconds of meta.StoredTime(t),
// 0 for the zero time.
func ToNanos(t time.Time) int64 {
	if t = meta.StoredTime(t); t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// FromNanos is the inverse of ToNanos, in UTC: FromNanos(ToNanos(t)) is
// meta.StoredTime(t).
func FromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// Millis is how the lease and job times are stored: unix milliseconds.
func Millis(t time.Time) int64 { return t.UnixMilli() }

// fromMillis is the inverse of Millis, 0 being the zero time.
func fromMillis(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

// EncodeMetadata is user metadata as stored: a JSON object, ok false (NULL)
// when empty. JSON escapes NUL and replaces invalid UTF-8, so any text
// column can hold it.
func EncodeMetadata(m map[string]string) (s string, ok bool, err error) {
	if len(m) == 0 {
		return "", false, nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return "", false, errcode.Wrap(errcode.InvalidArgument, err, "invalid object metadata")
	}
	return string(b), true, nil
}

// MetadataArg is user metadata as an argument: EncodeMetadata's JSON, or
// nil (NULL) when empty.
func MetadataArg(m map[string]string) (any, error) {
	s, ok, err := EncodeMetadata(m)
	if !ok || err != nil {
		return nil, err
	}
	return s, nil
}

// DecodeMetadata is the inverse of EncodeMetadata (nil or "": none).
func DecodeMetadata(s *string) (map[string]string, error) {
	if s == nil || *s == "" {
		return nil, nil
	}
	var m map[string]string
	if err := json.Unmarshal([]byte(*s), &m); err != nil {
		return nil, errcode.Wrap(errcode.Internal, err, "corrupt object metadata")
	}
	return m, nil
}

// Deref is *p, or the zero value for nil (a NULL column).
func Deref[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}

// ScanString reads a row of one text column.
func ScanString(r Row) (string, error) {
	var v string
	err := r.Scan(&v)
	return v, err
}

// ScanInt64 reads a row of one integer column.
func ScanInt64(r Row) (int64, error) {
	var v int64
	err := r.Scan(&v)
	return v, err
}
