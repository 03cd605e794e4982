package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/meta/metasql"
)

// RotateRefreshToken implements meta.Sessions. The writer runs rotations one at
// a time, so of concurrent rotations of one token the first wins and the
// others find it used.
func (s driver) RotateRefreshToken(ctx context.Context, oldHash string, next meta.RefreshToken, now time.Time) (meta.RefreshToken, error) {
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
		if _, err := c.ExecContext(ctx, sq.InsertToken, metasql.TokenArgs(t)...); err != nil {
			return classify(err, "refresh token")
		}
		out = t
		return nil
	})
	return metasql.Result(out, err)
}

// UpdateUser applies upd to the user; see meta.Accounts.
func (s driver) UpdateUser(ctx context.Context, userID, set string, args []any, revoke bool) (meta.User, error) {
	var u meta.User
	err := s.write(ctx, func(ctx context.Context, c *conn) error {
		var err error
		u, err = queryRow(ctx, c, metasql.ScanUser, meta.ErrNoUser(userID),
			"UPDATE users SET "+set+" WHERE id = "+ph(len(args)+1)+" RETURNING "+metasql.UserCols, append(args, userID)...)
		if err != nil {
			return classify(err, "update user %q", userID)
		}
		if revoke {
			if _, err := c.ExecContext(ctx, "UPDATE refresh_tokens SET revoked = 1 WHERE user_id = ? AND revoked = 0", userID); err != nil {
				return classify(err, "revoke refresh tokens of %q", userID)
			}
		}
		return nil
	})
	return u, err
}

// DeleteUser implements meta.Accounts. The single writer makes the checks
// and the deletion one atomic step.
func (s *Store) DeleteUser(ctx context.Context, userID string, purge bool) (meta.DeleteUserResult, error) {
	var res meta.DeleteUserResult
	err := s.write(ctx, func(ctx context.Context, c *conn) error {
		err := s.deleteUser(ctx, c, userID, purge, &res)
		return classify(err, "delete user %q", userID)
	})
	return metasql.Result(res, err)
}

func (s *Store) deleteUser(ctx context.Context, c *conn, userID string, purge bool, res *meta.DeleteUserResult) error {
	*res = meta.DeleteUserResult{}
	if found, err := exists(ctx, c, "SELECT 1 FROM users WHERE id = ?", userID); err != nil || !found {
		if err == nil {
			err = meta.ErrNoUser(userID)
		}
		return err
	}
	data, err := queryRow(ctx, c, metasql.ScanUserData, nil, sq.UserData, userID, metasql.ToNanos(time.Now()))
	if err != nil {
		return err
	}
	names, err := queryRows(ctx, c, metasql.ScanString, sq.DataBuckets, userID)
	if err != nil {
		return err
	}
	if err := meta.CheckDeleteUser(purge, data[1], data[2], data[3], names); err != nil {
		return err
	}
	if res.BackendUploads, err = queryRows(ctx, c, metasql.ScanBackendUpload, sq.BackendUploads, userID); err != nil {
		return err
	}
	now := metasql.ToNanos(time.Now())
	for _, q := range sq.DeleteUser {
		if _, err := c.ExecContext(ctx, q, userID, now); err != nil {
			return err
		}
	}
	res.Buckets, res.Objects, res.Uploads = int(data[0]), int(data[1]), int(data[2])
	return nil
}
