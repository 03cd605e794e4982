package postgres

import (
	"context"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
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
	err = s.write(ctx, "allow KMS key", func(t *txn) error {
		t.exec(insertKMSKeyGrantSQL, metasql.KMSKeyGrantArgs(g)...)
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
		t.execN(mustAffect(meta.ErrNoKMSKeyGrant(key, userID)), disallowKMSKeySQL, key, userID)
		return nil
	})
}

// KMSKeyAllowed implements meta.Store.
func (s *Store) KMSKeyAllowed(ctx context.Context, key, userID string) (bool, error) {
	ones, err := list(ctx, s, "KMS key grant", metasql.ScanInt64, kmsKeyGrantSQL, key, userID)
	return len(ones) > 0, err
}

// ListKMSKeyGrants implements meta.Store.
func (s *Store) ListKMSKeyGrants(ctx context.Context) ([]meta.KMSKeyGrant, error) {
	return list(ctx, s, "list KMS key grants", metasql.ScanKMSKeyGrant, metasql.KMSKeyGrantsSQL)
}
