package sqlite

import (
	"context"
	"time"

	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/meta/metasql"
)

var upsertGatewayBucketSQL = metasql.UpsertGatewayBucketSQL(ph)

// PutGatewayBucket implements meta.Store.
func (s *Store) PutGatewayBucket(ctx context.Context, b meta.Bucket) error {
	b, err := meta.CheckGatewayBucket(b)
	if err != nil {
		return err
	}
	return s.write(ctx, func(ctx context.Context, c *conn) error {
		if err := userExists(ctx, c, b.OwnerID); err != nil {
			return classify(err, "bucket owner")
		}
		return mustAffect(ctx, c, meta.ErrNotAGateway(b.Name), "gateway bucket "+b.Name, upsertGatewayBucketSQL, metasql.GatewayBucketArgs(b, time.Now())...)
	})
}

// ListGatewayBuckets implements meta.Store.
func (s *Store) ListGatewayBuckets(ctx context.Context) ([]meta.Bucket, error) {
	return list(ctx, s, "list gateway buckets", metasql.ScanBucket, metasql.ListGatewayBucketsSQL)
}
