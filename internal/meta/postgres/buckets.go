package postgres

import (
	"context"

	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/meta/metasql"
)

var (
	insertBucketSQL = metasql.InsertBucketSQL(ph)
	getBucketSQL    = metasql.GetBucketSQL(ph)
	listBucketsSQL  = metasql.ListBucketsSQL(ph)
)

// insertBucket queues the insertion of b. A missing owner fails the
// statement with a foreign key violation, which is NotFound; a taken name
// with a unique violation, which is AlreadyExists.
func insertBucket(t *txn, b meta.Bucket) {
	t.exec(insertBucketSQL, metasql.BucketArgs(b, t.now)...)
}

// CreateBucket implements meta.Store. A zero CreatedAt is set to now and an
// empty Visibility to private.
func (s *Store) CreateBucket(ctx context.Context, b meta.Bucket) error {
	b, err := meta.CheckBucket(b)
	if err != nil {
		return err
	}
	return s.write(ctx, "create bucket "+b.Name, func(t *txn) error {
		insertBucket(t, b)
		return nil
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
	return s.write(ctx, "set bucket visibility", func(t *txn) error {
		t.execN(mustAffect(meta.ErrNoBucket(name)), "UPDATE buckets SET visibility = $1 WHERE name = $2", string(v), name)
		return nil
	})
}

// SetBucketEncryption implements meta.Store.
func (s *Store) SetBucketEncryption(ctx context.Context, name, enc, kmsKey string) error {
	if err := meta.ValidBucketEncryption(enc, kmsKey); err != nil {
		return err
	}
	return s.write(ctx, "set bucket encryption", func(t *txn) error {
		t.execN(mustAffect(meta.ErrNoBucket(name)), "UPDATE buckets SET sse_default = $1, sse_kms_key = $2 WHERE name = $3", enc, kmsKey, name)
		return nil
	})
}

// DeleteBucket implements meta.Store. Its uploads in progress are aborted
// as AbortUpload does, their BlobKey enqueued too.
func (s *Store) DeleteBucket(ctx context.Context, name string) error {
	return s.write(ctx, "delete bucket "+name, func(t *txn) error {
		t.lockOwners([]string{name})
		var b bucketState
		var found bool
		var rows []uploadPart
		queueRow(t, &b, &found, scanBucketState, "SELECT owner_id, EXISTS (SELECT 1 FROM objects WHERE bucket = $1) FROM buckets WHERE name = $1", name)
		queueRows(t, &rows, scanUploadPart, `SELECT u.id, u.blob_key, p.size, p.blob_key FROM uploads u LEFT JOIN upload_parts p ON p.upload_id = u.id
			WHERE u.bucket = $1 ORDER BY u.key, u.created_at, u.id, p.number`, name)
		if err := t.flush(); err != nil {
			return err
		}
		switch {
		case !found:
			return meta.ErrNoBucket(name)
		case b.nonEmpty:
			return meta.ErrBucketNotEmpty(name)
		}
		if err := t.checkLocked(b.owner); err != nil {
			return err
		}
		freed, blobs := uploadBlobs(rows)
		t.exec("DELETE FROM staging WHERE declared AND upload_id IN (SELECT id FROM uploads WHERE bucket = $1)", name)
		t.exec("DELETE FROM upload_parts WHERE upload_id IN (SELECT id FROM uploads WHERE bucket = $1)", name)
		t.exec("DELETE FROM uploads WHERE bucket = $1", name)
		t.exec("DELETE FROM buckets WHERE name = $1", name)
		if err := t.addUsage(b.owner, -freed); err != nil {
			return err
		}
		t.enqueue(blobs...)
		// An upload created meanwhile (CreateUpload takes no owner lock)
		// makes the bucket's deletion a foreign key violation: run again,
		// aborting it too.
		if err := t.flush(); isSQLState(err, "23503") {
			return errRetry
		} else if err != nil {
			return err
		}
		return nil
	})
}

// bucketState is what DeleteBucket reads of a bucket.
type bucketState struct {
	owner    string
	nonEmpty bool
}

func scanBucketState(r metasql.Row) (bucketState, error) {
	var b bucketState
	err := r.Scan(&b.owner, &b.nonEmpty)
	return b, err
}

// uploadPart is an upload and one of its parts (none: size and blob nil).
type uploadPart struct {
	id, uploadBlob string
	size           *int64
	blob           *string
}

func scanUploadPart(r metasql.Row) (uploadPart, error) {
	var u uploadPart
	err := r.Scan(&u.id, &u.uploadBlob, &u.size, &u.blob)
	return u, err
}

// uploadBlobs returns the bytes of the parts of rows (uploads and their
// parts, by upload) and the blobs to enqueue when they go: the parts',
// then the uploads' own.
func uploadBlobs(rows []uploadPart) (int64, []string) {
	var freed int64
	var parts, blobs []string
	for i, r := range rows {
		if (i == 0 || r.id != rows[i-1].id) && r.uploadBlob != "" {
			blobs = append(blobs, r.uploadBlob)
		}
		if r.blob != nil {
			freed += *r.size
			parts = append(parts, *r.blob)
		}
	}
	return freed, append(parts, blobs...)
}
