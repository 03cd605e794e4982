package metasql

import (
	"time"

	"github.com/coffer-storage/coffer/internal/meta"
)

// BucketCols are the columns of a bucket, in ScanBucket's order.
const BucketCols = "name, owner_id, visibility, created_at, sse_default, sse_kms_key, gateway, object_count, byte_count"

// ScanBucket reads a bucket selected with BucketCols.
func ScanBucket(r Row) (meta.Bucket, error) {
	var b meta.Bucket
	var vis string
	var created int64
	err := r.Scan(&b.Name, &b.OwnerID, &vis, &created, &b.Encryption, &b.EncryptionKMSKey, &b.Gateway, &b.Objects, &b.Bytes)
	b.Visibility = meta.Visibility(vis)
	b.CreatedAt = FromNanos(created)
	return b, err
}

// InsertBucketSQL inserts a native bucket: arguments BucketArgs.
func InsertBucketSQL(ph PH) string {
	return "INSERT INTO buckets (name, owner_id, visibility, created_at) VALUES (" + Values(ph, 1, 4) + ")"
}

// BucketArgs are InsertBucketSQL's arguments for b (as meta.CheckBucket
// returned it), created at now unless it says when.
func BucketArgs(b meta.Bucket, now time.Time) []any {
	return []any{b.Name, b.OwnerID, string(b.Visibility), ToNanos(meta.OrNow(b.CreatedAt, now))}
}

// UpsertGatewayBucketSQL creates a gateway bucket or updates the gateway
// bucket of that name: arguments GatewayBucketArgs. It changes no row
// when a native bucket has the name (meta.ErrNotAGateway).
func UpsertGatewayBucketSQL(ph PH) string {
	return "INSERT INTO buckets (name, owner_id, visibility, created_at, gateway) VALUES (" + Values(ph, 1, 5) + ") " +
		"ON CONFLICT (name) DO UPDATE SET owner_id = excluded.owner_id, visibility = excluded.visibility, gateway = excluded.gateway " +
		"WHERE buckets.gateway <> ''"
}

// GatewayBucketArgs are UpsertGatewayBucketSQL's arguments for b (as
// meta.CheckGatewayBucket returned it).
func GatewayBucketArgs(b meta.Bucket, now time.Time) []any {
	return append(BucketArgs(b, now), b.Gateway)
}

// GetBucketSQL reads the bucket named ph(1) (ScanBucket).
func GetBucketSQL(ph PH) string {
	return "SELECT " + BucketCols + " FROM buckets WHERE name = " + ph(1)
}

// ListBucketsSQL lists the buckets of owner ph(1) by name (ScanBucket).
func ListBucketsSQL(ph PH) string {
	return "SELECT " + BucketCols + " FROM buckets WHERE owner_id = " + ph(1) + " ORDER BY name"
}

// ListGatewayBucketsSQL lists the gateway buckets by name (ScanBucket).
const ListGatewayBucketsSQL = "SELECT " + BucketCols + " FROM buckets WHERE gateway <> '' ORDER BY name"
