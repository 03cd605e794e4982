package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/meta/metasql"
)

const accessKeyCols = "id, user_id, secret_enc, name, internal, created_at, last_used"

func scanAccessKey(r scanner) (meta.AccessKey, error) {
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
	return s.write(ctx, func(ctx context.Context, c *conn) error {
		var one int
		err := c.QueryRowContext(ctx, "SELECT 1 FROM users WHERE id = ?", k.UserID).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return meta.ErrNoUser(k.UserID)
		}
		if err != nil {
			return classify(err, "access key owner")
		}
		_, err = c.ExecContext(ctx, "INSERT INTO access_keys ("+accessKeyCols+") VALUES (?, ?, ?, ?, ?, ?, ?)",
			k.ID, k.UserID, k.SecretEnc, k.Name, k.Internal, metasql.ToNanos(k.CreatedAt), metasql.ToNanos(k.LastUsed))
		return classify(err, "access key %q", k.ID)
	})
}

// GetAccessKey implements meta.Store.
func (s *Store) GetAccessKey(ctx context.Context, id string) (meta.AccessKey, error) {
	if err := s.ready(); err != nil {
		return meta.AccessKey{}, err
	}
	k, err := scanAccessKey(s.read().QueryRowContext(ctx, "SELECT "+accessKeyCols+" FROM access_keys WHERE id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return meta.AccessKey{}, meta.ErrNoAccessKey(id)
	}
	if err != nil {
		return meta.AccessKey{}, classify(err, "get access key")
	}
	return k, nil
}

// ListAccessKeys implements meta.Store: oldest first, ties by ID. A user
// without keys (or an unknown user) has none.
func (s *Store) ListAccessKeys(ctx context.Context, userID string) ([]meta.AccessKey, error) {
	if err := s.ready(); err != nil {
		return nil, err
	}
	rows, err := s.read().QueryContext(ctx, "SELECT "+accessKeyCols+" FROM access_keys WHERE user_id = ? ORDER BY created_at, id", userID)
	if err != nil {
		return nil, classify(err, "list access keys")
	}
	defer rows.Close()
	var out []meta.AccessKey
	for rows.Next() {
		k, err := scanAccessKey(rows)
		if err != nil {
			return nil, classify(err, "list access keys")
		}
		out = append(out, k)
	}
	if err := rows.Err(); err != nil {
		return nil, classify(err, "list access keys")
	}
	return out, nil
}

// DeleteAccessKey implements meta.Store.
func (s *Store) DeleteAccessKey(ctx context.Context, userID, id string) error {
	return s.write(ctx, func(ctx context.Context, c *conn) error {
		res, err := c.ExecContext(ctx, "DELETE FROM access_keys WHERE id = ? AND user_id = ?", id, userID)
		if err != nil {
			return classify(err, "delete access key")
		}
		return mustAffect(res, meta.ErrNoAccessKey(id))
	})
}

// TouchAccessKey implements meta.Store.
func (s *Store) TouchAccessKey(ctx context.Context, id string, t time.Time) error {
	return s.write(ctx, func(ctx context.Context, c *conn) error {
		res, err := c.ExecContext(ctx, "UPDATE access_keys SET last_used = ? WHERE id = ?", metasql.ToNanos(t), id)
		if err != nil {
			return classify(err, "touch access key")
		}
		return mustAffect(res, meta.ErrNoAccessKey(id))
	})
}
