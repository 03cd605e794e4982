package object

import (
	"context"
	"github.com/coffer-storage/coffer/internal/audit"

	"github.com/coffer-storage/coffer/internal/errcode"

	"github.com/coffer-storage/coffer/internal/meta"
)

// CORS (docs/cors.md): a bucket's configuration is a bucket document
// (meta.CORS) its owner reads and writes; BucketCORS hands it to anyone,
// since browsers ask before they authenticate (a preflight carries no
// credentials) and every answer of the bucket carries its headers.

// GetBucketCORS returns the CORS configuration of a bucket a owns:
// NotFound (resource cors) if it has none; NotImplemented for a gateway
// bucket.
func (s *Service) GetBucketCORS(ctx context.Context, a Actor, name string) (meta.CORS, error) {
	b, err := s.authorize(ctx, a, name, "s3:GetBucketCORS", "")
	if err != nil {
		return meta.CORS{}, err
	}
	if b.IsGateway() {
		return meta.CORS{}, errGatewayUnsupported("CORS")
	}
	if b.CORS == nil {
		return meta.CORS{}, meta.ErrNoCORS(name)
	}
	return *b.CORS, nil
}

// SetBucketCORS replaces the CORS configuration of a bucket a owns (nil:
// none), checked by meta.CheckCORS; NotImplemented for a gateway bucket.
func (s *Service) SetBucketCORS(ctx context.Context, a Actor, name string, c *meta.CORS) (err error) {
	defer func() { s.auditReason(ctx, a, audit.BucketCORS, audit.Target{Bucket: name}, deleted(c == nil), err) }()
	b, err := s.authorize(ctx, a, name, "s3:PutBucketCORS", "")
	if err != nil {
		return err
	}
	if b.IsGateway() {
		return errGatewayUnsupported("CORS")
	}
	if c != nil {
		if err := meta.CheckCORS(c); err != nil {
			return err
		}
	}
	return s.meta.SetBucketCORS(ctx, name, c)
}

// BucketCORS returns the CORS configuration of bucket name (nil if it has
// none), without authorization: from the bucket record, which the
// metadata cache keeps. NotFound if the bucket is missing.
func (s *Service) BucketCORS(ctx context.Context, name string) (*meta.CORS, error) {
	if err := ValidBucketName(name); err != nil {
		return nil, ErrNoBucket(name)
	}
	b, err := s.meta.GetBucket(ctx, name)
	if errcode.Is(err, errcode.NotFound) {
		return nil, ErrNoBucket(name)
	}
	if err != nil {
		return nil, err
	}
	return b.CORS, nil
}
