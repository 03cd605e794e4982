package postgres

import (
	"context"
	"time"

	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/meta/metasql"
)

var (
	insertAccessKeySQL = metasql.InsertAccessKeySQL(ph)
	getAccessKeySQL    = "SELECT " + metasql.AccessKeyCols + " FROM access_keys WHERE id = $1"
	listAccessKeysSQL  = "SELECT " + metasql.AccessKeyCols + " FROM access_keys WHERE user_id = $1 ORDER BY created_at, id"
)

// CreateAccessKey implements meta.Store. A zero CreatedAt is set to now.
func (s *Store) CreateAccessKey(ctx context.Context, k meta.AccessKey) error {
	k, err := meta.CheckAccessKey(k, time.Now())
	if err != nil {
		return err
	}
	return s.write(ctx, "create access key", func(t *txn) error {
		// A missing user is a foreign key violation: NotFound.
		t.exec(insertAccessKeySQL, metasql.AccessKeyArgs(k)...)
		return nil
	})
}

// GetAccessKey implements meta.Store.
func (s *Store) GetAccessKey(ctx context.Context, id string) (meta.AccessKey, error) {
	return get(ctx, s, "get access key", metasql.ScanAccessKey, meta.ErrNoAccessKey(id), getAccessKeySQL, id)
}

// ListAccessKeys implements meta.Store: oldest first, ties by ID. A user
// without keys (or an unknown user) has none.
func (s *Store) ListAccessKeys(ctx context.Context, userID string) ([]meta.AccessKey, error) {
	return list(ctx, s, "list access keys", metasql.ScanAccessKey, listAccessKeysSQL, userID)
}

// DeleteAccessKey implements meta.Store.
func (s *Store) DeleteAccessKey(ctx context.Context, userID, id string) error {
	return s.write(ctx, "delete access key", func(t *txn) error {
		t.execN(mustAffect(meta.ErrNoAccessKey(id)), "WITH d AS (DELETE FROM access_keys WHERE id = $1 AND user_id = $2 RETURNING id) SELECT "+
			notifySQL(meta.TopicAccessKey, "d.id")+" FROM d", id, userID)
		return nil
	})
}

// TouchAccessKey implements meta.Store.
func (s *Store) TouchAccessKey(ctx context.Context, id string, t time.Time) error {
	return s.write(ctx, "touch access key", func(tx *txn) error {
		tx.execN(mustAffect(meta.ErrNoAccessKey(id)), "UPDATE access_keys SET last_used = $1 WHERE id = $2", metasql.ToNanos(t), id)
		return nil
	})
}
