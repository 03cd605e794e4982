package sqlite

import (
	"context"
	"time"

	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/meta/metasql"
)

var (
	insertAccessKeySQL = metasql.InsertAccessKeySQL(ph)
	getAccessKeySQL    = "SELECT " + metasql.AccessKeyCols + " FROM access_keys WHERE id = ?"
	listAccessKeysSQL  = "SELECT " + metasql.AccessKeyCols + " FROM access_keys WHERE user_id = ? ORDER BY created_at, id"
)

// CreateAccessKey implements meta.Store. A zero CreatedAt is set to now.
func (s *Store) CreateAccessKey(ctx context.Context, k meta.AccessKey) error {
	k, err := meta.CheckAccessKey(k, time.Now())
	if err != nil {
		return err
	}
	return s.write(ctx, func(ctx context.Context, c *conn) error {
		if err := userExists(ctx, c, k.UserID); err != nil {
			return classify(err, "access key owner")
		}
		_, err := c.ExecContext(ctx, insertAccessKeySQL, metasql.AccessKeyArgs(k)...)
		return classify(err, "access key %q", k.ID)
	})
}

// userExists fails with NotFound unless user id exists (the schema of
// SQLite does not say so with a foreign key failure on every table).
func userExists(ctx context.Context, c *conn, id string) error {
	found, err := exists(ctx, c, "SELECT 1 FROM users WHERE id = ?", id)
	if err == nil && !found {
		err = meta.ErrNoUser(id)
	}
	return err
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
	return s.write(ctx, func(ctx context.Context, c *conn) error {
		return mustAffect(ctx, c, meta.ErrNoAccessKey(id), "delete access key", "DELETE FROM access_keys WHERE id = ? AND user_id = ?", id, userID)
	})
}

// TouchAccessKey implements meta.Store.
func (s *Store) TouchAccessKey(ctx context.Context, id string, t time.Time) error {
	return s.write(ctx, func(ctx context.Context, c *conn) error {
		return mustAffect(ctx, c, meta.ErrNoAccessKey(id), "touch access key", "UPDATE access_keys SET last_used = ? WHERE id = ?", metasql.ToNanos(t), id)
	})
}
