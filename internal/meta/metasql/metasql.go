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
	"math"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

var (
	minTime = time.Unix(0, math.MinInt64)
	maxTime = time.Unix(0, math.MaxInt64)
)

// ToNanos is how times are stored: unix nanoseconds, 0 for the zero time,
// clamped to the representable range.
func ToNanos(t time.Time) int64 {
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

// FromNanos is the inverse of ToNanos, in UTC.
func FromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// OrNow returns t, or now if t is zero.
func OrNow(t, now time.Time) time.Time {
	if t.IsZero() {
		return now
	}
	return t
}

// CheckObject validates an object to be written. An object with Parts
// has no BlobKey and its Size is the sum of theirs.
func CheckObject(o meta.Object) error {
	switch {
	case o.Bucket == "":
		return errcode.New(errcode.InvalidArgument, "bucket name is required")
	case o.Key == "":
		return errcode.New(errcode.InvalidArgument, "object key is required")
	case o.Size < 0:
		return errcode.New(errcode.InvalidArgument, "object size must not be negative")
	case len(o.Parts) > 0 && o.BlobKey != "":
		return errcode.New(errcode.InvalidArgument, "a multipart object has no blob key of its own")
	case o.IsInline() && o.Encryption == nil && int64(len(o.Inline)) != o.Size:
		// (Encrypted inline bytes are ciphertext, a little longer than
		// Size: the object service checks them when it decrypts.)
		return errcode.New(errcode.InvalidArgument, "an inline object's size %d is not its %d inline bytes", o.Size, len(o.Inline))
	case !o.IsInline() && o.Inline != nil:
		return errcode.New(errcode.InvalidArgument, "an object with a blob key or parts has no inline bytes")
	}
	if len(o.Parts) == 0 {
		return nil
	}
	var sum int64
	for i, p := range o.Parts {
		if p.BlobKey == "" || p.Size < 0 {
			return errcode.New(errcode.InvalidArgument, "part %d of the object needs a blob key and a size", i+1)
		}
		sum += p.Size
	}
	if sum != o.Size {
		return errcode.New(errcode.InvalidArgument, "the object's size %d is not the sum %d of its parts", o.Size, sum)
	}
	return nil
}

// CheckKeyFingerprint validates a fingerprint for ClaimKeyFingerprint.
func CheckKeyFingerprint(fp string) error {
	if fp == "" || len(fp) > 128 {
		return errcode.New(errcode.InvalidArgument, "a server key fingerprint must be 1 to 128 bytes, not %d", len(fp))
	}
	return nil
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
// upd, with placeholders made by ph (1-based: "?" for SQLite, "$n" for
// PostgreSQL), and the number of arguments used. InvalidArgument for an
// empty update or a negative quota.
func UserUpdateSet(upd meta.UserUpdate, ph func(n int) string) (set string, args []any, err error) {
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
		if *upd.PasswordHash == "" {
			return "", nil, errcode.New(errcode.InvalidArgument, "password hash must not be empty")
		}
		add("password_hash", *upd.PasswordHash)
	}
	if upd.QuotaBytes != nil {
		if *upd.QuotaBytes < 0 {
			return "", nil, errcode.New(errcode.InvalidArgument, "quota must not be negative")
		}
		add("quota_bytes", *upd.QuotaBytes)
	}
	if upd.SessionsAfter != nil {
		add("sessions_after", ToNanos(*upd.SessionsAfter))
	}
	if len(cols) == 0 {
		return "", nil, errcode.New(errcode.InvalidArgument, "nothing to update")
	}
	return strings.Join(cols, ", "), args, nil
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

// CheckInvite validates an invite for CreateInvite and returns it as it is
// stored: every use left, not revoked, CreatedAt now if zero, times at the
// precision they are stored with.
func CheckInvite(inv meta.Invite, now time.Time) (meta.Invite, error) {
	switch {
	case inv.ID == "" || inv.Hash == "":
		return meta.Invite{}, errcode.New(errcode.InvalidArgument, "invite id and hash are required")
	case inv.Uses < 1:
		return meta.Invite{}, errcode.New(errcode.InvalidArgument, "an invite allows at least one signup, not %d", inv.Uses)
	case inv.ExpiresAt.IsZero():
		return meta.Invite{}, errcode.New(errcode.InvalidArgument, "an invite needs an expiry")
	}
	inv.UsesLeft, inv.Revoked = inv.Uses, false
	inv.CreatedAt = FromNanos(ToNanos(OrNow(inv.CreatedAt, now)))
	inv.ExpiresAt = FromNanos(ToNanos(inv.ExpiresAt))
	return inv, nil
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

// InviteNotFound is the error of an invite id or hash that is not stored.
func InviteNotFound() error { return errcode.New(errcode.NotFound, "no such invite") }

// UpsertGatewayBucketQuery creates a gateway bucket (name, owner_id,
// visibility, created_at, gateway: the placeholders p1…p5) or updates the
// gateway bucket of that name; it affects no row when a native bucket has
// the name (see ErrNotAGateway).
func UpsertGatewayBucketQuery(p1, p2, p3, p4, p5 string) string {
	return "INSERT INTO buckets (name, owner_id, visibility, created_at, gateway) VALUES (" +
		p1 + ", " + p2 + ", " + p3 + ", " + p4 + ", " + p5 + ") " +
		"ON CONFLICT (name) DO UPDATE SET owner_id = excluded.owner_id, visibility = excluded.visibility, gateway = excluded.gateway " +
		"WHERE buckets.gateway <> ''"
}

// CheckGatewayBucket validates a gateway bucket to be written, defaulting
// an empty visibility to private.
func CheckGatewayBucket(b meta.Bucket) (meta.Bucket, error) {
	if b.Visibility == "" {
		b.Visibility = meta.Private
	}
	switch {
	case b.Name == "":
		return b, errcode.New(errcode.InvalidArgument, "bucket name is required")
	case b.OwnerID == "":
		return b, errcode.New(errcode.InvalidArgument, "bucket owner is required")
	case b.Gateway == "":
		return b, errcode.New(errcode.InvalidArgument, "a gateway bucket needs its gateway URL")
	case !b.Visibility.Valid():
		return b, errcode.New(errcode.InvalidArgument, "invalid bucket visibility %q", b.Visibility)
	}
	return b, nil
}

// ErrNotAGateway is PutGatewayBucket's error when a native bucket has the
// name.
func ErrNotAGateway(name string) error {
	return &errcode.Error{Code: errcode.Conflict, Message: fmt.Sprintf("bucket %q exists and is not a gateway bucket", name),
		Detail: map[string]any{"reason": "not_a_gateway"}}
}
