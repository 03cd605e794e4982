package metatest

import (
	"testing"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

var policyTests = []test{
	{name: "BucketPolicy", fn: testBucketPolicy},
}

// testBucketPolicy: a bucket policy is stored as written, read with the
// bucket record (and its listing), replaced, removed; a missing bucket is
// NotFound, a gateway bucket Conflict.
func testBucketPolicy(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	if b, err := s.GetBucket(ctx, "alice"); err != nil || b.Policy != "" {
		t.Fatalf("GetBucket of a new bucket: policy %q, %v; want none", b.Policy, err)
	}
	doc := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::alice/*"}]}`
	ok(t, s.SetBucketPolicy(ctx, "alice", doc), "SetBucketPolicy")
	if b, err := s.GetBucket(ctx, "alice"); err != nil || b.Policy != doc {
		t.Errorf("GetBucket after SetBucketPolicy: policy %q, %v; want the document", b.Policy, err)
	}
	if list, err := s.ListBuckets(ctx, "alice"); err != nil || len(list) != 1 || list[0].Policy != doc {
		t.Errorf("ListBuckets after SetBucketPolicy: %+v, %v", list, err)
	}
	doc2 := `{"Statement":{"Effect":"Deny","Principal":"*","Action":"s3:*","Resource":"arn:aws:s3:::alice/*"}}`
	ok(t, s.SetBucketPolicy(ctx, "alice", doc2), "SetBucketPolicy again")
	if b, err := s.GetBucket(ctx, "alice"); err != nil || b.Policy != doc2 {
		t.Errorf("GetBucket after replacing the policy: %q, %v", b.Policy, err)
	}
	ok(t, s.SetBucketPolicy(ctx, "alice", ""), "SetBucketPolicy empty")
	if b, err := s.GetBucket(ctx, "alice"); err != nil || b.Policy != "" {
		t.Errorf("GetBucket after removing the policy: %q, %v; want none", b.Policy, err)
	}
	wantCode(t, s.SetBucketPolicy(ctx, "nope", doc), errcode.NotFound, "SetBucketPolicy of a missing bucket")
	ok(t, s.PutGatewayBucket(ctx, meta.Bucket{Name: "gate", OwnerID: "alice", Gateway: "s3://b?endpoint=http://127.0.0.1:1"}), "PutGatewayBucket")
	wantCode(t, s.SetBucketPolicy(ctx, "gate", doc), errcode.Conflict, "SetBucketPolicy of a gateway bucket")
}
