// Package metasql is what the two SQL metadata backends (sqlite, postgres)
// share: the SQL, and the metadata operations (of the roles in meta) whose SQL is the same in
// both. It holds no decision: the checks and decisions of every operation
// are package meta's, which these call.
//
//   - Ops implements every operation that is one statement (or a check and
//     one statement, or a short transaction of statements whose outcome
//     decides the next), once: a backend embeds the Ops NewOps makes of its
//     Runner (how it runs a statement, with its own row collector) and its
//     Dialect (placeholders, key and list binding). For the operations whose
//     transaction is a backend's own (locks, quota checks, pipelined round
//     trips), Ops makes the checks and calls the backend's Driver.
//   - Statements are the statement texts the backends run in those
//     transactions of their own, made once per dialect.
//   - The Scan functions map rows (Row, which both drivers' rows satisfy)
//     to meta records; the Args functions encode records as arguments;
//     times are stored as ToNanos says, user metadata as EncodeMetadata.
//   - Migrations reads the numbered migration files, Pending says which
//     to apply.
//
// Files go by role, like meta's: users.go (accounts, refresh tokens),
// accesskeys.go, invites.go, buckets.go, objects.go, lock.go (the reads
// and removals of one version, and object lock), uploads.go (uploads
// and their parts), staging.go (reservations), garbage.go (blob
// references), shares.go, tus.go, limits.go (user limits, rates),
// encryptionjobs.go, kmsgrants.go, serverkey.go; ops.go and statements.go hold
// what ties them together, migrations.go the migrations.
package metasql

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

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

// values is the list of the placeholders from to to (inclusive), for
// INSERT … VALUES (…).
func values(ph PH, from, to int) string {
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

// millis is how the lease and job times are stored: unix milliseconds.
func millis(t time.Time) int64 { return t.UnixMilli() }

// fromMillis is the inverse of millis, 0 being the zero time.
func fromMillis(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

// encodeMetadata is user metadata as stored: a JSON object, ok false (NULL)
// when empty. JSON escapes NUL and replaces invalid UTF-8, so any text
// column can hold it.
func encodeMetadata(m map[string]string) (s string, ok bool, err error) {
	if len(m) == 0 {
		return "", false, nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return "", false, errcode.Wrap(errcode.InvalidArgument, err, "invalid object metadata")
	}
	return string(b), true, nil
}

// metadataArg is user metadata as an argument: encodeMetadata's JSON, or
// nil (NULL) when empty.
func metadataArg(m map[string]string) (any, error) {
	s, ok, err := encodeMetadata(m)
	if !ok || err != nil {
		return nil, err
	}
	return s, nil
}

// DecodeMetadata is the inverse of encodeMetadata (nil or "": none).
func DecodeMetadata(s *string) (map[string]string, error) {
	if s == nil || *s == "" {
		return nil, nil
	}
	if m, ok := decodeFlat(*s); ok {
		return m, nil
	}
	var m map[string]string
	if err := json.Unmarshal([]byte(*s), &m); err != nil {
		return nil, errcode.Wrap(errcode.Internal, err, "corrupt object metadata")
	}
	return m, nil
}

// decodeFlat decodes what encodeMetadata writes in the common case, a
// JSON object of strings with no space and no escape ({"a":"1","b":"2"}),
// without encoding/json's reflection: a listing decodes a row's metadata
// for every object of its page. ok is false for anything else (an escape,
// invalid UTF-8, a space, a value not a string), which json.Unmarshal
// decodes instead (FuzzDecodeMetadata: both agree).
func decodeFlat(s string) (m map[string]string, ok bool) {
	if len(s) < 2 || s[0] != '{' || s[len(s)-1] != '}' || !utf8.ValidString(s) {
		return nil, false
	}
	m = map[string]string{}
	rest := s[1 : len(s)-1]
	for rest != "" {
		k, after, ok := flatString(rest)
		if !ok || after == "" || after[0] != ':' {
			return nil, false
		}
		v, after, ok := flatString(after[1:])
		if !ok {
			return nil, false
		}
		m[k] = v
		if after == "" {
			break
		}
		if after[0] != ',' || len(after) == 1 {
			return nil, false
		}
		rest = after[1:]
	}
	return m, true
}

// flatString reads a JSON string without escapes at the start of s.
func flatString(s string) (str, rest string, ok bool) {
	if s == "" || s[0] != '"' {
		return "", "", false
	}
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			return s[1:i], s[i+1:], true
		case c == '\\' || c < 0x20:
			return "", "", false
		}
	}
	return "", "", false
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
