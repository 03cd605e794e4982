package object

import (
	"context"
	"strings"
	"testing"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

// s3Code is the S3 code an error names (Detail["s3_code"]), or "".
func s3Code(err error) string {
	if e := errcode.As(err); e != nil {
		c, _ := e.Detail["s3_code"].(string)
		return c
	}
	return ""
}

// TestObjectACLGrants: a version's ACL lets a grantee read it (and only
// it), through the one read every API uses; a refusal never tells
// whether a key exists; the grantee gets only the permission granted.
func TestObjectACLGrants(t *testing.T) {
	f := newFixture(t, 0)
	ctx := context.Background()
	anon := Actor{}
	for _, k := range []string{"k", "other"} {
		if _, err := f.put(t, f.alice, "alice-bucket", k, "v-"+k); err != nil {
			t.Fatal(err)
		}
	}
	deniedAll := func(what string) {
		t.Helper()
		for _, k := range []string{"k", "other", "missing"} {
			if _, err := f.svc.Get(ctx, f.bob, "alice-bucket", k); !errcode.Is(err, errcode.PermissionDenied) {
				t.Errorf("%s: bob reads %s: %v", what, k, err)
			}
			if _, err := f.svc.Get(ctx, anon, "alice-bucket", k); !errcode.Is(err, errcode.Unauthenticated) {
				t.Errorf("%s: anonymous reads %s: %v", what, k, err)
			}
		}
	}
	deniedAll("private")
	// A grant by email, resolved to bob's ID when written.
	if _, err := f.svc.SetObjectACL(ctx, f.alice, "alice-bucket", "k", "", ACL{Grants: []meta.Grant{
		{Type: GranteeEmail, ID: "bob@x.io", Permission: meta.PermRead}}}); err != nil {
		t.Fatal(err)
	}
	if got := f.read(t, f.bob, "alice-bucket", "k"); got != "v-k" {
		t.Errorf("bob's granted read = %q", got)
	}
	o, err := f.svc.GetObjectACL(ctx, f.alice, "alice-bucket", "k", "")
	if err != nil || o.Owner != "alice" || len(o.ACL) != 1 || o.ACL[0].ID != "bob" || o.ACL[0].Type != meta.GranteeUser {
		t.Errorf("GetObjectACL = %q %+v, %v; want alice's object granting bob READ", o.Owner, o.ACL, err)
	}
	for what, err := range map[string]error{
		"reads the other object":  getErr(f.svc.Get(ctx, f.bob, "alice-bucket", "other")),
		"learns a key is missing": getErr(f.svc.Get(ctx, f.bob, "alice-bucket", "missing")),
		"reads the ACL":           getErr(f.svc.GetObjectACL(ctx, f.bob, "alice-bucket", "k", "")),
		"writes the ACL":          getErr(f.svc.SetObjectACL(ctx, f.bob, "alice-bucket", "k", "", ACL{Canned: "public-read"})),
		"lists the bucket":        getErr(f.svc.List(ctx, f.bob, "alice-bucket", meta.ListOptions{})),
		"overwrites the object":   getErr(f.put(t, f.bob, "alice-bucket", "k", "x")),
		"deletes the object":      getErr(f.svc.Delete(ctx, f.bob, "alice-bucket", "k", meta.Cond{})),
	} {
		if !errcode.Is(err, errcode.PermissionDenied) {
			t.Errorf("bob %s: %v", what, err)
		}
	}
	if _, err := f.svc.Get(ctx, anon, "alice-bucket", "k"); !errcode.Is(err, errcode.Unauthenticated) {
		t.Errorf("anonymous reads an object granted to bob: %v", err)
	}
	// AuthenticatedUsers: any signed request, not anonymous.
	if _, err := f.svc.SetObjectACL(ctx, f.alice, "alice-bucket", "k", "", ACL{Canned: "authenticated-read"}); err != nil {
		t.Fatal(err)
	}
	if got := f.read(t, f.bob, "alice-bucket", "k"); got != "v-k" {
		t.Errorf("authenticated-read: bob reads %q", got)
	}
	if _, err := f.svc.Get(ctx, anon, "alice-bucket", "k"); !errcode.Is(err, errcode.Unauthenticated) {
		t.Errorf("authenticated-read: anonymous reads: %v", err)
	}
	// AllUsers: anyone.
	if _, err := f.svc.SetObjectACL(ctx, f.alice, "alice-bucket", "k", "", ACL{Canned: "public-read"}); err != nil {
		t.Fatal(err)
	}
	if got := f.read(t, anon, "alice-bucket", "k"); got != "v-k" {
		t.Errorf("public-read: anonymous reads %q", got)
	}
	// Back to private: nothing left.
	if _, err := f.svc.SetObjectACL(ctx, f.alice, "alice-bucket", "k", "", ACL{Canned: "private"}); err != nil {
		t.Fatal(err)
	}
	deniedAll("private again")
	// Bad grants change nothing.
	_, err = f.svc.SetObjectACL(ctx, f.alice, "alice-bucket", "k", "", ACL{Grants: []meta.Grant{{Type: GranteeEmail, ID: "nobody@x.io", Permission: meta.PermRead}}})
	if s3Code(err) != "UnresolvableGrantByEmailAddress" {
		t.Errorf("grant to an unknown email: %v", err)
	}
	_, err = f.svc.SetObjectACL(ctx, f.alice, "alice-bucket", "k", "", ACL{Grants: []meta.Grant{{Type: meta.GranteeUser, ID: "nobody", Permission: meta.PermRead}}})
	if !errcode.Is(err, errcode.InvalidArgument) {
		t.Errorf("grant to an unknown user: %v", err)
	}
	deniedAll("after refused grants")
}

func getErr[T any](_ T, err error) error { return err }

// TestBucketACLAndOwnership: a bucket's ACL grants bucket actions
// (public-read-write: anyone lists and writes); the writer owns what it
// writes, and the bucket's owner may not read it unless its ACL or the
// bucket's ownership setting says so; BucketOwnerEnforced disables ACLs.
func TestBucketACLAndOwnership(t *testing.T) {
	f := newFixture(t, 0)
	ctx := context.Background()
	anon := Actor{}
	if err := f.svc.SetBucketACL(ctx, f.alice, "alice-bucket", ACL{Canned: "public-read-write"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.put(t, f.alice, "alice-bucket", "alices", "x"); err != nil {
		t.Fatal(err)
	}
	page, err := f.svc.List(ctx, anon, "alice-bucket", meta.ListOptions{})
	if err != nil || len(page.Objects) != 1 || page.Objects[0].Owner != "alice" {
		t.Errorf("anonymous lists a public-read-write bucket: %+v, %v; want alice's object, owner named", page.Objects, err)
	}
	if _, grants, err := f.svc.GetBucketACL(ctx, f.bob, "alice-bucket"); !errcode.Is(err, errcode.PermissionDenied) {
		t.Errorf("bob reads the bucket's ACL (%v): %v", grants, err)
	}
	if _, err := f.put(t, f.bob, "alice-bucket", "bobs", "from bob"); err != nil {
		t.Fatalf("bob writes into a public-read-write bucket: %v", err)
	}
	// bob owns it: alice (the bucket's owner) may not read it ...
	if _, err := f.svc.Get(ctx, f.alice, "alice-bucket", "bobs"); !errcode.Is(err, errcode.PermissionDenied) {
		t.Errorf("the bucket's owner reads an object bob wrote: %v", err)
	}
	o, err := f.svc.GetObjectACL(ctx, f.bob, "alice-bucket", "bobs", "")
	if err != nil || o.Owner != "bob" {
		t.Errorf("bob's object's ACL: owner %q, %v", o.Owner, err)
	}
	// ... unless bob grants it (bucket-owner-full-control) ...
	if _, err := f.svc.Put(ctx, f.bob, PutInput{Bucket: "alice-bucket", Key: "bobs2", Body: strings.NewReader("x"), Size: 1,
		ACL: &ACL{Canned: meta.CannedBucketOwnerFullControl}}); err != nil {
		t.Fatal(err)
	}
	if got := f.read(t, f.alice, "alice-bucket", "bobs2"); got != "x" {
		t.Errorf("bucket-owner-full-control: alice reads %q", got)
	}
	// ... but may delete it (a bucket WRITE).
	if _, err := f.svc.Delete(ctx, f.alice, "alice-bucket", "bobs2", meta.Cond{}); err != nil {
		t.Errorf("the bucket's owner deletes bob's object: %v", err)
	}
	// BucketOwnerEnforced: the bucket's owner owns everything; ACLs are
	// refused and no longer grant anything.
	if err := f.svc.SetBucketOwnership(ctx, f.alice, "alice-bucket", meta.OwnershipEnforced); err != nil {
		t.Fatal(err)
	}
	if got := f.read(t, f.alice, "alice-bucket", "bobs"); got != "from bob" {
		t.Errorf("BucketOwnerEnforced: alice reads %q", got)
	}
	if _, err := f.svc.List(ctx, anon, "alice-bucket", meta.ListOptions{}); !errcode.Is(err, errcode.Unauthenticated) {
		t.Errorf("BucketOwnerEnforced: the bucket's public ACL still lets anonymous list: %v", err)
	}
	_, err = f.svc.Put(ctx, f.alice, PutInput{Bucket: "alice-bucket", Key: "p", Body: strings.NewReader("x"), Size: 1, ACL: &ACL{Canned: "public-read"}})
	if s3Code(err) != "AccessControlListNotSupported" {
		t.Errorf("BucketOwnerEnforced: a public-read PutObject: %v", err)
	}
	if err := f.svc.SetBucketACL(ctx, f.alice, "alice-bucket", ACL{Canned: "public-read"}); s3Code(err) != "AccessControlListNotSupported" {
		t.Errorf("BucketOwnerEnforced: PutBucketAcl public-read: %v", err)
	}
	if _, grants, err := f.svc.GetBucketACL(ctx, f.alice, "alice-bucket"); err != nil || len(grants) != 1 || grants[0].ID != "alice" {
		t.Errorf("BucketOwnerEnforced: GetBucketACL = %+v, %v; want alice's FULL_CONTROL", grants, err)
	}
	if own, err := f.svc.GetBucketOwnership(ctx, f.alice, "alice-bucket"); err != nil || own != meta.OwnershipEnforced {
		t.Errorf("GetBucketOwnership = %q, %v", own, err)
	}
	if err := f.svc.SetBucketOwnership(ctx, f.alice, "alice-bucket", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.GetBucketOwnership(ctx, f.alice, "alice-bucket"); s3Code(err) != "OwnershipControlsNotFoundError" {
		t.Errorf("GetBucketOwnership after delete: %v", err)
	}
	// CreateBucket with BucketOwnerEnforced and a public ACL: refused.
	_, err = f.svc.CreateBucketWith(ctx, f.alice, CreateBucketInput{Name: "alice-enforced", ACL: &ACL{Canned: "public-read"}, Ownership: meta.OwnershipEnforced})
	if s3Code(err) != "InvalidBucketAclWithObjectOwnership" {
		t.Errorf("CreateBucket BucketOwnerEnforced + public-read: %v", err)
	}
}

// TestMultipartACL: CreateMultipartUpload's ACL and writer reach the
// completed object.
func TestMultipartACL(t *testing.T) {
	f := newFixture(t, 0)
	ctx := context.Background()
	u, err := f.svc.Uploads.CreateUpload(ctx, f.alice, CreateUploadInput{Bucket: "alice-bucket", Key: "mp", ACL: &ACL{Canned: "public-read"}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := f.svc.Uploads.PutPart(ctx, f.alice, PartInput{Bucket: "alice-bucket", Key: "mp", UploadID: u.ID, Number: 1,
		Body: strings.NewReader("hello"), Size: 5})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Uploads.CompleteUpload(ctx, f.alice, "alice-bucket", "mp", u.ID, []meta.CompletePart{{Number: 1, ETag: p.ETag}}, meta.Cond{}); err != nil {
		t.Fatal(err)
	}
	if got := f.read(t, Actor{}, "alice-bucket", "mp"); got != "hello" {
		t.Errorf("anonymous reads a public-read multipart object: %q", got)
	}
}
