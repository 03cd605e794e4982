package metatest

import (
	"reflect"
	"testing"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

var corsTests = []test{{name: "Configuration", fn: testCORSConfiguration}}

// testCORSConfiguration: a CORS configuration is stored with the bucket
// record (GetBucket reads it), replaced, refused whole when CheckCORS
// refuses it, removed; a missing bucket is NotFound, a gateway bucket
// Conflict.
func testCORSConfiguration(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	if b, err := s.GetBucket(ctx, "alice"); err != nil || b.CORS != nil {
		t.Fatalf("GetBucket of a new bucket: CORS %+v, %v; want none", b.CORS, err)
	}
	age := int32(600)
	c := meta.CORS{Rules: []meta.CORSRule{
		{ID: "app", AllowedOrigins: []string{"https://*.example.com"}, AllowedMethods: []string{"GET", "PUT"},
			AllowedHeaders: []string{"*"}, ExposeHeaders: []string{"ETag"}, MaxAgeSeconds: &age},
		{AllowedOrigins: []string{"*"}, AllowedMethods: []string{"GET"}},
	}}
	ok(t, s.SetBucketCORS(ctx, "alice", &c), "SetBucketCORS")
	b, err := s.GetBucket(ctx, "alice")
	ok(t, err, "GetBucket")
	if b.CORS == nil || !reflect.DeepEqual(b.CORS.Rules, c.Rules) {
		t.Errorf("GetBucket after SetBucketCORS: %+v; want %+v", b.CORS, c.Rules)
	}
	bad := meta.CORS{Rules: []meta.CORSRule{{AllowedOrigins: []string{"*"}, AllowedMethods: []string{"PATCH"}}}}
	wantCode(t, s.SetBucketCORS(ctx, "alice", &bad), errcode.InvalidArgument, "SetBucketCORS with PATCH")
	if b, err := s.GetBucket(ctx, "alice"); err != nil || b.CORS == nil || !reflect.DeepEqual(b.CORS.Rules, c.Rules) {
		t.Errorf("after a refused SetBucketCORS: %+v, %v; want the first", b.CORS, err)
	}
	ok(t, s.SetBucketCORS(ctx, "alice", nil), "SetBucketCORS nil")
	if b, err := s.GetBucket(ctx, "alice"); err != nil || b.CORS != nil {
		t.Errorf("GetBucket after the CORS configuration was removed: %+v, %v; want none", b.CORS, err)
	}
	wantCode(t, s.SetBucketCORS(ctx, "nope", &c), errcode.NotFound, "SetBucketCORS of a missing bucket")
	ok(t, s.PutGatewayBucket(ctx, meta.Bucket{Name: "gate", OwnerID: "alice", Gateway: "s3://b?endpoint=http://127.0.0.1:1"}), "PutGatewayBucket")
	wantCode(t, s.SetBucketCORS(ctx, "gate", &c), errcode.Conflict, "SetBucketCORS of a gateway bucket")
}
