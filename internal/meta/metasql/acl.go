package metasql

import (
	"context"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

// ACLs (migration 0024): a bucket's grants are JSON in buckets.acl (NULL:
// private) and its ownership setting is buckets.object_ownership; a
// version's owner and grants are JSON in objects.acl ({"o","g"}; NULL: the
// bucket owner's, private), read with the row; an upload's (the owner and
// grants its object gets) likewise in uploads.acl.

// aclSQL are the statements of the ACL operations.
type aclSQL struct {
	// setBucket: args grants, name; setOwnership: args ownership, name
	// (native buckets only).
	setBucket, setOwnership string
	// setObject: a version's owner and grants (versionSQL).
	setObject versionSQL
	// ownerLatest, ownerVersion: the objects.acl and version ID of the
	// latest version (or version ph(3)) of bucket ph(1), key ph(2) that
	// is not a delete marker, for SetObjectACL to keep its owner.
	ownerLatest, ownerVersion string
}

func newACLSQL(ph PH) aclSQL {
	owner := func(cond string) string {
		return "SELECT acl, version_id FROM objects WHERE bucket = " + ph(1) + " AND key = " + ph(2) + " AND " + cond + " AND NOT delete_marker"
	}
	return aclSQL{
		setBucket:    "UPDATE buckets SET acl = " + ph(1) + " WHERE name = " + ph(2) + " AND gateway = ''",
		setOwnership: "UPDATE buckets SET object_ownership = " + ph(1) + " WHERE name = " + ph(2) + " AND gateway = ''",
		setObject:    newVersionSQL(ph, "acl"),
		ownerLatest:  owner("is_latest"),
		ownerVersion: owner(VersionIs("", ph(3))),
	}
}

// GrantsArg is a bucket's or upload's grants as an argument: JSON, or nil
// (NULL) for none.
// (An empty list, which grants no one, is "[]", not NULL.)
func GrantsArg(grants []meta.Grant) (any, error) { return jsonArg(grants, grants == nil, "ACL") }

// DecodeGrants is the inverse of GrantsArg.
func DecodeGrants(s *string) (g []meta.Grant, err error) {
	return g, decodeJSON(s, &g, "ACL")
}

// objectACL is a version's objects.acl.
type objectACL struct {
	Owner  string       `json:"o,omitempty"`
	Grants []meta.Grant `json:"g"`
}

// ObjectACLArg is o's objects.acl: nil (NULL) when the bucket's owner
// wrote it without grants.
func ObjectACLArg(o meta.Object) (any, error) { return ACLArg(o.Owner, o.ACL) }

// ACLArg is an owner and grants as an objects.acl or uploads.acl.
func ACLArg(owner string, grants []meta.Grant) (any, error) {
	return jsonArg(objectACL{Owner: owner, Grants: grants}, owner == "" && grants == nil, "ACL")
}

// DecodeObjectACL sets o's Owner and ACL from its objects.acl.
func DecodeObjectACL(s *string, o *meta.Object) (err error) {
	o.Owner, o.ACL, err = DecodeACL(s)
	return err
}

// DecodeACL is the inverse of ACLArg.
func DecodeACL(s *string) (string, []meta.Grant, error) {
	var a objectACL
	err := decodeJSON(s, &a, "ACL")
	return a.Owner, a.Grants, err
}

// SetBucketACL implements meta.ACLs.
func (o aclOps) SetBucketACL(ctx context.Context, name string, grants []meta.Grant) error {
	if err := meta.CheckGrants(grants); err != nil {
		return err
	}
	arg, err := GrantsArg(grants)
	if err != nil {
		return err
	}
	return o.setBucket(ctx, "set bucket ACL", o.sql.acl.setBucket, arg, name)
}

// SetBucketOwnership implements meta.ACLs.
func (o aclOps) SetBucketOwnership(ctx context.Context, name string, own meta.ObjectOwnership) error {
	if !own.Valid() {
		return errcode.New(errcode.InvalidArgument, "unknown object ownership %q", own)
	}
	return o.setBucket(ctx, "set bucket ownership", o.sql.acl.setOwnership, string(own), name)
}

// setBucket runs a bucket's update (args arg, name): when it changes
// nothing, the bucket is missing (NotFound) or a gateway bucket
// (Conflict).
func (o aclOps) setBucket(ctx context.Context, what, query string, arg any, name string) error {
	n, err := o.run.Exec(ctx, what, query, []any{arg, name}, nil)
	if err != nil || n > 0 {
		return err
	}
	if _, err := (bucketOps(o)).GetBucket(ctx, name); err != nil {
		return err
	}
	return errcode.New(errcode.Conflict, "bucket %q is a gateway bucket: its ACL is its backend's", name)
}

// SetObjectACL implements meta.ACLs: the version's owner and ID are
// read, then that version's objects.acl replaced with the same owner and
// the new grants (setVersion). When the version is gone in between (a
// new latest replaced it, or it was deleted), it starts again.
func (o aclOps) SetObjectACL(ctx context.Context, bucket, key, versionID string, grants []meta.Grant) (meta.Object, error) {
	if err := meta.CheckGrants(grants); err != nil {
		return meta.Object{}, err
	}
	q, args := o.sql.acl.ownerLatest, []any{bucket, o.key(key)}
	if versionID != "" {
		q, args = o.sql.acl.ownerVersion, append(args, versionID)
	}
	type current struct {
		acl     *string
		version string
	}
	for range 3 {
		cur, err := Get(ctx, o.run, "get object ACL", func(r Row) (c current, err error) {
			return c, r.Scan(&c.acl, &c.version)
		}, func() error { return nil }, q, args...)
		if err != nil {
			return meta.Object{}, err
		}
		out := meta.Object{Bucket: bucket, Key: key}
		if err := DecodeObjectACL(cur.acl, &out); err != nil {
			return meta.Object{}, err
		}
		out.ACL = grants
		arg, err := ObjectACLArg(out)
		if err != nil {
			return meta.Object{}, err
		}
		at := versionID
		if cur.version != "" {
			at = cur.version // none: setVersion says what is missing
		}
		res, err := (objectOps(o)).setVersion(ctx, "set object ACL", o.sql.acl.setObject, arg, out, at)
		if cur.version != "" && versionID == "" && errcode.Is(err, errcode.NotFound) {
			continue // the latest changed under us
		}
		return res, err
	}
	return meta.Object{}, errcode.New(errcode.Unavailable, "the ACL of %q could not be set: its versions keep changing", key)
}
