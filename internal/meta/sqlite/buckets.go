package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/meta/metasql"
)

const bucketCols = "name, owner_id, visibility, created_at"

// bucketReadCols are what scanBucket reads.
const bucketReadCols = bucketCols + ", sse_default, sse_kms_key, gateway, object_count, byte_count"

func scanBucket(r scanner) (meta.Bucket, error) {
	var b meta.Bucket
	var vis string
	var created int64
	err := r.Scan(&b.Name, &b.OwnerID, &vis, &created, &b.Encryption, &b.EncryptionKMSKey, &b.Gateway, &b.Objects, &b.Bytes)
	b.Visibility = meta.Visibility(vis)
	b.CreatedAt = metasql.FromNanos(created)
	return b, err
}

// insertBucket inserts b; its owner must exist.
func insertBucket(ctx context.Context, c *conn, b meta.Bucket, now time.Time) error {
	var one int
	err := c.QueryRowContext(ctx, "SELECT 1 FROM users WHERE id = ?", b.OwnerID).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return meta.ErrNoUser(b.OwnerID)
	}
	if err != nil {
		return classify(err, "bucket owner")
	}
	_, err = c.ExecContext(ctx, "INSERT INTO buckets ("+bucketCols+") VALUES (?, ?, ?, ?)",
		b.Name, b.OwnerID, string(b.Visibility), metasql.ToNanos(meta.OrNow(b.CreatedAt, now)))
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
	if err := s.ready(); err != nil {
		return meta.Bucket{}, err
	}
	b, err := scanBucket(s.read().QueryRowContext(ctx, "SELECT "+bucketReadCols+" FROM buckets WHERE name = ?", name))
	if errors.Is(err, sql.ErrNoRows) {
		return meta.Bucket{}, meta.ErrNoBucket(name)
	}
	if err != nil {
		return meta.Bucket{}, classify(err, "get bucket %q", name)
	}
	return b, nil
}

// ListBuckets implements meta.Store.
func (s *Store) ListBuckets(ctx context.Context, ownerID string) ([]meta.Bucket, error) {
	if err := s.ready(); err != nil {
		return nil, err
	}
	rows, err := s.read().QueryContext(ctx, "SELECT "+bucketReadCols+" FROM buckets WHERE owner_id = ? ORDER BY name", ownerID)
	return scanBuckets(rows, err, "list buckets")
}

// SetBucketVisibility implements meta.Store. NotFound if the bucket is
// missing; InvalidArgument for an unknown visibility.
func (s *Store) SetBucketVisibility(ctx context.Context, name string, v meta.Visibility) error {
	if err := meta.CheckVisibility(v); err != nil {
		return err
	}
	return s.write(ctx, func(ctx context.Context, c *conn) error {
		res, err := c.ExecContext(ctx, "UPDATE buckets SET visibility = ? WHERE name = ?", string(v), name)
		if err != nil {
			return classify(err, "set visibility of %q", name)
		}
		return mustAffect(res, meta.ErrNoBucket(name))
	})
}

// SetBucketEncryption implements meta.Store.
func (s *Store) SetBucketEncryption(ctx context.Context, name, enc, kmsKey string) error {
	if err := meta.ValidBucketEncryption(enc, kmsKey); err != nil {
		return err
	}
	return s.write(ctx, func(ctx context.Context, c *conn) error {
		res, err := c.ExecContext(ctx, "UPDATE buckets SET sse_default = ?, sse_kms_key = ? WHERE name = ?", enc, kmsKey, name)
		if err != nil {
			return classify(err, "set encryption of %q", name)
		}
		return mustAffect(res, meta.ErrNoBucket(name))
	})
}

// DeleteBucket implements meta.Store.
func (s *Store) DeleteBucket(ctx context.Context, name string) error {
	return s.write(ctx, func(ctx context.Context, c *conn) error {
		now := time.Now()
		var owner string
		err := c.QueryRowContext(ctx, "SELECT owner_id FROM buckets WHERE name = ?", name).Scan(&owner)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return meta.ErrNoBucket(name)
		case err != nil:
			return classify(err, "delete bucket %q", name)
		}
		var one int
		err = c.QueryRowContext(ctx, "SELECT 1 FROM objects WHERE bucket = ? LIMIT 1", name).Scan(&one)
		switch {
		case err == nil:
			return meta.ErrBucketNotEmpty(name)
		case !errors.Is(err, sql.ErrNoRows):
			return classify(err, "delete bucket %q", name)
		}
		ids, err := uploadsOf(ctx, c, name)
		if err != nil {
			return err
		}
		var freed int64
		var blobs []string
		for _, id := range ids {
			var bk string
			if err := c.QueryRowContext(ctx, "SELECT blob_key FROM uploads WHERE id = ?", id).Scan(&bk); err != nil {
				return classify(err, "upload %q", id)
			}
			if bk != "" {
				blobs = append(blobs, bk) // assembled by the backend, maybe
			}
			n, bs, err := dropUpload(ctx, c, id)
			if err != nil {
				return err
			}
			if err := deleteDeclared(ctx, c, id); err != nil {
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

// scanBuckets reads the rows of a bucketReadCols query (and its error).
func scanBuckets(rows *sql.Rows, err error, op string) ([]meta.Bucket, error) {
	if err != nil {
		return nil, classify(err, "%s", op)
	}
	defer rows.Close()
	var out []meta.Bucket
	for rows.Next() {
		b, err := scanBucket(rows)
		if err != nil {
			return nil, classify(err, "%s", op)
		}
		out = append(out, b)
	}
	if err := rows.Err(); err != nil {
		return nil, classify(err, "%s", op)
	}
	return out, nil
}
