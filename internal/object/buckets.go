package object

import (
	"context"
	"fmt"
	"github.com/coffer-storage/coffer/internal/audit"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

// CreateBucket creates a bucket owned by a.
func (s *Service) CreateBucket(ctx context.Context, a Actor, name string, v meta.Visibility) (meta.Bucket, error) {
	return s.CreateBucketWith(ctx, a, CreateBucketInput{Name: name, Visibility: v})
}

// CreateBucketInput is a new bucket's settings.
type CreateBucketInput struct {
	Name       string
	Visibility meta.Visibility // "": private
	// ObjectLock makes a bucket with object lock (lock.go).
	ObjectLock bool
	// ACL is the bucket's ACL (nil: private); Ownership its object
	// ownership setting ("": none, see docs/acl.md). With
	// BucketOwnerEnforced, an ACL beyond the owner's FULL_CONTROL is
	// InvalidBucketAclWithObjectOwnership.
	ACL       *ACL
	Ownership meta.ObjectOwnership
}

// CreateBucketWith creates a bucket owned by a, as in says.
func (s *Service) CreateBucketWith(ctx context.Context, a Actor, in CreateBucketInput) (_ meta.Bucket, err error) {
	defer func() { s.audit(ctx, a, audit.BucketCreate, audit.Target{Bucket: in.Name}, err) }()
	name, v := in.Name, in.Visibility
	if a.UserID == "" {
		return meta.Bucket{}, errcode.New(errcode.Unauthenticated, "authentication required")
	}
	if err := s.checkScope(a, "s3:CreateBucket", name); err != nil {
		return meta.Bucket{}, err
	}
	if err := ValidBucketName(name); err != nil {
		e := errcode.As(err)
		return meta.Bucket{}, &errcode.Error{Code: errcode.InvalidArgument, Message: e.Message, Detail: map[string]any{"reason": "invalid_bucket_name"}}
	}
	if v == "" {
		v = meta.Private
	}
	if !v.Valid() {
		return meta.Bucket{}, errcode.New(errcode.InvalidArgument, "visibility must be %q or %q", meta.Private, meta.PublicRead)
	}
	acl, err := s.newBucketACL(ctx, a, in)
	if err != nil {
		return meta.Bucket{}, err
	}
	b, err := meta.CheckBucket(meta.Bucket{Name: name, OwnerID: a.UserID, Visibility: v, CreatedAt: s.now().UTC(),
		ObjectLock: meta.ObjectLock{Enabled: in.ObjectLock}, ACL: acl})
	if err != nil {
		return meta.Bucket{}, err
	}
	if err := s.meta.CreateBucket(ctx, b); err != nil {
		if errcode.Is(err, errcode.AlreadyExists) {
			e := &errcode.Error{Code: errcode.AlreadyExists, Message: fmt.Sprintf("bucket name %q is taken", name)}
			if cur, gerr := s.meta.GetBucket(ctx, name); gerr == nil && cur.OwnerID == a.UserID {
				e.Message = fmt.Sprintf("you already own bucket %q", name)
				e.Detail = map[string]any{"s3_code": "BucketAlreadyOwnedByYou"}
			}
			return meta.Bucket{}, e
		}
		return meta.Bucket{}, err
	}
	return b, nil
}

// ListBuckets lists a's buckets.
func (s *Service) ListBuckets(ctx context.Context, a Actor) ([]meta.Bucket, error) {
	if a.UserID == "" {
		return nil, errcode.New(errcode.Unauthenticated, "authentication required")
	}
	if err := s.checkScope(a, "s3:ListAllMyBuckets", ""); err != nil {
		return nil, err
	}
	return s.meta.ListBuckets(ctx, a.UserID)
}

// GetBucket returns a bucket a owns.
func (s *Service) GetBucket(ctx context.Context, a Actor, name string) (meta.Bucket, error) {
	b, err := s.authorize(ctx, a, name, a.opOr("s3:ListBucket"), "")
	return b.Bucket, err
}

// SetBucketVisibility changes who may read a bucket's objects.
func (s *Service) SetBucketVisibility(ctx context.Context, a Actor, name string, v meta.Visibility) (_ meta.Bucket, err error) {
	defer func() { s.audit(ctx, a, audit.BucketVisible, audit.Target{Bucket: name}, err) }()
	b, err := s.authorize(ctx, a, name, "s3:PutBucketPolicy", "")
	if err != nil {
		return meta.Bucket{}, err
	}
	if !v.Valid() {
		return meta.Bucket{}, errcode.New(errcode.InvalidArgument, "visibility must be %q or %q", meta.Private, meta.PublicRead)
	}
	if err := s.meta.SetBucketVisibility(ctx, name, v); err != nil {
		return meta.Bucket{}, err
	}
	b.Visibility = v
	return b.Bucket, nil
}

// SetBucketEncryption sets the default encryption of new objects in a
// bucket a owns (see meta.Bucket.Encryption): enc "" (the server's
// default), meta.EncryptAES256 or meta.EncryptKMS with kmsKey ("" = the
// provider's default key), which must exist and be one a may use
// (checkKMSKey).
func (s *Service) SetBucketEncryption(ctx context.Context, a Actor, name, enc, kmsKey string) (_ meta.Bucket, err error) {
	defer func() { s.audit(ctx, a, audit.BucketEncrypt, audit.Target{Bucket: name, KMSKey: kmsKey}, err) }()
	b, err := s.authorize(ctx, a, name, "s3:PutEncryptionConfiguration", "")
	if err != nil {
		return meta.Bucket{}, err
	}
	if err := meta.ValidBucketEncryption(enc, kmsKey); err != nil {
		return meta.Bucket{}, err
	}
	if enc != "" {
		if err := s.checkKMSKey(ctx, a.UserID, kmsKey); err != nil {
			return meta.Bucket{}, err
		}
	}
	if err := s.meta.SetBucketEncryption(ctx, name, enc, kmsKey); err != nil {
		return meta.Bucket{}, err
	}
	b.Encryption, b.EncryptionKMSKey = enc, kmsKey
	return b.Bucket, nil
}

// SetBucketVersioning enables or suspends versioning of a bucket a owns
// (meta.CheckVersioning: never back to unversioned). Gateway buckets:
// NotImplemented.
func (s *Service) SetBucketVersioning(ctx context.Context, a Actor, name string, v meta.Versioning) (_ meta.Bucket, err error) {
	defer func() { s.audit(ctx, a, audit.BucketVersions, audit.Target{Bucket: name}, err) }()
	b, err := s.authorize(ctx, a, name, "s3:PutBucketVersioning", "")
	if err != nil {
		return meta.Bucket{}, err
	}
	if err := meta.CheckVersioning(v); err != nil {
		return meta.Bucket{}, err
	}
	if err := b.setVersioning(ctx, v); err != nil {
		return meta.Bucket{}, err
	}
	b.Versioning = v
	return b.Bucket, nil
}

// DeleteBucket deletes an empty bucket a owns.
func (s *Service) DeleteBucket(ctx context.Context, a Actor, name string) (err error) {
	defer func() { s.audit(ctx, a, audit.BucketDelete, audit.Target{Bucket: name}, err) }()
	b, err := s.authorize(ctx, a, name, "s3:DeleteBucket", "")
	if err != nil {
		return err
	}
	return b.deleteBucket(ctx)
}
