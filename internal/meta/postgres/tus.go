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

func dollar(n int) string { return "$" + strconv.Itoa(n) }

// CreateTus implements meta.Store.
func (s *Store) CreateTus(ctx context.Context, t meta.TusUpload) error {
	return s.write(ctx, "create tus upload", func(t2 *txn) error {
		t2.exec(metasql.InsertTusSQL(dollar), t.UploadID, t.Length, string(t.Info))
		return nil
	})
}

// GetTus implements meta.Store.
func (s *Store) GetTus(ctx context.Context, id string) (meta.TusUpload, error) {
	var t meta.TusUpload
	err := s.queryRow(ctx, "get tus upload", func(r pgx.Row) (err error) {
		t, err = metasql.ScanTus(r)
		if errors.Is(err, pgx.ErrNoRows) {
			return meta.ErrNoTus(id)
		}
		return err
	}, "SELECT "+metasql.TusCols+" FROM tus_uploads WHERE upload_id = $1", id)
	return t, err
}

// SetTusLength implements meta.Store.
func (s *Store) SetTusLength(ctx context.Context, id string, length int64) error {
	return s.write(ctx, "declare tus length", func(t *txn) error {
		t.execN(func(n int64) error {
			if n == 0 {
				return meta.ErrTusLengthDeclared(id)
			}
			return nil
		}, metasql.SetTusLengthSQL(dollar), length, id)
		return nil
	})
}

// SetTusHash implements meta.Store.
func (s *Store) SetTusHash(ctx context.Context, id string, offset int64, state []byte) error {
	return s.write(ctx, "record tus hash", func(t *txn) error {
		t.execN(func(n int64) error {
			if n == 0 {
				return meta.ErrNoTus(id)
			}
			return nil
		}, metasql.SetTusHashSQL(dollar), offset, state, id)
		return nil
	})
}

// TryLockTus implements meta.Store.
func (s *Store) TryLockTus(ctx context.Context, id, holder string, until time.Time, requestRelease bool) (meta.TusLock, error) {
	out := meta.TusMissing
	err := s.write(ctx, "lock tus upload", func(t *txn) error {
		out = meta.TusMissing
		var locked bool
		t.execN(func(n int64) error { locked = n == 1; return nil },
			metasql.LockTusSQL(dollar), holder, metasql.Millis(until), id, metasql.Millis(time.Now()))
		if err := t.flush(); err != nil {
			return err
		}
		if locked {
			out = meta.TusLocked
			return nil
		}
		q := "UPDATE tus_uploads SET lock_until = lock_until WHERE upload_id = $1"
		if requestRelease {
			q = metasql.RequestTusReleaseSQL(dollar)
		}
		t.execN(func(n int64) error {
			if n == 1 {
				out = meta.TusBusy
			}
			return nil
		}, q, id)
		return nil
	})
	return out, err
}

// RenewTusLock implements meta.Store.
func (s *Store) RenewTusLock(ctx context.Context, id, holder string, until time.Time) (held, releaseRequested bool, err error) {
	err = s.write(ctx, "renew tus lock", func(t *txn) error {
		held, releaseRequested = false, false
		t.queryRow(func(r pgx.Row) error {
			var rr int64
			err := r.Scan(&rr)
			if errors.Is(err, pgx.ErrNoRows) {
				return nil
			}
			held, releaseRequested = err == nil, rr != 0
			return err
		}, metasql.RenewTusLockSQL(dollar), metasql.Millis(until), id, holder)
		return nil
	})
	return held, releaseRequested, err
}

// UnlockTus implements meta.Store.
func (s *Store) UnlockTus(ctx context.Context, id, holder string) error {
	return s.write(ctx, "unlock tus upload", func(t *txn) error {
		t.exec(metasql.UnlockTusSQL(dollar), id, holder)
		return nil
	})
}

// SetUserLimits implements meta.Store.
func (s *Store) SetUserLimits(ctx context.Context, l meta.UserLimits) error {
	if l.Requests == 0 && l.Bytes == 0 {
		return s.write(ctx, "clear user limits", func(t *txn) error {
			t.exec("DELETE FROM user_limits WHERE user_id = $1", l.UserID)
			return nil
		})
	}
	if err := meta.CheckUserLimits(l); err != nil {
		return err
	}
	err := s.write(ctx, "set user limits", func(t *txn) error {
		t.exec(metasql.UpsertUserLimitsSQL(dollar), l.UserID, l.Requests, l.Bytes, l.Window.Milliseconds())
		return nil
	})
	if isSQLState(err, "23503") {
		return errcode.New(errcode.NotFound, "no user %q", l.UserID)
	}
	return err
}

// GetUserLimits implements meta.Store.
func (s *Store) GetUserLimits(ctx context.Context, id string) (meta.UserLimits, error) {
	l := meta.UserLimits{UserID: id}
	err := s.queryRow(ctx, "get user limits", func(r pgx.Row) error {
		var ms int64
		err := r.Scan(&l.Requests, &l.Bytes, &ms)
		if errors.Is(err, pgx.ErrNoRows) {
			return meta.ErrNoUserLimits(id)
		}
		l.Window = time.Duration(ms) * time.Millisecond
		return err
	}, "SELECT requests, bytes, window_ms FROM user_limits WHERE user_id = $1", id)
	if err != nil {
		return meta.UserLimits{}, err
	}
	return l, nil
}

// ReserveRate implements meta.Store.
func (s *Store) ReserveRate(ctx context.Context, dim, key string, windowStart, block, limit int64) (int64, error) {
	var got int64
	err := s.write(ctx, "reserve rate", func(t *txn) error {
		got = 0
		var used int64
		t.queryRow(func(r pgx.Row) error {
			err := r.Scan(&used)
			if errors.Is(err, pgx.ErrNoRows) {
				return nil
			}
			got = meta.Granted(used, block, limit)
			return err
		}, metasql.ReserveRateSQL(dollar), dim, key, windowStart, block, limit)
		if err := t.flush(); err != nil {
			return err
		}
		if used == block {
			t.exec("DELETE FROM rate_leases WHERE dim = $1 AND key = $2 AND window_start < $3", dim, key, windowStart)
		}
		return nil
	})
	return got, err
}
