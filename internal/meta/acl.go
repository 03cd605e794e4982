package meta

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/coffer-storage/coffer/internal/errcode"
)

// ACLs (S3 access control lists, issue 21; docs/acl.md)
//
// A bucket and every object version carry an access control list: the
// grants S3 defines (a grantee and one permission each). The bucket's is
// read with its record (Bucket.ACL, with the bucket's object ownership
// setting); an object version's with its row (Object.Owner, Object.ACL).
// A nil list is the default, "private": only the owner, with
// FULL_CONTROL. CheckGrants is the one check of a list; CannedACL
// expands S3's canned ACLs into grants.

// Permission is what a grant allows.
type Permission string

// The permissions of S3's ACLs.
const (
	PermRead        Permission = "READ"
	PermWrite       Permission = "WRITE"
	PermReadACP     Permission = "READ_ACP"
	PermWriteACP    Permission = "WRITE_ACP"
	PermFullControl Permission = "FULL_CONTROL"
)

// The kinds of grantee (xsi:type in S3's XML). A grant by email address
// is resolved to the account's ID when it is written.
const (
	GranteeUser  = "CanonicalUser"
	GranteeGroup = "Group"
)

// The groups a grant may name.
const (
	AllUsers           = "http://acs.amazonaws.com/groups/global/AllUsers"
	AuthenticatedUsers = "http://acs.amazonaws.com/groups/global/AuthenticatedUsers"
	LogDelivery        = "http://acs.amazonaws.com/groups/s3/LogDelivery"
)

// MaxGrants is S3's limit of grants in one ACL.
const MaxGrants = 100

// Grant is one entry of an ACL: Type GranteeUser with ID (an account's
// user ID) or GranteeGroup with URI.
type Grant struct {
	Type       string     `json:"t"`
	ID         string     `json:"id,omitempty"`
	URI        string     `json:"uri,omitempty"`
	Permission Permission `json:"p"`
}

// ObjectOwnership is a bucket's object ownership setting (S3's
// OwnershipControls): "" when none is set, which Coffer treats as
// ObjectWriter (docs/acl.md).
type ObjectOwnership string

// The ownership settings.
const (
	// OwnershipObjectWriter: the account that writes an object owns it;
	// ACLs apply.
	OwnershipObjectWriter ObjectOwnership = "ObjectWriter"
	// OwnershipPreferred: an object written with the canned ACL
	// bucket-owner-full-control is owned by the bucket owner; ACLs apply.
	OwnershipPreferred ObjectOwnership = "BucketOwnerPreferred"
	// OwnershipEnforced: the bucket owner owns every object; ACLs are
	// disabled (only private and bucket-owner-full-control are accepted,
	// and no grant is consulted).
	OwnershipEnforced ObjectOwnership = "BucketOwnerEnforced"
)

// Valid reports whether o is a known setting ("" included: none).
func (o ObjectOwnership) Valid() bool {
	switch o {
	case "", OwnershipObjectWriter, OwnershipPreferred, OwnershipEnforced:
		return true
	}
	return false
}

// BucketACL is a bucket's access control: its grants (nil: private, the
// owner's FULL_CONTROL only) and its object ownership setting.
type BucketACL struct {
	Grants    []Grant         `json:",omitempty"`
	Ownership ObjectOwnership `json:",omitempty"`
}

// ACLs keeps the ACLs of buckets and object versions. The ACLs are read
// with the records they belong to (GetBucket, GetObject).
type ACLs interface {
	// SetBucketACL replaces a native bucket's grants (nil: private):
	// InvalidArgument unless CheckGrants; NotFound if the bucket is
	// missing; Conflict for a gateway bucket.
	SetBucketACL(ctx context.Context, name string, grants []Grant) error
	// SetBucketOwnership replaces a native bucket's object ownership
	// setting ("": none): InvalidArgument for an unknown one; NotFound,
	// Conflict as SetBucketACL.
	SetBucketOwnership(ctx context.Context, name string, o ObjectOwnership) error
	// SetObjectACL replaces the grants of version versionID ("": the
	// latest) of the key (nil: private), in place (no new version, the
	// same modification time), and returns the version as it is now:
	// InvalidArgument unless CheckGrants; the errors of SetObjectTags for
	// a missing bucket, key, version or a delete marker.
	SetObjectACL(ctx context.Context, bucket, key, versionID string, grants []Grant) (Object, error)
}

// aclError is InvalidArgument with Detail["reason"] = reason (the S3 API
// answers MalformedACLError, InvalidArgument or the like by it).
func aclError(reason, format string, a ...any) error {
	return &errcode.Error{Code: errcode.InvalidArgument, Message: fmt.Sprintf(format, a...), Detail: map[string]any{"reason": reason}}
}

// CheckGrants is the one check of an ACL's grants.
func CheckGrants(grants []Grant) error {
	if len(grants) > MaxGrants {
		return aclError("malformed_acl", "an ACL has at most %d grants", MaxGrants)
	}
	for _, g := range grants {
		if err := checkGrant(g); err != nil {
			return err
		}
	}
	return nil
}

func checkGrant(g Grant) error {
	bad := func(format string, a ...any) error { return aclError("malformed_acl", format, a...) }
	switch g.Permission {
	case PermRead, PermWrite, PermReadACP, PermWriteACP, PermFullControl:
	default:
		return bad("unknown permission %q", g.Permission)
	}
	switch g.Type {
	case GranteeUser:
		if g.ID == "" || len(g.ID) > 128 || g.URI != "" {
			return bad("a CanonicalUser grantee names an ID and no URI")
		}
	case GranteeGroup:
		if g.ID != "" {
			return bad("a Group grantee names a URI and no ID")
		}
		switch g.URI {
		case AllUsers, AuthenticatedUsers, LogDelivery:
		default:
			return bad("unknown group %q", g.URI)
		}
	default:
		return bad("unknown grantee type %q", g.Type)
	}
	return nil
}

// The canned ACLs (S3's x-amz-acl values).
const (
	CannedPrivate                = "private"
	CannedPublicRead             = "public-read"
	CannedPublicReadWrite        = "public-read-write"
	CannedAuthenticatedRead      = "authenticated-read"
	CannedBucketOwnerRead        = "bucket-owner-read"
	CannedBucketOwnerFullControl = "bucket-owner-full-control"
	CannedLogDeliveryWrite       = "log-delivery-write"
)

// CannedACL returns the grants of canned ACL name for a resource owned by
// owner in a bucket owned by bucketOwner (for a bucket itself, both are
// its owner: bucket-owner-read and bucket-owner-full-control then mean
// private, as on S3). InvalidArgument (reason "invalid_canned_acl") for
// an unknown name.
func CannedACL(name, owner, bucketOwner string) ([]Grant, error) {
	grants := []Grant{{Type: GranteeUser, ID: owner, Permission: PermFullControl}}
	group := func(uri string, p ...Permission) {
		for _, p := range p {
			grants = append(grants, Grant{Type: GranteeGroup, URI: uri, Permission: p})
		}
	}
	switch name {
	case CannedPrivate:
	case CannedPublicRead:
		group(AllUsers, PermRead)
	case CannedPublicReadWrite:
		group(AllUsers, PermRead, PermWrite)
	case CannedAuthenticatedRead:
		group(AuthenticatedUsers, PermRead)
	case CannedLogDeliveryWrite:
		group(LogDelivery, PermWrite, PermReadACP)
	case CannedBucketOwnerRead, CannedBucketOwnerFullControl:
		if bucketOwner != "" && bucketOwner != owner {
			p := PermRead
			if name == CannedBucketOwnerFullControl {
				p = PermFullControl
			}
			grants = append(grants, Grant{Type: GranteeUser, ID: bucketOwner, Permission: p})
		}
	default:
		return nil, aclError("invalid_canned_acl", "unknown canned ACL %q", name)
	}
	return grants, nil
}

// PrivateACL is the grants of a resource without an ACL of its own: its
// owner's FULL_CONTROL.
func PrivateACL(owner string) []Grant {
	return []Grant{{Type: GranteeUser, ID: owner, Permission: PermFullControl}}
}

// Grantee is who asks, as ACLs see them: UserID "" for anonymous.
type Grantee struct {
	UserID string
}

// Allows reports whether grants give g permission p (FULL_CONTROL gives
// every permission). AllUsers is anyone, anonymous included;
// AuthenticatedUsers any signed request.
func Allows(grants []Grant, g Grantee, p Permission) bool {
	return slices.ContainsFunc(grants, func(gr Grant) bool {
		if gr.Permission != p && gr.Permission != PermFullControl {
			return false
		}
		switch gr.Type {
		case GranteeUser:
			return g.UserID != "" && gr.ID == g.UserID
		case GranteeGroup:
			return gr.URI == AllUsers || gr.URI == AuthenticatedUsers && g.UserID != ""
		}
		return false
	})
}

// IsPublic reports whether grants give anything to the AllUsers or
// AuthenticatedUsers groups.
func IsPublic(grants []Grant) bool {
	return slices.ContainsFunc(grants, func(g Grant) bool {
		return g.Type == GranteeGroup && (g.URI == AllUsers || g.URI == AuthenticatedUsers)
	})
}

// ObjectACLDisabled reports whether a bucket's ownership setting
// disables ACLs (BucketOwnerEnforced).
func (a *BucketACL) ObjectACLDisabled() bool {
	return a != nil && a.Ownership == OwnershipEnforced
}

// OwnershipOf returns the setting in force (ObjectWriter when none is
// set).
func (a *BucketACL) OwnershipOf() ObjectOwnership {
	if a == nil || a.Ownership == "" {
		return OwnershipObjectWriter
	}
	return a.Ownership
}

// GrantsOf returns a's grants, the owner's FULL_CONTROL when it has none.
func (a *BucketACL) GrantsOf(owner string) []Grant {
	if a == nil || a.Grants == nil || a.ObjectACLDisabled() {
		return PrivateACL(owner)
	}
	return a.Grants
}

// ParseOwnership reads an ownership setting by name (case as S3 spells
// it): InvalidArgument for an unknown one.
func ParseOwnership(s string) (ObjectOwnership, error) {
	o := ObjectOwnership(strings.TrimSpace(s))
	if o == "" || !o.Valid() {
		return "", aclError("invalid_ownership", "object ownership must be BucketOwnerEnforced, BucketOwnerPreferred or ObjectWriter")
	}
	return o, nil
}
