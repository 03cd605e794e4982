package sqlite

import (
	"context"

	"github.com/coffer-storage/coffer/internal/meta"
)

// DeleteAccessKey implements meta.AccessKeys.
func (s *Store) DeleteAccessKey(ctx context.Context, userID, id string) error {
	return s.write(ctx, func(ctx context.Context, c *conn) error {
		return mustAffect(ctx, c, meta.ErrNoAccessKey(id), "delete access key", "DELETE FROM access_keys WHERE id = ? AND user_id = ?", id, userID)
	})
}
