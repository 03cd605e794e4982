package meta

import (
	"context"
	"fmt"

	"github.com/coffer-storage/coffer/internal/errcode"
)

// Policies keeps the buckets' bucket policies and Block Public Access
// settings (issue 21; docs/policies.md). A policy is its JSON document as
// the owner wrote it, validated by package policy before it is stored;
// both are read with the bucket record (Bucket.Policy,
// Bucket.PublicAccessBlock).
type Policies interface {
	// SetBucketPolicy replaces a native bucket's policy document ("":
	// none). The caller must have validated doc (policy.Parse). NotFound
	// if the bucket is missing; Conflict for a gateway bucket.
	SetBucketPolicy(ctx context.Context, bucket, doc string) error
	// SetBucketPublicAccessBlock replaces a native bucket's Block Public
	// Access settings (nil: none). NotFound if the bucket is missing;
	// Conflict for a gateway bucket.
	SetBucketPublicAccessBlock(ctx context.Context, bucket string, pab *PublicAccessBlock) error
}

// PublicAccessBlock is S3's PublicAccessBlockConfiguration of a bucket.
type PublicAccessBlock struct {
	// BlockPublicAcls refuses requests that set a public ACL;
	// IgnorePublicAcls makes public ACLs grant nothing (the acl area
	// honours both).
	BlockPublicAcls, IgnorePublicAcls bool
	// BlockPublicPolicy refuses PutBucketPolicy of a public policy;
	// RestrictPublicBuckets makes a public policy grant only the owner.
	BlockPublicPolicy, RestrictPublicBuckets bool
}

// Bits packs the settings into the stored integer (bit 0x10: set).
func (p *PublicAccessBlock) Bits() int64 {
	if p == nil {
		return 0
	}
	n := int64(0x10)
	for i, b := range []bool{p.BlockPublicAcls, p.IgnorePublicAcls, p.BlockPublicPolicy, p.RestrictPublicBuckets} {
		if b {
			n |= 1 << i
		}
	}
	return n
}

// PublicAccessBlockOf unpacks Bits (nil: none set).
func PublicAccessBlockOf(n int64) *PublicAccessBlock {
	if n&0x10 == 0 {
		return nil
	}
	return &PublicAccessBlock{BlockPublicAcls: n&1 != 0, IgnorePublicAcls: n&2 != 0, BlockPublicPolicy: n&4 != 0, RestrictPublicBuckets: n&8 != 0}
}

// IgnoresPublicAcls reports whether b's public ACLs (and the public-read
// visibility preset) must grant nothing: for the acl area's checks.
func (b Bucket) IgnoresPublicAcls() bool {
	return b.PublicAccessBlock != nil && b.PublicAccessBlock.IgnorePublicAcls
}

// BlocksPublicAcls reports whether requests setting a public ACL on b
// must be refused: for the acl area's checks.
func (b Bucket) BlocksPublicAcls() bool {
	return b.PublicAccessBlock != nil && b.PublicAccessBlock.BlockPublicAcls
}

// ErrNoPublicAccessBlock is S3's NoSuchPublicAccessBlockConfiguration.
func ErrNoPublicAccessBlock(bucket string) error {
	return &errcode.Error{Code: errcode.NotFound, Message: fmt.Sprintf("bucket %q has no public access block configuration", bucket),
		Detail: map[string]any{"resource": "public_access_block"}}
}

// ErrNoBucketPolicy is S3's NoSuchBucketPolicy: the bucket has none.
func ErrNoBucketPolicy(bucket string) error {
	return &errcode.Error{Code: errcode.NotFound, Message: fmt.Sprintf("bucket %q has no bucket policy", bucket),
		Detail: map[string]any{"resource": "bucket_policy"}}
}
