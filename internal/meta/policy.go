package meta

import (
	"context"
	"fmt"

	"github.com/coffer-storage/coffer/internal/errcode"
)

// Policies keeps the buckets' bucket policies (issue 21; docs/policies.md).
// A policy is its JSON document as the owner wrote it, validated by
// package policy before it is stored, and read with the bucket record
// (Bucket.Policy).
type Policies interface {
	// SetBucketPolicy replaces a native bucket's policy document ("":
	// none). The caller must have validated doc (policy.Parse). NotFound
	// if the bucket is missing; Conflict for a gateway bucket.
	SetBucketPolicy(ctx context.Context, bucket, doc string) error
}

// ErrNoBucketPolicy is S3's NoSuchBucketPolicy: the bucket has none.
func ErrNoBucketPolicy(bucket string) error {
	return &errcode.Error{Code: errcode.NotFound, Message: fmt.Sprintf("bucket %q has no bucket policy", bucket),
		Detail: map[string]any{"resource": "bucket_policy"}}
}
