package metasql

import (
	"fmt"
)

// InsertKMSKeyGrantSQL records a grant unless it exists: args key_name,
// user_id, created_at (Unix ns).
func InsertKMSKeyGrantSQL(ph func(int) string) string {
	return fmt.Sprintf("INSERT INTO kms_key_grants (key_name, user_id, created_at) VALUES (%s, %s, %s) ON CONFLICT (key_name, user_id) DO NOTHING",
		ph(1), ph(2), ph(3))
}

// KMSKeyGrantsSQL lists every grant: key_name, user_id, created_at.
const KMSKeyGrantsSQL = "SELECT key_name, user_id, created_at FROM kms_key_grants ORDER BY key_name, user_id"
