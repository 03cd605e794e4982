package postgres

import (
	"context"

	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/meta/metasql"
)

// DeleteBucket implements meta.Buckets. Its uploads in progress are aborted
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
