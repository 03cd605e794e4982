package metasql

import (
	"strings"
	"time"

	"github.com/coffer-storage/coffer/internal/meta"
)

// UserCols are the columns of a user, in ScanUser's order.
const UserCols = "id, email, password_hash, quota_bytes, usage_bytes, disabled, admin, sessions_after, created_at"

// ScanUser reads a user selected with UserCols.
func ScanUser(r Row) (meta.User, error) {
	var u meta.User
	var created, after int64
	err := r.Scan(&u.ID, &u.Email, &u.PasswordHash, &u.QuotaBytes, &u.UsageBytes, &u.Disabled, &u.Admin, &after, &created)
	u.CreatedAt = FromNanos(created)
	u.SessionsAfter = FromNanos(after)
	return u, err
}

// InsertUserSQL inserts a user with usage 0: arguments UserArgs.
func InsertUserSQL(ph PH) string {
	return "INSERT INTO users (" + UserCols + ") VALUES (" + Values(ph, 1, 4) + ", 0, " + Values(ph, 5, 8) + ")"
}

// UserArgs are InsertUserSQL's arguments for u (checked with
// meta.CheckUser), created at now unless it says when.
func UserArgs(u meta.User, now time.Time) []any {
	return []any{u.ID, u.Email, u.PasswordHash, u.QuotaBytes, u.Disabled, u.Admin, ToNanos(u.SessionsAfter), ToNanos(meta.OrNow(u.CreatedAt, now))}
}

// TokenCols are the columns of a refresh token, in ScanRefreshToken's
// order.
const TokenCols = "hash, user_id, family, created_at, expires_at, used, revoked"

// ScanRefreshToken reads a refresh token selected with TokenCols, then
// into extra the columns that follow.
func ScanRefreshToken(r Row, extra ...any) (meta.RefreshToken, error) {
	var t meta.RefreshToken
	var created, expires int64
	err := r.Scan(append([]any{&t.Hash, &t.UserID, &t.Family, &created, &expires, &t.Used, &t.Revoked}, extra...)...)
	t.CreatedAt, t.ExpiresAt = FromNanos(created), FromNanos(expires)
	return t, err
}

// InsertTokenSQL inserts a refresh token: arguments TokenArgs.
func InsertTokenSQL(ph PH) string {
	return "INSERT INTO refresh_tokens (" + TokenCols + ") VALUES (" + Values(ph, 1, 7) + ")"
}

// TokenArgs are InsertTokenSQL's arguments.
func TokenArgs(t meta.RefreshToken) []any {
	return []any{t.Hash, t.UserID, t.Family, ToNanos(t.CreatedAt), ToNanos(t.ExpiresAt), t.Used, t.Revoked}
}

// UserUpdateSet returns the SET list and arguments of an UPDATE users for
// upd (checked with meta.CheckUserUpdate), with placeholders made by ph
// (1-based).
func UserUpdateSet(upd meta.UserUpdate, ph PH) (set string, args []any) {
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

// ListUsersQuery returns the query of a ListUsers page of limit users
// (meta.UsersLimit; columns UserCols, in email order, one row more than the
// page to tell whether more exist) and its arguments, with placeholders
// made by ph (1-based). The Query filter is a substring match on the lower-case email: LIKE
// with its wildcards escaped (SQLite's LIKE ignores ASCII case, and
// emails are stored in lower case, so both backends agree).
func ListUsersQuery(opts meta.ListUsersOptions, limit int, ph PH) (query string, args []any) {
	var where []string
	if opts.After != "" {
		args = append(args, opts.After)
		where = append(where, "email > "+ph(len(args)))
	}
	if opts.Query != "" {
		args = append(args, "%"+EscapeLike(strings.ToLower(opts.Query))+"%")
		where = append(where, "email LIKE "+ph(len(args))+` ESCAPE '\'`)
	}
	query = "SELECT " + UserCols + " FROM users"
	if len(where) > 0 {
		query += " WHERE " + strings.Join(where, " AND ")
	}
	args = append(args, limit+1)
	query += " ORDER BY email LIMIT " + ph(len(args))
	return query, args
}

// EscapeLike escapes the LIKE wildcards of s (and the escape character
// itself) with a backslash.
func EscapeLike(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

// owned is the set of bucket names owner (an SQL expression) owns.
func owned(owner string) string { return "(SELECT name FROM buckets WHERE owner_id = " + owner + ")" }

// UserDataQuery reads, for DeleteUser, how many buckets owner owns, how
// many objects and multipart uploads in progress they hold. Columns:
// buckets, objects, uploads.
func UserDataQuery(owner string) string {
	return "SELECT CAST((SELECT count(*) FROM buckets WHERE owner_id = " + owner + ") AS bigint)," +
		" CAST((SELECT count(*) FROM objects WHERE bucket IN " + owned(owner) + ") AS bigint)," +
		" CAST((SELECT count(*) FROM uploads WHERE bucket IN " + owned(owner) + ") AS bigint)"
}

// DataBucketsQuery lists the names of up to 10 of owner's buckets that
// hold objects or uploads in progress, in name order.
func DataBucketsQuery(owner string) string {
	return "SELECT b.name FROM buckets b WHERE b.owner_id = " + owner +
		" AND (EXISTS (SELECT 1 FROM objects o WHERE o.bucket = b.name) OR EXISTS (SELECT 1 FROM uploads u WHERE u.bucket = b.name))" +
		" ORDER BY b.name LIMIT 10"
}

// BackendUploadsQuery lists the uploads in owner's buckets whose bytes
// the blob backend's own multipart upload holds. Columns: id, bucket,
// blob_key, backend_upload_id.
func BackendUploadsQuery(owner string) string {
	return "SELECT id, bucket, blob_key, backend_upload_id FROM uploads WHERE bucket IN " + owned(owner) + " AND backend_upload_id <> ''"
}

// DeleteUserStatements are the statements of DeleteUser, in order, once
// its checks passed: they queue every blob the user's objects, object
// parts, uploads, upload parts and (object or part) stagings point at,
// then delete those rows, the user's buckets, keys, refresh tokens and
// the user. owner and now (unix nanoseconds) are SQL expressions
// (placeholders); inlineTable says inline bytes live in a table of their
// own (SQLite's inline_data) rather than in the objects row. Blobs are
// queued without the "still referenced?" check: the rows pointing at them
// go in the same transaction, and the janitor re-checks each one before
// deleting it (ClaimGarbage).
func DeleteUserStatements(owner, now string, inlineTable bool) []string {
	in := owned(owner)
	var st []string
	st = append(st, "INSERT INTO garbage (blob_key, created_at) SELECT k, CAST("+now+" AS bigint) FROM ("+
		"SELECT o.blob_key AS k FROM objects o WHERE o.bucket IN "+in+" AND o.blob_key <> ''"+
		" UNION ALL SELECT p.blob_key FROM object_parts p WHERE p.parts_id IN (SELECT parts_id FROM objects WHERE bucket IN "+in+" AND parts_id IS NOT NULL)"+
		" UNION ALL SELECT up.blob_key FROM upload_parts up WHERE up.upload_id IN (SELECT id FROM uploads WHERE bucket IN "+in+")"+
		" UNION ALL SELECT u.blob_key FROM uploads u WHERE u.bucket IN "+in+" AND u.blob_key <> ''"+
		" UNION ALL SELECT s.blob_key FROM staging s WHERE s.owner_id = "+owner+" AND NOT s.declared"+
		") AS t")
	if inlineTable {
		st = append(st, "DELETE FROM inline_data WHERE id IN (SELECT inline_id FROM objects WHERE bucket IN "+in+" AND inline_id IS NOT NULL)")
	}
	return append(st,
		"DELETE FROM object_parts WHERE parts_id IN (SELECT parts_id FROM objects WHERE bucket IN "+in+" AND parts_id IS NOT NULL)",
		"DELETE FROM objects WHERE bucket IN "+in,
		"DELETE FROM upload_parts WHERE upload_id IN (SELECT id FROM uploads WHERE bucket IN "+in+")",
		"DELETE FROM uploads WHERE bucket IN "+in,
		"DELETE FROM staging WHERE owner_id = "+owner,
		"DELETE FROM buckets WHERE owner_id = "+owner,
		"DELETE FROM access_keys WHERE user_id = "+owner,
		"DELETE FROM refresh_tokens WHERE user_id = "+owner,
		"DELETE FROM users WHERE id = "+owner,
	)
}

// CountsQuery reads meta.Counts (ScanCounts).
const CountsQuery = "SELECT CAST((SELECT count(*) FROM users) AS bigint), CAST((SELECT count(*) FROM buckets) AS bigint)," +
	" CAST((SELECT count(*) FROM objects) AS bigint), CAST((SELECT COALESCE(SUM(usage_bytes), 0) FROM users) AS bigint)"

// ScanCounts reads a row of CountsQuery.
func ScanCounts(r Row) (meta.Counts, error) {
	var c meta.Counts
	err := r.Scan(&c.Users, &c.Buckets, &c.Objects, &c.Bytes)
	return c, err
}

// ScanUserData reads a row of UserDataQuery: buckets, objects, uploads.
func ScanUserData(r Row) (data [3]int64, err error) {
	err = r.Scan(&data[0], &data[1], &data[2])
	return data, err
}

// ScanBackendUpload reads a row of BackendUploadsQuery.
func ScanBackendUpload(r Row) (meta.Upload, error) {
	var u meta.Upload
	err := r.Scan(&u.ID, &u.Bucket, &u.BlobKey, &u.BackendUploadID)
	return u, err
}

// GetUserSQL reads the user whose column col (id or email) is ph(1)
// (ScanUser).
func GetUserSQL(col string, ph PH) string {
	return "SELECT " + UserCols + " FROM users WHERE " + col + " = " + ph(1)
}
