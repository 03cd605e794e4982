package metasql

import (
	"context"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

// Bucket policies are their JSON documents in buckets.policy, NULL when a
// bucket has none (migration 0023); Block Public Access settings are
// buckets.public_access_block (migration 0027). Both are read with the
// bucket (bucketCols).

// setBucketColumnSQL sets a column of a native bucket: args value, name.
func setBucketColumnSQL(ph PH, column string) string {
	return "UPDATE buckets SET " + column + " = " + ph(1) + " WHERE name = " + ph(2) + " AND gateway = ''"
}

// SetBucketPolicy implements meta.Policies: one statement; when it
// changes nothing, the bucket is missing (NotFound) or a gateway bucket
// (Conflict).
func (o policyOps) SetBucketPolicy(ctx context.Context, bucket, doc string) error {
	var arg any
	if doc != "" {
		arg = doc
	}
	return o.setNative(ctx, "set bucket policy", o.sql.policy, arg, bucket)
}

// SetBucketPublicAccessBlock implements meta.Policies (public_access_block:
// meta.PublicAccessBlock.Bits, 0 when none).
func (o policyOps) SetBucketPublicAccessBlock(ctx context.Context, bucket string, pab *meta.PublicAccessBlock) error {
	return o.setNative(ctx, "set bucket public access block", o.sql.publicAccessBlock, pab.Bits(), bucket)
}

// setNative runs one update of a native bucket's column; when it changes
// nothing, the bucket is missing (NotFound) or a gateway bucket
// (Conflict).
func (o policyOps) setNative(ctx context.Context, what, stmt string, arg any, bucket string) error {
	n, err := o.run.Exec(ctx, what, stmt, []any{arg, bucket}, nil)
	if err != nil || n > 0 {
		return err
	}
	if _, err := bucketOps(o).GetBucket(ctx, bucket); err != nil {
		return err
	}
	return errcode.New(errcode.Conflict, "bucket %q is a gateway bucket: its policies are its backend's", bucket)
}
