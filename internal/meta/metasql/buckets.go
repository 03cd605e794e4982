package metasql

import (
	"context"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

// bucketCols are the columns of a bucket, in scanBucket's order.
const bucketCols = "name, owner_id, visibility, created_at, sse_default, sse_kms_key, gateway, object_count, byte_count, versioning, lifecycle, " +
	"object_lock, lock_mode, lock_days, lock_years, policy"

// scanBucket reads a bucket selected with bucketCols.
func scanBucket(r Row) (meta.Bucket, error) {
	var b meta.Bucket
	var vis, versioning, lockMode string
	var created int64
	var lifecycle, policy *string
	err := r.Scan(&b.Name, &b.OwnerID, &vis, &created, &b.Encryption, &b.EncryptionKMSKey, &b.Gateway, &b.Objects, &b.Bytes, &versioning, &lifecycle,
		&b.ObjectLock.Enabled, &lockMode, &b.ObjectLock.Default.Days, &b.ObjectLock.Default.Years, &policy)
	if policy != nil {
		b.Policy = *policy
	}
	b.Visibility, b.Versioning = meta.Visibility(vis), meta.Versioning(versioning)
	b.ObjectLock.Default.Mode = meta.RetentionMode(lockMode)
	b.CreatedAt = FromNanos(created)
	if err == nil && lifecycle != nil && *lifecycle != "" {
		lc, derr := decodeLifecycle(*lifecycle)
		b.Lifecycle, err = &lc, derr
	}
	return b, err
}

// insertBucketSQL inserts a native bucket: arguments bucketArgs.
func insertBucketSQL(ph PH) string {
	return "INSERT INTO buckets (name, owner_id, visibility, created_at, versioning, object_lock, lock_mode, lock_days, lock_years) VALUES (" +
		values(ph, 1, 9) + ")"
}

// bucketArgs are insertBucketSQL's arguments for b (as meta.CheckBucket
// returned it), created at now unless it says when.
func bucketArgs(b meta.Bucket, now time.Time) []any {
	d := b.ObjectLock.Default
	return []any{b.Name, b.OwnerID, string(b.Visibility), ToNanos(meta.OrNow(b.CreatedAt, now)), string(b.Versioning),
		b.ObjectLock.Enabled, string(d.Mode), d.Days, d.Years}
}

// upsertGatewayBucketSQL creates a gateway bucket or updates the gateway
// bucket of that name: arguments gatewayBucketArgs. It changes no row
// when a native bucket has the name (meta.ErrNotAGateway).
func upsertGatewayBucketSQL(ph PH) string {
	return "INSERT INTO buckets (name, owner_id, visibility, created_at, gateway) VALUES (" + values(ph, 1, 5) + ") " +
		"ON CONFLICT (name) DO UPDATE SET owner_id = excluded.owner_id, visibility = excluded.visibility, gateway = excluded.gateway " +
		"WHERE buckets.gateway <> ''"
}

// gatewayBucketArgs are upsertGatewayBucketSQL's arguments for b (as
// meta.CheckGatewayBucket returned it).
func gatewayBucketArgs(b meta.Bucket, now time.Time) []any {
	return []any{b.Name, b.OwnerID, string(b.Visibility), ToNanos(meta.OrNow(b.CreatedAt, now)), b.Gateway}
}

// listGatewayBucketsSQL lists the gateway buckets by name (scanBucket).
const listGatewayBucketsSQL = "SELECT " + bucketCols + " FROM buckets WHERE gateway <> '' ORDER BY name"

// GetBucket implements meta.Buckets.
func (o bucketOps) GetBucket(ctx context.Context, name string) (meta.Bucket, error) {
	return Get(ctx, o.run, "get bucket", scanBucket, func() error { return meta.ErrNoBucket(name) }, o.sql.buckets.get, name)
}

// ListBuckets implements meta.Buckets.
func (o bucketOps) ListBuckets(ctx context.Context, ownerID string) ([]meta.Bucket, error) {
	return List(ctx, o.run, "list buckets", scanBucket, o.sql.buckets.list, ownerID)
}

// ListGatewayBuckets implements meta.Buckets.
func (o bucketOps) ListGatewayBuckets(ctx context.Context) ([]meta.Bucket, error) {
	return List(ctx, o.run, "list gateway buckets", scanBucket, listGatewayBucketsSQL)
}

// SetBucketVisibility implements meta.Buckets. NotFound if the bucket is
// missing; InvalidArgument for an unknown visibility.
func (o bucketOps) SetBucketVisibility(ctx context.Context, name string, v meta.Visibility) error {
	if err := meta.CheckVisibility(v); err != nil {
		return err
	}
	return o.mustChange(ctx, "set bucket visibility", meta.ErrNoBucket(name), o.sql.buckets.setVisibility, string(v), name)
}

// SetBucketEncryption implements meta.Buckets.
func (o bucketOps) SetBucketEncryption(ctx context.Context, name, enc, kmsKey string) error {
	if err := meta.ValidBucketEncryption(enc, kmsKey); err != nil {
		return err
	}
	return o.mustChange(ctx, "set bucket encryption", meta.ErrNoBucket(name), o.sql.buckets.setEncryption, enc, kmsKey, name)
}

// SetBucketVersioning implements meta.Buckets: a native bucket's state
// changes in one statement; when it changes nothing, the bucket is
// missing (NotFound), a gateway bucket (Conflict) or has object lock and
// is not to be Enabled (ErrLockedBucketVersioning).
func (o bucketOps) SetBucketVersioning(ctx context.Context, name string, v meta.Versioning) error {
	if err := meta.CheckVersioning(v); err != nil {
		return err
	}
	n, err := o.run.Exec(ctx, "set bucket versioning", o.sql.buckets.setVersioning, []any{string(v), name}, nil)
	if err != nil || n > 0 {
		return err
	}
	b, err := o.GetBucket(ctx, name)
	switch {
	case err != nil:
		return err
	case b.ObjectLock.Enabled:
		return meta.ErrLockedBucketVersioning(name)
	}
	return errcode.New(errcode.Conflict, "bucket %q is a gateway bucket: its versions are its backend's", name)
}

// SetBucketObjectLock implements meta.Buckets: one statement; when it
// changes nothing, the bucket is missing (NotFound) or has no object lock
// (ErrLockNotEnabled).
func (o bucketOps) SetBucketObjectLock(ctx context.Context, name string, d meta.DefaultRetention) error {
	if err := meta.CheckDefaultRetention(d); err != nil {
		return err
	}
	n, err := o.run.Exec(ctx, "set bucket object lock", o.sql.buckets.setObjectLock, []any{string(d.Mode), d.Days, d.Years, name}, nil)
	if err != nil || n > 0 {
		return err
	}
	if _, err := o.GetBucket(ctx, name); err != nil {
		return err
	}
	return meta.ErrLockNotEnabled(name)
}

// bucketSQL are the buckets statements of Ops.
type bucketSQL struct {
	get, list          string // the bucket of name; an owner's by name (scanBucket)
	insert, putGateway string // bucketArgs; gatewayBucketArgs
	setVisibility      string // args visibility, name
	setEncryption      string // args sse_default, sse_kms_key, name
	setVersioning      string // args versioning, name (native buckets only; Enabled only with object lock)
	setObjectLock      string // args lock_mode, lock_days, lock_years, name (buckets with object lock only)
}

func newBucketSQL(ph PH) bucketSQL {
	return bucketSQL{
		get:           "SELECT " + bucketCols + " FROM buckets WHERE name = " + ph(1),
		list:          "SELECT " + bucketCols + " FROM buckets WHERE owner_id = " + ph(1) + " ORDER BY name",
		insert:        insertBucketSQL(ph),
		putGateway:    upsertGatewayBucketSQL(ph),
		setVisibility: "UPDATE buckets SET visibility = " + ph(1) + " WHERE name = " + ph(2),
		setEncryption: "UPDATE buckets SET sse_default = " + ph(1) + ", sse_kms_key = " + ph(2) + " WHERE name = " + ph(3),
		setVersioning: "UPDATE buckets SET versioning = " + ph(1) + " WHERE name = " + ph(2) + " AND gateway = ''" +
			" AND (" + ph(1) + " = 'Enabled' OR NOT object_lock)",
		setObjectLock: "UPDATE buckets SET lock_mode = " + ph(1) + ", lock_days = " + ph(2) + ", lock_years = " + ph(3) +
			" WHERE name = " + ph(4) + " AND object_lock",
	}
}

// CreateBucket implements meta.Buckets. A zero CreatedAt is set to now and
// an empty Visibility to private. A missing owner fails the statement with
// a foreign key violation (NotFound), a taken name with a unique one
// (AlreadyExists).
func (o bucketOps) CreateBucket(ctx context.Context, b meta.Bucket) error {
	b, err := meta.CheckBucket(b)
	if err != nil {
		return err
	}
	return noUser(o.exec(ctx, "create bucket "+b.Name, o.sql.buckets.insert, bucketArgs(b, time.Now())...), b.OwnerID)
}

// PutGatewayBucket implements meta.Buckets. A missing owner fails the
// statement with a foreign key violation: NotFound.
func (o bucketOps) PutGatewayBucket(ctx context.Context, b meta.Bucket) error {
	b, err := meta.CheckGatewayBucket(b)
	if err != nil {
		return err
	}
	return noUser(o.mustChange(ctx, "put gateway bucket "+b.Name, meta.ErrNotAGateway(b.Name), o.sql.buckets.putGateway,
		gatewayBucketArgs(b, time.Now())...), b.OwnerID)
}
