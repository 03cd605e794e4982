package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/coffer-storage/coffer/internal/errcode"
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
	err = s.write(ctx, "allow KMS key", func(t *txn) error {
		t.exec(metasql.InsertKMSKeyGrantSQL(dollar), g.Key, g.UserID, created)
		return nil
	})
	if isSQLState(err, "23503") {
		return errcode.New(errcode.NotFound, "no user %q", g.UserID)
	}
	return err
}

// DisallowKMSKey implements meta.Store.
func (s *Store) DisallowKMSKey(ctx context.Context, key, userID string) error {
	return s.write(ctx, "disallow KMS key", func(t *txn) error {
		t.execN(mustAffect(meta.ErrNoKMSKeyGrant(key, userID)), "DELETE FROM kms_key_grants WHERE key_name = $1 AND user_id = $2", key, userID)
		return nil
	})
}

// KMSKeyAllowed implements meta.Store.
func (s *Store) KMSKeyAllowed(ctx context.Context, key, userID string) (bool, error) {
	allowed := false
	err := s.queryRow(ctx, "KMS key grant", func(r pgx.Row) error {
		var one int
		err := r.Scan(&one)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		allowed = err == nil
		return err
	}, "SELECT 1 FROM kms_key_grants WHERE key_name = $1 AND user_id = $2", key, userID)
	return allowed, err
}

// ListKMSKeyGrants implements meta.Store.
func (s *Store) ListKMSKeyGrants(ctx context.Context) ([]meta.KMSKeyGrant, error) {
	var out []meta.KMSKeyGrant
	err := s.read(ctx, "list KMS key grants", func(c *pgx.Conn) error {
		rows, err := c.Query(ctx, metasql.KMSKeyGrantsSQL)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (meta.KMSKeyGrant, error) {
			var g meta.KMSKeyGrant
			var created int64
			err := r.Scan(&g.Key, &g.UserID, &created)
			g.CreatedAt = metasql.FromNanos(created)
			return g, err
		})
		return err
	})
	return out, err
}
