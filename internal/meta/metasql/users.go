package metasql

import (
	"context"
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

// insertUserSQL inserts a user with usage 0: arguments userArgs.
func insertUserSQL(ph PH) string {
	return "INSERT INTO users (" + UserCols + ") VALUES (" + values(ph, 1, 4) + ", 0, " + values(ph, 5, 8) + ")"
}

// userArgs are insertUserSQL's arguments for u (checked with
// meta.CheckUser), created at now unless it says when.
func userArgs(u meta.User, now time.Time) []any {
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

// insertTokenSQL inserts a refresh token: arguments TokenArgs.
func insertTokenSQL(ph PH) string {
	return "INSERT INTO refresh_tokens (" + TokenCols + ") VALUES (" + values(ph, 1, 7) + ")"
}

// TokenArgs are insertTokenSQL's arguments.
func TokenArgs(t meta.RefreshToken) []any {
	return []any{t.Hash, t.UserID, t.Family, ToNanos(t.CreatedAt), ToNanos(t.ExpiresAt), t.Used, t.Revoked}
}

// userUpdateSet returns the SET list and arguments of an UPDATE users for
// upd (checked with meta.CheckUserUpdate), with placeholders made by ph
// (1-based).
func userUpdateSet(upd meta.UserUpdate, ph PH) (set string, args []any) {
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

// listUsersQuery returns the query of a ListUsers page of limit users
// (meta.UsersLimit; columns UserCols, in email order, one row more than the
// page to tell whether more exist) and its arguments, with placeholders
// made by ph (1-based). The Query filter is a substring match on the lower-case email: LIKE
// with its wildcards escaped (SQLite's LIKE ignores ASCII case, and
// emails are stored in lower case, so both backends agree).
func listUsersQuery(opts meta.ListUsersOptions, limit int, ph PH) (query string, args []any) {
	var where []string
	if opts.After != "" {
		args = append(args, opts.After)
		where = append(where, "email > "+ph(len(args)))
	}
	if opts.Query != "" {
		args = append(args, "%"+escapeLike(strings.ToLower(opts.Query))+"%")
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

// escapeLike escapes the LIKE wildcards of s (and the escape character
// itself) with a backslash.
func escapeLike(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

// owned is the set of bucket names owner (an SQL expression) owns.
func owned(owner string) string { return "(SELECT name FROM buckets WHERE owner_id = " + owner + ")" }

// userDataQuery reads, for DeleteUser, how many buckets owner owns, how
// many objects and multipart uploads in progress they hold, and how many
// of the objects are locked at now (unix nanoseconds: under a legal hold,
// or retained after now). Columns: buckets, objects, uploads, locked.
func userDataQuery(owner, now string) string {
	return "SELECT CAST((SELECT count(*) FROM buckets WHERE owner_id = " + owner + ") AS bigint)," +
		" CAST((SELECT count(*) FROM objects WHERE bucket IN " + owned(owner) + ") AS bigint)," +
		" CAST((SELECT count(*) FROM uploads WHERE bucket IN " + owned(owner) + ") AS bigint)," +
		" CAST((SELECT count(*) FROM objects WHERE bucket IN " + owned(owner) + " AND (legal_hold OR lock_until > " + now + ")) AS bigint)"
}

// dataBucketsQuery lists the names of up to 10 of owner's buckets that
// hold objects or uploads in progress, in name order.
func dataBucketsQuery(owner string) string {
	return "SELECT b.name FROM buckets b WHERE b.owner_id = " + owner +
		" AND (EXISTS (SELECT 1 FROM objects o WHERE o.bucket = b.name) OR EXISTS (SELECT 1 FROM uploads u WHERE u.bucket = b.name))" +
		" ORDER BY b.name LIMIT 10"
}

// backendUploadsQuery lists the uploads in owner's buckets whose bytes
// the blob backend's own multipart upload holds. Columns: id, bucket,
// blob_key, backend_upload_id.
func backendUploadsQuery(owner string) string {
	return "SELECT id, bucket, blob_key, backend_upload_id FROM uploads WHERE bucket IN " + owned(owner) + " AND backend_upload_id <> ''"
}

// deleteUserStatements are the statements of DeleteUser, in order, once
// its checks passed: they queue every blob the user's objects, object
// parts, uploads, upload parts and (object or part) stagings point at,
// then delete those rows, the user's buckets, keys, refresh tokens and
// the user. owner and now (unix nanoseconds) are SQL expressions
// (placeholders); inlineTable says inline bytes live in a table of their
// own (SQLite's inline_data) rather than in the objects row. Blobs are
// queued without the "still referenced?" check: the rows pointing at them
// go in the same transaction, and the janitor re-checks each one before
// deleting it (ClaimGarbage).
func deleteUserStatements(owner, now string, inlineTable bool) []string {
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

// countsQuery reads meta.Counts (scanCounts).
const countsQuery = "SELECT CAST((SELECT count(*) FROM users) AS bigint), CAST((SELECT count(*) FROM buckets) AS bigint)," +
	" CAST((SELECT count(*) FROM objects WHERE NOT delete_marker) AS bigint), CAST((SELECT COALESCE(SUM(usage_bytes), 0) FROM users) AS bigint)"

// scanCounts reads a row of countsQuery.
func scanCounts(r Row) (meta.Counts, error) {
	var c meta.Counts
	err := r.Scan(&c.Users, &c.Buckets, &c.Objects, &c.Bytes)
	return c, err
}

// ScanUserData reads a row of userDataQuery: buckets, objects, uploads,
// locked.
func ScanUserData(r Row) (data [4]int64, err error) {
	err = r.Scan(&data[0], &data[1], &data[2], &data[3])
	return data, err
}

// ScanBackendUpload reads a row of backendUploadsQuery.
func ScanBackendUpload(r Row) (meta.Upload, error) {
	var u meta.Upload
	err := r.Scan(&u.ID, &u.Bucket, &u.BlobKey, &u.BackendUploadID)
	return u, err
}

// getUserSQL reads the user whose column col (id or email) is ph(1)
// (ScanUser).
func getUserSQL(col string, ph PH) string {
	return "SELECT " + UserCols + " FROM users WHERE " + col + " = " + ph(1)
}

// GetUser implements meta.Accounts.
func (o accountOps) GetUser(ctx context.Context, id string) (meta.User, error) {
	return Get(ctx, o.run, "get user", ScanUser, func() error { return meta.ErrNoUser(id) }, o.sql.users.get, id)
}

// GetUserByEmail implements meta.Accounts.
func (o accountOps) GetUserByEmail(ctx context.Context, email string) (meta.User, error) {
	return Get(ctx, o.run, "get user by email", ScanUser, func() error { return meta.ErrNoUserEmail(email) }, o.sql.users.getByEmail, email)
}

// ListUsers implements meta.Accounts.
func (o accountOps) ListUsers(ctx context.Context, opts meta.ListUsersOptions) ([]meta.User, bool, error) {
	limit, err := meta.UsersLimit(opts.Limit)
	if err != nil {
		return nil, false, err
	}
	q, args := listUsersQuery(opts, limit, o.sql.ph)
	out, err := List(ctx, o.run, "list users", ScanUser, q, args...)
	if err != nil {
		return nil, false, err
	}
	out, more := meta.Page(out, limit)
	return out, more, nil
}

// Counts implements meta.Accounts.
func (o accountOps) Counts(ctx context.Context) (meta.Counts, error) {
	return Get(ctx, o.run, "counts", scanCounts, nil, countsQuery)
}

// SetQuota implements meta.Accounts: NotFound if the user does not exist.
func (o accountOps) SetQuota(ctx context.Context, userID string, quotaBytes int64) error {
	if err := meta.CheckQuota(quotaBytes); err != nil {
		return err
	}
	return o.mustChange(ctx, "set quota", meta.ErrNoUser(userID), o.sql.users.setQuota, quotaBytes, userID)
}

// CreateRefreshToken implements meta.Sessions. A zero CreatedAt is set to
// now. AlreadyExists if the hash is taken; NotFound if the user does not
// exist.
func (o sessionOps) CreateRefreshToken(ctx context.Context, t meta.RefreshToken) error {
	t, err := meta.CheckRefreshToken(t, time.Now())
	if err != nil {
		return err
	}
	return o.exec(ctx, "refresh token", o.sql.users.insertToken, TokenArgs(t)...)
}

// RevokeRefreshFamily implements meta.Sessions.
func (o sessionOps) RevokeRefreshFamily(ctx context.Context, hash string) error {
	return o.mustChange(ctx, "revoke refresh family", meta.ErrNoRefreshToken(), o.sql.users.revokeFamily, hash)
}

// DeleteExpiredRefreshTokens implements meta.Sessions.
func (o sessionOps) DeleteExpiredRefreshTokens(ctx context.Context, before time.Time) (int, error) {
	n, err := o.run.Exec(ctx, "delete expired refresh tokens", o.sql.users.deleteExpired, []any{ToNanos(before)}, nil)
	return int(n), err
}

// userSQL are the users and refresh_tokens statements of Ops.
type userSQL struct {
	get, getByEmail string // the user of id, of email (ScanUser)
	insert          string // userArgs
	setQuota        string // args quota, id
	insertToken     string // TokenArgs
	revokeFamily    string // of the token of hash
	deleteExpired   string // the tokens expired before
}

func newUserSQL(ph PH) userSQL {
	return userSQL{
		get:           getUserSQL("id", ph),
		getByEmail:    getUserSQL("email", ph),
		insert:        insertUserSQL(ph),
		setQuota:      "UPDATE users SET quota_bytes = " + ph(1) + " WHERE id = " + ph(2),
		insertToken:   insertTokenSQL(ph),
		revokeFamily:  "UPDATE refresh_tokens SET revoked = true WHERE family = (SELECT family FROM refresh_tokens WHERE hash = " + ph(1) + ")",
		deleteExpired: "DELETE FROM refresh_tokens WHERE expires_at < " + ph(1),
	}
}

// CreateUser implements meta.Accounts: u with usage 0 and its default bucket
// b, in one transaction. A zero CreatedAt is set to now; an empty
// b.OwnerID or b.Visibility defaults to u.ID and private.
func (o accountOps) CreateUser(ctx context.Context, u meta.User, b meta.Bucket) error {
	return o.createUser(ctx, u, b, nil)
}

// createUser creates u and b; before, if not nil, runs first in the same
// transaction and its error aborts it.
func (o *core) createUser(ctx context.Context, u meta.User, b meta.Bucket, before func(w Writer) error) error {
	b, err := meta.CheckUser(u, b)
	if err != nil {
		return err
	}
	now := time.Now()
	return o.run.Write(ctx, "create user "+u.Email, func(w Writer) error {
		if before != nil {
			if err := before(w); err != nil {
				return err
			}
		}
		if err := w.Queue(nil, o.sql.users.insert, userArgs(u, now)...); err != nil {
			return err
		}
		args, err := bucketArgs(b, now)
		if err != nil {
			return err
		}
		return w.Queue(nil, o.sql.buckets.insert, args...)
	})
}

// RotateRefreshToken implements meta.Sessions: the next token is checked
// (meta.CheckNextRefreshToken), then the driver rotates.
func (o sessionOps) RotateRefreshToken(ctx context.Context, oldHash string, next meta.RefreshToken, now time.Time) (meta.RefreshToken, error) {
	if err := meta.CheckNextRefreshToken(next); err != nil {
		return meta.RefreshToken{}, err
	}
	return o.drv.RotateRefreshToken(ctx, oldHash, next, now)
}

// UpdateUser implements meta.Accounts: the update is checked
// (meta.CheckUserUpdate), then made by the driver.
func (o accountOps) UpdateUser(ctx context.Context, userID string, upd meta.UserUpdate) (meta.User, error) {
	if err := meta.CheckUserUpdate(upd); err != nil {
		return meta.User{}, err
	}
	set, args := userUpdateSet(upd, o.sql.ph)
	return o.drv.UpdateUser(ctx, userID, set, args, upd.RevokeRefreshTokens)
}
