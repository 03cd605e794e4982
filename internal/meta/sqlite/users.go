package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"time"

	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/meta/metasql"
)

const userCols = "id, email, password_hash, quota_bytes, usage_bytes, disabled, admin, sessions_after, created_at"

func scanUser(r scanner) (meta.User, error) {
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
func (s *Store) createUser(ctx context.Context, u meta.User, b meta.Bucket, before func(ctx context.Context, c *conn) error) error {
	b, err := meta.CheckUser(u, b)
	if err != nil {
		return err
	}
	return s.write(ctx, func(ctx context.Context, c *conn) error {
		if before != nil {
			if err := before(ctx, c); err != nil {
				return err
			}
		}
		now := time.Now()
		if _, err := c.ExecContext(ctx, "INSERT INTO users ("+userCols+") VALUES (?, ?, ?, ?, 0, ?, ?, ?, ?)",
			u.ID, u.Email, u.PasswordHash, u.QuotaBytes, u.Disabled, u.Admin, metasql.ToNanos(u.SessionsAfter), metasql.ToNanos(meta.OrNow(u.CreatedAt, now))); err != nil {
			return classify(err, "user %q", u.Email)
		}
		return insertBucket(ctx, c, b, now)
	})
}

// GetUser returns the user with id; NotFound if none.
func (s *Store) GetUser(ctx context.Context, id string) (meta.User, error) {
	if err := s.ready(); err != nil {
		return meta.User{}, err
	}
	u, err := scanUser(s.read().QueryRowContext(ctx, "SELECT "+userCols+" FROM users WHERE id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return meta.User{}, meta.ErrNoUser(id)
	}
	if err != nil {
		return meta.User{}, classify(err, "get user %q", id)
	}
	return u, nil
}

// GetUserByEmail returns the user with email; NotFound if none.
func (s *Store) GetUserByEmail(ctx context.Context, email string) (meta.User, error) {
	if err := s.ready(); err != nil {
		return meta.User{}, err
	}
	u, err := scanUser(s.read().QueryRowContext(ctx, "SELECT "+userCols+" FROM users WHERE email = ?", email))
	if errors.Is(err, sql.ErrNoRows) {
		return meta.User{}, meta.ErrNoUserEmail(email)
	}
	if err != nil {
		return meta.User{}, classify(err, "get user by email")
	}
	return u, nil
}

// SetQuota sets the user's quota; NotFound if the user does not exist.
func (s *Store) SetQuota(ctx context.Context, userID string, quotaBytes int64) error {
	if err := meta.CheckQuota(quotaBytes); err != nil {
		return err
	}
	return s.write(ctx, func(ctx context.Context, c *conn) error {
		res, err := c.ExecContext(ctx, "UPDATE users SET quota_bytes = ? WHERE id = ?", quotaBytes, userID)
		if err != nil {
			return classify(err, "set quota of %q", userID)
		}
		return mustAffect(res, meta.ErrNoUser(userID))
	})
}

// mustAffect returns notFound if res changed no row.
func mustAffect(res sql.Result, notFound error) error {
	n, err := res.RowsAffected()
	if err != nil {
		return classify(err, "rows affected")
	}
	if n == 0 {
		return notFound
	}
	return nil
}

const tokenCols = "hash, user_id, family, created_at, expires_at, used, revoked"

// CreateRefreshToken stores t. A zero CreatedAt is set to now.
// AlreadyExists if the hash is taken; NotFound if the user does not exist.
func (s *Store) CreateRefreshToken(ctx context.Context, t meta.RefreshToken) error {
	t, err := meta.CheckRefreshToken(t, time.Now())
	if err != nil {
		return err
	}
	return s.write(ctx, func(ctx context.Context, c *conn) error {
		return insertToken(ctx, c, t)
	})
}

func insertToken(ctx context.Context, c *conn, t meta.RefreshToken) error {
	_, err := c.ExecContext(ctx, "INSERT INTO refresh_tokens ("+tokenCols+") VALUES (?, ?, ?, ?, ?, ?, ?)",
		t.Hash, t.UserID, t.Family, metasql.ToNanos(t.CreatedAt), metasql.ToNanos(t.ExpiresAt), t.Used, t.Revoked)
	return classify(err, "refresh token")
}

// RotateRefreshToken implements meta.Store. The writer runs rotations one at
// a time, so of concurrent rotations of one token the first wins and the
// others find it used.
func (s *Store) RotateRefreshToken(ctx context.Context, oldHash string, next meta.RefreshToken, now time.Time) (meta.RefreshToken, error) {
	if err := meta.CheckNextRefreshToken(next); err != nil {
		return meta.RefreshToken{}, err
	}
	var out meta.RefreshToken
	err := s.write(ctx, func(ctx context.Context, c *conn) error {
		var disabled bool
		var after int64
		old, err := metasql.ScanRefreshToken(c.QueryRowContext(ctx, `SELECT t.hash, t.user_id, t.family, t.created_at, t.expires_at, t.used, t.revoked, u.disabled, u.sessions_after
			FROM refresh_tokens t JOIN users u ON u.id = t.user_id WHERE t.hash = ?`, oldHash), &disabled, &after)
		found := err == nil
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return classify(err, "read refresh token")
		}
		revoke, err := meta.CheckRotation(old, found, disabled, metasql.FromNanos(after), now)
		if revoke {
			// Commit the revocation even though the rotation fails.
			if _, err := c.ExecContext(ctx, "UPDATE refresh_tokens SET revoked = 1 WHERE family = ?", old.Family); err != nil {
				return classify(err, "revoke refresh family")
			}
			return keep(err)
		}
		if err != nil {
			return err
		}
		if _, err := c.ExecContext(ctx, "UPDATE refresh_tokens SET used = 1 WHERE hash = ?", oldHash); err != nil {
			return classify(err, "use refresh token")
		}
		t := meta.NextRefreshToken(old, next, now)
		if err := insertToken(ctx, c, t); err != nil {
			return err
		}
		out = t
		return nil
	})
	if err != nil {
		return meta.RefreshToken{}, err
	}
	return out, nil
}

// RevokeRefreshFamily implements meta.Store.
func (s *Store) RevokeRefreshFamily(ctx context.Context, hash string) error {
	return s.write(ctx, func(ctx context.Context, c *conn) error {
		res, err := c.ExecContext(ctx, `UPDATE refresh_tokens SET revoked = 1
			WHERE family = (SELECT family FROM refresh_tokens WHERE hash = ?)`, hash)
		if err != nil {
			return classify(err, "revoke refresh family")
		}
		return mustAffect(res, meta.ErrNoRefreshToken())
	})
}

// DeleteExpiredRefreshTokens implements meta.Store.
func (s *Store) DeleteExpiredRefreshTokens(ctx context.Context, before time.Time) (int, error) {
	return s.deleteExpired(ctx, "refresh_tokens", before)
}

// deleteExpired deletes the rows of table whose expires_at is before
// before, and returns how many.
func (s *Store) deleteExpired(ctx context.Context, table string, before time.Time) (int, error) {
	var n int64
	err := s.write(ctx, func(ctx context.Context, c *conn) error {
		res, err := c.ExecContext(ctx, "DELETE FROM "+table+" WHERE expires_at < ?", metasql.ToNanos(before))
		if err != nil {
			return classify(err, "delete expired %s", table)
		}
		n, err = res.RowsAffected()
		return classify(err, "delete expired %s", table)
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
	set, args := metasql.UserUpdateSet(upd, func(int) string { return "?" })
	var u meta.User
	err := s.write(ctx, func(ctx context.Context, c *conn) error {
		var err error
		u, err = scanUser(c.QueryRowContext(ctx, "UPDATE users SET "+set+" WHERE id = ? RETURNING "+userCols, append(args, userID)...))
		if errors.Is(err, sql.ErrNoRows) {
			return meta.ErrNoUser(userID)
		}
		if err != nil {
			return classify(err, "update user %q", userID)
		}
		if upd.RevokeRefreshTokens {
			if _, err := c.ExecContext(ctx, "UPDATE refresh_tokens SET revoked = 1 WHERE user_id = ? AND revoked = 0", userID); err != nil {
				return classify(err, "revoke refresh tokens of %q", userID)
			}
		}
		return nil
	})
	return u, err
}

// ListUsers implements meta.Store.
func (s *Store) ListUsers(ctx context.Context, opts meta.ListUsersOptions) ([]meta.User, bool, error) {
	if err := s.ready(); err != nil {
		return nil, false, err
	}
	limit, err := meta.UsersLimit(opts.Limit)
	if err != nil {
		return nil, false, err
	}
	q, args := metasql.ListUsersQuery(userCols, opts, limit, func(n int) string { return "?" + strconv.Itoa(n) })
	rows, err := s.read().QueryContext(ctx, q, args...)
	if err != nil {
		return nil, false, classify(err, "list users")
	}
	defer rows.Close()
	var out []meta.User
	for rows.Next() {
		u, err := scanUser(rows)
		if err != nil {
			return nil, false, classify(err, "list users")
		}
		out = append(out, u)
	}
	if err := rows.Err(); err != nil {
		return nil, false, classify(err, "list users")
	}
	if len(out) > limit {
		return out[:limit], true, nil
	}
	return out, false, nil
}

var (
	userDataQuery       = metasql.UserDataQuery("?1")
	dataBucketsQuery    = metasql.DataBucketsQuery("?1")
	backendUploadsQuery = metasql.BackendUploadsQuery("?1")
	deleteUserSQL       = metasql.DeleteUserStatements("?1", "?2", true)
)

// DeleteUser implements meta.Store. The single writer makes the checks
// and the deletion one atomic step.
func (s *Store) DeleteUser(ctx context.Context, userID string, purge bool) (meta.DeleteUserResult, error) {
	var res meta.DeleteUserResult
	err := s.write(ctx, func(ctx context.Context, c *conn) error {
		res = meta.DeleteUserResult{}
		var one int
		err := c.QueryRowContext(ctx, "SELECT 1 FROM users WHERE id = ?", userID).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return meta.ErrNoUser(userID)
		}
		if err != nil {
			return classify(err, "delete user %q", userID)
		}
		var buckets, objects, uploads int64
		if err := c.QueryRowContext(ctx, userDataQuery, userID).Scan(&buckets, &objects, &uploads); err != nil {
			return classify(err, "delete user %q", userID)
		}
		names, err := queryStrings(ctx, c, dataBucketsQuery, userID)
		if err != nil {
			return err
		}
		if err := meta.CheckDeleteUser(purge, objects, uploads, names); err != nil {
			return err
		}
		rows, err := c.QueryContext(ctx, backendUploadsQuery, userID)
		if err != nil {
			return classify(err, "delete user %q", userID)
		}
		for rows.Next() {
			var u meta.Upload
			if err := rows.Scan(&u.ID, &u.Bucket, &u.BlobKey, &u.BackendUploadID); err != nil {
				rows.Close()
				return classify(err, "delete user %q", userID)
			}
			res.BackendUploads = append(res.BackendUploads, u)
		}
		if err := rows.Close(); err != nil {
			return classify(err, "delete user %q", userID)
		}
		now := metasql.ToNanos(time.Now())
		for _, q := range deleteUserSQL {
			if _, err := c.ExecContext(ctx, q, userID, now); err != nil {
				return classify(err, "delete user %q", userID)
			}
		}
		res.Buckets, res.Objects, res.Uploads = int(buckets), int(objects), int(uploads)
		return nil
	})
	if err != nil {
		return meta.DeleteUserResult{}, err
	}
	return res, nil
}

// queryStrings returns the first column of every row of query.
func queryStrings(ctx context.Context, c *conn, query string, args ...any) ([]string, error) {
	rows, err := c.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, classify(err, "query")
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return nil, classify(err, "query")
		}
		out = append(out, v)
	}
	return out, classify(rows.Err(), "query")
}

// Counts implements meta.Store.
func (s *Store) Counts(ctx context.Context) (meta.Counts, error) {
	if err := s.ready(); err != nil {
		return meta.Counts{}, err
	}
	var c meta.Counts
	if err := s.read().QueryRowContext(ctx, metasql.CountsQuery).Scan(&c.Users, &c.Buckets, &c.Objects, &c.Bytes); err != nil {
		return meta.Counts{}, classify(err, "counts")
	}
	return c, nil
}
