package postgres

import (
	"context"

	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/meta/metasql"
)

var upsertGatewayBucketSQL = metasql.UpsertGatewayBucketSQL(ph)

// PutGatewayBucket implements meta.Store. A missing owner fails the
// statement with a foreign key violation, which is NotFound.
func (s *Store) PutGatewayBucket(ctx context.Context, b meta.Bucket) error {
	b, err := meta.CheckGatewayBucket(b)
	if err != nil {
		return err
	}
	return s.write(ctx, "put gateway bucket "+b.Name, func(t *txn) error {
		t.execN(mustAffect(meta.ErrNotAGateway(b.Name)), upsertGatewayBucketSQL, metasql.GatewayBucketArgs(b, t.now)...)
		return nil
	})
}

// ListGatewayBuckets implements meta.Store.
func (s *Store) ListGatewayBuckets(ctx context.Context) ([]meta.Bucket, error) {
	return list(ctx, s, "list gateway buckets", metasql.ScanBucket, metasql.ListGatewayBucketsSQL)
}
