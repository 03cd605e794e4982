package s3api

import (
	"context"

	"github.com/coffer-storage/coffer/internal/auth"
	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/object"
)

// The services the S3 API calls, declared here by what each group of
// operations needs, so that the handlers run in tests with fakes
// (handler_test.go); server hands in *object.Service and auth's access
// keys (*auth.Keys).
// The contracts are those of the methods of the same names there.

// Buckets is what the bucket operations and listings call.
type Buckets interface {
	ListBuckets(ctx context.Context, a object.Actor) ([]meta.Bucket, error)
	CreateBucket(ctx context.Context, a object.Actor, name string, v meta.Visibility) (meta.Bucket, error)
	CreateLockedBucket(ctx context.Context, a object.Actor, name string, v meta.Visibility) (meta.Bucket, error)
	CreateBucketWith(ctx context.Context, a object.Actor, in object.CreateBucketInput) (meta.Bucket, error)
	GetBucketACL(ctx context.Context, a object.Actor, name string) (meta.Bucket, []meta.Grant, error)
	SetBucketACL(ctx context.Context, a object.Actor, name string, acl object.ACL) error
	GetBucketOwnership(ctx context.Context, a object.Actor, name string) (meta.ObjectOwnership, error)
	SetBucketOwnership(ctx context.Context, a object.Actor, name string, o meta.ObjectOwnership) error
	GetObjectLock(ctx context.Context, a object.Actor, name string) (meta.ObjectLock, error)
	SetObjectLock(ctx context.Context, a object.Actor, name string, d meta.DefaultRetention) (meta.Bucket, error)
	GetBucket(ctx context.Context, a object.Actor, name string) (meta.Bucket, error)
	DeleteBucket(ctx context.Context, a object.Actor, name string) error
	SetBucketEncryption(ctx context.Context, a object.Actor, name, enc, kmsKey string) (meta.Bucket, error)
	// EncryptsByDefault reports whether the server encrypts every new
	// object (GetBucketEncryption's answer for a bucket without a default).
	EncryptsByDefault() bool
	List(ctx context.Context, a object.Actor, bucket string, opts meta.ListOptions) (meta.ListPage, error)
	ListVersions(ctx context.Context, a object.Actor, bucket string, opts meta.VersionListOptions) (meta.VersionPage, error)
	SetBucketVersioning(ctx context.Context, a object.Actor, name string, v meta.Versioning) (meta.Bucket, error)
	GetBucketTags(ctx context.Context, a object.Actor, name string) ([]meta.Tag, error)
	SetBucketTags(ctx context.Context, a object.Actor, name string, tags []meta.Tag) error
	GetBucketLifecycle(ctx context.Context, a object.Actor, name string) (meta.Lifecycle, error)
	SetBucketLifecycle(ctx context.Context, a object.Actor, name string, lc *meta.Lifecycle) error
	GetBucketCORS(ctx context.Context, a object.Actor, name string) (meta.CORS, error)
	SetBucketCORS(ctx context.Context, a object.Actor, name string, c *meta.CORS) error
	// BucketCORS returns a bucket's CORS configuration (nil: none) to
	// anyone, from the cached bucket record.
	BucketCORS(ctx context.Context, name string) (*meta.CORS, error)
	PutBucketPolicy(ctx context.Context, a object.Actor, name string, doc []byte) error
	GetBucketPolicy(ctx context.Context, a object.Actor, name string) (string, error)
	DeleteBucketPolicy(ctx context.Context, a object.Actor, name string) error
	GetBucketPolicyStatus(ctx context.Context, a object.Actor, name string) (bool, error)
	GetPublicAccessBlock(ctx context.Context, a object.Actor, name string) (meta.PublicAccessBlock, error)
	SetPublicAccessBlock(ctx context.Context, a object.Actor, name string, pab *meta.PublicAccessBlock) error
}

// Objects is what the object operations call (and the copies, which read
// their source through Get).
type Objects interface {
	GetVersion(ctx context.Context, a object.Actor, bucket, key, versionID string) (*object.Reader, error)
	Put(ctx context.Context, a object.Actor, in object.PutInput) (meta.Object, error)
	CopyFrom(ctx context.Context, a object.Actor, src *object.Reader, in object.CopyInput) (meta.Object, error)
	Delete(ctx context.Context, a object.Actor, bucket, key string, cond meta.Cond) (meta.Object, error)
	DeleteVersion(ctx context.Context, a object.Actor, bucket, key, versionID string, cond meta.Cond) (meta.Object, error)
	GetTags(ctx context.Context, a object.Actor, bucket, key, versionID string) (meta.Object, error)
	SetTags(ctx context.Context, a object.Actor, bucket, key, versionID string, tags []meta.Tag) (meta.Object, error)
	GetLock(ctx context.Context, a object.Actor, bucket, key, versionID string) (meta.Object, error)
	SetRetention(ctx context.Context, a object.Actor, bucket, key, versionID string, r meta.Retention, bypass bool) (meta.Object, error)
	SetLegalHold(ctx context.Context, a object.Actor, bucket, key, versionID string, on bool) (meta.Object, error)
	GetObjectACL(ctx context.Context, a object.Actor, bucket, key, versionID string) (meta.Object, error)
	SetObjectACL(ctx context.Context, a object.Actor, bucket, key, versionID string, acl object.ACL) (meta.Object, error)
}

// Uploads is what the multipart upload operations call.
type Uploads interface {
	CreateUpload(ctx context.Context, a object.Actor, in object.CreateUploadInput) (meta.Upload, error)
	UploadEncryption(u meta.Upload) object.Encryption
	PutPart(ctx context.Context, a object.Actor, in object.PartInput) (meta.Part, error)
	CopyPart(ctx context.Context, a object.Actor, in object.PartInput, src *object.Reader, offset, length int64) (meta.Part, error)
	GetUpload(ctx context.Context, a object.Actor, bucket, key, id string) (meta.Upload, error)
	CompleteUploadExpecting(ctx context.Context, a object.Actor, bucket, key, id string, parts []meta.CompletePart, cond meta.Cond, want object.Expect) (meta.Object, error)
	AbortUpload(ctx context.Context, a object.Actor, bucket, key, id string) error
	ListParts(ctx context.Context, a object.Actor, bucket, key, id string, after, limit int) (meta.Upload, []meta.Part, bool, error)
	ListUploads(ctx context.Context, a object.Actor, bucket string, opts meta.ListUploadsOptions) ([]meta.Upload, bool, error)
}

// Keys finds the secret of an access key, for SigV4 and SigV2: unknown
// keys and keys of disabled users are InvalidAccessKeyId, expired keys
// ExpiredToken. The principal carries the key's scope.
type Keys interface {
	LookupKey(ctx context.Context, id string) (secret string, p auth.Principal, err error)
}

// Services are the services the API calls, one field per group.
type Services struct {
	Buckets Buckets
	Objects Objects
	Uploads Uploads
	Keys    Keys
}
