package metatest

import (
	"fmt"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

var bucketTests = []test{
	{name: "CreateAndGet", fn: testCreateBucket},
	{name: "List", fn: testListBuckets},
	{name: "Visibility", fn: testVisibility},
	{name: "Delete", fn: testDeleteBucket},
	{name: "Stats", fn: testBucketStats},
}

// testBucketStats: a bucket's Objects and Bytes follow every kind of
// object write — put, replace by a bigger and a smaller object, a
// multipart completion, a move within and across buckets (onto an
// existing object too), a delete — as ListBuckets reads them (GetBucket
// may be answered by a cache: see meta.Bucket).
func testBucketStats(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	addUser(t, s, "bob", 0)
	addBucket(t, s, "alice-2", "alice")
	want := func(step string, counts map[string][2]int64) {
		t.Helper()
		seen := 0
		for _, owner := range []string{"alice", "bob"} {
			bs, err := s.ListBuckets(ctx, owner)
			ok(t, err, "ListBuckets")
			for _, b := range bs {
				c, listed := counts[b.Name]
				if !listed {
					continue
				}
				seen++
				if b.Objects != c[0] || b.Bytes != c[1] {
					t.Errorf("%s: %s has %d objects, %d bytes; want %d, %d", step, b.Name, b.Objects, b.Bytes, c[0], c[1])
				}
			}
		}
		if seen != len(counts) {
			t.Fatalf("%s: %d of the buckets %v listed", step, seen, counts)
		}
	}
	want("new", map[string][2]int64{"alice": {0, 0}, "alice-2": {0, 0}, "bob": {0, 0}})
	put(t, s, obj("alice", "a", 10), obj("alice", "b", 20), obj("alice", "dir/", 0))
	want("put", map[string][2]int64{"alice": {3, 30}})
	put(t, s, obj("alice", "a", 100))
	want("replace bigger", map[string][2]int64{"alice": {3, 120}})
	put(t, s, obj("alice", "a", 1))
	want("replace smaller", map[string][2]int64{"alice": {3, 21}})
	addMultipart(t, s, "alice", "mp", 5, 7)
	want("multipart", map[string][2]int64{"alice": {4, 33}})
	_, err := s.MoveObject(ctx, "alice", "a", "alice", "a2", meta.Cond{})
	ok(t, err, "MoveObject within")
	want("move within", map[string][2]int64{"alice": {4, 33}})
	_, err = s.MoveObject(ctx, "alice", "mp", "alice-2", "mp", meta.Cond{})
	ok(t, err, "MoveObject across")
	want("move across", map[string][2]int64{"alice": {3, 21}, "alice-2": {1, 12}})
	put(t, s, obj("bob", "x", 50))
	_, err = s.MoveObject(ctx, "alice", "b", "bob", "x", meta.Cond{})
	ok(t, err, "MoveObject onto an object of another owner")
	want("move onto", map[string][2]int64{"alice": {2, 1}, "bob": {1, 20}})
	_, err = s.DeleteObject(ctx, "alice", "a2", meta.Cond{})
	ok(t, err, "DeleteObject")
	want("delete", map[string][2]int64{"alice": {1, 0}, "alice-2": {1, 12}, "bob": {1, 20}})
}

func testCreateBucket(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	b := meta.Bucket{Name: "photos", OwnerID: "alice", Visibility: meta.PublicRead, CreatedAt: baseTime.Add(time.Minute)}
	ok(t, s.CreateBucket(ctx, b), "CreateBucket")
	got, err := s.GetBucket(ctx, "photos")
	ok(t, err, "GetBucket")
	if got.Name != b.Name || got.OwnerID != b.OwnerID || got.Visibility != b.Visibility || !sameTime(got.CreatedAt, b.CreatedAt) {
		t.Errorf("GetBucket = %+v, want %+v", got, b)
	}

	wantCode(t, s.CreateBucket(ctx, b), errcode.AlreadyExists, "CreateBucket of a taken name")
	wantCode(t, s.CreateBucket(ctx, meta.Bucket{Name: "alice", OwnerID: "alice", Visibility: meta.Private}),
		errcode.AlreadyExists, "CreateBucket of a default bucket's name")
	wantCode(t, s.CreateBucket(ctx, meta.Bucket{Name: "orphan", OwnerID: "nobody", Visibility: meta.Private}),
		errcode.NotFound, "CreateBucket for a missing owner")
	_, err = s.GetBucket(ctx, "orphan")
	wantCode(t, err, errcode.NotFound, "GetBucket of a bucket whose creation failed")
	_, err = s.GetBucket(ctx, "nope")
	wantCode(t, err, errcode.NotFound, "GetBucket of a missing bucket")
}

func testListBuckets(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	addUser(t, s, "bob", 0)
	for _, name := range []string{"zeta", "alpha", "mid", "alpha-2", "Zed"} {
		addBucket(t, s, name, "alice")
	}
	addBucket(t, s, "bobs", "bob")

	bs, err := s.ListBuckets(ctx, "alice")
	ok(t, err, "ListBuckets")
	var got []string
	for _, b := range bs {
		got = append(got, b.Name)
		if b.OwnerID != "alice" {
			t.Errorf("ListBuckets(alice) returned %q owned by %q", b.Name, b.OwnerID)
		}
	}
	if want := []string{"Zed", "alice", "alpha", "alpha-2", "mid", "zeta"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("ListBuckets(alice) = %q, want %q", got, want)
	}
	bs, err = s.ListBuckets(ctx, "nobody")
	ok(t, err, "ListBuckets of a user without buckets")
	if len(bs) != 0 {
		t.Errorf("ListBuckets(nobody) = %v, want none", bs)
	}
}

func testVisibility(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	addBucket(t, s, "other", "alice")
	for _, v := range []meta.Visibility{meta.PublicRead, meta.Private, meta.PublicRead} {
		ok(t, s.SetBucketVisibility(ctx, "alice", v), "SetBucketVisibility")
		b, err := s.GetBucket(ctx, "alice")
		ok(t, err, "GetBucket")
		if got, want := b.Visibility, v; got != want {
			t.Errorf("Visibility = %q, want %q", got, want)
		}
	}
	if err := s.SetBucketVisibility(ctx, "alice", "world-writable"); err == nil {
		t.Error("SetBucketVisibility to an unknown visibility succeeded")
	}
	b, err := s.GetBucket(ctx, "alice")
	ok(t, err, "GetBucket")
	if got, want := b.Visibility, meta.PublicRead; got != want {
		t.Errorf("Visibility after a rejected change = %q, want %q", got, want)
	}
	b, err = s.GetBucket(ctx, "other")
	ok(t, err, "GetBucket other")
	if got, want := b.Visibility, meta.Private; got != want {
		t.Errorf("another bucket's Visibility = %q, want %q", got, want)
	}
	wantCode(t, s.SetBucketVisibility(ctx, "nope", meta.PublicRead), errcode.NotFound, "SetBucketVisibility of a missing bucket")
}

func testDeleteBucket(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	addBucket(t, s, "full", "alice")
	addBucket(t, s, "empty", "alice")
	o := put1(t, s, obj("full", "k", 3))

	wantCode(t, s.DeleteBucket(ctx, "full"), errcode.Conflict, "DeleteBucket of a bucket with objects")
	wantObject(t, s, o)
	ok(t, s.DeleteBucket(ctx, "empty"), "DeleteBucket of an empty bucket")
	_, err := s.GetBucket(ctx, "empty")
	wantCode(t, err, errcode.NotFound, "GetBucket after DeleteBucket")
	wantCode(t, s.DeleteBucket(ctx, "empty"), errcode.NotFound, "DeleteBucket of a deleted bucket")
	wantCode(t, s.DeleteBucket(ctx, "nope"), errcode.NotFound, "DeleteBucket of a missing bucket")

	_, err = s.DeleteObject(ctx, "full", "k", meta.Cond{})
	ok(t, err, "DeleteObject")
	ok(t, s.DeleteBucket(ctx, "full"), "DeleteBucket once emptied")
	// The name is free again.
	addBucket(t, s, "full", "alice")
}

// put1 stores one new object and returns it.
func put1(t *testing.T, s store, o meta.Object) meta.Object {
	t.Helper()
	put(t, s, o)
	return o
}

var objectTests = []test{
	{name: "RoundTrip", fn: testRoundTrip},
	{name: "GetNotFound", fn: testGetNotFound},
	{name: "Replace", fn: testReplace},
	{name: "ReplaceKeepingBlob", fn: testReplaceKeepingBlob},
	{name: "IfNoneMatch", fn: testIfNoneMatch},
	{name: "IfMatch", fn: testIfMatch},
	{name: "BucketOwnerGuard", fn: testBucketOwnerGuard},
	{name: "AllOrNothing", fn: testAllOrNothing},
	{name: "SeveralBuckets", fn: testPutSeveralBuckets},
	{name: "BucketMissing", fn: testPutBucketMissing},
	{name: "CanceledContext", fn: testCanceledWrite},
	{name: "Delete", fn: testDeleteObject},
	{name: "DeleteCond", fn: testDeleteCond},
	{name: "DeleteSharedBlob", fn: testDeleteSharedBlob},
	{name: "CRC32C", fn: testCRC32C},
}

// testCRC32C: the CRC-32C a write records (migration 0029) comes back
// with the object, its version and the replaced object; a row without
// one reads as nil (not empty), an overwrite without one clears it, and a
// CRC of another size than 4 bytes is refused.
func testCRC32C(t *testing.T, s store) {
	addUser(t, s, "alice", 0)
	with := obj("alice", "with", 10)
	with.CRC32C = []byte{0xe3, 0x06, 0x92, 0x83}
	without := obj("alice", "without", 10)
	put(t, s, with, without)
	wantObject(t, s, with)
	wantObject(t, s, without)
	got, err := s.GetObjectVersion(t.Context(), "alice", "with", meta.NullVersion)
	ok(t, err, "GetObjectVersion")
	sameObject(t, got, with, "the version")

	next := obj("alice", "with", 12)
	old := put(t, s, next)
	sameObject(t, old[0], with, "the replaced object")
	wantObject(t, s, next)

	bad := obj("alice", "bad", 1)
	bad.CRC32C = []byte{1, 2, 3}
	_, err = s.PutObjects(t.Context(), []meta.Put{{Object: bad}})
	wantCode(t, err, errcode.InvalidArgument, "a 3-byte CRC-32C")
}

func testRoundTrip(t *testing.T, s store) {
	addUser(t, s, "alice", 0)
	full := meta.Object{
		Bucket:      "alice",
		Key:         "docs/Ünïcode & spaces/report (final).pdf",
		Size:        123456,
		ETag:        "9e107d9d372bb6826bd81d3542a419d6-3",
		SHA256:      "d7a8fbb307d7809469ca9abcb0082e4f8d5651e46d3cdb762d02d0bf37c9e592",
		ContentType: "application/pdf; charset=binary",
		Metadata:    map[string]string{"author": "Ada", "x-note": "a=b; c=\"d\"", "empty": "", "ünï": "çødé"},
		BlobKey:     "blobs/ab/cdef0123",
		Checksum:    meta.Checksum{Algorithm: "SHA256", Type: "FULL_OBJECT", Value: "16j7swfXgJRpypq8sAguT41WUeRtPNt2LQLQvzfJ5ZI="},
		ModTime:     time.Date(2024, 2, 29, 23, 59, 58, 987_654_321, time.FixedZone("CET", 3600)),
	}
	noMeta := obj("alice", "nil-metadata", 0)
	noMeta.Checksum = meta.Checksum{}
	emptyMeta := obj("alice", "empty-metadata", 1)
	emptyMeta.Metadata = map[string]string{}
	old := put(t, s, full, noMeta, emptyMeta)
	for i, o := range old {
		if o.Key != "" || o.BlobKey != "" {
			t.Errorf("PutObjects returned a replaced object for new put %d: %+v", i, o)
		}
	}
	wantObject(t, s, full)
	wantObject(t, s, noMeta)
	wantObject(t, s, emptyMeta)

	got, err := s.GetObject(t.Context(), "alice", full.Key)
	ok(t, err, "GetObject")
	if got.Metadata["empty"] != "" || len(got.Metadata) != 4 {
		t.Errorf("Metadata = %q, want %q", got.Metadata, full.Metadata)
	}
	wantUsage(t, s, "alice", 123457)
	wantGarbage(t, s)
}

func testGetNotFound(t *testing.T, s store) {
	addUser(t, s, "alice", 0)
	put(t, s, obj("alice", "a", 1))
	wantMissing(t, s, "alice", "b")
	wantMissing(t, s, "alice", "A")
	wantMissing(t, s, "nope", "a")
}

func testReplace(t *testing.T, s store) {
	addUser(t, s, "alice", 0)
	v1 := obj("alice", "k", 100)
	v1.Metadata = map[string]string{"v": "1"}
	if old := put(t, s, v1); old[0].Key != "" {
		t.Errorf("PutObjects of a new key returned %+v, want the zero Object", old[0])
	}
	v2 := obj("alice", "k", 30)
	old := put(t, s, v2)
	sameObject(t, old[0], v1, "the replaced object PutObjects returned")
	wantObject(t, s, v2)
	wantUsage(t, s, "alice", 30)
	wantGarbage(t, s, v1.BlobKey)

	v3 := obj("alice", "k", 50)
	old = put(t, s, v3)
	sameObject(t, old[0], v2, "the second replaced object")
	wantObject(t, s, v3)
	wantUsage(t, s, "alice", 50)
	wantGarbage(t, s, v1.BlobKey, v2.BlobKey)
}

func testReplaceKeepingBlob(t *testing.T, s store) {
	addUser(t, s, "alice", 0)
	v1 := put1(t, s, obj("alice", "k", 10))
	v2 := v1
	v2.ContentType = "text/plain"
	v2.Metadata = map[string]string{"new": "metadata"}
	old := put(t, s, v2)
	sameObject(t, old[0], v1, "replaced object")
	wantObject(t, s, v2)
	// The row still points at the blob: it must not be queued for deletion.
	wantGarbage(t, s)
	wantUsage(t, s, "alice", 10)
}

func testIfNoneMatch(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	v1 := put1(t, s, obj("alice", "k", 10))
	_, err := s.PutObjects(ctx, []meta.Put{{Object: obj("alice", "k", 20), Cond: meta.Cond{IfNoneMatch: true}}})
	wantCode(t, err, errcode.PreconditionFailed, "IfNoneMatch put onto an existing key")
	wantObject(t, s, v1)
	wantUsage(t, s, "alice", 10)
	wantGarbage(t, s)

	fresh := obj("alice", "fresh", 5)
	old, err := s.PutObjects(ctx, []meta.Put{{Object: fresh, Cond: meta.Cond{IfNoneMatch: true}}})
	ok(t, err, "IfNoneMatch put onto a new key")
	if old[0].Replaced.Key != "" {
		t.Errorf("replaced object = %+v, want the zero Object", old[0].Replaced)
	}
	wantObject(t, s, fresh)
	wantUsage(t, s, "alice", 15)
}

func testIfMatch(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	v1 := put1(t, s, obj("alice", "k", 10))
	for _, tc := range []struct{ name, etag, key string }{
		{"wrong ETag", "0123456789abcdef0123456789abcdef", "k"},
		{"quoted ETag", `"` + v1.ETag + `"`, "k"},
		{"missing key", v1.ETag, "missing"},
	} {
		_, err := s.PutObjects(ctx, []meta.Put{{Object: obj("alice", tc.key, 20), Cond: meta.Cond{IfMatch: tc.etag}}})
		wantCode(t, err, errcode.PreconditionFailed, "IfMatch put, "+tc.name)
	}
	wantObject(t, s, v1)
	wantMissing(t, s, "alice", "missing")
	wantUsage(t, s, "alice", 10)
	wantGarbage(t, s)

	v2 := obj("alice", "k", 7)
	old, err := s.PutObjects(ctx, []meta.Put{{Object: v2, Cond: meta.Cond{IfMatch: v1.ETag}}})
	ok(t, err, "IfMatch put with the current ETag")
	sameObject(t, old[0].Replaced, v1, "replaced object")
	wantObject(t, s, v2)
	wantUsage(t, s, "alice", 7)
	wantGarbage(t, s, v1.BlobKey)

	// "*" matches any existing object, and no missing one.
	_, err = s.PutObjects(ctx, []meta.Put{{Object: obj("alice", "missing", 1), Cond: meta.Cond{IfMatch: "*"}}})
	wantCode(t, err, errcode.PreconditionFailed, "IfMatch * on a missing key")
	v3 := obj("alice", "k", 5)
	_, err = s.PutObjects(ctx, []meta.Put{{Object: v3, Cond: meta.Cond{IfMatch: "*"}}})
	ok(t, err, "IfMatch * on an existing key")
	wantObject(t, s, v3)
	_, err = s.DeleteObject(ctx, "alice", "k", meta.Cond{IfMatch: "*"})
	ok(t, err, "DeleteObject with IfMatch *")
}

// testBucketOwnerGuard: a put whose bucket changed hands since the upload
// was authorised (deleted and re-created by someone else) is refused.
func testBucketOwnerGuard(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	addUser(t, s, "bob", 0)
	_, err := s.PutObjects(ctx, []meta.Put{{Object: obj("bob", "planted", 6), BucketOwner: "alice"}})
	wantCode(t, err, errcode.NotFound, "put guarded by another owner")
	wantMissing(t, s, "bob", "planted")
	wantUsage(t, s, "bob", 0)
	_, err = s.PutObjects(ctx, []meta.Put{{Object: obj("bob", "fine", 6), BucketOwner: "bob"}})
	ok(t, err, "put guarded by the right owner")
}

func testAllOrNothing(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 100)
	addUser(t, s, "bob", 0)
	existing := put1(t, s, obj("alice", "existing", 10))

	for _, tc := range []struct {
		name string
		code errcode.Code
		bad  meta.Put
	}{
		{"failed IfNoneMatch", errcode.PreconditionFailed, meta.Put{Object: obj("alice", "existing", 1), Cond: meta.Cond{IfNoneMatch: true}}},
		{"failed IfMatch", errcode.PreconditionFailed, meta.Put{Object: obj("alice", "existing", 1), Cond: meta.Cond{IfMatch: "nope"}}},
		{"missing bucket", errcode.NotFound, meta.Put{Object: obj("nope", "x", 1)}},
		{"over quota", errcode.QuotaExceeded, meta.Put{Object: obj("alice", "big", 92)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			puts := []meta.Put{
				{Object: obj("alice", "first", 5)},
				{Object: obj("bob", "first", 5)},
				{Object: obj("alice", "existing", 4)}, // a replace before the failure
				tc.bad,
				{Object: obj("alice", "last", 1)},
			}
			_, err := s.PutObjects(ctx, puts)
			wantCode(t, err, tc.code, "PutObjects")
			wantMissing(t, s, "alice", "first")
			wantMissing(t, s, "bob", "first")
			wantMissing(t, s, "alice", "last")
			wantObject(t, s, existing)
			wantUsage(t, s, "alice", 10)
			wantUsage(t, s, "bob", 0)
			wantGarbage(t, s)
		})
	}
}

func testPutSeveralBuckets(t *testing.T, s store) {
	addUser(t, s, "alice", 0)
	addUser(t, s, "bob", 0)
	addBucket(t, s, "alice-2", "alice")
	a1, a2, b1 := obj("alice", "k", 10), obj("alice-2", "k", 20), obj("bob", "k", 40)
	put(t, s, a1, a2, b1)
	wantObject(t, s, a1)
	wantObject(t, s, a2)
	wantObject(t, s, b1)
	wantUsage(t, s, "alice", 30)
	wantUsage(t, s, "bob", 40)

	// Two puts of one key in one call: the second replaces the first.
	x1, x2 := obj("alice", "x", 5), obj("alice", "x", 6)
	old := put(t, s, x1, x2)
	if old[0].Key != "" {
		t.Errorf("first put of a new key returned %+v, want the zero Object", old[0])
	}
	sameObject(t, old[1], x1, "second put of the same key returned")
	wantObject(t, s, x2)
	wantUsage(t, s, "alice", 36)
	wantGarbage(t, s, x1.BlobKey)
}

func testPutBucketMissing(t *testing.T, s store) {
	addUser(t, s, "alice", 0)
	_, err := s.PutObjects(t.Context(), []meta.Put{{Object: obj("nope", "k", 1)}})
	wantCode(t, err, errcode.NotFound, "PutObjects into a missing bucket")
	wantMissing(t, s, "nope", "k")
	wantUsage(t, s, "alice", 0)
}

func testCanceledWrite(t *testing.T, s store) {
	addUser(t, s, "alice", 0)
	ctx := ctxCanceled(t)
	_, err := s.PutObjects(ctx, []meta.Put{{Object: obj("alice", "k", 1)}})
	if err == nil {
		t.Fatal("PutObjects with a cancelled context succeeded")
	}
	if err := s.CreateBucket(ctx, meta.Bucket{Name: "b", OwnerID: "alice", Visibility: meta.Private}); err == nil {
		t.Fatal("CreateBucket with a cancelled context succeeded")
	}
	wantMissing(t, s, "alice", "k")
	_, err = s.GetBucket(t.Context(), "b")
	wantCode(t, err, errcode.NotFound, "GetBucket after a cancelled create")
	wantUsage(t, s, "alice", 0)
}

func testDeleteObject(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	a, b := obj("alice", "a", 10), obj("alice", "b", 20)
	a.Metadata = map[string]string{"k": "v"}
	put(t, s, a, b)

	got, err := s.DeleteObject(ctx, "alice", "a", meta.Cond{})
	ok(t, err, "DeleteObject")
	sameObject(t, got, a, "deleted object")
	wantMissing(t, s, "alice", "a")
	wantObject(t, s, b)
	wantUsage(t, s, "alice", 20)
	wantGarbage(t, s, a.BlobKey)

	_, err = s.DeleteObject(ctx, "alice", "a", meta.Cond{})
	wantCode(t, err, errcode.NotFound, "DeleteObject of a deleted key")
	_, err = s.DeleteObject(ctx, "alice", "a", meta.Cond{IfMatch: a.ETag})
	wantCode(t, err, errcode.NotFound, "DeleteObject with IfMatch of a deleted key")
	_, err = s.DeleteObject(ctx, "nope", "b", meta.Cond{})
	wantCode(t, err, errcode.NotFound, "DeleteObject in a missing bucket")
	wantUsage(t, s, "alice", 20)
	wantGarbage(t, s, a.BlobKey)
}

func testDeleteCond(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	a := put1(t, s, obj("alice", "a", 10))
	_, err := s.DeleteObject(ctx, "alice", "a", meta.Cond{IfMatch: "0123456789abcdef0123456789abcdef"})
	wantCode(t, err, errcode.PreconditionFailed, "DeleteObject with a wrong IfMatch")
	_, err = s.DeleteObject(ctx, "alice", "a", meta.Cond{IfNoneMatch: true})
	wantCode(t, err, errcode.PreconditionFailed, "DeleteObject with IfNoneMatch of an existing key")
	wantObject(t, s, a)
	wantUsage(t, s, "alice", 10)
	wantGarbage(t, s)

	got, err := s.DeleteObject(ctx, "alice", "a", meta.Cond{IfMatch: a.ETag})
	ok(t, err, "DeleteObject with the right IfMatch")
	sameObject(t, got, a, "deleted object")
	wantMissing(t, s, "alice", "a")
	wantUsage(t, s, "alice", 0)
	wantGarbage(t, s, a.BlobKey)
}

func testDeleteSharedBlob(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	a, b := obj("alice", "a", 10), obj("alice", "b", 10)
	b.BlobKey = a.BlobKey
	put(t, s, a, b)
	_, err := s.DeleteObject(ctx, "alice", "a", meta.Cond{})
	ok(t, err, "DeleteObject a")
	wantGarbage(t, s) // b still points at the blob
	_, err = s.DeleteObject(ctx, "alice", "b", meta.Cond{})
	ok(t, err, "DeleteObject b")
	wantGarbage(t, s, a.BlobKey)
}
