package metatest

import (
	"testing"

	"github.com/coffer-storage/coffer/internal/meta"
)

// testCompleteIgnoresInline: the object CompleteUpload and
// CompleteBackendUpload make has its bytes in blobs (parts, or the
// assembled blob), never inline, whatever Inline the caller's object
// carries: the returned object and the stored one agree.
func testCompleteIgnoresInline(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	stale := []byte("bytes that are not the object's")

	u := addUpload(t, s, "alice", "multi")
	ps := putParts(t, s, u.ID, 10, 4)
	in := completion(len(ps))
	in.Inline = stale
	got, err := s.CompleteUpload(ctx, u.ID, in, completeOf(ps...), 0, meta.Cond{})
	ok(t, err, "CompleteUpload of an object carrying Inline")
	wantNotInline(t, s, got, "CompleteUpload")

	bu := addBackendUpload(t, s, "alice", "assembled")
	bo := assembled(bu, 7)
	bo.Inline = stale
	got, err = s.CompleteBackendUpload(ctx, bu.ID, bo, meta.Cond{})
	ok(t, err, "CompleteBackendUpload of an object carrying Inline")
	wantNotInline(t, s, got, "CompleteBackendUpload")
}

// wantNotInline fails unless got, as returned by the write, and the object
// stored at its key have no inline bytes.
func wantNotInline(t *testing.T, s store, got meta.Object, what string) {
	t.Helper()
	if got.Inline != nil || got.IsInline() {
		t.Errorf("%s returned Inline %q (inline %v), want none", what, got.Inline, got.IsInline())
	}
	stored, err := s.GetObject(t.Context(), got.Bucket, got.Key)
	ok(t, err, "GetObject after "+what)
	if stored.Inline != nil || stored.IsInline() {
		t.Errorf("%s stored Inline %q (inline %v), want none", what, stored.Inline, stored.IsInline())
	}
	sameObject(t, got, stored, what+" result against GetObject")
}
