package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/meta/metasql"
)

var (
	insertUserSQL       = metasql.InsertUserSQL(ph)
	getUserSQL          = metasql.GetUserSQL("id", ph)
	getUserByEmailSQL   = metasql.GetUserSQL("email", ph)
	insertTokenSQL      = metasql.InsertTokenSQL(ph)
	userDataQuery       = metasql.UserDataQuery("?1")
	dataBucketsQuery    = metasql.DataBucketsQuery("?1")
	backendUploadsQuery = metasql.BackendUploadsQuery("?1")
	deleteUserSQL       = metasql.DeleteUserStatements("?1", "?2", true)
)

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
		if _, err := c.ExecContext(ctx, insertUserSQL, metasql.UserArgs(u, now)...); err != nil {
			return classify(err, "user %q", u.Email)
		}
		return insertBucket(ctx, c, b, now)
	})
}

// GetUser returns the user with id; NotFound if none.
func (s *Store) GetUser(ctx context.Context, id string) (meta.User, error) {
	return get(ctx, s, "get user", metasql.ScanUser, meta.ErrNoUser(id), getUserSQL, id)
}

// GetUserByEmail returns the user with email; NotFound if none.
func (s *Store) GetUserByEmail(ctx context.Context, email string) (meta.User, error) {
	return get(ctx, s, "get user by email", metasql.ScanUser, meta.ErrNoUserEmail(email), getUserByEmailSQL, email)
}

// SetQuota sets the user's quota; NotFound if the user does not exist.
func (s *Store) SetQuota(ctx context.Context, userID string, quotaBytes int64) error {
	if err := meta.CheckQuota(quotaBytes); err != nil {
		return err
	}
	return s.write(ctx, func(ctx context.Context, c *conn) error {
		return mustAffect(ctx, c, meta.ErrNoUser(userID), "set quota", "UPDATE users SET quota_bytes = ?1 WHERE id = ?2", quotaBytes, userID)
	})
}

// CreateRefreshToken stores t. A zero CreatedAt is set to now.
// AlreadyExists if the hash is taken; NotFound if the user does not exist.
func (s *Store) CreateRefreshToken(ctx context.Context, t meta.RefreshToken) error {
	t, err := meta.CheckRefreshToken(t, time.Now())
	if err != nil {
		return err
	}
	return s.write(ctx, func(ctx context.Context, c *conn) error {
		_, err := c.ExecContext(ctx, insertTokenSQL, metasql.TokenArgs(t)...)
		return classify(err, "refresh token")
	})
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
		old, err := metasql.ScanRefreshToken(c.QueryRowContext(ctx, `SELECT t.hash, t.user_id, t.family, t.created_at, t.expires_at, t.used, t.revoked,
			u.disabled, u.sessions_after FROM refresh_tokens t JOIN users u ON u.id = t.user_id WHERE t.hash = ?`, oldHash), &disabled, &after)
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
		if _, err := c.ExecContext(ctx, insertTokenSQL, metasql.TokenArgs(t)...); err != nil {
			return classify(err, "refresh token")
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
		return mustAffect(ctx, c, meta.ErrNoRefreshToken(), "revoke refresh family", `UPDATE refresh_tokens SET revoked = 1
			WHERE family = (SELECT family FROM refresh_tokens WHERE hash = ?)`, hash)
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
		var err error
		n, err = execN(ctx, c, "DELETE FROM "+table+" WHERE expires_at < ?", metasql.ToNanos(before))
		return classify(err, "delete expired %s", table)
	})
	return int(n), err
}

// UpdateUser applies upd to the user; see meta.Store.
func (s *Store) UpdateUser(ctx context.Context, userID string, upd meta.UserUpdate) (meta.User, error) {
	if err := meta.CheckUserUpdate(upd); err != nil {
		return meta.User{}, err
	}
	set, args := metasql.UserUpdateSet(upd, ph)
	var u meta.User
	err := s.write(ctx, func(ctx context.Context, c *conn) error {
		var err error
		u, err = queryRow(ctx, c, metasql.ScanUser, meta.ErrNoUser(userID),
			"UPDATE users SET "+set+" WHERE id = "+ph(len(args)+1)+" RETURNING "+metasql.UserCols, append(args, userID)...)
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
	limit, err := meta.UsersLimit(opts.Limit)
	if err != nil {
		return nil, false, err
	}
	q, args := metasql.ListUsersQuery(opts, limit, ph)
	out, err := list(ctx, s, "list users", metasql.ScanUser, q, args...)
	if err != nil {
		return nil, false, err
	}
	out, more := meta.Page(out, limit)
	return out, more, nil
}

// DeleteUser implements meta.Store. The single writer makes the checks
// and the deletion one atomic step.
func (s *Store) DeleteUser(ctx context.Context, userID string, purge bool) (meta.DeleteUserResult, error) {
	var res meta.DeleteUserResult
	err := s.write(ctx, func(ctx context.Context, c *conn) error {
		err := s.deleteUser(ctx, c, userID, purge, &res)
		return classify(err, "delete user %q", userID)
	})
	if err != nil {
		return meta.DeleteUserResult{}, err
	}
	return res, nil
}

func (s *Store) deleteUser(ctx context.Context, c *conn, userID string, purge bool, res *meta.DeleteUserResult) error {
	*res = meta.DeleteUserResult{}
	if found, err := exists(ctx, c, "SELECT 1 FROM users WHERE id = ?", userID); err != nil || !found {
		if err == nil {
			err = meta.ErrNoUser(userID)
		}
		return err
	}
	data, err := queryRow(ctx, c, metasql.ScanUserData, nil, userDataQuery, userID)
	if err != nil {
		return err
	}
	names, err := queryRows(ctx, c, metasql.ScanString, dataBucketsQuery, userID)
	if err != nil {
		return err
	}
	if err := meta.CheckDeleteUser(purge, data[1], data[2], names); err != nil {
		return err
	}
	if res.BackendUploads, err = queryRows(ctx, c, metasql.ScanBackendUpload, backendUploadsQuery, userID); err != nil {
		return err
	}
	now := metasql.ToNanos(time.Now())
	for _, q := range deleteUserSQL {
		if _, err := c.ExecContext(ctx, q, userID, now); err != nil {
			return err
		}
	}
	res.Buckets, res.Objects, res.Uploads = int(data[0]), int(data[1]), int(data[2])
	return nil
}

// Counts implements meta.Store.
func (s *Store) Counts(ctx context.Context) (meta.Counts, error) {
	return get(ctx, s, "counts", metasql.ScanCounts, nil, metasql.CountsQuery)
}
