// Package meta defines Coffer's metadata store: users, sessions, buckets,
// objects and the queue of blobs to reclaim. Two backends implement it
// (sqlite for the embedded shape, postgres for scale-out) and both must pass
// the conformance suite in package metatest.
//
// # Contract
//
// Every method is one atomic operation: it either fully happens and is
// durable when it returns nil, or it changes nothing. Methods that replace or
// remove an object enqueue the object's blob key for reclamation in the same
// transaction, so a blob is never leaked and never reclaimed while a row
// still points at it. Usage counters move in the same transaction as the
// objects they count, so they are exact under any concurrency.
//
// Errors are classified into errcode codes: NotFound, AlreadyExists,
// Conflict, PreconditionFailed, QuotaExceeded, Unavailable (store down or
// overloaded). Keys compare as raw bytes (memcmp order) in every backend.
package meta

import (
	"context"
	"time"
)

// Visibility says who may read a bucket's objects.
type Visibility string

// Visibilities.
const (
	Private    Visibility = "private"     // owner only
	PublicRead Visibility = "public-read" // anyone may GET/HEAD objects
)

// Valid reports whether v is a known visibility.
func (v Visibility) Valid() bool { return v == Private || v == PublicRead }

// User is an account.
type User struct {
	ID           string
	Email        string // normalised lower case; unique
	PasswordHash string // PHC string (argon2id)
	QuotaBytes   int64  // 0 means unlimited
	UsageBytes   int64  // sum of the sizes of the objects in buckets the user owns
	Disabled     bool
	CreatedAt    time.Time
}

// RefreshToken is one link of a rotating refresh-token chain. Only the
// SHA-256 of the token is stored.
type RefreshToken struct {
	Hash      string // hex SHA-256 of the opaque token; unique
	UserID    string
	Family    string // all rotations of one login share a family
	CreatedAt time.Time
	ExpiresAt time.Time
	Used      bool // rotated already; presenting it again revokes the family
	Revoked   bool
}

// Bucket is a named container of objects. Names are globally unique.
type Bucket struct {
	Name       string
	OwnerID    string
	Visibility Visibility
	CreatedAt  time.Time
}

// Object is the metadata of one stored object.
type Object struct {
	Bucket      string
	Key         string
	Size        int64
	ETag        string // without quotes: MD5 hex, or "<md5 of md5s>-N" for multipart
	SHA256      string // hex
	ContentType string
	Metadata    map[string]string // user metadata (x-amz-meta-*), lower-case names
	BlobKey     string            // where the bytes live in the blob store
	ModTime     time.Time         // last modification (Last-Modified)
}

// Cond is a precondition on the current object at a key, checked inside the
// same transaction as the write.
type Cond struct {
	IfNoneMatch bool   // the key must not exist (create-only)
	IfMatch     string // the current object's ETag must equal this
}

// Put is one object write for PutObjects.
type Put struct {
	Object Object
	Cond   Cond
}

// Garbage is a blob queued for reclamation.
type Garbage struct {
	ID        int64
	BlobKey   string
	CreatedAt time.Time
}

// ListOptions selects a page of a bucket's objects.
type ListOptions struct {
	Prefix     string // only keys starting with Prefix
	Delimiter  string // if set, keys with Delimiter after Prefix roll up into CommonPrefixes
	StartAfter string // only entries after this (a key, or a common prefix returned earlier)
	Limit      int    // max entries (objects + common prefixes); 0 means 1000
}

// ListPage is one page of a listing, in byte order of keys.
type ListPage struct {
	Objects        []Object
	CommonPrefixes []string
	// Truncated says there is more; continue with StartAfter = NextStartAfter.
	Truncated      bool
	NextStartAfter string
}

// Store is a metadata backend. All methods are safe for concurrent use.
type Store interface {
	// CreateUser creates u and its default bucket b (b.OwnerID == u.ID) in
	// one transaction. AlreadyExists if the email or bucket name is taken.
	CreateUser(ctx context.Context, u User, b Bucket) error
	GetUser(ctx context.Context, id string) (User, error)
	// GetUserByEmail looks up by normalised email; NotFound if none.
	GetUserByEmail(ctx context.Context, email string) (User, error)
	// SetQuota sets a user's quota in bytes (0 = unlimited).
	SetQuota(ctx context.Context, userID string, quotaBytes int64) error

	CreateRefreshToken(ctx context.Context, t RefreshToken) error
	// RotateRefreshToken consumes the token with hash oldHash and stores
	// next in its place (next.UserID and next.Family are taken from the old
	// token), returning the stored next. Unauthenticated if the old token
	// is unknown, expired or revoked. If it was already used, the whole
	// family is revoked (reuse detection) and Unauthenticated is returned.
	// Exactly one of many concurrent rotations of one token succeeds.
	RotateRefreshToken(ctx context.Context, oldHash string, next RefreshToken, now time.Time) (RefreshToken, error)
	// RevokeRefreshFamily revokes every token of the family that the token
	// with hash belongs to. NotFound if the hash is unknown.
	RevokeRefreshFamily(ctx context.Context, hash string) error
	// DeleteExpiredRefreshTokens removes tokens that expired before t.
	DeleteExpiredRefreshTokens(ctx context.Context, before time.Time) (int, error)

	// CreateBucket: AlreadyExists if the name is taken; NotFound if the
	// owner does not exist.
	CreateBucket(ctx context.Context, b Bucket) error
	GetBucket(ctx context.Context, name string) (Bucket, error)
	// ListBuckets returns the owner's buckets sorted by name.
	ListBuckets(ctx context.Context, ownerID string) ([]Bucket, error)
	SetBucketVisibility(ctx context.Context, name string, v Visibility) error
	// DeleteBucket: NotFound if missing; Conflict if it holds objects.
	DeleteBucket(ctx context.Context, name string) error

	// GetObject: NotFound if the bucket or key is missing.
	GetObject(ctx context.Context, bucket, key string) (Object, error)
	// PutObjects writes all puts in one transaction, all or nothing. For
	// each put: NotFound if the bucket is missing; PreconditionFailed if its
	// Cond fails; QuotaExceeded if the bucket owner's usage would pass its
	// quota (growth only: a put that shrinks usage always passes). Replaced
	// objects are returned (zero Object where nothing was replaced) and
	// their blobs enqueued as garbage.
	PutObjects(ctx context.Context, puts []Put) ([]Object, error)
	// DeleteObject removes the object at bucket/key if cond holds, returns
	// it and enqueues its blob. NotFound if missing.
	DeleteObject(ctx context.Context, bucket, key string, cond Cond) (Object, error)
	// MoveObject renames src to dst (buckets may differ), keeping the blob.
	// dstCond applies to the object currently at dst, which is replaced
	// (and its blob enqueued). Usage moves between owners with a quota check
	// on the destination owner. Moving a key onto itself is a no-op. Returns
	// the object at its new place.
	MoveObject(ctx context.Context, srcBucket, srcKey, dstBucket, dstKey string, dstCond Cond) (Object, error)
	// ListObjects returns one page. NotFound if the bucket is missing.
	ListObjects(ctx context.Context, bucket string, opts ListOptions) (ListPage, error)

	// ListGarbage returns up to limit queued blobs enqueued before t, oldest first.
	ListGarbage(ctx context.Context, before time.Time, limit int) ([]Garbage, error)
	// DeleteGarbage removes queue entries (after their blobs are deleted).
	DeleteGarbage(ctx context.Context, ids []int64) error
	// ReferencedBlobs returns which of keys a row still points at (objects
	// or the garbage queue), for orphan collection.
	ReferencedBlobs(ctx context.Context, keys []string) (map[string]bool, error)

	// Ping checks the store is reachable (for /readyz).
	Ping(ctx context.Context) error
	Close() error
}
