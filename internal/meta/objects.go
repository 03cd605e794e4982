package meta

import (
	"context"
)

// Objects keeps the object records: reads, writes (which move usage and
// enqueue replaced blobs in the same transaction, see the package doc) and
// listings.
type Objects interface {
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
}
