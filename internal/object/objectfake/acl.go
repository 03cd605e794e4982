package objectfake

import (
	"context"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/object"
)

// ACLs, as the owner sees them: the fake keeps a bucket's grants and
// ownership setting in its record and a version's grants with it; only
// the bucket's owner reads and changes them (the service's evaluation of
// grants is tested on the service itself). Email grantees are refused
// (the fake has no accounts).

// CreateBucketWith is CreateBucket (or CreateLockedBucket) with an ACL
// and an ownership setting.
func (f *Service) CreateBucketWith(ctx context.Context, a object.Actor, in object.CreateBucketInput) (meta.Bucket, error) {
	grants, err := fakeGrants(in.ACL, a.UserID)
	if err != nil {
		return meta.Bucket{}, err
	}
	create := f.CreateBucket
	if in.ObjectLock {
		create = f.CreateLockedBucket
	}
	b, err := create(ctx, a, in.Name, in.Visibility)
	if err != nil || (grants == nil && in.Ownership == "") {
		return b, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	b.ACL = &meta.BucketACL{Grants: grants, Ownership: in.Ownership}
	f.Buckets[in.Name] = b
	return b, nil
}

// fakeGrants resolves req for a resource of owner (nil: private).
func fakeGrants(req *object.ACL, owner string) ([]meta.Grant, error) {
	switch {
	case req == nil:
		return nil, nil
	case req.Canned != "":
		return meta.CannedACL(req.Canned, owner, owner)
	}
	for _, g := range req.Grants {
		if g.Type == object.GranteeEmail {
			return nil, errcode.New(errcode.InvalidArgument, "the fake resolves no email grantee")
		}
	}
	return req.Grants, meta.CheckGrants(req.Grants)
}

// GetBucketACL returns a bucket a owns and its grants.
func (f *Service) GetBucketACL(_ context.Context, a object.Actor, name string) (meta.Bucket, []meta.Grant, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, err := f.authorize(a, name, true)
	if err != nil {
		return meta.Bucket{}, nil, err
	}
	return b, b.ACL.GrantsOf(b.OwnerID), nil
}

// SetBucketACL replaces the grants of a bucket a owns.
func (f *Service) SetBucketACL(_ context.Context, a object.Actor, name string, req object.ACL) error {
	return f.changeACL(a, name, "SetBucketACL", func(acl *meta.BucketACL, owner string) (err error) {
		acl.Grants, err = fakeGrants(&req, owner)
		return err
	})
}

// changeACL changes the ACL of a bucket a owns with change.
func (f *Service) changeACL(a object.Actor, name, what string, change func(acl *meta.BucketACL, owner string) error) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, err := f.authorize(a, name, true)
	if err != nil {
		return err
	}
	var acl meta.BucketACL
	if b.ACL != nil {
		acl = *b.ACL
	}
	if err := change(&acl, b.OwnerID); err != nil {
		return err
	}
	b.ACL = &acl
	f.Buckets[name] = b
	f.wrote(what + " " + name)
	return nil
}

// GetBucketOwnership returns the ownership setting of a bucket a owns.
func (f *Service) GetBucketOwnership(_ context.Context, a object.Actor, name string) (meta.ObjectOwnership, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, err := f.authorize(a, name, true)
	if err != nil {
		return "", err
	}
	if b.ACL == nil || b.ACL.Ownership == "" {
		return "", &errcode.Error{Code: errcode.NotFound, Message: "no ownership controls",
			Detail: map[string]any{"s3_code": "OwnershipControlsNotFoundError"}}
	}
	return b.ACL.Ownership, nil
}

// SetBucketOwnership sets the ownership setting of a bucket a owns.
func (f *Service) SetBucketOwnership(_ context.Context, a object.Actor, name string, o meta.ObjectOwnership) error {
	return f.changeACL(a, name, "SetBucketOwnership", func(acl *meta.BucketACL, _ string) error {
		acl.Ownership = o
		return nil
	})
}

// GetObjectACL returns the version of an object in a bucket a owns, with
// its owner and grants.
func (f *Service) GetObjectACL(_ context.Context, a object.Actor, bucket, key, versionID string) (meta.Object, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	o, err := f.tagged(a, bucket, key, versionID)
	if err != nil {
		return meta.Object{}, err
	}
	obj := o.Object
	if obj.Owner == "" {
		obj.Owner = f.Buckets[bucket].OwnerID
	}
	if obj.ACL == nil {
		obj.ACL = meta.PrivateACL(obj.Owner)
	}
	return obj, nil
}

// SetObjectACL replaces the grants of the latest version of an object
// in a bucket a owns (a named version: only if it is the latest).
func (f *Service) SetObjectACL(_ context.Context, a object.Actor, bucket, key, versionID string, req object.ACL) (meta.Object, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	o, err := f.tagged(a, bucket, key, versionID)
	if err != nil {
		return meta.Object{}, err
	}
	grants, err := fakeGrants(&req, f.Buckets[bucket].OwnerID)
	if err != nil {
		return meta.Object{}, err
	}
	k := bucket + "/" + key
	if cur, ok := f.Objects[k]; ok && cur.VersionID == o.VersionID {
		cur.ACL = grants
		f.Objects[k] = cur
	}
	f.wrote("SetObjectACL " + k)
	o.ACL = grants
	return o.Object, nil
}
