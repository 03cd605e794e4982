package postgres

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/meta/metasql"
)

const userCols = "id, email, password_hash, quota_bytes, usage_bytes, disabled, admin, sessions_after, created_at"

func scanUser(r pgx.Row) (meta.User, error) {
	var u meta.User
	var created, after int64
	err := r.Scan(&u.ID, &u.Email, &u.PasswordHash, &u.QuotaBytes, &u.UsageBytes, &u.Disabled, &u.Admin, &after, &created)
	u.CreatedAt = metasql.FromNanos(created)
	u.SessionsAfter = metasql.FromNanos(after)
	return u, err
}

// CreateUser creates u with usage 0 and its default bucket b. A zero
// CreatedAt is set to now; an empty b.OwnerID or b.Visibility defaults to
// u.ID and private.
func (s *Store) CreateUser(ctx context.Context, u meta.User, b meta.Bucket) error {
	return s.createUser(ctx, u, b, nil)
}

// createUser creates u and b; before, if not nil, runs first in the same
// transaction and its error aborts it.
func (s *Store) createUser(ctx context.Context, u meta.User, b meta.Bucket, before func(t *txn) error) error {
	b, err := meta.CheckUser(u, b)
	if err != nil {
		return err
	}
	return s.write(ctx, "create user "+u.Email, func(t *txn) error {
		if before != nil {
			if err := before(t); err != nil {
				return err
			}
		}
		t.exec("INSERT INTO users ("+userCols+") VALUES ($1, $2, $3, $4, 0, $5, $6, $7, $8)",
			u.ID, u.Email, u.PasswordHash, u.QuotaBytes, u.Disabled, u.Admin, metasql.ToNanos(u.SessionsAfter), metasql.ToNanos(meta.OrNow(u.CreatedAt, t.now)))
		insertBucket(t, b)
		return nil
	})
}

// GetUser returns the user with id; NotFound if none.
func (s *Store) GetUser(ctx context.Context, id string) (meta.User, error) {
	var u meta.User
	err := s.queryRow(ctx, "get user", func(r pgx.Row) (err error) {
		u, err = scanUser(r)
		if errors.Is(err, pgx.ErrNoRows) {
			return meta.ErrNoUser(id)
		}
		return err
	}, "SELECT "+userCols+" FROM users WHERE id = $1", id)
	if err != nil {
		return meta.User{}, err
	}
	return u, nil
}

// GetUserByEmail returns the user with email; NotFound if none.
func (s *Store) GetUserByEmail(ctx context.Context, email string) (meta.User, error) {
	var u meta.User
	err := s.queryRow(ctx, "get user by email", func(r pgx.Row) (err error) {
		u, err = scanUser(r)
		if errors.Is(err, pgx.ErrNoRows) {
			return meta.ErrNoUserEmail(email)
		}
		return err
	}, "SELECT "+userCols+" FROM users WHERE email = $1", email)
	if err != nil {
		return meta.User{}, err
	}
	return u, nil
}

// SetQuota sets the user's quota; NotFound if the user does not exist.
func (s *Store) SetQuota(ctx context.Context, userID string, quotaBytes int64) error {
	if err := meta.CheckQuota(quotaBytes); err != nil {
		return err
	}
	return s.write(ctx, "set quota", func(t *txn) error {
		t.execN(mustAffect(meta.ErrNoUser(userID)),
			"UPDATE users SET quota_bytes = $1 WHERE id = $2", quotaBytes, userID)
		return nil
	})
}

// mustAffect returns an execN callback that fails with notFound if no row
// changed.
func mustAffect(notFound error) func(n int64) error {
	return func(n int64) error {
		if n == 0 {
			return notFound
		}
		return nil
	}
}

const tokenCols = "hash, user_id, family, created_at, expires_at, used, revoked"

// CreateRefreshToken stores t. A zero CreatedAt is set to now.
// AlreadyExists if the hash is taken; NotFound if the user does not exist.
func (s *Store) CreateRefreshToken(ctx context.Context, t meta.RefreshToken) error {
	t, err := meta.CheckRefreshToken(t, time.Now())
	if err != nil {
		return err
	}
	return s.write(ctx, "refresh token", func(tx *txn) error {
		insertToken(tx, t)
		return nil
	})
}

func insertToken(t *txn, rt meta.RefreshToken) {
	t.exec("INSERT INTO refresh_tokens ("+tokenCols+") VALUES ($1, $2, $3, $4, $5, $6, $7)",
		rt.Hash, rt.UserID, rt.Family, metasql.ToNanos(rt.CreatedAt), metasql.ToNanos(rt.ExpiresAt), rt.Used, rt.Revoked)
}

// RotateRefreshToken implements meta.Store. The old token's row is locked
// (FOR UPDATE), so of concurrent rotations of one token the first wins and
// the others find it used.
func (s *Store) RotateRefreshToken(ctx context.Context, oldHash string, next meta.RefreshToken, now time.Time) (meta.RefreshToken, error) {
	if err := meta.CheckNextRefreshToken(next); err != nil {
		return meta.RefreshToken{}, err
	}
	var out meta.RefreshToken
	err := s.write(ctx, "rotate refresh token", func(t *txn) error {
		var old meta.RefreshToken
		var after int64
		var disabled, found bool
		// The user's row first (FOR SHARE: rotations of one user do not
		// wait for each other), then the token's: an UpdateUser that
		// disables the user or revokes its tokens locks them in the same
		// order, so a rotation either sees its outcome or commits before
		// it starts (and its new token is then revoked by it).
		t.queryRow(func(r pgx.Row) error {
			err := r.Scan(&disabled, &after)
			if errors.Is(err, pgx.ErrNoRows) {
				return nil
			}
			return err
		}, "SELECT disabled, sessions_after FROM users WHERE id = (SELECT user_id FROM refresh_tokens WHERE hash = $1) FOR SHARE", oldHash)
		t.queryRow(func(r pgx.Row) (err error) {
			old, err = metasql.ScanRefreshToken(r)
			found = err == nil
			if errors.Is(err, pgx.ErrNoRows) {
				return nil
			}
			return err
		}, "SELECT "+tokenCols+" FROM refresh_tokens WHERE hash = $1 FOR UPDATE", oldHash)
		if err := t.flush(); err != nil {
			return err
		}
		revoke, err := meta.CheckRotation(old, found, disabled, metasql.FromNanos(after), now)
		if revoke {
			// Commit the revocation even though the rotation fails.
			t.exec("UPDATE refresh_tokens SET revoked = true WHERE family = $1", old.Family)
			return keep(err)
		}
		if err != nil {
			return err
		}
		t.exec("UPDATE refresh_tokens SET used = true WHERE hash = $1", oldHash)
		rt := meta.NextRefreshToken(old, next, now)
		insertToken(t, rt)
		out = rt
		return nil
	})
	if err != nil {
		return meta.RefreshToken{}, err
	}
	return out, nil
}

// RevokeRefreshFamily implements meta.Store.
func (s *Store) RevokeRefreshFamily(ctx context.Context, hash string) error {
	return s.write(ctx, "revoke refresh family", func(t *txn) error {
		t.execN(mustAffect(meta.ErrNoRefreshToken()), `UPDATE refresh_tokens SET revoked = true
			WHERE family = (SELECT family FROM refresh_tokens WHERE hash = $1)`, hash)
		return nil
	})
}

// DeleteExpiredRefreshTokens implements meta.Store.
func (s *Store) DeleteExpiredRefreshTokens(ctx context.Context, before time.Time) (int, error) {
	return s.deleteExpired(ctx, "refresh_tokens", before)
}

// deleteExpired deletes the rows of table whose expires_at is before
// before, in one statement, and returns how many.
func (s *Store) deleteExpired(ctx context.Context, table string, before time.Time) (int, error) {
	var n int64
	err := s.write(ctx, "delete expired "+table, func(t *txn) error {
		t.execN(func(m int64) error { n = m; return nil }, "DELETE FROM "+table+" WHERE expires_at < $1", metasql.ToNanos(before))
		return nil
	})
	if err != nil {
		return 0, err
	}
	return int(n), nil
}

// UpdateUser applies upd to the user; see meta.Store.
func (s *Store) UpdateUser(ctx context.Context, userID string, upd meta.UserUpdate) (meta.User, error) {
	if err := meta.CheckUserUpdate(upd); err != nil {
		return meta.User{}, err
	}
	set, args := metasql.UserUpdateSet(upd, func(n int) string { return "$" + strconv.Itoa(n) })
	var u meta.User
	err := s.write(ctx, "update user", func(t *txn) error {
		t.queryRow(func(r pgx.Row) error {
			var err error
			u, err = scanUser(r)
			if errors.Is(err, pgx.ErrNoRows) {
				return meta.ErrNoUser(userID)
			}
			return err
		}, "UPDATE users SET "+set+" WHERE id = $"+strconv.Itoa(len(args)+1)+" RETURNING "+userCols, append(args, userID)...)
		if upd.RevokeRefreshTokens {
			t.exec("UPDATE refresh_tokens SET revoked = true WHERE user_id = $1 AND NOT revoked", userID)
		}
		t.exec("SELECT "+notifySQL(meta.TopicUser, "id")+" FROM users WHERE id = $1", userID)
		return nil
	})
	return u, err
}

// ListUsers implements meta.Store.
func (s *Store) ListUsers(ctx context.Context, opts meta.ListUsersOptions) ([]meta.User, bool, error) {
	limit, err := meta.UsersLimit(opts.Limit)
	if err != nil {
		return nil, false, err
	}
	q, args := metasql.ListUsersQuery(userCols, opts, limit, func(n int) string { return "$" + strconv.Itoa(n) })
	var out []meta.User
	err = s.read(ctx, "list users", func(c *pgx.Conn) error {
		out = nil
		rows, err := c.Query(ctx, q, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			u, err := scanUser(rows)
			if err != nil {
				return err
			}
			out = append(out, u)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, false, err
	}
	if len(out) > limit {
		return out[:limit], true, nil
	}
	return out, false, nil
}

var (
	userDataQuery       = metasql.UserDataQuery("$1")
	dataBucketsQuery    = metasql.DataBucketsQuery("$1")
	backendUploadsQuery = metasql.BackendUploadsQuery("$1")
	deleteUserSQL       = metasql.DeleteUserStatements("$1", "$2", false)
)

// DeleteUser implements meta.Store. It locks the user's row first (FOR
// UPDATE), as every write to the user's buckets does, so no object or
// upload appears in them between the check and the deletion, and
// announces the user and each of its keys.
func (s *Store) DeleteUser(ctx context.Context, userID string, purge bool) (meta.DeleteUserResult, error) {
	var res meta.DeleteUserResult
	err := s.write(ctx, "delete user", func(t *txn) error {
		res = meta.DeleteUserResult{}
		var found bool
		var buckets, objects, uploads int64
		var names, keys []string
		t.queryRow(func(r pgx.Row) error {
			var id string
			err := r.Scan(&id)
			found = err == nil
			if errors.Is(err, pgx.ErrNoRows) {
				return nil
			}
			return err
		}, "SELECT id FROM users WHERE id = $1 FOR UPDATE", userID)
		if err := t.flush(); err != nil {
			return err
		}
		if !found {
			return meta.ErrNoUser(userID)
		}
		t.queryRow(func(r pgx.Row) error { return r.Scan(&buckets, &objects, &uploads) }, userDataQuery, userID)
		t.query(func(r pgx.Rows) error {
			var n string
			err := r.Scan(&n)
			names = append(names, n)
			return err
		}, dataBucketsQuery, userID)
		t.query(func(r pgx.Rows) error {
			var u meta.Upload
			err := r.Scan(&u.ID, &u.Bucket, &u.BlobKey, &u.BackendUploadID)
			res.BackendUploads = append(res.BackendUploads, u)
			return err
		}, backendUploadsQuery, userID)
		t.query(func(r pgx.Rows) error {
			var k string
			err := r.Scan(&k)
			keys = append(keys, k)
			return err
		}, "SELECT id FROM access_keys WHERE user_id = $1", userID)
		if err := t.flush(); err != nil {
			return err
		}
		if err := meta.CheckDeleteUser(purge, objects, uploads, names); err != nil {
			return err
		}
		now := metasql.ToNanos(t.now)
		for _, q := range deleteUserSQL {
			if strings.Contains(q, "$2") {
				t.exec(q, userID, now)
			} else {
				t.exec(q, userID)
			}
		}
		t.notify(meta.TopicUser, userID)
		for _, k := range keys {
			t.notify(meta.TopicAccessKey, k)
		}
		res.Buckets, res.Objects, res.Uploads = int(buckets), int(objects), int(uploads)
		return nil
	})
	if err != nil {
		return meta.DeleteUserResult{}, err
	}
	return res, nil
}

// Counts implements meta.Store.
func (s *Store) Counts(ctx context.Context) (meta.Counts, error) {
	var c meta.Counts
	err := s.queryRow(ctx, "counts", func(r pgx.Row) error {
		return r.Scan(&c.Users, &c.Buckets, &c.Objects, &c.Bytes)
	}, metasql.CountsQuery)
	return c, err
}
