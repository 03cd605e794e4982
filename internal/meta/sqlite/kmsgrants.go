package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/meta/metasql"
)

// AllowKMSKey implements meta.Store.
func (s *Store) AllowKMSKey(ctx context.Context, g meta.KMSKeyGrant) error {
	g, err := meta.CheckKMSKeyGrant(g, time.Now())
	if err != nil {
		return err
	}
	created := metasql.ToNanos(g.CreatedAt)
	return s.write(ctx, func(ctx context.Context, c *conn) error {
		_, err := c.ExecContext(ctx, metasql.InsertKMSKeyGrantSQL(func(int) string { return "?" }), g.Key, g.UserID, created)
		return classify(err, "allow KMS key %q to user %q", g.Key, g.UserID)
	})
}

// DisallowKMSKey implements meta.Store.
func (s *Store) DisallowKMSKey(ctx context.Context, key, userID string) error {
	return s.write(ctx, func(ctx context.Context, c *conn) error {
		res, err := c.ExecContext(ctx, "DELETE FROM kms_key_grants WHERE key_name = ? AND user_id = ?", key, userID)
		if err != nil {
			return classify(err, "disallow KMS key %q to user %q", key, userID)
		}
		return mustAffect(res, meta.ErrNoKMSKeyGrant(key, userID))
	})
}

// KMSKeyAllowed implements meta.Store.
func (s *Store) KMSKeyAllowed(ctx context.Context, key, userID string) (bool, error) {
	if err := s.ready(); err != nil {
		return false, err
	}
	var one int
	err := s.read().QueryRowContext(ctx, "SELECT 1 FROM kms_key_grants WHERE key_name = ? AND user_id = ?", key, userID).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, classify(err, "KMS key grant")
}

// ListKMSKeyGrants implements meta.Store.
func (s *Store) ListKMSKeyGrants(ctx context.Context) ([]meta.KMSKeyGrant, error) {
	if err := s.ready(); err != nil {
		return nil, err
	}
	rows, err := s.read().QueryContext(ctx, metasql.KMSKeyGrantsSQL)
	if err != nil {
		return nil, classify(err, "list KMS key grants")
	}
	defer rows.Close()
	var out []meta.KMSKeyGrant
	for rows.Next() {
		var g meta.KMSKeyGrant
		var created int64
		if err := rows.Scan(&g.Key, &g.UserID, &created); err != nil {
			return nil, classify(err, "list KMS key grants")
		}
		g.CreatedAt = metasql.FromNanos(created)
		out = append(out, g)
	}
	return out, classify(rows.Err(), "list KMS key grants")
}
