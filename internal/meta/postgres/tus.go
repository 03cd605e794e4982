package postgres

import (
	"context"
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
	return s.write(ctx, "create tus upload", func(tx *txn) error {
		tx.exec(insertTusSQL, t.UploadID, t.Length, string(t.Info))
		return nil
	})
}

// GetTus implements meta.Store.
func (s *Store) GetTus(ctx context.Context, id string) (meta.TusUpload, error) {
	return get(ctx, s, "get tus upload", metasql.ScanTus, meta.ErrNoTus(id), getTusSQL, id)
}

// SetTusLength implements meta.Store.
func (s *Store) SetTusLength(ctx context.Context, id string, length int64) error {
	return s.write(ctx, "declare tus length", func(t *txn) error {
		t.execN(mustAffect(meta.ErrTusLengthDeclared(id)), setTusLengthSQL, length, id)
		return nil
	})
}

// SetTusHash implements meta.Store.
func (s *Store) SetTusHash(ctx context.Context, id string, offset int64, state []byte) error {
	return s.write(ctx, "record tus hash", func(t *txn) error {
		t.execN(mustAffect(meta.ErrNoTus(id)), setTusHashSQL, offset, state, id)
		return nil
	})
}

// TryLockTus implements meta.Store.
func (s *Store) TryLockTus(ctx context.Context, id, holder string, until time.Time, requestRelease bool) (meta.TusLock, error) {
	out := meta.TusMissing
	err := s.write(ctx, "lock tus upload", func(t *txn) error {
		out = meta.TusMissing
		var locked int64
		t.execN(affected(&locked), lockTusSQL, holder, metasql.Millis(until), id, metasql.Millis(time.Now()))
		if err := t.flush(); err != nil {
			return err
		}
		if locked == 1 {
			out = meta.TusLocked
			return nil
		}
		q := touchTusSQL
		if requestRelease {
			q = requestTusReleaseSQL
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
	var rr int64
	err = s.write(ctx, "renew tus lock", func(t *txn) error {
		queueRow(t, &rr, &held, metasql.ScanInt64, renewTusLockSQL, metasql.Millis(until), id, holder)
		return nil
	})
	return held, held && rr != 0, err
}

// UnlockTus implements meta.Store.
func (s *Store) UnlockTus(ctx context.Context, id, holder string) error {
	return s.write(ctx, "unlock tus upload", func(t *txn) error {
		t.exec(unlockTusSQL, id, holder)
		return nil
	})
}
