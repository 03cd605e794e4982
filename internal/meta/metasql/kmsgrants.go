package metasql

import (
	"context"
	"fmt"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

// insertKMSKeyGrantSQL records a grant unless it exists: args key_name,
// user_id, created_at (Unix ns).
func insertKMSKeyGrantSQL(ph PH) string {
	return fmt.Sprintf("INSERT INTO kms_key_grants (key_name, user_id, created_at) VALUES (%s, %s, %s) ON CONFLICT (key_name, user_id) DO NOTHING",
		ph(1), ph(2), ph(3))
}

// kmsKeyGrantArgs are insertKMSKeyGrantSQL's arguments for g (as
// meta.CheckKMSKeyGrant returned it).
func kmsKeyGrantArgs(g meta.KMSKeyGrant) []any { return []any{g.Key, g.UserID, ToNanos(g.CreatedAt)} }

// kmsKeyGrantsSQL lists every grant (scanKMSKeyGrant).
const kmsKeyGrantsSQL = "SELECT key_name, user_id, created_at FROM kms_key_grants ORDER BY key_name, user_id"

// scanKMSKeyGrant reads a row of kmsKeyGrantsSQL.
func scanKMSKeyGrant(r Row) (meta.KMSKeyGrant, error) {
	var g meta.KMSKeyGrant
	var created int64
	err := r.Scan(&g.Key, &g.UserID, &created)
	g.CreatedAt = FromNanos(created)
	return g, err
}

// disallowKMSKeySQL deletes the grant of key ph(1) to user ph(2).
func disallowKMSKeySQL(ph PH) string {
	return "DELETE FROM kms_key_grants WHERE key_name = " + ph(1) + " AND user_id = " + ph(2)
}

// KMSKeyAllowed implements meta.KeyGrants.
func (o keyGrantOps) KMSKeyAllowed(ctx context.Context, key, userID string) (bool, error) {
	ones, err := List(ctx, o.run, "KMS key grant", ScanInt64, o.sql.grants.allowed, key, userID)
	return len(ones) > 0, err
}

// ListKMSKeyGrants implements meta.KeyGrants.
func (o keyGrantOps) ListKMSKeyGrants(ctx context.Context) ([]meta.KMSKeyGrant, error) {
	return List(ctx, o.run, "list KMS key grants", scanKMSKeyGrant, kmsKeyGrantsSQL)
}

// AllowKMSKey implements meta.KeyGrants. A missing user fails the statement
// with a foreign key violation: NotFound.
func (o keyGrantOps) AllowKMSKey(ctx context.Context, g meta.KMSKeyGrant) error {
	g, err := meta.CheckKMSKeyGrant(g, time.Now())
	if err != nil {
		return err
	}
	return noUser(o.exec(ctx, "allow KMS key", o.sql.grants.insert, kmsKeyGrantArgs(g)...), g.UserID)
}

// noUser is meta.ErrNoUser for err, the NotFound of a statement that
// failed a foreign key to users.
func noUser(err error, id string) error {
	if errcode.Is(err, errcode.NotFound) {
		return meta.ErrNoUser(id)
	}
	return err
}

// DisallowKMSKey implements meta.KeyGrants.
func (o keyGrantOps) DisallowKMSKey(ctx context.Context, key, userID string) error {
	return o.mustChange(ctx, "disallow KMS key", meta.ErrNoKMSKeyGrant(key, userID), o.sql.grants.disallow, key, userID)
}

// grantSQL are the kms_key_grants statements of Ops.
type grantSQL struct {
	allowed          string // 1 if user ph(2) has a grant of key ph(1)
	insert, disallow string
}

func newGrantSQL(ph PH) grantSQL {
	return grantSQL{
		allowed:  "SELECT 1 FROM kms_key_grants WHERE key_name = " + ph(1) + " AND user_id = " + ph(2),
		insert:   insertKMSKeyGrantSQL(ph),
		disallow: disallowKMSKeySQL(ph),
	}
}
