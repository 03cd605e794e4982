package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"sort"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

const objectCols = "bucket, key, size, etag, sha256, content_type, metadata, blob_key, mod_time"

func scanObject(r scanner) (meta.Object, error) {
	var o meta.Object
	var md sql.NullString
	var mod int64
	if err := r.Scan(&o.Bucket, &o.Key, &o.Size, &o.ETag, &o.SHA256, &o.ContentType, &md, &o.BlobKey, &mod); err != nil {
		return meta.Object{}, err
	}
	o.ModTime = fromNanos(mod)
	var err error
	o.Metadata, err = decodeMetadata(md)
	return o, err
}

// GetObject implements meta.Store.
func (s *Store) GetObject(ctx context.Context, bucket, key string) (meta.Object, error) {
	if err := s.ready(); err != nil {
		return meta.Object{}, err
	}
	_, o, ok, err := lookup(ctx, s.read(), bucket, key)
	if err != nil {
		return meta.Object{}, err
	}
	if !ok {
		return meta.Object{}, errNoObject(bucket, key)
	}
	return o, nil
}

// lookup returns the owner of bucket and the object at key, if any, in one
// query. NotFound if the bucket is missing.
func lookup(ctx context.Context, q querier, bucket, key string) (owner string, o meta.Object, ok bool, err error) {
	var (
		k, etag, sha, ctype, blob sql.NullString
		md                        sql.NullString
		size, mod                 sql.NullInt64
	)
	err = q.QueryRowContext(ctx, `SELECT b.owner_id, o.key, o.size, o.etag, o.sha256, o.content_type, o.metadata, o.blob_key, o.mod_time
		FROM buckets b LEFT JOIN objects o ON o.bucket = b.name AND o.key = ?2
		WHERE b.name = ?1`, bucket, key).
		Scan(&owner, &k, &size, &etag, &sha, &ctype, &md, &blob, &mod)
	if errors.Is(err, sql.ErrNoRows) {
		return "", meta.Object{}, false, errNoBucket(bucket)
	}
	if err != nil {
		return "", meta.Object{}, false, classify(err, "get object %q", key)
	}
	if !k.Valid {
		return owner, meta.Object{}, false, nil
	}
	o = meta.Object{
		Bucket:      bucket,
		Key:         k.String,
		Size:        size.Int64,
		ETag:        etag.String,
		SHA256:      sha.String,
		ContentType: ctype.String,
		BlobKey:     blob.String,
		ModTime:     fromNanos(mod.Int64),
	}
	if o.Metadata, err = decodeMetadata(md); err != nil {
		return "", meta.Object{}, false, err
	}
	return owner, o, true, nil
}

// checkCond reports whether cond holds for the current object.
func checkCond(cond meta.Cond, cur meta.Object, exists bool) error {
	if cond.IfNoneMatch && exists {
		return errcode.New(errcode.PreconditionFailed, "%q already exists", cur.Key)
	}
	if cond.IfMatch != "" && (!exists || cur.ETag != cond.IfMatch) {
		return errcode.New(errcode.PreconditionFailed, "the current object does not match the ETag %q", cond.IfMatch)
	}
	return nil
}

// addUsage moves owner's usage by delta. Growth must fit the quota
// (QuotaExceeded otherwise); shrinking always passes.
func addUsage(ctx context.Context, c *conn, owner string, delta int64) error {
	if delta == 0 {
		return nil
	}
	res, err := c.ExecContext(ctx, `UPDATE users SET usage_bytes = usage_bytes + ?1
		WHERE id = ?2 AND (?1 <= 0 OR quota_bytes = 0 OR usage_bytes + ?1 <= quota_bytes)`, delta, owner)
	if err != nil {
		return classify(err, "update usage of %q", owner)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return classify(err, "update usage of %q", owner)
	}
	if n == 1 {
		return nil
	}
	var quota, usage int64
	if err := c.QueryRowContext(ctx, "SELECT quota_bytes, usage_bytes FROM users WHERE id = ?", owner).Scan(&quota, &usage); err != nil {
		return classify(err, "read quota of %q", owner)
	}
	return &errcode.Error{
		Code:    errcode.QuotaExceeded,
		Message: "storage quota exceeded",
		Detail:  map[string]any{"quota_bytes": quota, "usage_bytes": usage, "needed_bytes": delta},
	}
}

// upsert writes o at its bucket and key, replacing any row there.
func upsert(ctx context.Context, c *conn, o meta.Object) error {
	md, err := encodeMetadata(o.Metadata)
	if err != nil {
		return err
	}
	_, err = c.ExecContext(ctx, `INSERT INTO objects (`+objectCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (bucket, key) DO UPDATE SET
			size = excluded.size, etag = excluded.etag, sha256 = excluded.sha256,
			content_type = excluded.content_type, metadata = excluded.metadata,
			blob_key = excluded.blob_key, mod_time = excluded.mod_time`,
		o.Bucket, o.Key, o.Size, o.ETag, o.SHA256, o.ContentType, md, o.BlobKey, toNanos(o.ModTime))
	return classify(err, "put object %q", o.Key)
}

// enqueue queues blob for reclamation unless an object row still points at
// it, so a blob shared by two rows (or kept by a metadata-only replace)
// is never reclaimed while in use. Call it after the row change.
func enqueue(ctx context.Context, c *conn, blob string, now time.Time) error {
	if blob == "" {
		return nil
	}
	_, err := c.ExecContext(ctx, `INSERT INTO garbage (blob_key, created_at)
		SELECT ?1, ?2 WHERE NOT EXISTS (SELECT 1 FROM objects WHERE blob_key = ?1)`, blob, toNanos(now))
	return classify(err, "enqueue blob")
}

// checkObject validates an object to be written.
func checkObject(o meta.Object) error {
	switch {
	case o.Bucket == "":
		return errcode.New(errcode.InvalidArgument, "bucket name is required")
	case o.Key == "":
		return errcode.New(errcode.InvalidArgument, "object key is required")
	case o.Size < 0:
		return errcode.New(errcode.InvalidArgument, "object size must not be negative")
	}
	return nil
}

// PutObjects implements meta.Store. A zero ModTime is set to now.
func (s *Store) PutObjects(ctx context.Context, puts []meta.Put) ([]meta.Object, error) {
	if len(puts) == 0 {
		return nil, nil
	}
	for _, p := range puts {
		if err := checkObject(p.Object); err != nil {
			return nil, err
		}
	}
	olds := make([]meta.Object, len(puts))
	err := s.write(ctx, func(ctx context.Context, c *conn) error {
		now := time.Now()
		clear(olds)
		for i, p := range puts {
			o := p.Object
			o.ModTime = orNow(o.ModTime, now)
			owner, cur, exists, err := lookup(ctx, c, o.Bucket, o.Key)
			if err != nil {
				return err
			}
			if err := checkCond(p.Cond, cur, exists); err != nil {
				return err
			}
			if err := addUsage(ctx, c, owner, o.Size-cur.Size); err != nil {
				return err
			}
			if err := upsert(ctx, c, o); err != nil {
				return err
			}
			if exists {
				if err := enqueue(ctx, c, cur.BlobKey, now); err != nil {
					return err
				}
				olds[i] = cur
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return olds, nil
}

// DeleteObject implements meta.Store.
func (s *Store) DeleteObject(ctx context.Context, bucket, key string, cond meta.Cond) (meta.Object, error) {
	var old meta.Object
	err := s.write(ctx, func(ctx context.Context, c *conn) error {
		now := time.Now()
		owner, cur, exists, err := lookup(ctx, c, bucket, key)
		if err != nil {
			return err
		}
		if !exists {
			return errNoObject(bucket, key)
		}
		if err := checkCond(cond, cur, exists); err != nil {
			return err
		}
		if _, err := c.ExecContext(ctx, "DELETE FROM objects WHERE bucket = ? AND key = ?", bucket, key); err != nil {
			return classify(err, "delete object %q", key)
		}
		if err := addUsage(ctx, c, owner, -cur.Size); err != nil {
			return err
		}
		if err := enqueue(ctx, c, cur.BlobKey, now); err != nil {
			return err
		}
		old = cur
		return nil
	})
	if err != nil {
		return meta.Object{}, err
	}
	return old, nil
}

// MoveObject implements meta.Store. The object keeps every field, ModTime
// included; only its bucket and key change. Moving a key onto itself
// checks that it exists and that dstCond holds, and changes nothing.
func (s *Store) MoveObject(ctx context.Context, srcBucket, srcKey, dstBucket, dstKey string, dstCond meta.Cond) (meta.Object, error) {
	if dstBucket == "" || dstKey == "" {
		return meta.Object{}, errcode.New(errcode.InvalidArgument, "destination bucket and key are required")
	}
	if srcBucket == dstBucket && srcKey == dstKey {
		o, err := s.GetObject(ctx, srcBucket, srcKey)
		if err != nil {
			return meta.Object{}, err
		}
		if err := checkCond(dstCond, o, true); err != nil {
			return meta.Object{}, err
		}
		return o, nil
	}
	var moved meta.Object
	err := s.write(ctx, func(ctx context.Context, c *conn) error {
		now := time.Now()
		srcOwner, src, ok, err := lookup(ctx, c, srcBucket, srcKey)
		if err != nil {
			return err
		}
		if !ok {
			return errNoObject(srcBucket, srcKey)
		}
		dstOwner, dst, exists, err := lookup(ctx, c, dstBucket, dstKey)
		if err != nil {
			return err
		}
		if err := checkCond(dstCond, dst, exists); err != nil {
			return err
		}
		if _, err := c.ExecContext(ctx, "DELETE FROM objects WHERE bucket = ? AND key = ?", srcBucket, srcKey); err != nil {
			return classify(err, "move object %q", srcKey)
		}
		o := src
		o.Bucket, o.Key = dstBucket, dstKey
		if err := upsert(ctx, c, o); err != nil {
			return err
		}
		// Usage: src leaves its owner, it replaces dst at dst's owner.
		deltas := map[string]int64{}
		deltas[srcOwner] -= src.Size
		deltas[dstOwner] += src.Size - dst.Size
		owners := make([]string, 0, len(deltas))
		for id := range deltas {
			owners = append(owners, id)
		}
		sort.Strings(owners)
		for _, id := range owners {
			if err := addUsage(ctx, c, id, deltas[id]); err != nil {
				return err
			}
		}
		if exists {
			if err := enqueue(ctx, c, dst.BlobKey, now); err != nil {
				return err
			}
		}
		moved = o
		return nil
	})
	if err != nil {
		return meta.Object{}, err
	}
	return moved, nil
}

func errNoObject(bucket, key string) error {
	return errcode.New(errcode.NotFound, "object %q not found in bucket %q", key, bucket)
}
