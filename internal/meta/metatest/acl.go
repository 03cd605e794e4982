package metatest

import (
	"fmt"
	"slices"
	"testing"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

// ACLs (meta/acl.go): a version's owner and grants, written with the
// version or replaced in place; an upload's, carried to its object; a
// bucket's grants and ownership setting, read with its record.
var aclTests = []test{
	{name: "ObjectACL", fn: testObjectACL},
	{name: "VersionACL", fn: testVersionACL},
	{name: "UploadACL", fn: testUploadACL},
	{name: "BucketACL", fn: testBucketACL},
}

var (
	grantsBob = []meta.Grant{
		{Type: meta.GranteeUser, ID: "bob", Permission: meta.PermFullControl},
		{Type: meta.GranteeUser, ID: "alice", Permission: meta.PermRead},
	}
	grantsPublic = []meta.Grant{
		{Type: meta.GranteeUser, ID: "bob", Permission: meta.PermFullControl},
		{Type: meta.GranteeGroup, URI: meta.AllUsers, Permission: meta.PermRead},
	}
)

// setACL sets the grants of a version and fails unless the store answers
// with the version named and its owner kept.
func setACL(t *testing.T, s store, o meta.Object, versionID string, grants []meta.Grant) meta.Object {
	t.Helper()
	got, err := s.SetObjectACL(t.Context(), o.Bucket, o.Key, versionID, grants)
	ok(t, err, fmt.Sprintf("SetObjectACL %s %q", o.Key, versionID))
	if got.VersionID != o.VersionID || got.IsLatest != o.IsLatest || got.Owner != o.Owner || !slices.Equal(got.ACL, grants) {
		t.Errorf("SetObjectACL %s %q answered version %q latest %v owner %q grants %v; want %q %v %q %v",
			o.Key, versionID, got.VersionID, got.IsLatest, got.Owner, got.ACL, o.VersionID, o.IsLatest, o.Owner, grants)
	}
	o.ACL = grants
	return o
}

func testObjectACL(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	// Written by another account, with grants: both read back.
	o := obj("alice", "k", 10)
	o.Owner, o.ACL = "bob", grantsBob
	o = putVersion(t, s, o)
	wantObject(t, s, o)
	// Replaced in place: same version, owner, time.
	o = setACL(t, s, o, "", grantsPublic)
	wantObject(t, s, o)
	wantVersions(t, s, "alice", vid(o, "L"))
	o = setACL(t, s, o, meta.NullVersion, nil)
	wantObject(t, s, o)
	// The owner's own object without grants costs nothing and reads as
	// written (every row before migration 0024).
	plain := putVersion(t, s, obj("alice", "plain", 3))
	wantObject(t, s, plain)
	plain = setACL(t, s, plain, "", grantsBob)
	wantObject(t, s, plain)
	// Listings leave owner and grants out.
	page, err := s.ListObjects(ctx, "alice", meta.ListOptions{})
	ok(t, err, "ListObjects")
	for _, l := range page.Objects {
		if l.ACL != nil || l.Owner != "" {
			t.Errorf("ListObjects %s: owner %q grants %v, want none", l.Key, l.Owner, l.ACL)
		}
	}
	// Bad grants change nothing.
	for name, bad := range map[string][]meta.Grant{
		"an unknown permission": {{Type: meta.GranteeUser, ID: "bob", Permission: "ALL"}},
		"an unknown group":      {{Type: meta.GranteeGroup, URI: "http://example.com/g", Permission: meta.PermRead}},
		"a user without ID":     {{Type: meta.GranteeUser, Permission: meta.PermRead}},
		"an unknown type":       {{Type: "AmazonCustomerByEmail", ID: "bob", Permission: meta.PermRead}},
	} {
		_, err := s.SetObjectACL(ctx, "alice", "k", "", bad)
		wantCode(t, err, errcode.InvalidArgument, "SetObjectACL with "+name)
		b := obj("alice", "k2", 1)
		b.ACL = bad
		_, err = s.PutObjects(ctx, []meta.Put{{Object: b}})
		wantCode(t, err, errcode.InvalidArgument, "PutObjects with "+name)
	}
	wantObject(t, s, o)
	wantMissing(t, s, "alice", "k2")
	// A job rewriting a version in place keeps its owner and grants.
	o = setACL(t, s, o, "", grantsBob)
	cur, err := s.GetObject(ctx, "alice", "k")
	ok(t, err, "GetObject")
	re := cur
	re.BlobKey = fmt.Sprintf("blob/re-%d", seq.Add(1))
	re.Owner, re.ACL = "", nil
	_, err = s.PutObjects(ctx, []meta.Put{{Object: re, InPlace: true, Cond: meta.Cond{IfVersion: meta.Version(cur)}}})
	ok(t, err, "PutObjects InPlace")
	re.Owner, re.ACL = "bob", grantsBob
	wantObject(t, s, re)
	_, err = s.SetObjectACL(ctx, "alice", "missing", "", grantsBob)
	wantCode(t, err, errcode.NotFound, "SetObjectACL of a missing key")
	_, err = s.SetObjectACL(ctx, "nope", "k", "", grantsBob)
	wantCode(t, err, errcode.NotFound, "SetObjectACL in a missing bucket")
	_, err = s.SetObjectACL(ctx, "alice", "k", meta.NewVersionID(baseTime, ""), grantsBob)
	wantCode(t, err, errcode.NotFound, "SetObjectACL of a missing version")
}

func testVersionACL(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	setVersioning(t, s, "alice", meta.VersioningEnabled)
	v1 := obj("alice", "k", 10)
	v1.Owner = "bob"
	v1 = putVersion(t, s, v1)
	v2 := putVersion(t, s, obj("alice", "k", 20))
	v1.IsLatest = false
	v1 = setACL(t, s, v1, v1.VersionID, grantsBob)
	wantVersion(t, s, v1)
	wantObject(t, s, v2) // the latest has none
	v2 = setACL(t, s, v2, "", grantsPublic)
	wantVersion(t, s, v2)
	wantVersion(t, s, v1)
	// A delete marker has no ACL: the latest one reads as a missing key,
	// a named one is refused.
	m, err := s.DeleteObject(ctx, "alice", "k", meta.Cond{})
	ok(t, err, "DeleteObject")
	_, err = s.SetObjectACL(ctx, "alice", "k", "", grantsBob)
	wantCode(t, err, errcode.NotFound, "SetObjectACL of a key whose latest version is a delete marker")
	_, err = s.SetObjectACL(ctx, "alice", "k", m.VersionID, grantsBob)
	wantCode(t, err, errcode.MethodNotAllowed, "SetObjectACL of a delete marker by its version")
	v2.IsLatest = false
	wantVersion(t, s, v2)
}

func testUploadACL(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	u := newUpload("alice", "mp")
	u.Owner, u.ACL = "bob", grantsPublic
	ok(t, s.CreateUpload(ctx, u), "CreateUpload with an ACL")
	got, err := s.GetUpload(ctx, u.ID)
	ok(t, err, "GetUpload")
	if got.Owner != "bob" || !slices.Equal(got.ACL, grantsPublic) {
		t.Errorf("GetUpload owner %q ACL = %v, want bob's %v", got.Owner, got.ACL, grantsPublic)
	}
	// What the object service completes it with.
	ps := putParts(t, s, u.ID, 5, 7)
	in := completion(len(ps))
	in.Owner, in.ACL = got.Owner, got.ACL
	o, err := s.CompleteUpload(ctx, u.ID, in, completeOf(ps...), 0, meta.Cond{})
	ok(t, err, "CompleteUpload")
	want := completed(u, in, ps...)
	want.Owner, want.ACL = "bob", grantsPublic
	sameObject(t, o, want, "CompleteUpload result")
	wantObject(t, s, want)
	bad := newUpload("alice", "mp2")
	bad.ACL = []meta.Grant{{Type: meta.GranteeGroup, URI: "x", Permission: meta.PermRead}}
	wantCode(t, s.CreateUpload(ctx, bad), errcode.InvalidArgument, "CreateUpload with a bad grant")
}

func testBucketACL(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	get := func() *meta.BucketACL {
		t.Helper()
		b, err := s.GetBucket(ctx, "alice")
		ok(t, err, "GetBucket")
		return b.ACL
	}
	if a := get(); a != nil {
		t.Errorf("a new bucket's ACL = %+v, want nil (private)", a)
	}
	ok(t, s.SetBucketACL(ctx, "alice", grantsPublic), "SetBucketACL")
	if a := get(); a == nil || !slices.Equal(a.Grants, grantsPublic) || a.Ownership != "" {
		t.Errorf("after SetBucketACL: %+v", a)
	}
	ok(t, s.SetBucketOwnership(ctx, "alice", meta.OwnershipPreferred), "SetBucketOwnership")
	if a := get(); a == nil || !slices.Equal(a.Grants, grantsPublic) || a.Ownership != meta.OwnershipPreferred {
		t.Errorf("after SetBucketOwnership: %+v", a)
	}
	wantCode(t, s.SetBucketOwnership(ctx, "alice", "Everyone"), errcode.InvalidArgument, "SetBucketOwnership unknown")
	wantCode(t, s.SetBucketACL(ctx, "alice", []meta.Grant{{Type: meta.GranteeUser, Permission: meta.PermRead}}),
		errcode.InvalidArgument, "SetBucketACL without an ID")
	ok(t, s.SetBucketACL(ctx, "alice", nil), "SetBucketACL nil")
	ok(t, s.SetBucketOwnership(ctx, "alice", ""), "SetBucketOwnership none")
	if a := get(); a != nil {
		t.Errorf("after removing both: %+v, want nil", a)
	}
	wantCode(t, s.SetBucketACL(ctx, "nope", grantsPublic), errcode.NotFound, "SetBucketACL of a missing bucket")
	wantCode(t, s.SetBucketOwnership(ctx, "nope", meta.OwnershipEnforced), errcode.NotFound, "SetBucketOwnership of a missing bucket")
	// Created with both.
	acl := &meta.BucketACL{Grants: grantsBob, Ownership: meta.OwnershipEnforced}
	ok(t, s.CreateBucket(ctx, meta.Bucket{Name: "made", OwnerID: "alice", ACL: acl}), "CreateBucket with an ACL")
	b, err := s.GetBucket(ctx, "made")
	ok(t, err, "GetBucket")
	if b.ACL == nil || !slices.Equal(b.ACL.Grants, grantsBob) || b.ACL.Ownership != meta.OwnershipEnforced {
		t.Errorf("CreateBucket with an ACL: read %+v", b.ACL)
	}
}
