package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/meta/metasql"
)

// PutGatewayBucket implements meta.Store. A missing owner fails the
// statement with a foreign key violation, which is NotFound.
func (s *Store) PutGatewayBucket(ctx context.Context, b meta.Bucket) error {
	b, err := meta.CheckGatewayBucket(b)
	if err != nil {
		return err
	}
	return s.write(ctx, "put gateway bucket "+b.Name, func(t *txn) error {
		t.execN(mustAffect(meta.ErrNotAGateway(b.Name)), metasql.UpsertGatewayBucketQuery("$1", "$2", "$3", "$4", "$5"),
			b.Name, b.OwnerID, string(b.Visibility), metasql.ToNanos(meta.OrNow(b.CreatedAt, t.now)), b.Gateway)
		return nil
	})
}

// ListGatewayBuckets implements meta.Store.
func (s *Store) ListGatewayBuckets(ctx context.Context) ([]meta.Bucket, error) {
	var out []meta.Bucket
	err := s.read(ctx, "list gateway buckets", func(c *pgx.Conn) error {
		out = nil
		rows, err := c.Query(ctx, "SELECT "+bucketReadCols+" FROM buckets WHERE gateway <> '' ORDER BY name")
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
	return out, err
}
