package sqlite

import (
	"context"
	"time"
)

// DeleteExpiredShares implements meta.Shares: one statement; the shares'
// download records go with them (ON DELETE CASCADE).
func (s *Store) DeleteExpiredShares(ctx context.Context, before time.Time) (int, error) {
	return s.deleteExpired(ctx, "shares", before)
}
