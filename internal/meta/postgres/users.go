package postgres

import (
	"context"
	"strings"
	"time"

	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/meta/metasql"
)

var (
	insertUserSQL       = metasql.InsertUserSQL(ph)
	getUserSQL          = metasql.GetUserSQL("id", ph)
	getUserByEmailSQL   = metasql.GetUserSQL("email", ph)
	insertTokenSQL      = metasql.InsertTokenSQL(ph)
	userDataQuery       = metasql.UserDataQuery("$1")
	dataBucketsQuery    = metasql.DataBucketsQuery("$1")
	backendUploadsQuery = metasql.BackendUploadsQuery("$1")
	deleteUserSQL       = metasql.DeleteUserStatements("$1", "$2", false)
)

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
		t.exec(insertUserSQL, metasql.UserArgs(u, t.now)...)
		insertBucket(t, b)
		return nil
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
	return s.write(ctx, "set quota", func(t *txn) error {
		t.execN(mustAffect(meta.ErrNoUser(userID)), "UPDATE users SET quota_bytes = $1 WHERE id = $2", quotaBytes, userID)
		return nil
	})
}

// CreateRefreshToken stores t. A zero CreatedAt is set to now.
// AlreadyExists if the hash is taken; NotFound if the user does not exist.
func (s *Store) CreateRefreshToken(ctx context.Context, t meta.RefreshToken) error {
	t, err := meta.CheckRefreshToken(t, time.Now())
	if err != nil {
		return err
	}
	return s.write(ctx, "refresh token", func(tx *txn) error {
		tx.exec(insertTokenSQL, metasql.TokenArgs(t)...)
		return nil
	})
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
		var user meta.User
		var found, userFound bool
		// The user's row first (FOR SHARE: rotations of one user do not
		// wait for each other), then the token's: an UpdateUser that
		// disables the user or revokes its tokens locks them in the same
		// order, so a rotation either sees its outcome or commits before
		// it starts (and its new token is then revoked by it).
		queueRow(t, &user, &userFound, metasql.ScanUser, "SELECT "+metasql.UserCols+
			" FROM users WHERE id = (SELECT user_id FROM refresh_tokens WHERE hash = $1) FOR SHARE", oldHash)
		queueRow(t, &old, &found, scanToken, "SELECT "+metasql.TokenCols+" FROM refresh_tokens WHERE hash = $1 FOR UPDATE", oldHash)
		if err := t.flush(); err != nil {
			return err
		}
		revoke, err := meta.CheckRotation(old, found, user.Disabled, user.SessionsAfter, now)
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
		t.exec(insertTokenSQL, metasql.TokenArgs(rt)...)
		out = rt
		return nil
	})
	if err != nil {
		return meta.RefreshToken{}, err
	}
	return out, nil
}

// scanToken reads a row of TokenCols.
func scanToken(r metasql.Row) (meta.RefreshToken, error) { return metasql.ScanRefreshToken(r) }

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
		t.execN(affected(&n), "DELETE FROM "+table+" WHERE expires_at < $1", metasql.ToNanos(before))
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
	set, args := metasql.UserUpdateSet(upd, ph)
	var u meta.User
	err := s.write(ctx, "update user", func(t *txn) error {
		queueGet(t, &u, metasql.ScanUser, meta.ErrNoUser(userID), "UPDATE users SET "+set+" WHERE id = "+ph(len(args)+1)+" RETURNING "+metasql.UserCols,
			append(args, userID)...)
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
	q, args := metasql.ListUsersQuery(opts, limit, ph)
	out, err := list(ctx, s, "list users", metasql.ScanUser, q, args...)
	if err != nil {
		return nil, false, err
	}
	out, more := meta.Page(out, limit)
	return out, more, nil
}

// DeleteUser implements meta.Store. It locks the user's row first (FOR
// UPDATE), as every write to the user's buckets does, so no object or
// upload appears in them between the check and the deletion, and
// announces the user and each of its keys.
func (s *Store) DeleteUser(ctx context.Context, userID string, purge bool) (meta.DeleteUserResult, error) {
	var res meta.DeleteUserResult
	err := s.write(ctx, "delete user", func(t *txn) error {
		res = meta.DeleteUserResult{}
		var found bool
		var id string
		var data [3]int64
		var names, keys []string
		queueRow(t, &id, &found, metasql.ScanString, "SELECT id FROM users WHERE id = $1 FOR UPDATE", userID)
		if err := t.flush(); err != nil {
			return err
		}
		if !found {
			return meta.ErrNoUser(userID)
		}
		queueRow(t, &data, &found, metasql.ScanUserData, userDataQuery, userID)
		queueRows(t, &names, metasql.ScanString, dataBucketsQuery, userID)
		queueRows(t, &res.BackendUploads, metasql.ScanBackendUpload, backendUploadsQuery, userID)
		queueRows(t, &keys, metasql.ScanString, "SELECT id FROM access_keys WHERE user_id = $1", userID)
		if err := t.flush(); err != nil {
			return err
		}
		if err := meta.CheckDeleteUser(purge, data[1], data[2], names); err != nil {
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
		res.Buckets, res.Objects, res.Uploads = int(data[0]), int(data[1]), int(data[2])
		return nil
	})
	if err != nil {
		return meta.DeleteUserResult{}, err
	}
	return res, nil
}

// Counts implements meta.Store.
func (s *Store) Counts(ctx context.Context) (meta.Counts, error) {
	return get(ctx, s, "counts", metasql.ScanCounts, nil, metasql.CountsQuery)
}
