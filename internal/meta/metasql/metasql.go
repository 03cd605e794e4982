// Package metasql holds what the SQL metadata backends (sqlite, postgres)
// share beyond the meta contract itself: the checks every write makes, the
// errors CompleteUpload reports, how times and user metadata are encoded,
// how the numbered migration files are read, and the SQL and decisions of
// blob references (what may be queued, reclaimed or collected as an
// orphan) and of quota reservations (staging.go). Both backends call
// these, so they cannot drift apart; only placeholders and the statements
// around them differ.
package metasql

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

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

// DecodeMetadata is the inverse of EncodeMetadata ("" or NULL: none).
func DecodeMetadata(s string) (map[string]string, error) {
	if s == "" {
		return nil, nil
	}
	var m map[string]string
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return nil, errcode.Wrap(errcode.Internal, err, "corrupt object metadata")
	}
	return m, nil
}

// Migration is one numbered schema change.
type Migration struct {
	Version int64
	Name    string
	SQL     string
}

// Migrations returns the migrations/*.sql of files in version order. File names
// are NNNN_description.sql with a unique positive NNNN.
func Migrations(files fs.FS) ([]Migration, error) {
	names, err := fs.Glob(files, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var ms []Migration
	seen := map[int64]string{}
	for _, name := range names {
		base := path.Base(name)
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.ParseInt(num, 10, 64)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: name must be NNNN_description.sql", base)
		}
		if prev, dup := seen[v]; dup {
			return nil, fmt.Errorf("migrations %s and %s share version %d", prev, base, v)
		}
		seen[v] = base
		b, err := fs.ReadFile(files, name)
		if err != nil {
			return nil, err
		}
		ms = append(ms, Migration{Version: v, Name: base, SQL: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Version < ms[j].Version })
	return ms, nil
}

// UserUpdateSet returns the SET list and arguments of an UPDATE users for
// upd (checked with meta.CheckUserUpdate), with placeholders made by ph
// (1-based).
func UserUpdateSet(upd meta.UserUpdate, ph func(n int) string) (set string, args []any) {
	var cols []string
	add := func(col string, v any) {
		args = append(args, v)
		cols = append(cols, col+" = "+ph(len(args)))
	}
	if upd.Admin != nil {
		add("admin", *upd.Admin)
	}
	if upd.Disabled != nil {
		add("disabled", *upd.Disabled)
	}
	if upd.PasswordHash != nil {
		add("password_hash", *upd.PasswordHash)
	}
	if upd.QuotaBytes != nil {
		add("quota_bytes", *upd.QuotaBytes)
	}
	if upd.SessionsAfter != nil {
		add("sessions_after", ToNanos(*upd.SessionsAfter))
	}
	return strings.Join(cols, ", "), args
}

// InviteCols are the columns of an invite, in the order ScanInvite reads
// them.
const InviteCols = "id, hash, email, uses, uses_left, created_by, created_at, expires_at, revoked"

// ScanInvite reads an invite selected with InviteCols.
func ScanInvite(r interface{ Scan(dest ...any) error }) (meta.Invite, error) {
	var inv meta.Invite
	var created, expires int64
	err := r.Scan(&inv.ID, &inv.Hash, &inv.Email, &inv.Uses, &inv.UsesLeft, &inv.CreatedBy, &created, &expires, &inv.Revoked)
	inv.CreatedAt, inv.ExpiresAt = FromNanos(created), FromNanos(expires)
	return inv, err
}

// InviteArgs are the arguments of an INSERT INTO invites (InviteCols) of
// an invite CheckInvite returned.
func InviteArgs(inv meta.Invite) []any {
	return []any{inv.ID, inv.Hash, inv.Email, inv.Uses, inv.UsesLeft, inv.CreatedBy, ToNanos(inv.CreatedAt), ToNanos(inv.ExpiresAt), inv.Revoked}
}

// RedeemInviteSQL is the conditional UPDATE that takes one use of an
// invite, with arguments RedeemInviteArgs and placeholders made by ph: it
// changes one row exactly when the invite is meta.Invite.Redeemable, and
// none otherwise. Being one statement on one row, two concurrent
// redemptions of the last use cannot both change it (the second sees
// uses_left = 0 once the first commits: SQLite runs one writer; PostgreSQL
// re-evaluates the WHERE on the updated row at READ COMMITTED).
func RedeemInviteSQL(ph func(n int) string) string {
	return "UPDATE invites SET uses_left = uses_left - 1 WHERE hash = " + ph(1) +
		" AND uses_left > 0 AND NOT revoked AND expires_at > " + ph(2) + " AND (email = '' OR email = " + ph(3) + ")"
}

// RedeemInviteArgs are the arguments of RedeemInviteSQL.
func RedeemInviteArgs(hash, email string, now time.Time) []any {
	return []any{hash, ToNanos(now), email}
}

// UpsertGatewayBucketQuery creates a gateway bucket (name, owner_id,
// visibility, created_at, gateway: the placeholders p1…p5) or updates the
// gateway bucket of that name; it affects no row when a native bucket has
// the name (see meta.ErrNotAGateway).
func UpsertGatewayBucketQuery(p1, p2, p3, p4, p5 string) string {
	return "INSERT INTO buckets (name, owner_id, visibility, created_at, gateway) VALUES (" +
		p1 + ", " + p2 + ", " + p3 + ", " + p4 + ", " + p5 + ") " +
		"ON CONFLICT (name) DO UPDATE SET owner_id = excluded.owner_id, visibility = excluded.visibility, gateway = excluded.gateway " +
		"WHERE buckets.gateway <> ''"
}

// Row is a row as both drivers return it (*sql.Row, *sql.Rows, pgx.Row,
// pgx.CollectableRow): what the Scan functions read.
type Row interface{ Scan(dest ...any) error }
