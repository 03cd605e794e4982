package postgres

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/coffer-storage/coffer/internal/errcode"
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
	switch {
	case u.ID == "" || u.Email == "":
		return errcode.New(errcode.InvalidArgument, "user id and email are required")
	case u.QuotaBytes < 0:
		return errcode.New(errcode.InvalidArgument, "quota must not be negative")
	case b.OwnerID != "" && b.OwnerID != u.ID:
		return errcode.New(errcode.InvalidArgument, "the default bucket must be owned by the new user")
	}
	b.OwnerID = u.ID
	b, err := checkBucket(b)
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
			u.ID, u.Email, u.PasswordHash, u.QuotaBytes, u.Disabled, u.Admin, metasql.ToNanos(u.SessionsAfter), metasql.ToNanos(metasql.OrNow(u.CreatedAt, t.now)))
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
			return errcode.New(errcode.NotFound, "user %q not found", id)
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
			return errcode.New(errcode.NotFound, "no user with email %q", email)
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
	if quotaBytes < 0 {
		return errcode.New(errcode.InvalidArgument, "quota must not be negative")
	}
	return s.write(ctx, "set quota", func(t *txn) error {
		t.execN(mustAffect(errcode.New(errcode.NotFound, "user %q not found", userID)),
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
	if t.Hash == "" || t.UserID == "" || t.Family == "" {
		return errcode.New(errcode.InvalidArgument, "refresh token hash, user and family are required")
	}
	t.CreatedAt = metasql.OrNow(t.CreatedAt, time.Now())
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
	if next.Hash == "" {
		return meta.RefreshToken{}, errcode.New(errcode.InvalidArgument, "the next refresh token needs a hash")
	}
	var out meta.RefreshToken
	err := s.write(ctx, "rotate refresh token", func(t *txn) error {
		var family, userID string
		var expires int64
		var used, revoked, found bool
		t.queryRow(func(r pgx.Row) error {
			err := r.Scan(&userID, &family, &expires, &used, &revoked)
			found = err == nil
			if errors.Is(err, pgx.ErrNoRows) {
				return nil
			}
			return err
		}, "SELECT user_id, family, expires_at, used, revoked FROM refresh_tokens WHERE hash = $1 FOR UPDATE", oldHash)
		if err := t.flush(); err != nil {
			return err
		}
		switch {
		case !found:
			return errcode.New(errcode.Unauthenticated, "unknown refresh token")
		case used:
			// Reuse: someone holds a stale copy. Revoke the whole family and
			// commit that even though the rotation fails.
			t.exec("UPDATE refresh_tokens SET revoked = true WHERE family = $1", family)
			return keep(errcode.New(errcode.Unauthenticated, "refresh token reused; the session is revoked"))
		case revoked:
			return errcode.New(errcode.Unauthenticated, "refresh token revoked")
		case !now.Before(metasql.FromNanos(expires)):
			return errcode.New(errcode.Unauthenticated, "refresh token expired")
		}
		t.exec("UPDATE refresh_tokens SET used = true WHERE hash = $1", oldHash)
		rt := next
		rt.UserID, rt.Family = userID, family
		rt.Used, rt.Revoked = false, false
		rt.CreatedAt = metasql.FromNanos(metasql.ToNanos(metasql.OrNow(rt.CreatedAt, now)))
		rt.ExpiresAt = metasql.FromNanos(metasql.ToNanos(rt.ExpiresAt))
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
		t.execN(mustAffect(errcode.New(errcode.NotFound, "unknown refresh token")), `UPDATE refresh_tokens SET revoked = true
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
	set, args, err := metasql.UserUpdateSet(upd, func(n int) string { return "$" + strconv.Itoa(n) })
	if err != nil {
		return meta.User{}, err
	}
	var u meta.User
	err = s.write(ctx, "update user", func(t *txn) error {
		t.queryRow(func(r pgx.Row) error {
			var err error
			u, err = scanUser(r)
			if errors.Is(err, pgx.ErrNoRows) {
				return errcode.New(errcode.NotFound, "user %q not found", userID)
			}
			return err
		}, "UPDATE users SET "+set+" WHERE id = $"+strconv.Itoa(len(args)+1)+" RETURNING "+userCols, append(args, userID)...)
		return nil
	})
	return u, err
}
