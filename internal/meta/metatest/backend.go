package metatest

import (
	"fmt"
	"sync"
	"testing"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

// Uploads whose bytes the blob backend assembles (Upload.BlobKey).
var backendUploadTests = []test{
	{name: "RoundTrip", fn: testBackendUploadRoundTrip},
	{name: "Complete", fn: testBackendComplete},
	{name: "CompleteRejected", fn: testBackendCompleteRejected},
	{name: "ConcurrentCompletes", fn: testBackendConcurrentCompletes},
	{name: "Abort", fn: testBackendAbort},
	{name: "DeleteBucket", fn: testBackendDeleteBucket},
}

func testBackendDeleteBucket(t *testing.T, s store) {
	addUser(t, s, "alice", 0)
	addBucket(t, s, "scratch", "alice")
	u := addBackendUpload(t, s, "scratch", "k")
	ok(t, s.DeleteBucket(t.Context(), "scratch"), "DeleteBucket")
	wantNoUpload(t, s, u.ID)
	wantGarbage(t, s, u.BlobKey)
}

// addBackendUpload creates an upload assembled by the backend into a
// fresh blob key.
func addBackendUpload(t *testing.T, s store, bucket, key string) meta.Upload {
	t.Helper()
	u := newUpload(bucket, key)
	u.BlobKey = fmt.Sprintf("blob/assembled-%d", seq.Add(1))
	u.BackendUploadID = fmt.Sprintf("backend~%d", seq.Add(1))
	ok(t, s.CreateUpload(t.Context(), u), "CreateUpload "+bucket+"/"+key)
	return u
}

// assembled is the object the caller hands to CompleteBackendUpload.
func assembled(u meta.Upload, size int64) meta.Object {
	o := completion(3)
	o.Checksum = meta.Checksum{}
	o.BlobKey, o.Size = u.BlobKey, size
	return o
}

func testBackendUploadRoundTrip(t *testing.T, s store) {
	addUser(t, s, "alice", 0)
	u := addBackendUpload(t, s, "alice", "big.iso")
	wantUpload(t, s, u)
	got, _, err := s.ListUploads(t.Context(), "alice", meta.ListUploadsOptions{})
	ok(t, err, "ListUploads")
	if len(got) != 1 || diffUpload(got[0], u) != "" {
		t.Fatalf("ListUploads = %+v, want [%+v]", got, u)
	}
	// The assembled blob is referenced while the upload exists.
	wantReferenced(t, s, "backend upload", []string{u.BlobKey, "blob/other"}, map[string]bool{u.BlobKey: true})
	// Nothing counts toward usage before completion.
	wantUsage(t, s, "alice", 0)
}

func testBackendComplete(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	old := obj("alice", "big.iso", 40)
	put(t, s, old)
	u := addBackendUpload(t, s, "alice", "big.iso")
	in := assembled(u, 100)
	in.Bucket, in.Key = "junk", "junk" // the store's to set
	got, err := s.CompleteBackendUpload(ctx, u.ID, in, meta.Cond{IfMatch: old.ETag})
	ok(t, err, "CompleteBackendUpload")
	want := in
	want.Bucket, want.Key = "alice", "big.iso"
	sameObject(t, got, want, "CompleteBackendUpload result")
	wantObject(t, s, want)
	wantUsage(t, s, "alice", 100)
	wantGarbage(t, s, old.BlobKey)
	wantNoUpload(t, s, u.ID)
	wantReferenced(t, s, "completed object", []string{u.BlobKey}, map[string]bool{u.BlobKey: true})
	// Gone for good: neither a second completion nor an abort.
	_, err = s.CompleteBackendUpload(ctx, u.ID, assembled(u, 100), meta.Cond{})
	wantCode(t, err, errcode.NotFound, "second CompleteBackendUpload")
	wantCode(t, s.AbortUpload(ctx, u.ID), errcode.NotFound, "AbortUpload after completion")
	wantGarbage(t, s, old.BlobKey)
	wantObject(t, s, want)
}

func testBackendCompleteRejected(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 150)
	put(t, s, obj("alice", "big.iso", 40))
	u := addBackendUpload(t, s, "alice", "big.iso")
	wrong := assembled(u, 10)
	wrong.BlobKey = "blob/elsewhere"
	_, err := s.CompleteBackendUpload(ctx, u.ID, wrong, meta.Cond{})
	wantCode(t, err, errcode.InvalidArgument, "CompleteBackendUpload with another blob key")
	_, err = s.CompleteBackendUpload(ctx, u.ID, assembled(u, 10), meta.Cond{IfNoneMatch: true})
	wantCode(t, err, errcode.PreconditionFailed, "CompleteBackendUpload with a failing cond")
	// 40 used of 150: replacing the 40-byte object with 151 bytes is over.
	_, err = s.CompleteBackendUpload(ctx, u.ID, assembled(u, 151), meta.Cond{})
	wantCode(t, err, errcode.QuotaExceeded, "CompleteBackendUpload over quota")
	// An ordinary upload cannot be completed this way.
	plain := addUpload(t, s, "alice", "plain")
	_, err = s.CompleteBackendUpload(ctx, plain.ID, meta.Object{BlobKey: "blob/x", Size: 1}, meta.Cond{})
	wantCode(t, err, errcode.InvalidArgument, "CompleteBackendUpload of an ordinary upload")
	_, err = s.CompleteBackendUpload(ctx, "never-created", assembled(u, 1), meta.Cond{})
	wantCode(t, err, errcode.NotFound, "CompleteBackendUpload of an unknown upload")
	// Nothing changed.
	wantUpload(t, s, u)
	wantUsage(t, s, "alice", 40)
	wantGarbage(t, s)
	// Exactly at the quota passes.
	_, err = s.CompleteBackendUpload(ctx, u.ID, assembled(u, 150), meta.Cond{})
	ok(t, err, "CompleteBackendUpload up to the quota")
	wantUsage(t, s, "alice", 150)
}

func testBackendConcurrentCompletes(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	u := addBackendUpload(t, s, "alice", "k")
	const n = 10
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			_, errs[i] = s.CompleteBackendUpload(ctx, u.ID, assembled(u, 64), meta.Cond{})
		})
	}
	close(start)
	wg.Wait()
	wins := 0
	for i, err := range errs {
		switch {
		case err == nil:
			wins++
		case !errcode.Is(err, errcode.NotFound):
			t.Errorf("completion %d: err = %v, want nil or not_found", i, err)
		}
	}
	if wins != 1 {
		t.Fatalf("%d completions succeeded, want exactly 1", wins)
	}
	wantUsage(t, s, "alice", 64)
	// The assembled blob is never queued: it is the object's.
	wantGarbage(t, s)
	wantReferenced(t, s, "object", []string{u.BlobKey}, map[string]bool{u.BlobKey: true})
}

func testBackendAbort(t *testing.T, s store) {
	addUser(t, s, "alice", 0)
	u := addBackendUpload(t, s, "alice", "k")
	ok(t, s.AbortUpload(t.Context(), u.ID), "AbortUpload")
	wantNoUpload(t, s, u.ID)
	// The backend may have assembled the blob already: it is reclaimed.
	wantGarbage(t, s, u.BlobKey)
	wantUsage(t, s, "alice", 0)
}
