package metasql

import (
	"context"
	"encoding/json"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"

	"github.com/coffer-storage/coffer/internal/meta"
)

// accessKeyCols are the columns of an access key, in scanAccessKey's
// order.
const accessKeyCols = "id, user_id, secret_enc, name, internal, created_at, last_used, token, scope, expires_at"

// scanAccessKey reads an access key selected with accessKeyCols.
func scanAccessKey(r Row) (meta.AccessKey, error) {
	var k meta.AccessKey
	var created, used, expires int64
	var scope string
	err := r.Scan(&k.ID, &k.UserID, &k.SecretEnc, &k.Name, &k.Internal, &created, &used, &k.Token, &scope, &expires)
	k.CreatedAt, k.LastUsed, k.ExpiresAt = FromNanos(created), FromNanos(used), FromNanos(expires)
	if err == nil && scope != "" {
		if jerr := json.Unmarshal([]byte(scope), &k.Scope); jerr != nil {
			return k, errcode.Wrap(errcode.Internal, jerr, "access key %s: stored scope is malformed", k.ID)
		}
	}
	return k, err
}

// encodeScope is how a key's scope is stored: JSON, "" when unscoped.
func encodeScope(s meta.KeyScope) string {
	if !s.Scoped() {
		return ""
	}
	b, _ := json.Marshal(s) // strings only: cannot fail
	return string(b)
}

// insertAccessKeySQL inserts an access key: arguments accessKeyArgs.
func insertAccessKeySQL(ph PH) string {
	return "INSERT INTO access_keys (" + accessKeyCols + ") VALUES (" + values(ph, 1, 10) + ")"
}

// accessKeyArgs are insertAccessKeySQL's arguments for k (as
// meta.CheckAccessKey returned it).
func accessKeyArgs(k meta.AccessKey) []any {
	return []any{k.ID, k.UserID, k.SecretEnc, k.Name, k.Internal, ToNanos(k.CreatedAt), ToNanos(k.LastUsed),
		k.Token, encodeScope(k.Scope), ToNanos(k.ExpiresAt)}
}

// GetAccessKey implements meta.AccessKeys.
func (o accessKeyOps) GetAccessKey(ctx context.Context, id string) (meta.AccessKey, error) {
	return Get(ctx, o.run, "get access key", scanAccessKey, func() error { return meta.ErrNoAccessKey(id) }, o.sql.keys.get, id)
}

// ListAccessKeys implements meta.AccessKeys: oldest first, ties by ID. A user
// without keys (or an unknown user) has none.
func (o accessKeyOps) ListAccessKeys(ctx context.Context, userID string) ([]meta.AccessKey, error) {
	return List(ctx, o.run, "list access keys", scanAccessKey, o.sql.keys.list, userID)
}

// TouchAccessKey implements meta.AccessKeys.
func (o accessKeyOps) TouchAccessKey(ctx context.Context, id string, t time.Time) error {
	return o.mustChange(ctx, "touch access key", meta.ErrNoAccessKey(id), o.sql.keys.touch, ToNanos(t), id)
}

// accessKeySQL are the access_keys statements of Ops.
type accessKeySQL struct {
	get, list string // the key of id; the keys of a user, oldest first (scanAccessKey)
	insert    string // accessKeyArgs
	touch     string // args last_used, id
}

func newAccessKeySQL(ph PH) accessKeySQL {
	return accessKeySQL{
		get:    "SELECT " + accessKeyCols + " FROM access_keys WHERE id = " + ph(1),
		list:   "SELECT " + accessKeyCols + " FROM access_keys WHERE user_id = " + ph(1) + " ORDER BY created_at, id",
		insert: insertAccessKeySQL(ph),
		touch:  "UPDATE access_keys SET last_used = " + ph(1) + " WHERE id = " + ph(2),
	}
}

// CreateAccessKey implements meta.AccessKeys. A zero CreatedAt is set to now. A
// missing user fails the statement with a foreign key violation: NotFound.
func (o accessKeyOps) CreateAccessKey(ctx context.Context, k meta.AccessKey) error {
	k, err := meta.CheckAccessKey(k, time.Now())
	if err != nil {
		return err
	}
	return noUser(o.exec(ctx, "create access key "+k.ID, o.sql.keys.insert, accessKeyArgs(k)...), k.UserID)
}
