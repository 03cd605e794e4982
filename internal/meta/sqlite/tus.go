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
	insertTusSQL         = metasql.InsertTusSQL(ph)
	getTusSQL            = metasql.GetTusSQL(ph)
	setTusLengthSQL      = metasql.SetTusLengthSQL(ph)
	setTusHashSQL        = metasql.SetTusHashSQL(ph)
	lockTusSQL           = metasql.LockTusSQL(ph)
	requestTusReleaseSQL = metasql.RequestTusReleaseSQL(ph)
	touchTusSQL          = metasql.TouchTusSQL(ph)
	renewTusLockSQL      = metasql.RenewTusLockSQL(ph)
	unlockTusSQL         = metasql.UnlockTusSQL(ph)
)

// CreateTus implements meta.Store.
func (s *Store) CreateTus(ctx context.Context, t meta.TusUpload) error {
	return s.write(ctx, func(ctx context.Context, c *conn) error {
		_, err := c.ExecContext(ctx, insertTusSQL, t.UploadID, t.Length, string(t.Info))
		return classify(err, "tus upload %q", t.UploadID)
	})
}

// GetTus implements meta.Store.
func (s *Store) GetTus(ctx context.Context, id string) (meta.TusUpload, error) {
	return get(ctx, s, "get tus upload", metasql.ScanTus, meta.ErrNoTus(id), getTusSQL, id)
}

// SetTusLength implements meta.Store.
func (s *Store) SetTusLength(ctx context.Context, id string, length int64) error {
	return s.write(ctx, func(ctx context.Context, c *conn) error {
		return mustAffect(ctx, c, meta.ErrTusLengthDeclared(id), "declare tus length", setTusLengthSQL, length, id)
	})
}

// SetTusHash implements meta.Store.
func (s *Store) SetTusHash(ctx context.Context, id string, offset int64, state []byte) error {
	return s.write(ctx, func(ctx context.Context, c *conn) error {
		return mustAffect(ctx, c, meta.ErrNoTus(id), "record tus hash", setTusHashSQL, offset, state, id)
	})
}

// TryLockTus implements meta.Store.
func (s *Store) TryLockTus(ctx context.Context, id, holder string, until time.Time, requestRelease bool) (meta.TusLock, error) {
	out := meta.TusMissing
	err := s.write(ctx, func(ctx context.Context, c *conn) error {
		out = meta.TusMissing
		n, err := execN(ctx, c, lockTusSQL, holder, metasql.Millis(until), id, metasql.Millis(time.Now()))
		if err != nil {
			return classify(err, "lock tus upload %q", id)
		}
		if n == 1 {
			out = meta.TusLocked
			return nil
		}
		q := touchTusSQL
		if requestRelease {
			q = requestTusReleaseSQL
		}
		if n, err = execN(ctx, c, q, id); n == 1 {
			out = meta.TusBusy
		}
		return classify(err, "lock tus upload %q", id)
	})
	return out, err
}

// RenewTusLock implements meta.Store.
func (s *Store) RenewTusLock(ctx context.Context, id, holder string, until time.Time) (held, releaseRequested bool, err error) {
	err = s.write(ctx, func(ctx context.Context, c *conn) error {
		held, releaseRequested = false, false
		var rr int64
		err := c.QueryRowContext(ctx, renewTusLockSQL, metasql.Millis(until), id, holder).Scan(&rr)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		held, releaseRequested = err == nil, rr != 0
		return classify(err, "renew tus lock %q", id)
	})
	return held, releaseRequested, err
}

// UnlockTus implements meta.Store.
func (s *Store) UnlockTus(ctx context.Context, id, holder string) error {
	return s.write(ctx, func(ctx context.Context, c *conn) error {
		_, err := c.ExecContext(ctx, unlockTusSQL, id, holder)
		return classify(err, "unlock tus upload %q", id)
	})
}
