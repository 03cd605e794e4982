package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/meta/metasql"
)

// PutGatewayBucket implements meta.Store.
func (s *Store) PutGatewayBucket(ctx context.Context, b meta.Bucket) error {
	b, err := meta.CheckGatewayBucket(b)
	if err != nil {
		return err
	}
	return s.write(ctx, func(ctx context.Context, c *conn) error {
		var one int
		err := c.QueryRowContext(ctx, "SELECT 1 FROM users WHERE id = ?", b.OwnerID).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return meta.ErrNoUser(b.OwnerID)
		}
		if err != nil {
			return classify(err, "bucket owner")
		}
		res, err := c.ExecContext(ctx, metasql.UpsertGatewayBucketQuery("?1", "?2", "?3", "?4", "?5"),
			b.Name, b.OwnerID, string(b.Visibility), metasql.ToNanos(meta.OrNow(b.CreatedAt, time.Now())), b.Gateway)
		if err != nil {
			return classify(err, "gateway bucket %q", b.Name)
		}
		return mustAffect(res, meta.ErrNotAGateway(b.Name))
	})
}

// ListGatewayBuckets implements meta.Store.
func (s *Store) ListGatewayBuckets(ctx context.Context) ([]meta.Bucket, error) {
	if err := s.ready(); err != nil {
		return nil, err
	}
	rows, err := s.read().QueryContext(ctx, "SELECT "+bucketReadCols+" FROM buckets WHERE gateway <> '' ORDER BY name")
	return scanBuckets(rows, err, "list gateway buckets")
}
