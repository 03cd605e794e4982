package metatest

import (
	"testing"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

// Gateway buckets (docs/gateway.md): a bucket row whose Gateway holds the
// URL of the bucket it fronts; created or updated by PutGatewayBucket,
// never over a native bucket.

var gatewayTests = []test{
	{name: "PutAndList", fn: testGatewayPutAndList},
	{name: "NotOverNative", fn: testGatewayNotOverNative},
	{name: "Rejected", fn: testGatewayRejected},
	{name: "Delete", fn: testGatewayDelete},
}

const gwURL = "s3://photos/pre?endpoint=http://127.0.0.1:9000&mode=ro"

func testGatewayPutAndList(t *testing.T, s store) {
	ctx := t.Context()
	alice := addUser(t, s, "alice", 0)
	bob := addUser(t, s, "bob", 0)
	if gs, err := s.ListGatewayBuckets(ctx); err != nil || len(gs) != 0 {
		t.Fatalf("ListGatewayBuckets of a new store: %+v, %v; want none", gs, err)
	}
	ok(t, s.PutGatewayBucket(ctx, meta.Bucket{Name: "photos", OwnerID: alice.ID, Gateway: gwURL}), "PutGatewayBucket")
	b, err := s.GetBucket(ctx, "photos")
	ok(t, err, "GetBucket")
	if got, want := b.Gateway, gwURL; got != want {
		t.Errorf("Gateway: got %q, want %q", got, want)
	}
	if !b.IsGateway() || b.OwnerID != alice.ID || b.Visibility != meta.Private || b.CreatedAt.IsZero() {
		t.Errorf("GetBucket: %+v; want alice's private gateway bucket", b)
	}
	if native, err := s.GetBucket(ctx, "alice"); err != nil || native.IsGateway() {
		t.Errorf("alice's own bucket: %+v, %v; want a native bucket", native, err)
	}
	// Update: owner, visibility and URL change; the creation time stays.
	url2 := gwURL + "&public=true"
	ok(t, s.PutGatewayBucket(ctx, meta.Bucket{Name: "photos", OwnerID: bob.ID, Visibility: meta.PublicRead, Gateway: url2}), "PutGatewayBucket again")
	b2, err := s.GetBucket(ctx, "photos")
	ok(t, err, "GetBucket")
	if b2.OwnerID != bob.ID || b2.Visibility != meta.PublicRead || b2.Gateway != url2 || !b2.CreatedAt.Equal(b.CreatedAt) {
		t.Errorf("after update: %+v; want bob's public bucket with %q created at %v", b2, url2, b.CreatedAt)
	}
	bs, err := s.ListBuckets(ctx, bob.ID)
	ok(t, err, "ListBuckets")
	names := []string{}
	for _, x := range bs {
		names = append(names, x.Name+"="+x.Gateway)
	}
	if got, want := len(bs), 2; got != want {
		t.Errorf("bob's buckets: %v; want bob and photos", names)
	}
	gs, err := s.ListGatewayBuckets(ctx)
	ok(t, err, "ListGatewayBuckets")
	if len(gs) != 1 || gs[0].Name != "photos" || gs[0].Gateway != url2 {
		t.Errorf("ListGatewayBuckets: %+v; want photos", gs)
	}
}

func testGatewayNotOverNative(t *testing.T, s store) {
	ctx := t.Context()
	alice := addUser(t, s, "alice", 0)
	err := s.PutGatewayBucket(ctx, meta.Bucket{Name: "alice", OwnerID: alice.ID, Gateway: gwURL})
	wantCode(t, err, errcode.Conflict, "PutGatewayBucket over a native bucket")
	if got, want := errcode.As(err).Detail["reason"], "not_a_gateway"; got != want {
		t.Errorf("reason: got %v, want %v", got, want)
	}
	b, err := s.GetBucket(ctx, "alice")
	ok(t, err, "GetBucket")
	if b.IsGateway() {
		t.Errorf("the native bucket became a gateway: %+v", b)
	}
	// A native CreateBucket over a gateway bucket's name is refused too.
	ok(t, s.PutGatewayBucket(ctx, meta.Bucket{Name: "gw", OwnerID: alice.ID, Gateway: gwURL}), "PutGatewayBucket")
	wantCode(t, s.CreateBucket(ctx, meta.Bucket{Name: "gw", OwnerID: alice.ID}), errcode.AlreadyExists, "CreateBucket over a gateway bucket")
}

func testGatewayRejected(t *testing.T, s store) {
	ctx := t.Context()
	alice := addUser(t, s, "alice", 0)
	wantCode(t, s.PutGatewayBucket(ctx, meta.Bucket{Name: "gw", OwnerID: alice.ID}), errcode.InvalidArgument, "without a URL")
	wantCode(t, s.PutGatewayBucket(ctx, meta.Bucket{Name: "gw", Gateway: gwURL}), errcode.InvalidArgument, "without an owner")
	wantCode(t, s.PutGatewayBucket(ctx, meta.Bucket{Name: "gw", OwnerID: "nobody", Gateway: gwURL}), errcode.NotFound, "missing owner")
	wantCode(t, s.PutGatewayBucket(ctx, meta.Bucket{Name: "gw", OwnerID: alice.ID, Gateway: gwURL, Visibility: "odd"}), errcode.InvalidArgument, "bad visibility")
	if _, err := s.GetBucket(ctx, "gw"); !errcode.Is(err, errcode.NotFound) {
		t.Errorf("GetBucket after refused puts: %v; want NotFound", err)
	}
}

func testGatewayDelete(t *testing.T, s store) {
	ctx := t.Context()
	alice := addUser(t, s, "alice", 0)
	ok(t, s.PutGatewayBucket(ctx, meta.Bucket{Name: "gw", OwnerID: alice.ID, Gateway: gwURL}), "PutGatewayBucket")
	ok(t, s.DeleteBucket(ctx, "gw"), "DeleteBucket")
	if gs, err := s.ListGatewayBuckets(ctx); err != nil || len(gs) != 0 {
		t.Errorf("ListGatewayBuckets after delete: %+v, %v", gs, err)
	}
}
