package sqlite

import (
	"context"
	"time"

	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/meta/metasql"
)

// DeleteBucket implements meta.Buckets. Its uploads in progress are aborted
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
