package postgres

import (
	"context"

	"github.com/coffer-storage/coffer/internal/meta"
)

// DeleteAccessKey implements meta.AccessKeys.
func (s *Store) DeleteAccessKey(ctx context.Context, userID, id string) error {
	return s.write(ctx, "delete access key", func(t *txn) error {
		t.execN(mustAffect(meta.ErrNoAccessKey(id)), "WITH d AS (DELETE FROM access_keys WHERE id = $1 AND user_id = $2 RETURNING id) SELECT "+
			notifySQL(meta.TopicAccessKey, "d.id")+" FROM d", id, userID)
		return nil
	})
}
