package metasql

import (
	"fmt"

	"github.com/coffer-storage/coffer/internal/meta"
)

// InsertKMSKeyGrantSQL records a grant unless it exists: args key_name,
// user_id, created_at (Unix ns).
func InsertKMSKeyGrantSQL(ph PH) string {
	return fmt.Sprintf("INSERT INTO kms_key_grants (key_name, user_id, created_at) VALUES (%s, %s, %s) ON CONFLICT (key_name, user_id) DO NOTHING",
		ph(1), ph(2), ph(3))
}

// KMSKeyGrantArgs are InsertKMSKeyGrantSQL's arguments for g (as
// meta.CheckKMSKeyGrant returned it).
func KMSKeyGrantArgs(g meta.KMSKeyGrant) []any { return []any{g.Key, g.UserID, ToNanos(g.CreatedAt)} }

// KMSKeyGrantsSQL lists every grant (ScanKMSKeyGrant).
const KMSKeyGrantsSQL = "SELECT key_name, user_id, created_at FROM kms_key_grants ORDER BY key_name, user_id"

// ScanKMSKeyGrant reads a row of KMSKeyGrantsSQL.
func ScanKMSKeyGrant(r Row) (meta.KMSKeyGrant, error) {
	var g meta.KMSKeyGrant
	var created int64
	err := r.Scan(&g.Key, &g.UserID, &created)
	g.CreatedAt = FromNanos(created)
	return g, err
}

// KMSKeyGrantSQL selects 1 if user ph(2) has a grant of key ph(1).
func KMSKeyGrantSQL(ph PH) string {
	return "SELECT 1 FROM kms_key_grants WHERE key_name = " + ph(1) + " AND user_id = " + ph(2)
}

// DisallowKMSKeySQL deletes the grant of key ph(1) to user ph(2).
func DisallowKMSKeySQL(ph PH) string {
	return "DELETE FROM kms_key_grants WHERE key_name = " + ph(1) + " AND user_id = " + ph(2)
}
