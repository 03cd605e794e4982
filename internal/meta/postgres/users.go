package postgres

import (
	"context"
	"strings"
	"time"

	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/meta/metasql"
)

// UpdateUser applies upd to the user; see meta.Accounts.
func (s driver) UpdateUser(ctx context.Context, userID, set string, args []any, revoke bool) (meta.User, error) {
	var u meta.User
	err := s.write(ctx, "update user", func(t *txn) error {
		queueGet(t, &u, metasql.ScanUser, meta.ErrNoUser(userID), "UPDATE users SET "+set+" WHERE id = "+ph(len(args)+1)+" RETURNING "+metasql.UserCols,
			append(args, userID)...)
		if revoke {
			t.exec("UPDATE refresh_tokens SET revoked = true WHERE user_id = $1 AND NOT revoked", userID)
		}
		t.exec("SELECT "+notifySQL(meta.TopicUser, "id")+" FROM users WHERE id = $1", userID)
		return nil
	})
	return u, err
}

// RotateRefreshToken implements meta.Sessions. The old token's row is locked
// (FOR UPDATE), so of concurrent rotations of one token the first wins and
// the others find it used.
func (s driver) RotateRefreshToken(ctx context.Context, oldHash string, next meta.RefreshToken, now time.Time) (meta.RefreshToken, error) {
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
		t.exec(sq.InsertToken, metasql.TokenArgs(rt)...)
		out = rt
		return nil
	})
	return metasql.Result(out, err)
}

// scanToken reads a row of TokenCols.
func scanToken(r metasql.Row) (meta.RefreshToken, error) { return metasql.ScanRefreshToken(r) }

// DeleteUser implements meta.Accounts. It locks the user's row first (FOR
// UPDATE), as every write to the user's buckets does, so no object or
// upload appears in them between the check and the deletion, and
// announces the user and each of its keys.
func (s *Store) DeleteUser(ctx context.Context, userID string, purge bool) (meta.DeleteUserResult, error) {
	var res meta.DeleteUserResult
	err := s.write(ctx, "delete user", func(t *txn) error {
		res = meta.DeleteUserResult{}
		var found bool
		var id string
		var data [4]int64
		var names, keys []string
		queueRow(t, &id, &found, metasql.ScanString, "SELECT id FROM users WHERE id = $1 FOR UPDATE", userID)
		if err := t.flush(); err != nil {
			return err
		}
		if !found {
			return meta.ErrNoUser(userID)
		}
		queueRow(t, &data, &found, metasql.ScanUserData, sq.UserData, userID, metasql.ToNanos(t.now))
		queueRows(t, &names, metasql.ScanString, sq.DataBuckets, userID)
		queueRows(t, &res.BackendUploads, metasql.ScanBackendUpload, sq.BackendUploads, userID)
		queueRows(t, &keys, metasql.ScanString, "SELECT id FROM access_keys WHERE user_id = $1", userID)
		if err := t.flush(); err != nil {
			return err
		}
		if err := meta.CheckDeleteUser(purge, data[1], data[2], data[3], names); err != nil {
			return err
		}
		now := metasql.ToNanos(t.now)
		for _, q := range sq.DeleteUser {
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
	return metasql.Result(res, err)
}
