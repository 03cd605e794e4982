package meta

import (
	"context"
)

// Buckets keeps the bucket records, native and gateway buckets alike.
type Buckets interface {
	// CreateBucket: AlreadyExists if the name is taken (by a native or a
	// gateway bucket); NotFound if the owner does not exist. It makes
	// native buckets only (b.Gateway is ignored; see PutGatewayBucket).
	// With b.ObjectLock.Enabled the bucket has object lock, its default
	// retention b.ObjectLock.Default (InvalidArgument unless
	// CheckDefaultRetention), and versioning Enabled whatever
	// b.Versioning says; without, its Versioning is Unversioned.
	CreateBucket(ctx context.Context, b Bucket) error
	GetBucket(ctx context.Context, name string) (Bucket, error)
	// ListBuckets returns the owner's buckets sorted by name.
	ListBuckets(ctx context.Context, ownerID string) ([]Bucket, error)
	SetBucketVisibility(ctx context.Context, name string, v Visibility) error
	// SetBucketEncryption sets a bucket's default encryption (see
	// Bucket.Encryption): NotFound if missing; InvalidArgument unless
	// ValidBucketEncryption.
	SetBucketEncryption(ctx context.Context, name, enc, kmsKey string) error
	// SetBucketVersioning sets a native bucket's versioning state:
	// InvalidArgument unless CheckVersioning; NotFound if missing;
	// Conflict for a gateway bucket (its versions are its backend's);
	// ErrLockedBucketVersioning for Suspended on a bucket with object
	// lock.
	SetBucketVersioning(ctx context.Context, name string, v Versioning) error
	// SetBucketObjectLock sets the default retention of a bucket with
	// object lock (the zero DefaultRetention: none): InvalidArgument
	// unless CheckDefaultRetention; NotFound if missing;
	// ErrLockNotEnabled for a bucket without object lock (a gateway
	// bucket included). GetBucket returns it (Bucket.ObjectLock).
	SetBucketObjectLock(ctx context.Context, name string, d DefaultRetention) error
	// GetBucketTags returns a bucket's tag set: NotFound if the bucket is
	// missing, ErrNoTagSet if it has none. GetBucket does not read it.
	GetBucketTags(ctx context.Context, name string) ([]Tag, error)
	// SetBucketTags replaces a native bucket's tag set (nil: none):
	// InvalidArgument unless CheckTags(tags, MaxBucketTags); NotFound if
	// missing; Conflict for a gateway bucket.
	SetBucketTags(ctx context.Context, name string, tags []Tag) error
	// DeleteBucket: NotFound if missing; Conflict if it holds objects
	// (any version, delete markers included).
	// Multipart uploads in progress in it are aborted in the same
	// transaction (their blobs enqueued, their usage released).
	DeleteBucket(ctx context.Context, name string) error
	// PutGatewayBucket creates the gateway bucket b (b.Gateway != "") or,
	// when a gateway bucket of that name exists, sets its owner,
	// visibility and gateway URL. Conflict (Detail "reason" =
	// "not_a_gateway") if a native bucket has the name, NotFound if the
	// owner does not exist, InvalidArgument without a Gateway.
	PutGatewayBucket(ctx context.Context, b Bucket) error
	// ListGatewayBuckets lists every gateway bucket, by name.
	ListGatewayBuckets(ctx context.Context) ([]Bucket, error)
}
