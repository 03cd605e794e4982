package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/meta/metasql"
)

const bucketCols = "name, owner_id, visibility, created_at"

// bucketReadCols are what scanBucket reads.
const bucketReadCols = bucketCols + ", sse_default, sse_kms_key, gateway, object_count, byte_count"

func scanBucket(r pgx.Row) (meta.Bucket, error) {
	var b meta.Bucket
	var vis string
	var created int64
	err := r.Scan(&b.Name, &b.OwnerID, &vis, &created, &b.Encryption, &b.EncryptionKMSKey, &b.Gateway, &b.Objects, &b.Bytes)
	b.Visibility = meta.Visibility(vis)
	b.CreatedAt = metasql.FromNanos(created)
	return b, err
}

// insertBucket queues the insertion of b. A missing owner fails the
// statement with a foreign key violation, which is NotFound; a taken name
// with a unique violation, which is AlreadyExists.
func insertBucket(t *txn, b meta.Bucket) {
	t.exec("INSERT INTO buckets ("+bucketCols+") VALUES ($1, $2, $3, $4)",
		b.Name, b.OwnerID, string(b.Visibility), metasql.ToNanos(meta.OrNow(b.CreatedAt, t.now)))
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
	var b meta.Bucket
	err := s.queryRow(ctx, "get bucket", func(r pgx.Row) (err error) {
		b, err = scanBucket(r)
		if errors.Is(err, pgx.ErrNoRows) {
			return meta.ErrNoBucket(name)
		}
		return err
	}, "SELECT "+bucketReadCols+" FROM buckets WHERE name = $1", name)
	if err != nil {
		return meta.Bucket{}, err
	}
	return b, nil
}

// ListBuckets implements meta.Store.
func (s *Store) ListBuckets(ctx context.Context, ownerID string) ([]meta.Bucket, error) {
	var out []meta.Bucket
	err := s.read(ctx, "list buckets", func(c *pgx.Conn) error {
		out = nil
		rows, err := c.Query(ctx, "SELECT "+bucketReadCols+" FROM buckets WHERE owner_id = $1 ORDER BY name", ownerID)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			b, err := scanBucket(rows)
			if err != nil {
				return err
			}
			out = append(out, b)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
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
		var owner string
		var found, nonEmpty bool
		t.queryRow(func(r pgx.Row) error {
			err := r.Scan(&owner, &nonEmpty)
			found = err == nil
			if errors.Is(err, pgx.ErrNoRows) {
				return nil
			}
			return err
		}, "SELECT owner_id, EXISTS (SELECT 1 FROM objects WHERE bucket = $1) FROM buckets WHERE name = $1", name)
		var freed int64
		var parts, blobs []string // the blobs of the uploads' parts, and of the uploads
		lastID := ""
		t.query(func(r pgx.Rows) error {
			var id, uploadBlob string
			var size *int64
			var blob *string
			if err := r.Scan(&id, &uploadBlob, &size, &blob); err != nil {
				return err
			}
			if id != lastID && uploadBlob != "" {
				blobs = append(blobs, uploadBlob)
			}
			lastID = id
			if blob != nil {
				freed += *size
				parts = append(parts, *blob)
			}
			return nil
		}, `SELECT u.id, u.blob_key, p.size, p.blob_key FROM uploads u LEFT JOIN upload_parts p ON p.upload_id = u.id
			WHERE u.bucket = $1 ORDER BY u.key, u.created_at, u.id, p.number`, name)
		if err := t.flush(); err != nil {
			return err
		}
		switch {
		case !found:
			return meta.ErrNoBucket(name)
		case nonEmpty:
			return meta.ErrBucketNotEmpty(name)
		}
		if err := t.checkLocked(owner); err != nil {
			return err
		}
		t.exec("DELETE FROM staging WHERE declared AND upload_id IN (SELECT id FROM uploads WHERE bucket = $1)", name)
		t.exec("DELETE FROM upload_parts WHERE upload_id IN (SELECT id FROM uploads WHERE bucket = $1)", name)
		t.exec("DELETE FROM uploads WHERE bucket = $1", name)
		t.exec("DELETE FROM buckets WHERE name = $1", name)
		if err := t.addUsage(owner, -freed); err != nil {
			return err
		}
		t.enqueue(append(parts, blobs...)...)
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
