package sqlite

import (
	"context"
	"time"

	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/meta/metasql"
)

var (
	insertBucketSQL = metasql.InsertBucketSQL(ph)
	getBucketSQL    = metasql.GetBucketSQL(ph)
	listBucketsSQL  = metasql.ListBucketsSQL(ph)
)

// insertBucket inserts b; its owner must exist.
func insertBucket(ctx context.Context, c *conn, b meta.Bucket, now time.Time) error {
	if err := userExists(ctx, c, b.OwnerID); err != nil {
		return classify(err, "bucket owner")
	}
	_, err := c.ExecContext(ctx, insertBucketSQL, metasql.BucketArgs(b, now)...)
	return classify(err, "bucket %q", b.Name)
}

// CreateBucket implements meta.Store. A zero CreatedAt is set to now and an
// empty Visibility to private.
func (s *Store) CreateBucket(ctx context.Context, b meta.Bucket) error {
	b, err := meta.CheckBucket(b)
	if err != nil {
		return err
	}
	return s.write(ctx, func(ctx context.Context, c *conn) error {
		return insertBucket(ctx, c, b, time.Now())
	})
}

// GetBucket implements meta.Store.
func (s *Store) GetBucket(ctx context.Context, name string) (meta.Bucket, error) {
	return get(ctx, s, "get bucket", metasql.ScanBucket, meta.ErrNoBucket(name), getBucketSQL, name)
}

// ListBuckets implements meta.Store.
func (s *Store) ListBuckets(ctx context.Context, ownerID string) ([]meta.Bucket, error) {
	return list(ctx, s, "list buckets", metasql.ScanBucket, listBucketsSQL, ownerID)
}

// SetBucketVisibility implements meta.Store. NotFound if the bucket is
// missing; InvalidArgument for an unknown visibility.
func (s *Store) SetBucketVisibility(ctx context.Context, name string, v meta.Visibility) error {
	if err := meta.CheckVisibility(v); err != nil {
		return err
	}
	return s.write(ctx, func(ctx context.Context, c *conn) error {
		return mustAffect(ctx, c, meta.ErrNoBucket(name), "set visibility", "UPDATE buckets SET visibility = ? WHERE name = ?", string(v), name)
	})
}

// SetBucketEncryption implements meta.Store.
func (s *Store) SetBucketEncryption(ctx context.Context, name, enc, kmsKey string) error {
	if err := meta.ValidBucketEncryption(enc, kmsKey); err != nil {
		return err
	}
	return s.write(ctx, func(ctx context.Context, c *conn) error {
		return mustAffect(ctx, c, meta.ErrNoBucket(name), "set encryption", "UPDATE buckets SET sse_default = ?, sse_kms_key = ? WHERE name = ?", enc, kmsKey, name)
	})
}

// DeleteBucket implements meta.Store. Its uploads in progress are aborted
// as AbortUpload does, their BlobKey enqueued too.
func (s *Store) DeleteBucket(ctx context.Context, name string) error {
	return s.write(ctx, func(ctx context.Context, c *conn) error {
		now := time.Now()
		owner, err := queryRow(ctx, c, metasql.ScanString, meta.ErrNoBucket(name), "SELECT owner_id FROM buckets WHERE name = ?", name)
		if err != nil {
			return classify(err, "delete bucket %q", name)
		}
		if nonEmpty, err := exists(ctx, c, "SELECT 1 FROM objects WHERE bucket = ? LIMIT 1", name); err != nil || nonEmpty {
			if err == nil {
				err = meta.ErrBucketNotEmpty(name)
			}
			return classify(err, "delete bucket %q", name)
		}
		uploads, err := queryRows(ctx, c, metasql.ScanUpload, "SELECT "+metasql.UploadCols+" FROM uploads WHERE bucket = ?", name)
		if err != nil {
			return classify(err, "uploads of %q", name)
		}
		var freed int64
		var blobs []string
		for _, u := range uploads {
			if u.BlobKey != "" {
				blobs = append(blobs, u.BlobKey) // assembled by the backend, maybe
			}
			n, bs, err := dropUpload(ctx, c, u.ID)
			if err != nil {
				return err
			}
			freed += n
			blobs = append(blobs, bs...)
		}
		if _, err := c.ExecContext(ctx, "DELETE FROM buckets WHERE name = ?", name); err != nil {
			return classify(err, "delete bucket %q", name)
		}
		if err := addUsage(ctx, c, owner, -freed, now); err != nil {
			return err
		}
		return enqueue(ctx, c, now, blobs...)
	})
}
