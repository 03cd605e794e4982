package object

import (
	"context"

	"github.com/coffer-storage/coffer/internal/meta"
)

// Tags (S3 tagging): an object version's tag set lives in its row, so a
// read has it with the object; a write brings its own (PutInput.Tags,
// CreateUploadInput.Tags, CopyInput) and SetTags replaces a version's in
// place. Only the bucket's owner reads or writes tags. Gateway buckets
// have none: their backend keeps its own (unsupported answers
// NotImplemented, and a write that brings tags is refused).

// GetTags returns version versionID ("": the latest) of bucket/key with
// its tags: as GetVersion, for the bucket's owner only.
func (s *Service) GetTags(ctx context.Context, a Actor, bucket, key, versionID string) (meta.Object, error) {
	b, err := s.tagged(ctx, a, bucket, key, versionID, VersionedAction("s3:GetObjectTagging", versionID))
	if err != nil {
		return meta.Object{}, err
	}
	o, err := b.objectTags(ctx, key, versionID)
	if err != nil {
		return meta.Object{}, notFound(err, key, versionID)
	}
	if o.DeleteMarker {
		return meta.Object{}, ErrVersionIsDeleteMarker(o.VersionID)
	}
	return reported(b.Bucket, o), nil
}

// SetTags replaces the tag set of version versionID ("": the latest) of
// bucket/key (nil: none) and returns the version (its VersionID and
// Tags): InvalidArgument (reason invalid_tag) unless meta.CheckTags; a
// key whose latest version is a delete marker is ErrDeleteMarker, a
// named delete marker MethodNotAllowed.
func (s *Service) SetTags(ctx context.Context, a Actor, bucket, key, versionID string, tags []meta.Tag) (meta.Object, error) {
	action := "s3:PutObjectTagging"
	if tags == nil {
		action = "s3:DeleteObjectTagging"
	}
	b, err := s.tagged(ctx, a, bucket, key, versionID, VersionedAction(action, versionID))
	if err != nil {
		return meta.Object{}, err
	}
	if err := meta.CheckTags(tags, meta.MaxObjectTags); err != nil {
		return meta.Object{}, err
	}
	o, err := b.setObjectTags(ctx, key, versionID, tags)
	if err != nil {
		return meta.Object{}, notFound(err, key, versionID)
	}
	return reported(b.Bucket, o), nil
}

// tagged authorises action, an operation on the tags or lock of
// bucket/key's version versionID.
func (s *Service) tagged(ctx context.Context, a Actor, name, key, versionID, action string) (bucket, error) {
	b, err := s.authorize(ctx, a, name, action, key)
	if err != nil {
		return bucket{}, err
	}
	if err := ValidKey(key); err != nil {
		return bucket{}, err
	}
	return b, validVersion(versionID)
}

// GetBucketTags returns the tag set of a bucket a owns: NotFound
// (resource tag_set) if it has none.
func (s *Service) GetBucketTags(ctx context.Context, a Actor, name string) ([]meta.Tag, error) {
	b, err := s.authorize(ctx, a, name, "s3:GetBucketTagging", "")
	if err != nil {
		return nil, err
	}
	return b.bucketTags(ctx)
}

// SetBucketTags replaces the tag set of a bucket a owns (nil: none):
// InvalidArgument (reason invalid_tag) unless meta.CheckTags with
// meta.MaxBucketTags.
func (s *Service) SetBucketTags(ctx context.Context, a Actor, name string, tags []meta.Tag) error {
	b, err := s.authorize(ctx, a, name, "s3:PutBucketTagging", "")
	if err != nil {
		return err
	}
	if err := meta.CheckTags(tags, meta.MaxBucketTags); err != nil {
		return err
	}
	return b.setBucketTags(ctx, tags)
}

func (n *native) objectTags(ctx context.Context, key, versionID string) (meta.Object, error) {
	if versionID == "" {
		return n.lookup(ctx, key)
	}
	return n.lookupVersion(ctx, key, versionID)
}

func (n *native) setObjectTags(ctx context.Context, key, versionID string, tags []meta.Tag) (meta.Object, error) {
	return n.s.meta.SetObjectTags(ctx, n.bucket.Name, key, versionID, tags)
}

func (n *native) bucketTags(ctx context.Context) ([]meta.Tag, error) {
	return n.s.meta.GetBucketTags(ctx, n.bucket.Name)
}

func (n *native) setBucketTags(ctx context.Context, tags []meta.Tag) error {
	return n.s.meta.SetBucketTags(ctx, n.bucket.Name, tags)
}

func (unsupported) objectTags(context.Context, string, string) (meta.Object, error) {
	return meta.Object{}, errGatewayUnsupported("object tagging")
}

func (u unsupported) setObjectTags(ctx context.Context, _, _ string, _ []meta.Tag) (meta.Object, error) {
	if err := u.writable(ctx); err != nil {
		return meta.Object{}, err
	}
	return meta.Object{}, errGatewayUnsupported("object tagging")
}

func (unsupported) bucketTags(context.Context) ([]meta.Tag, error) {
	return nil, errGatewayUnsupported("bucket tagging")
}

func (u unsupported) setBucketTags(ctx context.Context, _ []meta.Tag) error {
	if err := u.writable(ctx); err != nil {
		return err
	}
	return errGatewayUnsupported("bucket tagging")
}
