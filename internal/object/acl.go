package object

import (
	"context"
	"github.com/coffer-storage/coffer/internal/audit"
	"slices"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

// ACLs (issue 21; docs/acl.md)
//
// A bucket's ACL grants bucket actions (aclAllows, step 5 of decide); an
// object version's ACL grants the actions on that version (objectGate,
// checked where the version is loaded). The account that writes a version
// owns it and has FULL_CONTROL of it; the bucket's owner has no right on a
// version another account wrote unless its ACL grants one (the canned
// bucket-owner-read and bucket-owner-full-control), or the bucket's
// ownership setting makes the bucket's owner the owner
// (BucketOwnerEnforced always; BucketOwnerPreferred for a version written
// with bucket-owner-full-control). BucketOwnerEnforced disables ACLs.

// ACL is the ACL a request asks for: a canned ACL (S3's x-amz-acl, the
// POST form's acl field) or grants (x-amz-grant-* headers, an
// AccessControlPolicy body), never both. A grantee named by email is a
// Grant of Type GranteeEmail whose ID is the address; it is resolved to
// the account's user ID when the ACL is written.
type ACL struct {
	Canned string
	Grants []meta.Grant
}

// GranteeEmail is the grantee type of a grant by email address
// (AmazonCustomerByEmail), resolved when written.
const GranteeEmail = "AmazonCustomerByEmail"

// The permissions the bucket's ACL gives, by action.
var bucketPermissions = map[string]meta.Permission{
	"s3:ListBucket":                 meta.PermRead,
	"s3:ListBucketVersions":         meta.PermRead,
	"s3:ListBucketMultipartUploads": meta.PermRead,
	"s3:PutObject":                  meta.PermWrite,
	"s3:DeleteObject":               meta.PermWrite,
	"s3:DeleteObjectVersion":        meta.PermWrite,
	"s3:AbortMultipartUpload":       meta.PermWrite,
	"s3:ListMultipartUploadParts":   meta.PermWrite,
	"s3:GetBucketAcl":               meta.PermReadACP,
	"s3:PutBucketAcl":               meta.PermWriteACP,
}

// The permissions an object version's ACL gives, by action.
var objectPermissions = map[string]meta.Permission{
	"s3:GetObject":           meta.PermRead,
	"s3:GetObjectVersion":    meta.PermRead,
	"s3:GetObjectAcl":        meta.PermReadACP,
	"s3:GetObjectVersionAcl": meta.PermReadACP,
	"s3:PutObjectAcl":        meta.PermWriteACP,
	"s3:PutObjectVersionAcl": meta.PermWriteACP,
}

// aclAllows reports whether b's ACL lets a do action on b (the bucket
// actions of bucketPermissions; object actions are the object's ACL's,
// see objectGate). AllUsers is anyone, AuthenticatedUsers any signed
// request. A bucket whose ownership is BucketOwnerEnforced has no ACL.
func (s *core) aclAllows(_ context.Context, b meta.Bucket, a Actor, action, _ string) bool {
	p := bucketPermissions[action]
	if p == "" || b.ACL == nil || b.ACL.ObjectACLDisabled() {
		return false
	}
	return meta.Allows(usableGrants(b, b.ACL.Grants), meta.Grantee{UserID: a.UserID}, p)
}

// usableGrants are the grants of b's ACL or of an object's in b that may
// allow anything: all of them, or, when b's Block Public Access says
// IgnorePublicAcls, those that are not public (meta.IsPublic).
func usableGrants(b meta.Bucket, grants []meta.Grant) []meta.Grant {
	if !b.IgnoresPublicAcls() || !meta.IsPublic(grants) {
		return grants
	}
	return slices.DeleteFunc(slices.Clone(grants), func(g meta.Grant) bool { return meta.IsPublic([]meta.Grant{g}) })
}

// blockPublic refuses to store public grants in b when its Block Public
// Access says BlockPublicAcls (S3's 403 AccessDenied).
func blockPublic(b meta.Bucket, grants []meta.Grant) error {
	if b.BlocksPublicAcls() && meta.IsPublic(grants) {
		return errcode.New(errcode.PermissionDenied, "the bucket's public access block (BlockPublicAcls) refuses public ACLs")
	}
	return nil
}

// objectGate is the part of a decision on an object action that needs
// the object version (its owner and ACL): authorizeObject returns it, and
// the method that loads the version checks it (check), or its absence
// (missing). One per request; the zero gate is open.
type objectGate struct {
	s      *core
	b      meta.Bucket
	a      Actor
	action string
	v      verdict // decide's verdict without the object
}

// authorizeObject is authorize for an action on an object version whose
// ACL may allow it (objectPermissions): a refusal that the version's ACL
// could overturn is left to the gate; an explicit Deny is not.
func (s *core) authorizeObject(ctx context.Context, a Actor, name, action, key string) (bucket, objectGate, error) {
	if err := ValidBucketName(name); err != nil {
		return bucket{}, objectGate{}, ErrNoBucket(name)
	}
	b, err := s.loadBucket(ctx, a, name)
	if err != nil {
		return bucket{}, objectGate{}, err
	}
	v, err := s.verdictOf(ctx, b, a, action, key)
	if err != nil {
		return bucket{}, objectGate{}, err
	}
	return bucket{Bucket: b, backend: s.backendOf(b)}, objectGate{s: s, b: b, a: a, action: action, v: v}, nil
}

// check decides on version o: allowed by the bucket policy or the
// public-read preset whatever its ACL; otherwise by its ACL, in which its
// owner has FULL_CONTROL (the bucket's owner when the version names
// none, or ACLs are disabled).
func (g objectGate) check(o meta.Object) error {
	if g.s == nil || g.v == byPolicy || g.v == byPublic {
		return nil
	}
	if g.a.UserID != "" && g.a.UserID == ownerOf(g.b, o) {
		return nil // the common case: no allocation
	}
	if _, grants := effectiveACL(g.b, o); meta.Allows(usableGrants(g.b, grants), meta.Grantee{UserID: g.a.UserID}, objectPermissions[g.action]) {
		return nil
	}
	return denied(g.a, g.b.Name)
}

// missing is the error of a request whose version is missing (err, a
// NotFound or a delete marker): err for those who may know (the bucket's
// owner, an actor allowed without the object, one who may list the
// bucket), else the refusal that does not tell.
func (g objectGate) missing(ctx context.Context, err error) error {
	if g.s == nil || g.v != refused {
		return err
	}
	if g.s.decide(ctx, g.b, g.a, "s3:ListBucket", "") == nil {
		return err
	}
	return denied(g.a, g.b.Name)
}

// effectiveACL returns the owner of version o in bucket b and its grants
// (the owner's FULL_CONTROL when it has none of its own; only that when
// the bucket's ownership setting disables ACLs).
func effectiveACL(b meta.Bucket, o meta.Object) (string, []meta.Grant) {
	owner := ownerOf(b, o)
	if o.ACL == nil || b.ACL.ObjectACLDisabled() {
		return owner, meta.PrivateACL(owner)
	}
	return owner, o.ACL
}

// ownerOf returns the owner of version o in bucket b.
func ownerOf(b meta.Bucket, o meta.Object) string {
	if o.Owner == "" || b.ACL.ObjectACLDisabled() {
		return b.OwnerID
	}
	return o.Owner
}

// writeACL is what a write by a into b that asks for req (nil: none)
// stores: the version's owner ("" for the bucket's owner) and grants (nil
// for the owner's FULL_CONTROL alone). With BucketOwnerEnforced only
// private and bucket-owner-full-control are accepted
// (AccessControlListNotSupported).
func (s *core) writeACL(ctx context.Context, a Actor, b meta.Bucket, req *ACL) (string, []meta.Grant, error) {
	if b.ACL.ObjectACLDisabled() {
		if req != nil && !ownerOnly(req, b.OwnerID) {
			return "", nil, errACLNotSupported()
		}
		return "", nil, nil
	}
	owner := a.UserID
	if owner == b.OwnerID || owner == "" ||
		b.ACL.OwnershipOf() == meta.OwnershipPreferred && req != nil && req.Canned == meta.CannedBucketOwnerFullControl {
		owner = ""
	}
	if req == nil {
		return owner, nil, nil
	}
	if b.Gateway != "" && !ownerOnly(req, b.OwnerID) {
		return "", nil, errcode.New(errcode.NotImplemented, "a gateway bucket's objects have no ACL of their own in Coffer")
	}
	grants, err := s.grantsOf(ctx, req, cmpOr(owner, b.OwnerID), b.OwnerID)
	if err != nil {
		return "", nil, err
	}
	if err := blockPublic(b, grants); err != nil {
		return "", nil, err
	}
	return owner, grants, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// ownerOnly reports whether req gives nothing beyond the owner's
// FULL_CONTROL (what BucketOwnerEnforced accepts).
func ownerOnly(req *ACL, owner string) bool {
	switch {
	case req.Canned != "":
		return req.Canned == meta.CannedPrivate || req.Canned == meta.CannedBucketOwnerFullControl
	case len(req.Grants) == 0:
		return true
	}
	return slices.Equal(req.Grants, meta.PrivateACL(owner))
}

func errACLNotSupported() error {
	return &errcode.Error{Code: errcode.InvalidArgument, Message: "The bucket does not allow ACLs",
		Detail: map[string]any{"s3_code": "AccessControlListNotSupported"}}
}

// grantsOf resolves req for a resource owned by owner in a bucket owned
// by bucketOwner: a canned ACL's grants, or the grants with email
// grantees resolved to user IDs (UnresolvableGrantByEmailAddress for an
// unknown address) and user grantees checked to exist (InvalidArgument).
// The owner's FULL_CONTROL alone is nil (the default).
func (s *core) grantsOf(ctx context.Context, req *ACL, owner, bucketOwner string) ([]meta.Grant, error) {
	var grants []meta.Grant
	if req.Canned != "" {
		g, err := meta.CannedACL(req.Canned, owner, bucketOwner)
		if err != nil {
			return nil, err
		}
		grants = g
	} else {
		grants = make([]meta.Grant, 0, len(req.Grants))
		for _, g := range req.Grants {
			switch g.Type {
			case GranteeEmail:
				u, err := s.meta.GetUserByEmail(ctx, g.ID)
				if errcode.Is(err, errcode.NotFound) {
					return nil, &errcode.Error{Code: errcode.InvalidArgument,
						Message: "The e-mail address you provided does not match any account on record.",
						Detail:  map[string]any{"s3_code": "UnresolvableGrantByEmailAddress"}}
				}
				if err != nil {
					return nil, err
				}
				g.Type, g.ID = meta.GranteeUser, u.ID
			case meta.GranteeUser:
				if _, err := s.meta.GetUser(ctx, g.ID); errcode.Is(err, errcode.NotFound) {
					return nil, &errcode.Error{Code: errcode.InvalidArgument, Message: "Invalid id",
						Detail: map[string]any{"reason": "invalid_grantee"}}
				} else if err != nil {
					return nil, err
				}
			}
			grants = append(grants, g)
		}
	}
	if err := meta.CheckGrants(grants); err != nil {
		return nil, err
	}
	if slices.Equal(grants, meta.PrivateACL(owner)) {
		return nil, nil
	}
	return grants, nil
}

// newBucketACL is the ACL of a bucket a creates as in says (nil: the
// defaults: private, no ownership setting, which is ObjectWriter; see
// docs/acl.md).
func (s *core) newBucketACL(ctx context.Context, a Actor, in CreateBucketInput) (*meta.BucketACL, error) {
	own := in.Ownership
	if !own.Valid() {
		return nil, errcode.New(errcode.InvalidArgument, "unknown object ownership %q", own)
	}
	if in.ACL == nil && own == "" {
		return nil, nil
	}
	acl := &meta.BucketACL{Ownership: own}
	if in.ACL != nil {
		if own == meta.OwnershipEnforced && !ownerOnly(in.ACL, a.UserID) {
			return nil, &errcode.Error{Code: errcode.InvalidArgument, Message: "Bucket cannot have ACLs set with ObjectOwnership's BucketOwnerEnforced setting",
				Detail: map[string]any{"s3_code": "InvalidBucketAclWithObjectOwnership"}}
		}
		grants, err := s.grantsOf(ctx, in.ACL, a.UserID, a.UserID)
		if err != nil {
			return nil, err
		}
		acl.Grants = grants
	}
	return acl, nil
}

// GetBucketACL returns bucket name and its grants (the owner's
// FULL_CONTROL when it has none of its own, or when ACLs are disabled).
func (s *Service) GetBucketACL(ctx context.Context, a Actor, name string) (meta.Bucket, []meta.Grant, error) {
	b, err := s.authorize(ctx, a, name, "s3:GetBucketAcl", "")
	if err != nil {
		return meta.Bucket{}, nil, err
	}
	return b.Bucket, b.ACL.GrantsOf(b.OwnerID), nil
}

// SetBucketACL replaces a bucket's grants with req's. A bucket whose
// ownership is BucketOwnerEnforced accepts only the owner's FULL_CONTROL
// (AccessControlListNotSupported).
func (s *Service) SetBucketACL(ctx context.Context, a Actor, name string, req ACL) (err error) {
	defer func() { s.audit(ctx, a, audit.BucketACL, audit.Target{Bucket: name}, err) }()
	b, err := s.authorize(ctx, a, name, "s3:PutBucketAcl", "")
	if err != nil {
		return err
	}
	if b.ACL.ObjectACLDisabled() && !ownerOnly(&req, b.OwnerID) {
		return errACLNotSupported()
	}
	grants, err := s.grantsOf(ctx, &req, b.OwnerID, b.OwnerID)
	if err != nil {
		return err
	}
	if err := blockPublic(b.Bucket, grants); err != nil {
		return err
	}
	return s.meta.SetBucketACL(ctx, name, grants)
}

// GetObjectACL returns version versionID ("": the latest) of bucket/key
// with its effective Owner and ACL (see effectiveACL).
func (s *Service) GetObjectACL(ctx context.Context, a Actor, bucket, key, versionID string) (meta.Object, error) {
	b, o, err := s.aclTarget(ctx, a, bucket, key, versionID, VersionedAction("s3:GetObjectAcl", versionID))
	if err != nil {
		return meta.Object{}, err
	}
	o.Owner, o.ACL = effectiveACL(b.Bucket, o)
	return reported(b.Bucket, o), nil
}

// SetObjectACL replaces the grants of version versionID ("": the latest)
// of bucket/key with req's, in place; its owner stays.
func (s *Service) SetObjectACL(ctx context.Context, a Actor, bucket, key, versionID string, req ACL) (_ meta.Object, err error) {
	defer func() {
		s.audit(ctx, a, audit.ObjectACL, audit.Target{Bucket: bucket, Key: key, VersionID: versionID}, err)
	}()
	b, o, err := s.aclTarget(ctx, a, bucket, key, versionID, VersionedAction("s3:PutObjectAcl", versionID))
	if err != nil {
		return meta.Object{}, err
	}
	owner, _ := effectiveACL(b.Bucket, o)
	if b.ACL.ObjectACLDisabled() {
		if !ownerOnly(&req, owner) {
			return meta.Object{}, errACLNotSupported()
		}
		return reported(b.Bucket, o), nil
	}
	if b.Gateway != "" {
		return meta.Object{}, errcode.New(errcode.NotImplemented, "a gateway bucket's objects have no ACL of their own in Coffer")
	}
	grants, err := s.grantsOf(ctx, &req, owner, b.OwnerID)
	if err != nil {
		return meta.Object{}, err
	}
	if err := blockPublic(b.Bucket, grants); err != nil {
		return meta.Object{}, err
	}
	if versionID == "" {
		versionID = o.VersionID // the version decided on, not a newer one
	}
	o, err = s.meta.SetObjectACL(ctx, bucket, key, versionID, grants)
	if err != nil {
		return meta.Object{}, notFound(err, key, versionID)
	}
	return reported(b.Bucket, o), nil
}

// aclTarget authorises action on version versionID of bucket/key and
// loads it (the object's ACL decides).
func (s *Service) aclTarget(ctx context.Context, a Actor, name, key, versionID, action string) (bucket, meta.Object, error) {
	b, gate, err := s.authorizeObject(ctx, a, name, action, key)
	if err != nil {
		return bucket{}, meta.Object{}, err
	}
	if err := ValidKey(key); err != nil {
		return bucket{}, meta.Object{}, err
	}
	if err := validVersion(versionID); err != nil {
		return bucket{}, meta.Object{}, err
	}
	o, err := b.load(ctx, key, versionID)
	if err == nil && o.DeleteMarker {
		err = ErrVersionIsDeleteMarker(o.VersionID)
	}
	if err != nil {
		return bucket{}, meta.Object{}, gate.missing(ctx, notFound(err, key, versionID))
	}
	return b, o, gate.check(o)
}

// GetBucketOwnership returns a bucket's object ownership setting:
// NotFound (resource ownership_controls) when none is set.
func (s *Service) GetBucketOwnership(ctx context.Context, a Actor, name string) (meta.ObjectOwnership, error) {
	b, err := s.authorize(ctx, a, name, "s3:GetBucketOwnershipControls", "")
	if err != nil {
		return "", err
	}
	if b.ACL == nil || b.ACL.Ownership == "" {
		return "", &errcode.Error{Code: errcode.NotFound, Message: "The bucket ownership controls were not found",
			Detail: map[string]any{"s3_code": "OwnershipControlsNotFoundError"}}
	}
	return b.ACL.Ownership, nil
}

// SetBucketOwnership sets a bucket's object ownership setting ("":
// none, DeleteBucketOwnershipControls).
func (s *Service) SetBucketOwnership(ctx context.Context, a Actor, name string, o meta.ObjectOwnership) (err error) {
	defer func() { s.audit(ctx, a, audit.BucketOwnership, audit.Target{Bucket: name}, err) }()
	if _, err := s.authorize(ctx, a, name, "s3:PutBucketOwnershipControls", ""); err != nil {
		return err
	}
	return s.meta.SetBucketOwnership(ctx, name, o)
}
