package object

import (
	"context"
	"strings"
	"testing"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/policy"
)

// scope is a test Evaluator: it allows the actions listed on resources
// under prefix, denies those in deny, and matches nothing else.
type scope struct {
	allow  []string
	deny   []string
	prefix string
	seen   []policy.Request
}

func (s *scope) Evaluate(r *policy.Request) policy.Decision {
	s.seen = append(s.seen, *r)
	for _, a := range s.deny {
		if a == r.Action {
			return policy.Deny
		}
	}
	for _, a := range s.allow {
		if a == r.Action && strings.HasPrefix(r.Resource, s.prefix) {
			return policy.Allow
		}
	}
	return policy.NoMatch
}

// TestScopeNarrowsTheOwner: a scoped actor may do only what its scope
// allows, even in its own bucket; the scope sees the action, the ARN and
// the request's condition keys with aws:CurrentTime added.
func TestScopeNarrowsTheOwner(t *testing.T) {
	f := newFixture(t, 0)
	ctx := context.Background()
	if _, err := f.put(t, f.alice, "alice-bucket", "in/k", "v"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.put(t, f.alice, "alice-bucket", "out/k", "v"); err != nil {
		t.Fatal(err)
	}
	sc := &scope{allow: []string{"s3:GetObject"}, prefix: "arn:aws:s3:::alice-bucket/in/"}
	a := f.alice
	a.Scope, a.Context = sc, map[string][]string{"aws:sourceip": {"127.0.0.1"}}
	if got := f.read(t, a, "alice-bucket", "in/k"); got != "v" {
		t.Errorf("scoped read = %q", got)
	}
	if _, err := f.svc.Get(ctx, a, "alice-bucket", "out/k"); !errcode.Is(err, errcode.PermissionDenied) {
		t.Errorf("scoped read outside the prefix: %v", err)
	}
	if _, err := f.put(t, a, "alice-bucket", "in/new", "x"); !errcode.Is(err, errcode.PermissionDenied) {
		t.Errorf("read-only scope writes: %v", err)
	}
	if _, err := f.svc.List(ctx, a, "alice-bucket", meta.ListOptions{}); !errcode.Is(err, errcode.PermissionDenied) {
		t.Errorf("scope without s3:ListBucket lists: %v", err)
	}
	if _, err := f.svc.CreateBucket(ctx, a, "alice-two", meta.Private); !errcode.Is(err, errcode.PermissionDenied) {
		t.Errorf("scoped actor creates a bucket: %v", err)
	}
	if _, err := f.svc.ListBuckets(ctx, a); !errcode.Is(err, errcode.PermissionDenied) {
		t.Errorf("scoped actor lists buckets: %v", err)
	}
	// A scope never widens: bob scoped to alice's bucket is still bob.
	b := f.bob
	b.Scope = &scope{allow: []string{"s3:GetObject"}, prefix: "arn:aws:s3:::alice-bucket/"}
	if _, err := f.svc.Get(ctx, b, "alice-bucket", "in/k"); !errcode.Is(err, errcode.PermissionDenied) {
		t.Errorf("a scope widened bob's rights: %v", err)
	}
	// An explicit Deny in the scope wins over the owner's rights.
	a.Scope = &scope{allow: []string{"s3:GetObject", "s3:DeleteObject"}, deny: []string{"s3:DeleteObject"}, prefix: "arn:aws:s3:::alice-bucket/"}
	if _, err := f.svc.Delete(ctx, a, "alice-bucket", "in/k", meta.Cond{}); !errcode.Is(err, errcode.PermissionDenied) {
		t.Errorf("scope Deny: %v", err)
	}
	// The request the scope saw.
	var r policy.Request
	for _, q := range sc.seen {
		if q.Action == "s3:GetObject" {
			r = q
			break
		}
	}
	if r.Resource != "arn:aws:s3:::alice-bucket/in/k" || r.Principal.UserID != "alice" || r.Principal.Anonymous ||
		r.Context["aws:sourceip"][0] != "127.0.0.1" || len(r.Context["aws:currenttime"]) != 1 || len(r.Context["aws:epochtime"]) != 1 {
		t.Errorf("policy request = %+v", r)
	}
}

// TestActionsNamed: each operation asks for its own S3 action, and a
// named version for the version's.
func TestActionsNamed(t *testing.T) {
	f := newFixture(t, 0)
	ctx := context.Background()
	if _, err := f.put(t, f.alice, "alice-bucket", "k", "v"); err != nil {
		t.Fatal(err)
	}
	sc := &scope{}
	a := f.alice
	a.Scope = sc
	f.svc.Get(ctx, a, "alice-bucket", "k")
	f.svc.GetVersion(ctx, a, "alice-bucket", "k", "null")
	f.svc.Delete(ctx, a, "alice-bucket", "k", meta.Cond{})
	f.svc.List(ctx, a, "alice-bucket", meta.ListOptions{})
	f.svc.ListVersions(ctx, a, "alice-bucket", meta.VersionListOptions{})
	f.svc.GetTags(ctx, a, "alice-bucket", "k", "")
	f.svc.SetBucketVersioning(ctx, a, "alice-bucket", meta.VersioningEnabled)
	a.Op = "s3:GetBucketLocation"
	f.svc.GetBucket(ctx, a, "alice-bucket")
	var got []string
	for _, r := range sc.seen {
		got = append(got, r.Action)
	}
	want := "s3:GetObject s3:GetObjectVersion s3:DeleteObject s3:ListBucket s3:ListBucketVersions s3:GetObjectTagging s3:PutBucketVersioning s3:GetBucketLocation"
	if strings.Join(got, " ") != want {
		t.Errorf("actions = %s\nwant      %s", strings.Join(got, " "), want)
	}
}
