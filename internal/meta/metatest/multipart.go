package metatest

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

var multipartTests = []test{
	{name: "Complete", fn: testCompleteUpload},
	{name: "CompleteRejected", fn: testCompleteRejected},
	{name: "CompleteCond", fn: testCompleteCond},
	{name: "CompleteOverMultipart", fn: testCompleteOverMultipart},
	{name: "CompleteVersusAbort", fn: testCompleteVersusAbort},
	{name: "ConcurrentCompletes", fn: testConcurrentCompletes},
	{name: "Delete", fn: testDeleteMultipart},
	{name: "Replace", fn: testReplaceMultipart},
	{name: "PutWithParts", fn: testPutWithParts},
	{name: "Move", fn: testMoveMultipart},
	{name: "MoveOntoMultipart", fn: testMoveOntoMultipart},
	{name: "List", fn: testListMultipart},
	{name: "ListNoParts", fn: testListNoParts},
	{name: "ReferencedBlobs", fn: testReferencedParts},
	{name: "ConsistentReads", fn: testConsistentMultipartReads},
	{name: "CompleteIgnoresInline", fn: testCompleteIgnoresInline},
}

// completeOf lists ps for CompleteUpload.
func completeOf(ps ...meta.Part) []meta.CompletePart {
	out := make([]meta.CompletePart, len(ps))
	for i, p := range ps {
		out[i] = meta.CompletePart{Number: p.Number, ETag: p.ETag}
	}
	return out
}

// objectParts returns the parts of the object that ps make.
func objectParts(ps ...meta.Part) []meta.ObjectPart {
	out := make([]meta.ObjectPart, len(ps))
	for i, p := range ps {
		out[i] = meta.ObjectPart{BlobKey: p.BlobKey, Size: p.Size, ETag: p.ETag, Checksum: p.Checksum,
			Encryption: p.Encryption, EncryptionKEK: p.EncryptionKEK}
	}
	return out
}

// completion returns what a caller of CompleteUpload sets for an object of
// n parts: unique ETag and checksum, content type, metadata and ModTime.
func completion(n int) meta.Object {
	i := seq.Add(1)
	return meta.Object{
		ETag:        fmt.Sprintf("%032x-%d", i, n),
		SHA256:      "",
		ContentType: "video/mp4",
		Metadata:    map[string]string{"made-by": "multipart", "seq": fmt.Sprint(i)},
		Checksum:    meta.Checksum{Algorithm: "CRC32", Type: "COMPOSITE", Value: fmt.Sprintf("%s-%d", checksumValue(i, 4), n)},
		ModTime:     baseTime.Add(time.Duration(i) * time.Second),
	}
}

// completed is the object CompleteUpload makes of u, the caller's in and
// the listed parts ps.
func completed(u meta.Upload, in meta.Object, ps ...meta.Part) meta.Object {
	o := in
	o.Bucket, o.Key, o.BlobKey, o.Size = u.Bucket, u.Key, "", 0
	o.Parts = objectParts(ps...)
	for _, p := range ps {
		o.Size += p.Size
	}
	return o
}

// addMultipart makes a multipart object at bucket/key from new parts of
// the given sizes, all listed.
func addMultipart(t *testing.T, s store, bucket, key string, sizes ...int64) meta.Object {
	t.Helper()
	u := addUpload(t, s, bucket, key)
	ps := putParts(t, s, u.ID, sizes...)
	in := completion(len(ps))
	got, err := s.CompleteUpload(t.Context(), u.ID, in, completeOf(ps...), 0, meta.Cond{})
	ok(t, err, "CompleteUpload "+bucket+"/"+key)
	want := completed(u, in, ps...)
	sameObject(t, got, want, "CompleteUpload result")
	want.VersionID, want.IsLatest = got.VersionID, got.IsLatest
	return want
}

// wantInvalid fails unless err is InvalidArgument with Detail["reason"]
// reason and, if number is not 0, Detail["part_number"] number.
func wantInvalid(t *testing.T, err error, reason string, number int, what string) {
	t.Helper()
	wantCode(t, err, errcode.InvalidArgument, what)
	e := errcode.As(err)
	if got := fmt.Sprint(e.Detail["reason"]); got != reason {
		t.Errorf("%s: Detail[reason] = %q, want %q", what, got, reason)
	}
	if number != 0 {
		if got := fmt.Sprint(e.Detail["part_number"]); got != fmt.Sprint(number) {
			t.Errorf("%s: Detail[part_number] = %s, want %d", what, got, number)
		}
	}
}

func testCompleteUpload(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	u := newUpload("alice", "videos/film.mp4")
	u.ChecksumAlgorithm, u.ChecksumType = "CRC32", "COMPOSITE"
	ok(t, s.CreateUpload(ctx, u), "CreateUpload")
	ps := putParts(t, s, u.ID, 10, 12, 7, 3)
	wantUsage(t, s, "alice", 32)

	// Bucket, Key, Size and Parts are the store's to set.
	in := completion(3)
	in.Bucket, in.Key, in.Size = "junk", "junk", 999
	in.Parts = []meta.ObjectPart{{BlobKey: "blob/junk", Size: 999}}
	list := []meta.CompletePart{
		{Number: 1, ETag: `"` + ps[0].ETag + `"`}, // quotes are ignored
		{Number: 2, ETag: ps[1].ETag},
		{Number: 4, ETag: `"` + ps[3].ETag + `"`}, // the last part may be small
	}
	got, err := s.CompleteUpload(ctx, u.ID, in, list, 10, meta.Cond{})
	ok(t, err, "CompleteUpload")
	want := completed(u, in, ps[0], ps[1], ps[3])
	if want.Size != 25 {
		t.Fatalf("bad test: want.Size = %d", want.Size)
	}
	sameObject(t, got, want, "CompleteUpload result")
	wantObject(t, s, want)
	if keys := want.BlobKeys(); len(keys) != 3 || keys[1] != ps[1].BlobKey {
		t.Errorf("BlobKeys of the object = %q", keys)
	}
	// Listed parts keep counting; the unlisted part 3 is discarded.
	wantUsage(t, s, "alice", 25)
	wantGarbage(t, s, ps[2].BlobKey)
	wantNoUpload(t, s, u.ID)
	wantUploads(t, s, "alice", meta.ListUploadsOptions{}, false)

	// The upload is gone for good.
	wantCode(t, s.AbortUpload(ctx, u.ID), errcode.NotFound, "AbortUpload of a completed upload")
	_, err = s.CompleteUpload(ctx, u.ID, completion(3), list, 10, meta.Cond{})
	wantCode(t, err, errcode.NotFound, "CompleteUpload of a completed upload")
	_, err = s.PutPart(ctx, part(u.ID, 5, 1))
	wantCode(t, err, errcode.NotFound, "PutPart into a completed upload")
	wantObject(t, s, want)
	wantUsage(t, s, "alice", 25)
	wantGarbage(t, s, ps[2].BlobKey)
	_, err = s.CompleteUpload(ctx, "never-created", completion(1), list[:1], 0, meta.Cond{})
	wantCode(t, err, errcode.NotFound, "CompleteUpload of an unknown upload")
}

func testCompleteRejected(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	existing := put1(t, s, obj("alice", "k", 100))
	u := addUpload(t, s, "alice", "k")
	ps := putParts(t, s, u.ID, 10, 5, 10) // part 2 is under the minimum of 10
	other := addUpload(t, s, "alice", "other")
	op := putParts(t, s, other.ID, 10, 10, 10, 10)
	wantUsage(t, s, "alice", 165)
	cp := func(n int, etag string) meta.CompletePart { return meta.CompletePart{Number: n, ETag: etag} }
	e1, e2, e3 := ps[0].ETag, ps[1].ETag, ps[2].ETag

	for _, tc := range []struct {
		name   string
		parts  []meta.CompletePart
		reason string
		number int
	}{
		{"no parts", nil, "invalid_part_order", 0},
		{"empty list", []meta.CompletePart{}, "invalid_part_order", 0},
		{"descending", []meta.CompletePart{cp(2, e2), cp(1, e1)}, "invalid_part_order", 0},
		{"descending at the end", []meta.CompletePart{cp(1, e1), cp(3, e3), cp(2, e2)}, "invalid_part_order", 0},
		{"duplicate", []meta.CompletePart{cp(1, e1), cp(1, e1), cp(3, e3)}, "invalid_part_order", 0},
		{"duplicate last", []meta.CompletePart{cp(1, e1), cp(3, e3), cp(3, e3)}, "invalid_part_order", 0},
		{"missing part", []meta.CompletePart{cp(1, e1), cp(4, e3)}, "invalid_part", 4},
		{"another upload's part", []meta.CompletePart{cp(1, e1), cp(3, e3), cp(4, op[3].ETag)}, "invalid_part", 4},
		{"wrong ETag", []meta.CompletePart{cp(1, e2), cp(3, e3)}, "invalid_part", 1},
		{"another upload's ETag", []meta.CompletePart{cp(1, e1), cp(3, op[2].ETag)}, "invalid_part", 3},
		{"empty ETag", []meta.CompletePart{cp(1, e1), cp(3, "")}, "invalid_part", 3},
		{"too small", []meta.CompletePart{cp(1, e1), cp(2, e2), cp(3, e3)}, "entity_too_small", 2},
		{"too small first", []meta.CompletePart{cp(2, e2), cp(3, e3)}, "entity_too_small", 2},
		{"an unknown part is reported before a small one", []meta.CompletePart{cp(2, e2), cp(3, e3), cp(7, e1)}, "invalid_part", 7},
	} {
		_, err := s.CompleteUpload(ctx, u.ID, completion(len(tc.parts)), tc.parts, 10, meta.Cond{})
		wantInvalid(t, err, tc.reason, tc.number, "CompleteUpload, "+tc.name)
		// Nothing changed.
		wantObject(t, s, existing)
		wantUpload(t, s, u)
		wantParts(t, s, u.ID, ps...)
		wantParts(t, s, other.ID, op...)
		wantUsage(t, s, "alice", 165)
		wantGarbage(t, s)
	}

	// The minimum is inclusive, and the small part may be the last.
	in := completion(2)
	got, err := s.CompleteUpload(ctx, u.ID, in, []meta.CompletePart{cp(1, e1), cp(2, `"`+e2+`"`)}, 10, meta.Cond{})
	ok(t, err, "CompleteUpload with the small part last")
	want := completed(u, in, ps[0], ps[1])
	sameObject(t, got, want, "CompleteUpload result")
	wantObject(t, s, want)
	// The replaced object and the unlisted part 3 are released.
	wantUsage(t, s, "alice", 55)
	wantGarbageSet(t, s, existing.BlobKey, ps[2].BlobKey)
	wantNoUpload(t, s, u.ID)
	wantParts(t, s, other.ID, op...)
}

func testCompleteCond(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	existing := put1(t, s, obj("alice", "k", 100))
	u := addUpload(t, s, "alice", "k")
	ps := putParts(t, s, u.ID, 3)
	fresh := addUpload(t, s, "alice", "fresh")
	fp := putParts(t, s, fresh.ID, 4)

	for _, tc := range []struct {
		name string
		id   string
		list []meta.CompletePart
		cond meta.Cond
	}{
		{"IfNoneMatch onto an existing key", u.ID, completeOf(ps...), meta.Cond{IfNoneMatch: true}},
		{"IfMatch with a wrong ETag", u.ID, completeOf(ps...), meta.Cond{IfMatch: "0123456789abcdef0123456789abcdef"}},
		{"IfMatch onto a missing key", fresh.ID, completeOf(fp...), meta.Cond{IfMatch: existing.ETag}},
	} {
		_, err := s.CompleteUpload(ctx, tc.id, completion(1), tc.list, 0, tc.cond)
		wantCode(t, err, errcode.PreconditionFailed, "CompleteUpload, "+tc.name)
		wantObject(t, s, existing)
		wantMissing(t, s, "alice", "fresh")
		wantUpload(t, s, u)
		wantParts(t, s, u.ID, ps...)
		wantUpload(t, s, fresh)
		wantParts(t, s, fresh.ID, fp...)
		wantUsage(t, s, "alice", 107)
		wantGarbage(t, s)
	}

	in := completion(1)
	got, err := s.CompleteUpload(ctx, u.ID, in, completeOf(ps...), 0, meta.Cond{IfMatch: existing.ETag})
	ok(t, err, "CompleteUpload with the current ETag")
	sameObject(t, got, completed(u, in, ps...), "CompleteUpload result")
	wantUsage(t, s, "alice", 7)
	wantGarbage(t, s, existing.BlobKey)

	in = completion(1)
	got, err = s.CompleteUpload(ctx, fresh.ID, in, completeOf(fp...), 0, meta.Cond{IfNoneMatch: true})
	ok(t, err, "CompleteUpload with IfNoneMatch onto a new key")
	sameObject(t, got, completed(fresh, in, fp...), "CompleteUpload result")
	wantObject(t, s, completed(fresh, in, fp...))
	wantUsage(t, s, "alice", 7)
	wantGarbage(t, s, existing.BlobKey)
}

func testCompleteOverMultipart(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	first := addMultipart(t, s, "alice", "k", 10, 10, 5)
	wantUsage(t, s, "alice", 25)
	wantGarbage(t, s)

	u := addUpload(t, s, "alice", "k")
	ps := putParts(t, s, u.ID, 20, 1)
	in := completion(2)
	got, err := s.CompleteUpload(ctx, u.ID, in, completeOf(ps...), 10, meta.Cond{IfMatch: first.ETag})
	ok(t, err, "CompleteUpload over a multipart object")
	want := completed(u, in, ps...)
	sameObject(t, got, want, "CompleteUpload result")
	wantObject(t, s, want)
	wantUsage(t, s, "alice", 21)
	wantGarbageSet(t, s, first.BlobKeys()...)

	// Once reclaimed, the old parts are referenced by nothing: the object
	// forgot them.
	gs, err := s.ListGarbage(ctx, time.Now().Add(time.Hour), 100)
	ok(t, err, "ListGarbage")
	ok(t, s.DeleteGarbage(ctx, garbageIDs(gs)), "DeleteGarbage")
	keys := append(first.BlobKeys(), want.BlobKeys()...)
	wantReferenced(t, s, "after the replaced parts were reclaimed", keys,
		map[string]bool{ps[0].BlobKey: true, ps[1].BlobKey: true})
}

func garbageIDs(gs []meta.Garbage) []int64 {
	ids := make([]int64, len(gs))
	for i, g := range gs {
		ids[i] = g.ID
	}
	return ids
}

// testCompleteVersusAbort races a completion with an abort of the same
// upload: exactly one wins and the other finds the upload gone.
func testCompleteVersusAbort(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	var usage int64
	var gone []string
	completes, aborts := 0, 0
	for i := range 20 {
		key := fmt.Sprintf("k%02d", i)
		u := addUpload(t, s, "alice", key)
		ps := putParts(t, s, u.ID, 3, 4)
		in := completion(2)
		var cerr, aerr error
		var wg sync.WaitGroup
		start := make(chan struct{})
		wg.Go(func() {
			<-start
			_, cerr = s.CompleteUpload(ctx, u.ID, in, completeOf(ps...), 0, meta.Cond{})
		})
		wg.Go(func() {
			<-start
			aerr = s.AbortUpload(ctx, u.ID)
		})
		close(start)
		wg.Wait()
		wantNoUpload(t, s, u.ID)
		switch {
		case cerr == nil && errcode.Is(aerr, errcode.NotFound):
			completes++
			usage += 7
			wantObject(t, s, completed(u, in, ps...))
		case aerr == nil && errcode.Is(cerr, errcode.NotFound):
			aborts++
			gone = append(gone, ps[0].BlobKey, ps[1].BlobKey)
			wantMissing(t, s, "alice", key)
		default:
			t.Fatalf("race %d: CompleteUpload: %v; AbortUpload: %v; want one nil and the other not_found", i, cerr, aerr)
		}
		wantUsage(t, s, "alice", usage)
		wantGarbageSet(t, s, gone...)
	}
	t.Logf("%d completes and %d aborts won", completes, aborts)
}

func testConcurrentCompletes(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	u := addUpload(t, s, "alice", "k")
	ps := putParts(t, s, u.ID, 10, 10, 10, 1)
	const n = 10
	ins := make([]meta.Object, n)
	errs := make([]error, n)
	results := make([]meta.Object, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		ins[i] = completion(4)
		wg.Go(func() {
			<-start
			results[i], errs[i] = s.CompleteUpload(ctx, u.ID, ins[i], completeOf(ps...), 10, meta.Cond{})
		})
	}
	close(start)
	wg.Wait()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Fatalf("completions %d and %d of one upload both succeeded", winner, i)
		case err == nil:
			winner = i
		case !errcode.Is(err, errcode.NotFound):
			t.Errorf("completion %d: err = %v (code %v), want nil or not_found", i, err, errcode.Of(err))
		}
	}
	if winner < 0 {
		t.Fatal("no completion succeeded")
	}
	want := completed(u, ins[winner], ps...)
	sameObject(t, results[winner], want, "the winner's result")
	wantObject(t, s, want)
	wantUsage(t, s, "alice", 31)
	wantGarbage(t, s)
	wantNoUpload(t, s, u.ID)
}

func testDeleteMultipart(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	mp := addMultipart(t, s, "alice", "mp", 10, 20, 30)
	keep := put1(t, s, obj("alice", "keep", 1))
	wantUsage(t, s, "alice", 61)

	_, err := s.DeleteObject(ctx, "alice", "mp", meta.Cond{IfMatch: keep.ETag})
	wantCode(t, err, errcode.PreconditionFailed, "DeleteObject with a wrong IfMatch")
	wantObject(t, s, mp)
	wantGarbage(t, s)

	got, err := s.DeleteObject(ctx, "alice", "mp", meta.Cond{IfMatch: mp.ETag})
	ok(t, err, "DeleteObject of a multipart object")
	sameObject(t, got, mp, "deleted object")
	wantMissing(t, s, "alice", "mp")
	wantObject(t, s, keep)
	wantUsage(t, s, "alice", 1)
	wantGarbageSet(t, s, mp.BlobKeys()...)

	gs, err := s.ListGarbage(ctx, time.Now().Add(time.Hour), 100)
	ok(t, err, "ListGarbage")
	ok(t, s.DeleteGarbage(ctx, garbageIDs(gs)), "DeleteGarbage")
	wantReferenced(t, s, "after the deleted object's parts were reclaimed", append(mp.BlobKeys(), keep.BlobKey, ""),
		map[string]bool{keep.BlobKey: true})
}

func testReplaceMultipart(t *testing.T, s store) {
	addUser(t, s, "alice", 0)
	mp := addMultipart(t, s, "alice", "k", 10, 20)
	single := obj("alice", "k", 5)
	old := put(t, s, single)
	sameObject(t, old[0], mp, "the replaced multipart object")
	wantObject(t, s, single)
	wantUsage(t, s, "alice", 5)
	wantGarbageSet(t, s, mp.BlobKeys()...)
}

// testPutWithParts writes multipart objects with PutObjects, as a
// metadata-only replace does.
func testPutWithParts(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	o := obj("alice", "assembled", 30)
	o.BlobKey = ""
	o.Parts = []meta.ObjectPart{
		{BlobKey: "blob/assembled-1", Size: 10, ETag: fmt.Sprintf("%032x", 1)},
		{BlobKey: "blob/assembled-2", Size: 0, ETag: fmt.Sprintf("%032x", 2), Checksum: "AAAAAA=="},
		{BlobKey: "blob/assembled-3", Size: 20, ETag: fmt.Sprintf("%032x", 3), Checksum: "AAAAAQ=="},
	}
	o.Checksum = meta.Checksum{Algorithm: "CRC32C", Type: "COMPOSITE", Value: "AAAAAg==-3"}
	put1(t, s, o)
	wantObject(t, s, o)
	wantUsage(t, s, "alice", 30)
	wantReferenced(t, s, "parts of a put object", o.BlobKeys(), map[string]bool{
		"blob/assembled-1": true, "blob/assembled-2": true, "blob/assembled-3": true})

	// A metadata-only replace keeps the parts, so enqueues nothing.
	o2 := o
	o2.ContentType = "text/plain"
	o2.Metadata = map[string]string{"new": "metadata"}
	o2.ModTime = o.ModTime.Add(time.Hour)
	old := put(t, s, o2)
	sameObject(t, old[0], o, "the replaced object")
	wantObject(t, s, o2)
	wantUsage(t, s, "alice", 30)
	wantGarbage(t, s)

	for _, tc := range []struct {
		name string
		edit func(o *meta.Object)
	}{
		{"a blob key besides parts", func(o *meta.Object) { o.BlobKey = "blob/other" }},
		{"a size that is not the parts' sum", func(o *meta.Object) { o.Size = 31 }},
	} {
		bad := o
		bad.Key = "bad"
		tc.edit(&bad)
		_, err := s.PutObjects(ctx, []meta.Put{{Object: bad}})
		wantCode(t, err, errcode.InvalidArgument, "PutObjects of a multipart object with "+tc.name)
		wantMissing(t, s, "alice", "bad")
	}
	wantUsage(t, s, "alice", 30)
	wantGarbage(t, s)
}

func testMoveMultipart(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	addUser(t, s, "bob", 0)
	mp := addMultipart(t, s, "alice", "mp", 10, 20)

	got, err := s.MoveObject(ctx, "alice", "mp", "alice", "moved", meta.Cond{})
	ok(t, err, "MoveObject within a bucket")
	sameObject(t, got, moved(mp, "alice", "moved"), "MoveObject result")
	wantObject(t, s, moved(mp, "alice", "moved"))
	wantMissing(t, s, "alice", "mp")
	wantUsage(t, s, "alice", 30)
	wantGarbage(t, s)

	got, err = s.MoveObject(ctx, "alice", "moved", "bob", "from-alice", meta.Cond{IfNoneMatch: true})
	ok(t, err, "MoveObject across owners")
	sameObject(t, got, moved(mp, "bob", "from-alice"), "MoveObject result")
	wantObject(t, s, moved(mp, "bob", "from-alice"))
	wantMissing(t, s, "alice", "moved")
	wantUsage(t, s, "alice", 0)
	wantUsage(t, s, "bob", 30)
	wantGarbage(t, s)
	wantReferenced(t, s, "a moved object's parts", mp.BlobKeys(), map[string]bool{
		mp.Parts[0].BlobKey: true, mp.Parts[1].BlobKey: true})

	got, err = s.MoveObject(ctx, "bob", "from-alice", "bob", "from-alice", meta.Cond{IfMatch: mp.ETag})
	ok(t, err, "MoveObject onto itself")
	sameObject(t, got, moved(mp, "bob", "from-alice"), "MoveObject onto itself")
	wantGarbage(t, s)

	// A single-blob object moved onto the multipart one replaces it.
	single := put1(t, s, obj("bob", "single", 3))
	_, err = s.MoveObject(ctx, "bob", "single", "bob", "from-alice", meta.Cond{})
	ok(t, err, "MoveObject onto a multipart object")
	wantObject(t, s, moved(single, "bob", "from-alice"))
	wantUsage(t, s, "bob", 3)
	wantGarbageSet(t, s, mp.BlobKeys()...)
}

func testMoveOntoMultipart(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	src := addMultipart(t, s, "alice", "src", 10, 20)
	dst := addMultipart(t, s, "alice", "dst", 5, 5, 5)
	wantUsage(t, s, "alice", 45)

	got, err := s.MoveObject(ctx, "alice", "src", "alice", "dst", meta.Cond{IfMatch: dst.ETag})
	ok(t, err, "MoveObject of a multipart object onto another")
	sameObject(t, got, moved(src, "alice", "dst"), "MoveObject result")
	wantObject(t, s, moved(src, "alice", "dst"))
	wantMissing(t, s, "alice", "src")
	wantUsage(t, s, "alice", 30)
	wantGarbageSet(t, s, dst.BlobKeys()...)

	gs, err := s.ListGarbage(ctx, time.Now().Add(time.Hour), 100)
	ok(t, err, "ListGarbage")
	ok(t, s.DeleteGarbage(ctx, garbageIDs(gs)), "DeleteGarbage")
	wantReferenced(t, s, "after the replaced object's parts were reclaimed", append(src.BlobKeys(), dst.BlobKeys()...),
		map[string]bool{src.Parts[0].BlobKey: true, src.Parts[1].BlobKey: true})
	// The moved object is whole, and deleting it releases its parts.
	_, err = s.DeleteObject(ctx, "alice", "dst", meta.Cond{})
	ok(t, err, "DeleteObject of the moved object")
	wantUsage(t, s, "alice", 0)
	wantGarbageSet(t, s, src.BlobKeys()...)
}

func testListMultipart(t *testing.T, s store) {
	addUser(t, s, "alice", 0)
	a := put1(t, s, obj("alice", "a", 1))
	b := addMultipart(t, s, "alice", "b", 2, 3)
	c := put1(t, s, obj("alice", "c", 4))
	d := addMultipart(t, s, "alice", "d/e", 5)
	stored := map[string]meta.Object{"a": a, "b": b, "c": c, "d/e": d}
	for _, opts := range []meta.ListOptions{{}, {Limit: 1}, {StartAfter: "a", Limit: 2}, {Delimiter: "/"}} {
		page := listOnce(t, s, opts)
		for _, o := range page.Objects {
			sameObject(t, o, stored[o.Key], fmt.Sprintf("object %s listed with %+v", o.Key, opts))
		}
	}
	if got := len(listOnce(t, s, meta.ListOptions{}).Objects); got != 4 {
		t.Errorf("ListObjects returned %d objects, want 4", got)
	}
}

// testListNoParts: ListOptions.NoParts lists the same objects with the
// same fields, the parts of multipart objects left out (Parts nil).
func testListNoParts(t *testing.T, s store) {
	addUser(t, s, "alice", 0)
	a := put1(t, s, obj("alice", "a", 1))
	b := addMultipart(t, s, "alice", "b", 2, 3)
	d := addMultipart(t, s, "alice", "d/e", 5)
	b.Parts, d.Parts = nil, nil
	stored := map[string]meta.Object{"a": a, "b": b, "d/e": d}
	for _, opts := range []meta.ListOptions{{NoParts: true}, {Limit: 1, NoParts: true}, {StartAfter: "a", Limit: 2, NoParts: true}, {Delimiter: "/", NoParts: true}} {
		page := listOnce(t, s, opts)
		for _, o := range page.Objects {
			if o.Parts != nil {
				t.Errorf("object %s listed with %+v: %d parts, want none", o.Key, opts, len(o.Parts))
			}
			sameObject(t, o, stored[o.Key], fmt.Sprintf("object %s listed with %+v", o.Key, opts))
		}
	}
	if got := len(listOnce(t, s, meta.ListOptions{NoParts: true}).Objects); got != 3 {
		t.Errorf("ListObjects returned %d objects, want 3", got)
	}
}

func testReferencedParts(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	u := addUpload(t, s, "alice", "k")
	ps := putParts(t, s, u.ID, 1, 2, 3)
	mp := addMultipart(t, s, "alice", "mp", 4, 5)
	keys := []string{ps[0].BlobKey, ps[1].BlobKey, ps[2].BlobKey, mp.Parts[0].BlobKey, mp.Parts[1].BlobKey, "blob/unknown", ""}
	all := map[string]bool{}
	for _, k := range keys[:5] {
		all[k] = true
	}
	// A multipart object has no blob key of its own: "" is no reference.
	wantReferenced(t, s, "parts of an upload and of an object", keys, all)

	_, err := s.CompleteUpload(ctx, u.ID, completion(2), completeOf(ps[0], ps[2]), 0, meta.Cond{})
	ok(t, err, "CompleteUpload")
	wantReferenced(t, s, "after completion (part 2 waits in the queue)", keys, all)
	gs, err := s.ListGarbage(ctx, time.Now().Add(time.Hour), 100)
	ok(t, err, "ListGarbage")
	ok(t, s.DeleteGarbage(ctx, garbageIDs(gs)), "DeleteGarbage")
	delete(all, ps[1].BlobKey)
	wantReferenced(t, s, "after the discarded part was reclaimed", keys, all)

	// Many keys at once.
	u2 := addUpload(t, s, "alice", "k2")
	p := putPart(t, s, part(u2.ID, 1, 1))
	many := make([]string, 0, 2600)
	for i := range 2500 {
		many = append(many, fmt.Sprintf("blob/none-%d", i))
	}
	many = append(many, "", p.BlobKey, mp.Parts[1].BlobKey)
	got, err := s.ReferencedBlobs(ctx, many)
	ok(t, err, "ReferencedBlobs of many keys")
	n := 0
	for _, v := range got {
		if v {
			n++
		}
	}
	if n != 2 || !got[p.BlobKey] || !got[mp.Parts[1].BlobKey] {
		t.Errorf("ReferencedBlobs of %d keys reports %d referenced (want 2: %q and %q)", len(many), n, p.BlobKey, mp.Parts[1].BlobKey)
	}
}

// testConsistentMultipartReads reads a multipart object while it is
// replaced over and over: every read must return one whole version, its
// parts those of the same version.
func testConsistentMultipartReads(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	version := func(v int) meta.Object {
		n := 2 + v%3
		o := meta.Object{
			Bucket:      "alice",
			Key:         "k",
			ETag:        fmt.Sprintf("%032x-%d", v, n),
			ContentType: "application/octet-stream",
			Metadata:    map[string]string{"v": fmt.Sprint(v)},
			Checksum:    meta.Checksum{Algorithm: "CRC32", Type: "COMPOSITE", Value: fmt.Sprintf("%s-%d", checksumValue(int64(v), 4), n)},
			ModTime:     baseTime.Add(time.Duration(v) * time.Second),
		}
		for i := range n {
			o.Parts = append(o.Parts, meta.ObjectPart{BlobKey: fmt.Sprintf("blob/v%d-%d", v, i), Size: int64(1 + i), ETag: fmt.Sprintf("%032x", i)})
			o.Size += int64(1 + i)
		}
		return o
	}
	put1(t, s, version(0))

	const versions = 300
	done := make(chan struct{})
	var wg sync.WaitGroup
	var reads atomic.Int64
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				got, err := s.GetObject(ctx, "alice", "k")
				if err != nil {
					t.Errorf("GetObject: %v", err)
					return
				}
				reads.Add(1)
				var v int
				if _, err := fmt.Sscan(got.Metadata["v"], &v); err != nil {
					t.Errorf("GetObject returned metadata %q", got.Metadata)
					return
				}
				if d := diffObject(got, version(v)); d != "" {
					t.Errorf("GetObject returned a torn version %d:%s", v, d)
					return
				}
			}
		})
	}
	for v := 1; v <= versions; v++ {
		put1(t, s, version(v))
	}
	close(done)
	wg.Wait()
	if reads.Load() == 0 {
		t.Error("no read ran during the replacements")
	}
	t.Logf("%d consistent reads during %d replacements", reads.Load(), versions)
}
