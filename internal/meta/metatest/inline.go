package metatest

import (
	"bytes"
	"testing"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

var inlineTests = []test{
	{name: "RoundTrip", fn: testInlineRoundTrip},
	{name: "ReplaceAndDelete", fn: testInlineReplaceAndDelete},
	{name: "Move", fn: testInlineMove},
	{name: "Invalid", fn: testInlineInvalid},
}

// inlineObj is obj with its bytes inline.
func inlineObj(bucket, key string, data []byte) meta.Object {
	o := obj(bucket, key, int64(len(data)))
	o.BlobKey = ""
	o.Inline = data
	return o
}

func wantInline(t *testing.T, s store, bucket, key string, want []byte) {
	t.Helper()
	got, err := s.GetObject(t.Context(), bucket, key)
	ok(t, err, "GetObject of an inline object")
	if !got.IsInline() || got.Inline == nil || !bytes.Equal(got.Inline, want) || got.Size != int64(len(want)) {
		t.Errorf("GetObject(%s/%s): inline %v, %d bytes %q, size %d; want %q", bucket, key, got.IsInline(), len(got.Inline), got.Inline, got.Size, want)
	}
}

func testInlineRoundTrip(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	data := []byte("small object bytes\x00\xff")
	o := put1(t, s, inlineObj("alice", "small", data))
	wantInline(t, s, "alice", "small", data)
	put1(t, s, inlineObj("alice", "empty", nil))
	wantInline(t, s, "alice", "empty", []byte{})
	wantUsage(t, s, "alice", int64(len(data)))
	page, err := s.ListObjects(ctx, "alice", meta.ListOptions{})
	ok(t, err, "ListObjects")
	if len(page.Objects) != 2 || page.Objects[1].Key != "small" || page.Objects[1].Size != o.Size || page.Objects[1].ETag != o.ETag || !page.Objects[1].IsInline() {
		t.Errorf("listing: %+v", page.Objects)
	}
	wantGarbage(t, s)
	ref, err := s.ReferencedBlobs(ctx, []string{""})
	ok(t, err, "ReferencedBlobs")
	if ref[""] {
		t.Error("inline objects reference the empty blob key")
	}
}

func testInlineReplaceAndDelete(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	put1(t, s, inlineObj("alice", "k", []byte("inline v1")))
	// inline → blob: nothing to reclaim in the blob store.
	v2 := put1(t, s, obj("alice", "k", 100))
	wantObject(t, s, v2)
	wantGarbage(t, s)
	// blob → inline: the blob is enqueued.
	put1(t, s, inlineObj("alice", "k", []byte("inline v3")))
	wantInline(t, s, "alice", "k", []byte("inline v3"))
	wantGarbage(t, s, v2.BlobKey)
	// inline → inline.
	put1(t, s, inlineObj("alice", "k", []byte("v4")))
	wantInline(t, s, "alice", "k", []byte("v4"))
	wantUsage(t, s, "alice", 2)
	old, err := s.DeleteObject(ctx, "alice", "k", meta.Cond{})
	ok(t, err, "DeleteObject of an inline object")
	if !bytes.Equal(old.Inline, []byte("v4")) {
		t.Errorf("deleted object inline = %q", old.Inline)
	}
	wantMissing(t, s, "alice", "k")
	wantUsage(t, s, "alice", 0)
	wantGarbage(t, s, v2.BlobKey)
}

func testInlineMove(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	put1(t, s, inlineObj("alice", "src", []byte("moving")))
	dst := put1(t, s, obj("alice", "dst", 9))
	_, err := s.MoveObject(ctx, "alice", "src", "alice", "dst", meta.Cond{})
	ok(t, err, "MoveObject of an inline object")
	wantMissing(t, s, "alice", "src")
	wantInline(t, s, "alice", "dst", []byte("moving"))
	wantGarbage(t, s, dst.BlobKey)
	wantUsage(t, s, "alice", 6)
}

func testInlineInvalid(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	bad := inlineObj("alice", "bad", []byte("abc"))
	bad.Size = 5
	_, err := s.PutObjects(ctx, []meta.Put{{Object: bad}})
	wantCode(t, err, errcode.InvalidArgument, "inline bytes shorter than the size")
	both := obj("alice", "both", 3)
	both.Inline = []byte("abc")
	_, err = s.PutObjects(ctx, []meta.Put{{Object: both}})
	wantCode(t, err, errcode.InvalidArgument, "inline bytes and a blob key")
	wantMissing(t, s, "alice", "bad")
	wantMissing(t, s, "alice", "both")
}
