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

// q numbers its placeholders: the lock statements repeat an argument.
func q(n int) string { return "?" + strconv.Itoa(n) }

// CreateTus implements meta.Store.
func (s *Store) CreateTus(ctx context.Context, t meta.TusUpload) error {
	return s.write(ctx, func(ctx context.Context, c *conn) error {
		_, err := c.ExecContext(ctx, metasql.InsertTusSQL(q), t.UploadID, t.Length, string(t.Info))
		return classify(err, "tus upload %q", t.UploadID)
	})
}

// GetTus implements meta.Store.
func (s *Store) GetTus(ctx context.Context, id string) (meta.TusUpload, error) {
	if err := s.ready(); err != nil {
		return meta.TusUpload{}, err
	}
	t, err := metasql.ScanTus(s.read().QueryRowContext(ctx, "SELECT "+metasql.TusCols+" FROM tus_uploads WHERE upload_id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return meta.TusUpload{}, meta.ErrNoTus(id)
	}
	return t, classify(err, "get tus upload %q", id)
}

// SetTusLength implements meta.Store.
func (s *Store) SetTusLength(ctx context.Context, id string, length int64) error {
	return s.write(ctx, func(ctx context.Context, c *conn) error {
		res, err := c.ExecContext(ctx, metasql.SetTusLengthSQL(q), length, id)
		if err != nil {
			return classify(err, "tus upload %q", id)
		}
		return mustAffect(res, meta.ErrTusLengthDeclared(id))
	})
}

// SetTusHash implements meta.Store.
func (s *Store) SetTusHash(ctx context.Context, id string, offset int64, state []byte) error {
	return s.write(ctx, func(ctx context.Context, c *conn) error {
		res, err := c.ExecContext(ctx, metasql.SetTusHashSQL(q), offset, state, id)
		if err != nil {
			return classify(err, "tus upload %q", id)
		}
		return mustAffect(res, meta.ErrNoTus(id))
	})
}

// TryLockTus implements meta.Store.
func (s *Store) TryLockTus(ctx context.Context, id, holder string, until time.Time, requestRelease bool) (meta.TusLock, error) {
	out := meta.TusMissing
	err := s.write(ctx, func(ctx context.Context, c *conn) error {
		res, err := c.ExecContext(ctx, metasql.LockTusSQL(q), holder, metasql.Millis(until), id, metasql.Millis(time.Now()))
		if err != nil {
			return classify(err, "lock tus upload %q", id)
		}
		if n, _ := res.RowsAffected(); n == 1 {
			out = meta.TusLocked
			return nil
		}
		if requestRelease {
			res, err = c.ExecContext(ctx, metasql.RequestTusReleaseSQL(q), id)
		} else {
			res, err = c.ExecContext(ctx, "UPDATE tus_uploads SET lock_until = lock_until WHERE upload_id = ?", id)
		}
		if err != nil {
			return classify(err, "lock tus upload %q", id)
		}
		if n, _ := res.RowsAffected(); n == 1 {
			out = meta.TusBusy
		}
		return nil
	})
	return out, err
}

// RenewTusLock implements meta.Store.
func (s *Store) RenewTusLock(ctx context.Context, id, holder string, until time.Time) (held, releaseRequested bool, err error) {
	err = s.write(ctx, func(ctx context.Context, c *conn) error {
		var rr int64
		err := c.QueryRowContext(ctx, metasql.RenewTusLockSQL(q), metasql.Millis(until), id, holder).Scan(&rr)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return classify(err, "renew tus lock %q", id)
		}
		held, releaseRequested = true, rr != 0
		return nil
	})
	return held, releaseRequested, err
}

// UnlockTus implements meta.Store.
func (s *Store) UnlockTus(ctx context.Context, id, holder string) error {
	return s.write(ctx, func(ctx context.Context, c *conn) error {
		_, err := c.ExecContext(ctx, metasql.UnlockTusSQL(q), id, holder)
		return classify(err, "unlock tus upload %q", id)
	})
}

// SetUserLimits implements meta.Store.
func (s *Store) SetUserLimits(ctx context.Context, l meta.UserLimits) error {
	if l.Requests == 0 && l.Bytes == 0 {
		return s.write(ctx, func(ctx context.Context, c *conn) error {
			_, err := c.ExecContext(ctx, "DELETE FROM user_limits WHERE user_id = ?", l.UserID)
			return classify(err, "limits of user %q", l.UserID)
		})
	}
	if err := meta.CheckUserLimits(l); err != nil {
		return err
	}
	return s.write(ctx, func(ctx context.Context, c *conn) error {
		_, err := c.ExecContext(ctx, metasql.UpsertUserLimitsSQL(q), l.UserID, l.Requests, l.Bytes, l.Window.Milliseconds())
		return classify(err, "limits of user %q", l.UserID)
	})
}

// GetUserLimits implements meta.Store.
func (s *Store) GetUserLimits(ctx context.Context, id string) (meta.UserLimits, error) {
	if err := s.ready(); err != nil {
		return meta.UserLimits{}, err
	}
	l := meta.UserLimits{UserID: id}
	var ms int64
	err := s.read().QueryRowContext(ctx, "SELECT requests, bytes, window_ms FROM user_limits WHERE user_id = ?", id).Scan(&l.Requests, &l.Bytes, &ms)
	if errors.Is(err, sql.ErrNoRows) {
		return meta.UserLimits{}, meta.ErrNoUserLimits(id)
	}
	l.Window = time.Duration(ms) * time.Millisecond
	return l, classify(err, "limits of user %q", id)
}

// ReserveRate implements meta.Store.
func (s *Store) ReserveRate(ctx context.Context, dim, key string, windowStart, block, limit int64) (int64, error) {
	var got int64
	err := s.write(ctx, func(ctx context.Context, c *conn) error {
		got = 0
		var used int64
		err := c.QueryRowContext(ctx, metasql.ReserveRateSQL(q), dim, key, windowStart, block, limit).Scan(&used)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return classify(err, "reserve rate")
		}
		got = meta.Granted(used, block, limit)
		if used == block {
			// A new window: forget the old ones of this key.
			_, err = c.ExecContext(ctx, "DELETE FROM rate_leases WHERE dim = ? AND key = ? AND window_start < ?", dim, key, windowStart)
		}
		return classify(err, "reserve rate")
	})
	return got, err
}
