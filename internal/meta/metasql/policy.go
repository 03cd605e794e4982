package metasql

import (
	"context"

	"github.com/coffer-storage/coffer/internal/errcode"
)

// Bucket policies are their JSON documents in buckets.policy, NULL when a
// bucket has none (migration 0023), read with the bucket (bucketCols).

// setPolicySQL sets the policy of a native bucket: args document, name.
func setPolicySQL(ph PH) string {
	return "UPDATE buckets SET policy = " + ph(1) + " WHERE name = " + ph(2) + " AND gateway = ''"
}

// SetBucketPolicy implements meta.Policies: one statement; when it
// changes nothing, the bucket is missing (NotFound) or a gateway bucket
// (Conflict).
func (o policyOps) SetBucketPolicy(ctx context.Context, bucket, doc string) error {
	var arg any
	if doc != "" {
		arg = doc
	}
	n, err := o.run.Exec(ctx, "set bucket policy", o.sql.policy, []any{arg, bucket}, nil)
	if err != nil || n > 0 {
		return err
	}
	if _, err := bucketOps(o).GetBucket(ctx, bucket); err != nil {
		return err
	}
	return errcode.New(errcode.Conflict, "bucket %q is a gateway bucket: its policy is its backend's", bucket)
}
