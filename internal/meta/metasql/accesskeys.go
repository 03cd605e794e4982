package metasql

import "github.com/coffer-storage/coffer/internal/meta"

// AccessKeyCols are the columns of an access key, in ScanAccessKey's
// order.
const AccessKeyCols = "id, user_id, secret_enc, name, internal, created_at, last_used"

// ScanAccessKey reads an access key selected with AccessKeyCols.
func ScanAccessKey(r Row) (meta.AccessKey, error) {
	var k meta.AccessKey
	var created, used int64
	err := r.Scan(&k.ID, &k.UserID, &k.SecretEnc, &k.Name, &k.Internal, &created, &used)
	k.CreatedAt, k.LastUsed = FromNanos(created), FromNanos(used)
	return k, err
}

// InsertAccessKeySQL inserts an access key: arguments AccessKeyArgs.
func InsertAccessKeySQL(ph PH) string {
	return "INSERT INTO access_keys (" + AccessKeyCols + ") VALUES (" + Values(ph, 1, 7) + ")"
}

// AccessKeyArgs are InsertAccessKeySQL's arguments for k (as
// meta.CheckAccessKey returned it).
func AccessKeyArgs(k meta.AccessKey) []any {
	return []any{k.ID, k.UserID, k.SecretEnc, k.Name, k.Internal, ToNanos(k.CreatedAt), ToNanos(k.LastUsed)}
}
