package object

import (
	"strings"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/metacache"
)

// TestBucketPolicyDecides: a bucket policy decides requests through the
// metadata cache as coffer serve runs it (a new policy holds at once): an
// Allow lets anonymous read, a Deny beats the owner for any action but
// the policy's own, conditions see the request's keys, an unknown
// principal is MalformedPolicy, and ExistingObjectTag conditions see the
// object's tags.
func TestBucketPolicyDecides(t *testing.T) {
	f := newFixtureOver(t, 0, func(m meta.Stores) meta.Stores {
		return metacache.NewStore(m, metacache.NewBus(), metacache.StoreOptions{Buckets: metacache.Options{TTL: time.Minute}}).Stores()
	})
	ctx := t.Context()
	anon := Actor{}
	if _, err := f.put(t, f.alice, "alice-bucket", "pub/k", "v"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Get(ctx, anon, "alice-bucket", "pub/k"); !errcode.Is(err, errcode.Unauthenticated) {
		t.Fatalf("anonymous read without a policy: %v", err)
	}
	put := func(doc string) error { return f.svc.PutBucketPolicy(ctx, f.alice, "alice-bucket", []byte(doc)) }
	if err := put(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::alice-bucket/pub/*"}]}`); err != nil {
		t.Fatal(err)
	}
	if got := f.read(t, anon, "alice-bucket", "pub/k"); got != "v" {
		t.Errorf("anonymous read allowed by the policy = %q", got)
	}
	if _, err := f.put(t, anon, "alice-bucket", "pub/new", "x"); !errcode.Is(err, errcode.Unauthenticated) {
		t.Errorf("anonymous write under a read policy: %v", err)
	}
	if public, err := f.svc.GetBucketPolicyStatus(ctx, f.alice, "alice-bucket"); err != nil || !public {
		t.Errorf("GetBucketPolicyStatus = %v, %v", public, err)
	}
	// bob may not manage alice's policy.
	if err := f.svc.PutBucketPolicy(ctx, f.bob, "alice-bucket", []byte(`{}`)); !errcode.Is(err, errcode.PermissionDenied) {
		t.Errorf("bob's PutBucketPolicy: %v", err)
	}

	// A Deny of everything to everyone: the owner loses the bucket but
	// keeps the policy actions.
	deny := `{"Version":"2012-10-17","Statement":[{"Effect":"Deny","Principal":"*","Action":"s3:*","Resource":["arn:aws:s3:::alice-bucket","arn:aws:s3:::alice-bucket/*"]}]}`
	if err := put(deny); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Get(ctx, f.alice, "alice-bucket", "pub/k"); !errcode.Is(err, errcode.PermissionDenied) {
		t.Errorf("owner's read under a Deny: %v", err)
	}
	if doc, err := f.svc.GetBucketPolicy(ctx, f.alice, "alice-bucket"); err != nil || doc != deny {
		t.Errorf("owner's GetBucketPolicy under a Deny: %q, %v", doc, err)
	}
	if err := f.svc.DeleteBucketPolicy(ctx, f.alice, "alice-bucket"); err != nil {
		t.Errorf("owner's DeleteBucketPolicy under a Deny: %v", err)
	}
	if got := f.read(t, f.alice, "alice-bucket", "pub/k"); got != "v" {
		t.Errorf("owner's read after the Deny was removed = %q", got)
	}
	if err := f.svc.DeleteBucketPolicy(ctx, f.alice, "alice-bucket"); err != nil {
		t.Errorf("DeleteBucketPolicy without one: %v, want nothing to do", err)
	}

	// Conditions see the request's keys.
	if err := put(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::alice-bucket/*",
		"Condition":{"IpAddress":{"aws:SourceIp":"10.0.0.0/8"},"Bool":{"aws:SecureTransport":"true"}}}]}`); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		ip, tls string
		ok      bool
	}{{"10.1.2.3", "true", true}, {"10.1.2.3", "false", false}, {"192.0.2.1", "true", false}} {
		a := Actor{Context: map[string][]string{"aws:sourceip": {c.ip}, "aws:securetransport": {c.tls}}}
		_, err := f.svc.Get(ctx, a, "alice-bucket", "pub/k")
		if (err == nil) != c.ok {
			t.Errorf("anonymous read from %s tls=%s: %v, want allowed %v", c.ip, c.tls, err, c.ok)
		}
	}

	// The decision adds aws:CurrentTime and aws:EpochTime for a policy
	// that names them.
	for _, c := range []struct {
		cond string
		ok   bool
	}{
		{`{"DateGreaterThan":{"aws:CurrentTime":"2000-01-01T00:00:00Z"}}`, true},
		{`{"DateLessThan":{"aws:CurrentTime":"2000-01-01T00:00:00Z"}}`, false},
		{`{"DateGreaterThan":{"aws:EpochTime":"946684800"}}`, true},
	} {
		if err := put(`{"Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::alice-bucket/*","Condition":` + c.cond + `}]}`); err != nil {
			t.Fatal(err)
		}
		if _, err := f.svc.Get(ctx, anon, "alice-bucket", "pub/k"); (err == nil) != c.ok {
			t.Errorf("anonymous read under %s: %v, want allowed %v", c.cond, err, c.ok)
		}
	}

	// A principal must exist.
	err := put(`{"Statement":[{"Effect":"Allow","Principal":{"AWS":"nobody"},"Action":"s3:GetObject","Resource":"arn:aws:s3:::alice-bucket/*"}]}`)
	if e := errcode.As(err); e == nil || e.Detail["s3_code"] != "MalformedPolicy" {
		t.Errorf("policy naming an unknown principal: %v", err)
	}
	// bob, named, reads objects tagged for him.
	if err := put(`{"Statement":[{"Effect":"Allow","Principal":{"AWS":"bob"},"Action":"s3:GetObject","Resource":"arn:aws:s3:::alice-bucket/*",
		"Condition":{"StringEquals":{"s3:ExistingObjectTag/Reader":"bob"}}}]}`); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Get(ctx, f.bob, "alice-bucket", "pub/k"); !errcode.Is(err, errcode.PermissionDenied) {
		t.Errorf("bob reads an untagged object: %v", err)
	}
	if _, err := f.svc.SetTags(ctx, f.alice, "alice-bucket", "pub/k", "", []meta.Tag{{Key: "Reader", Value: "bob"}}); err != nil {
		t.Fatal(err)
	}
	if got := f.read(t, f.bob, "alice-bucket", "pub/k"); got != "v" {
		t.Errorf("bob reads the object tagged for him = %q", got)
	}
}

// TestPublicAccessBlockDecides: BlockPublicPolicy refuses a public policy
// (and nothing else); RestrictPublicBuckets makes a public policy grant
// nobody but the owner, while its Denies still hold.
func TestPublicAccessBlockDecides(t *testing.T) {
	f := newFixture(t, 0)
	ctx := t.Context()
	if _, err := f.put(t, f.alice, "alice-bucket", "k", "v"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.GetPublicAccessBlock(ctx, f.alice, "alice-bucket"); !errcode.Is(err, errcode.NotFound) {
		t.Errorf("GetPublicAccessBlock without one: %v", err)
	}
	if err := f.svc.SetPublicAccessBlock(ctx, f.bob, "alice-bucket", &meta.PublicAccessBlock{}); !errcode.Is(err, errcode.PermissionDenied) {
		t.Errorf("bob's SetPublicAccessBlock: %v", err)
	}
	set := func(p meta.PublicAccessBlock) {
		t.Helper()
		if err := f.svc.SetPublicAccessBlock(ctx, f.alice, "alice-bucket", &p); err != nil {
			t.Fatal(err)
		}
		if got, err := f.svc.GetPublicAccessBlock(ctx, f.alice, "alice-bucket"); err != nil || got != p {
			t.Fatalf("GetPublicAccessBlock = %+v, %v; want %+v", got, err, p)
		}
	}
	put := func(doc string) error { return f.svc.PutBucketPolicy(ctx, f.alice, "alice-bucket", []byte(doc)) }
	public := `{"Statement":{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::alice-bucket/*"}}`
	bound := `{"Statement":{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::alice-bucket/*","Condition":{"IpAddress":{"aws:SourceIp":"10.0.0.0/8"}}}}`

	set(meta.PublicAccessBlock{BlockPublicPolicy: true})
	if err := put(public); !errcode.Is(err, errcode.PermissionDenied) {
		t.Errorf("public policy under BlockPublicPolicy: %v", err)
	}
	if _, err := f.svc.GetBucketPolicy(ctx, f.alice, "alice-bucket"); !errcode.Is(err, errcode.NotFound) {
		t.Errorf("the refused policy was stored: %v", err)
	}
	if err := put(bound); err != nil {
		t.Errorf("non-public policy under BlockPublicPolicy: %v", err)
	}

	// RestrictPublicBuckets: the public policy (stored before) grants
	// anonymous nothing; the owner keeps the bucket.
	set(meta.PublicAccessBlock{})
	if err := put(public); err != nil {
		t.Fatal(err)
	}
	if got := f.read(t, Actor{}, "alice-bucket", "k"); got != "v" {
		t.Fatalf("anonymous read by the public policy = %q", got)
	}
	set(meta.PublicAccessBlock{RestrictPublicBuckets: true})
	if _, err := f.svc.Get(ctx, Actor{}, "alice-bucket", "k"); !errcode.Is(err, errcode.Unauthenticated) {
		t.Errorf("anonymous read under RestrictPublicBuckets: %v", err)
	}
	if _, err := f.svc.Get(ctx, f.bob, "alice-bucket", "k"); !errcode.Is(err, errcode.PermissionDenied) {
		t.Errorf("bob's read under RestrictPublicBuckets: %v", err)
	}
	if got := f.read(t, f.alice, "alice-bucket", "k"); got != "v" {
		t.Errorf("owner's read under RestrictPublicBuckets = %q", got)
	}
	// A policy that is not public still grants under RestrictPublicBuckets.
	if err := put(bound); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Get(ctx, Actor{Context: map[string][]string{"aws:sourceip": {"10.1.1.1"}}}, "alice-bucket", "k"); err != nil {
		t.Errorf("non-public policy's grant under RestrictPublicBuckets: %v", err)
	}
	if err := f.svc.SetPublicAccessBlock(ctx, f.alice, "alice-bucket", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.GetPublicAccessBlock(ctx, f.alice, "alice-bucket"); !errcode.Is(err, errcode.NotFound) {
		t.Errorf("GetPublicAccessBlock after delete: %v", err)
	}
}

// TestPublicAccessBlockACLs: BlockPublicAcls refuses public grants on the
// bucket and its objects (PutBucketAcl, PutObjectAcl, an ACL with a
// write) and keeps private ones; IgnorePublicAcls makes public grants
// already stored allow nothing, and they allow again once it is off.
func TestPublicAccessBlockACLs(t *testing.T) {
	f := newFixture(t, 0)
	ctx := t.Context()
	if _, err := f.put(t, f.alice, "alice-bucket", "k", "v"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.SetObjectACL(ctx, f.alice, "alice-bucket", "k", "", ACL{Canned: meta.CannedPublicRead}); err != nil {
		t.Fatal(err)
	}
	if got := f.read(t, Actor{}, "alice-bucket", "k"); got != "v" {
		t.Fatalf("anonymous read of a public-read object = %q", got)
	}
	set := func(p meta.PublicAccessBlock) {
		t.Helper()
		if err := f.svc.SetPublicAccessBlock(ctx, f.alice, "alice-bucket", &p); err != nil {
			t.Fatal(err)
		}
	}
	set(meta.PublicAccessBlock{IgnorePublicAcls: true})
	if _, err := f.svc.Get(ctx, Actor{}, "alice-bucket", "k"); !errcode.Is(err, errcode.Unauthenticated) {
		t.Errorf("anonymous read under IgnorePublicAcls: %v", err)
	}
	if err := f.svc.SetBucketACL(ctx, f.alice, "alice-bucket", ACL{Canned: meta.CannedPublicRead}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.List(ctx, Actor{}, "alice-bucket", meta.ListOptions{}); !errcode.Is(err, errcode.Unauthenticated) {
		t.Errorf("anonymous list of a public-read bucket under IgnorePublicAcls: %v", err)
	}
	set(meta.PublicAccessBlock{BlockPublicAcls: true})
	if err := f.svc.SetBucketACL(ctx, f.alice, "alice-bucket", ACL{Canned: meta.CannedPublicReadWrite}); !errcode.Is(err, errcode.PermissionDenied) {
		t.Errorf("public bucket ACL under BlockPublicAcls: %v", err)
	}
	if _, err := f.svc.SetObjectACL(ctx, f.alice, "alice-bucket", "k", "", ACL{Canned: meta.CannedAuthenticatedRead}); !errcode.Is(err, errcode.PermissionDenied) {
		t.Errorf("public object ACL under BlockPublicAcls: %v", err)
	}
	if _, err := f.svc.Put(ctx, f.alice, PutInput{Bucket: "alice-bucket", Key: "new", Body: strings.NewReader("x"), Size: 1,
		ACL: &ACL{Canned: meta.CannedPublicRead}}); !errcode.Is(err, errcode.PermissionDenied) {
		t.Errorf("a write with a public ACL under BlockPublicAcls: %v", err)
	}
	if _, err := f.svc.Get(ctx, f.alice, "alice-bucket", "new"); !errcode.Is(err, errcode.NotFound) {
		t.Errorf("the refused write stored: %v", err)
	}
	if _, err := f.svc.SetObjectACL(ctx, f.alice, "alice-bucket", "k", "", ACL{Canned: meta.CannedPrivate}); err != nil {
		t.Errorf("private object ACL under BlockPublicAcls: %v", err)
	}
	if _, err := f.svc.Get(ctx, Actor{}, "alice-bucket", "k"); !errcode.Is(err, errcode.Unauthenticated) {
		t.Errorf("anonymous read of the object made private: %v", err)
	}
}
