package postgres

import (
	"context"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/meta/metasql"
)

var (
	upsertUserLimitsSQL  = metasql.UpsertUserLimitsSQL(ph)
	userLimitsSQL        = metasql.UserLimitsSQL(ph)
	deleteUserLimitsSQL  = metasql.DeleteUserLimitsSQL(ph)
	reserveRateSQL       = metasql.ReserveRateSQL(ph)
	forgetRateWindowsSQL = metasql.ForgetRateWindowsSQL(ph)
)

// SetUserLimits implements meta.Store.
func (s *Store) SetUserLimits(ctx context.Context, l meta.UserLimits) error {
	q, args := deleteUserLimitsSQL, []any{l.UserID}
	if l.Requests != 0 || l.Bytes != 0 {
		if err := meta.CheckUserLimits(l); err != nil {
			return err
		}
		q, args = upsertUserLimitsSQL, metasql.UserLimitsArgs(l)
	}
	err := s.write(ctx, "set user limits", func(t *txn) error {
		t.exec(q, args...)
		return nil
	})
	if isSQLState(err, "23503") {
		return errcode.New(errcode.NotFound, "no user %q", l.UserID)
	}
	return err
}

// GetUserLimits implements meta.Store.
func (s *Store) GetUserLimits(ctx context.Context, id string) (meta.UserLimits, error) {
	return get(ctx, s, "get user limits", metasql.ScanUserLimits, meta.ErrNoUserLimits(id), userLimitsSQL, id)
}

// ReserveRate implements meta.Store.
func (s *Store) ReserveRate(ctx context.Context, dim, key string, windowStart, block, limit int64) (int64, error) {
	var used int64
	var taken bool
	err := s.write(ctx, "reserve rate", func(t *txn) error {
		queueRow(t, &used, &taken, metasql.ScanInt64, reserveRateSQL, dim, key, windowStart, block, limit)
		if err := t.flush(); err != nil {
			return err
		}
		if taken && used == block {
			// A new window: forget the old ones of this key.
			t.exec(forgetRateWindowsSQL, dim, key, windowStart)
		}
		return nil
	})
	if err != nil || !taken {
		return 0, err
	}
	return meta.Granted(used, block, limit), nil
}
