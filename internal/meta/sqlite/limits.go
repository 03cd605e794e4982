package sqlite

import (
	"context"
	"database/sql"
	"errors"

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
	return s.write(ctx, func(ctx context.Context, c *conn) error {
		_, err := c.ExecContext(ctx, q, args...)
		return classify(err, "limits of user %q", l.UserID)
	})
}

// GetUserLimits implements meta.Store.
func (s *Store) GetUserLimits(ctx context.Context, id string) (meta.UserLimits, error) {
	return get(ctx, s, "get user limits", metasql.ScanUserLimits, meta.ErrNoUserLimits(id), userLimitsSQL, id)
}

// ReserveRate implements meta.Store.
func (s *Store) ReserveRate(ctx context.Context, dim, key string, windowStart, block, limit int64) (int64, error) {
	var got int64
	err := s.write(ctx, func(ctx context.Context, c *conn) error {
		got = 0
		var used int64
		err := c.QueryRowContext(ctx, reserveRateSQL, dim, key, windowStart, block, limit).Scan(&used)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return classify(err, "reserve rate")
		}
		got = meta.Granted(used, block, limit)
		if used == block {
			// A new window: forget the old ones of this key.
			_, err = c.ExecContext(ctx, forgetRateWindowsSQL, dim, key, windowStart)
		}
		return classify(err, "reserve rate")
	})
	return got, err
}
