package object

import (
	"slices"
	"strings"
	"testing"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

// TestTags: a write brings its version's tags, a copy takes its source
// version's unless it replaces them, a multipart upload's are its
// object's, SetTags replaces a version's, and only the owner sees them.
func TestTags(t *testing.T) {
	f := newFixture(t, 0)
	ctx := t.Context()
	a := []meta.Tag{{Key: "project", Value: "coffer"}}
	b := []meta.Tag{{Key: "tier", Value: "gold"}, {Key: "x", Value: "y"}}
	wantTags := func(key, versionID string, want []meta.Tag) {
		t.Helper()
		o, err := f.svc.GetTags(ctx, f.alice, "alice-bucket", key, versionID)
		if err != nil || !slices.Equal(o.Tags, want) {
			t.Errorf("GetTags %s %q = %v, %v; want %v", key, versionID, o.Tags, err, want)
		}
	}
	if _, err := f.svc.Put(ctx, f.alice, PutInput{Bucket: "alice-bucket", Key: "k", Body: strings.NewReader("x"), Size: 1, Tags: a}); err != nil {
		t.Fatal(err)
	}
	wantTags("k", "", a)
	if _, err := f.svc.Put(ctx, f.alice, PutInput{Bucket: "alice-bucket", Key: "bad", Body: strings.NewReader("x"), Size: 1,
		Tags: []meta.Tag{{Key: "aws:x"}}}); !errcode.Is(err, errcode.InvalidArgument) {
		t.Errorf("Put with a reserved tag key: %v", err)
	}
	// Copies: COPY (the source version's), REPLACE (the request's, none too).
	if _, err := f.svc.Copy(ctx, f.alice, CopyInput{SrcBucket: "alice-bucket", SrcKey: "k", DstBucket: "alice-bucket", DstKey: "copied"}); err != nil {
		t.Fatal(err)
	}
	wantTags("copied", "", a)
	if _, err := f.svc.Copy(ctx, f.alice, CopyInput{SrcBucket: "alice-bucket", SrcKey: "k", DstBucket: "alice-bucket", DstKey: "replaced",
		ReplaceTags: true, Tags: b}); err != nil {
		t.Fatal(err)
	}
	wantTags("replaced", "", b)
	if _, err := f.svc.Copy(ctx, f.alice, CopyInput{SrcBucket: "alice-bucket", SrcKey: "k", DstBucket: "alice-bucket", DstKey: "untagged",
		ReplaceTags: true}); err != nil {
		t.Fatal(err)
	}
	wantTags("untagged", "", nil)
	// Multipart: the upload's tags, on completion.
	u, err := f.svc.CreateUpload(ctx, f.alice, CreateUploadInput{Bucket: "alice-bucket", Key: "mp", Tags: b})
	if err != nil {
		t.Fatal(err)
	}
	p, err := f.svc.PutPart(ctx, f.alice, PartInput{UploadID: u.ID, Number: 1, Body: strings.NewReader("part"), Size: 4})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.CompleteUpload(ctx, f.alice, "alice-bucket", "mp", u.ID, []meta.CompletePart{{Number: 1, ETag: p.ETag}}, meta.Cond{}); err != nil {
		t.Fatal(err)
	}
	wantTags("mp", "", b)
	// SetTags, versions, delete markers.
	if _, err := f.svc.SetBucketVersioning(ctx, f.alice, "alice-bucket", meta.VersioningEnabled); err != nil {
		t.Fatal(err)
	}
	v2, err := f.svc.Put(ctx, f.alice, PutInput{Bucket: "alice-bucket", Key: "k", Body: strings.NewReader("y"), Size: 1})
	if err != nil {
		t.Fatal(err)
	}
	wantTags("k", "", nil)
	wantTags("k", meta.NullVersion, a)
	if o, err := f.svc.SetTags(ctx, f.alice, "alice-bucket", "k", "", b); err != nil || o.VersionID != v2.VersionID {
		t.Errorf("SetTags of the latest: version %q, %v; want %q", o.VersionID, err, v2.VersionID)
	}
	wantTags("k", v2.VersionID, b)
	m, err := f.svc.Delete(ctx, f.alice, "alice-bucket", "k", meta.Cond{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.GetTags(ctx, f.alice, "alice-bucket", "k", ""); !errcode.Is(err, errcode.NotFound) {
		t.Errorf("GetTags of a deleted key: %v, want NotFound", err)
	}
	if _, err := f.svc.GetTags(ctx, f.alice, "alice-bucket", "k", m.VersionID); !errcode.Is(err, errcode.MethodNotAllowed) {
		t.Errorf("GetTags of a delete marker: %v, want MethodNotAllowed", err)
	}
	if _, err := f.svc.SetTags(ctx, f.alice, "alice-bucket", "k", m.VersionID, a); !errcode.Is(err, errcode.MethodNotAllowed) {
		t.Errorf("SetTags of a delete marker: %v, want MethodNotAllowed", err)
	}
	if _, err := f.svc.SetTags(ctx, f.alice, "alice-bucket", "k", "", a); !errcode.Is(err, errcode.NotFound) {
		t.Errorf("SetTags of a deleted key: %v, want NotFound", err)
	}
	// Only the owner.
	if _, err := f.svc.GetTags(ctx, f.bob, "alice-bucket", "copied", ""); !errcode.Is(err, errcode.PermissionDenied) {
		t.Errorf("another user's GetTags: %v", err)
	}
	if _, err := f.svc.SetTags(ctx, f.bob, "alice-bucket", "copied", "", nil); !errcode.Is(err, errcode.PermissionDenied) {
		t.Errorf("another user's SetTags: %v", err)
	}
	wantTags("copied", "", a)
	// Buckets.
	if _, err := f.svc.GetBucketTags(ctx, f.alice, "alice-bucket"); !errcode.Is(err, errcode.NotFound) {
		t.Errorf("GetBucketTags of an untagged bucket: %v", err)
	}
	if err := f.svc.SetBucketTags(ctx, f.alice, "alice-bucket", b); err != nil {
		t.Fatal(err)
	}
	if got, err := f.svc.GetBucketTags(ctx, f.alice, "alice-bucket"); err != nil || !slices.Equal(got, b) {
		t.Errorf("GetBucketTags = %v, %v; want %v", got, err, b)
	}
	if err := f.svc.SetBucketTags(ctx, f.bob, "alice-bucket", nil); !errcode.Is(err, errcode.PermissionDenied) {
		t.Errorf("another user's SetBucketTags: %v", err)
	}
}
