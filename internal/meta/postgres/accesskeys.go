package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/meta/metasql"
)

const accessKeyCols = "id, user_id, secret_enc, name, internal, created_at, last_used"

func scanAccessKey(r pgx.Row) (meta.AccessKey, error) {
	var k meta.AccessKey
	var created, used int64
	err := r.Scan(&k.ID, &k.UserID, &k.SecretEnc, &k.Name, &k.Internal, &created, &used)
	k.CreatedAt, k.LastUsed = metasql.FromNanos(created), metasql.FromNanos(used)
	return k, err
}

// CreateAccessKey implements meta.Store. A zero CreatedAt is set to now.
func (s *Store) CreateAccessKey(ctx context.Context, k meta.AccessKey) error {
	k, err := meta.CheckAccessKey(k, time.Now())
	if err != nil {
		return err
	}
	return s.write(ctx, "create access key", func(t *txn) error {
		// A missing user is a foreign key violation: NotFound.
		t.exec("INSERT INTO access_keys ("+accessKeyCols+") VALUES ($1, $2, $3, $4, $5, $6, $7)",
			k.ID, k.UserID, k.SecretEnc, k.Name, k.Internal, metasql.ToNanos(k.CreatedAt), metasql.ToNanos(k.LastUsed))
		return nil
	})
}

// GetAccessKey implements meta.Store.
func (s *Store) GetAccessKey(ctx context.Context, id string) (meta.AccessKey, error) {
	var k meta.AccessKey
	err := s.queryRow(ctx, "get access key", func(r pgx.Row) (err error) {
		k, err = scanAccessKey(r)
		if errors.Is(err, pgx.ErrNoRows) {
			return meta.ErrNoAccessKey(id)
		}
		return err
	}, "SELECT "+accessKeyCols+" FROM access_keys WHERE id = $1", id)
	if err != nil {
		return meta.AccessKey{}, err
	}
	return k, nil
}

// ListAccessKeys implements meta.Store: oldest first, ties by ID. A user
// without keys (or an unknown user) has none.
func (s *Store) ListAccessKeys(ctx context.Context, userID string) ([]meta.AccessKey, error) {
	var out []meta.AccessKey
	err := s.read(ctx, "list access keys", func(c *pgx.Conn) error {
		out = nil
		rows, err := c.Query(ctx, "SELECT "+accessKeyCols+" FROM access_keys WHERE user_id = $1 ORDER BY created_at, id", userID)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			k, err := scanAccessKey(rows)
			if err != nil {
				return err
			}
			out = append(out, k)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
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
