package sqlite

import (
	"context"
	"time"

	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/meta/metasql"
)

var (
	insertKMSKeyGrantSQL = metasql.InsertKMSKeyGrantSQL(ph)
	kmsKeyGrantSQL       = metasql.KMSKeyGrantSQL(ph)
	disallowKMSKeySQL    = metasql.DisallowKMSKeySQL(ph)
)

// AllowKMSKey implements meta.Store.
func (s *Store) AllowKMSKey(ctx context.Context, g meta.KMSKeyGrant) error {
	g, err := meta.CheckKMSKeyGrant(g, time.Now())
	if err != nil {
		return err
	}
	return s.write(ctx, func(ctx context.Context, c *conn) error {
		_, err := c.ExecContext(ctx, insertKMSKeyGrantSQL, metasql.KMSKeyGrantArgs(g)...)
		return classify(err, "allow KMS key %q to user %q", g.Key, g.UserID)
	})
}

// DisallowKMSKey implements meta.Store.
func (s *Store) DisallowKMSKey(ctx context.Context, key, userID string) error {
	return s.write(ctx, func(ctx context.Context, c *conn) error {
		return mustAffect(ctx, c, meta.ErrNoKMSKeyGrant(key, userID), "disallow KMS key", disallowKMSKeySQL, key, userID)
	})
}

// KMSKeyAllowed implements meta.Store.
func (s *Store) KMSKeyAllowed(ctx context.Context, key, userID string) (bool, error) {
	if err := s.ready(); err != nil {
		return false, err
	}
	allowed, err := exists(ctx, s.read(), kmsKeyGrantSQL, key, userID)
	return allowed, classify(err, "KMS key grant")
}

// ListKMSKeyGrants implements meta.Store.
func (s *Store) ListKMSKeyGrants(ctx context.Context) ([]meta.KMSKeyGrant, error) {
	return list(ctx, s, "list KMS key grants", metasql.ScanKMSKeyGrant, metasql.KMSKeyGrantsSQL)
}
