package metatest

import (
	"fmt"
	"sort"
	"sync"
	"testing"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

var moveTests = []test{
	{name: "WithinBucket", fn: testMoveWithinBucket},
	{name: "AcrossBucketsSameOwner", fn: testMoveSameOwner},
	{name: "AcrossOwners", fn: testMoveAcrossOwners},
	{name: "DestinationQuota", fn: testMoveQuota},
	{name: "OntoExisting", fn: testMoveOntoExisting},
	{name: "DestinationCond", fn: testMoveCond},
	{name: "NotFound", fn: testMoveNotFound},
	{name: "OntoItself", fn: testMoveOntoItself},
}

// moved is o at its new place.
func moved(o meta.Object, bucket, key string) meta.Object {
	o.Bucket, o.Key = bucket, key
	return o
}

func testMoveWithinBucket(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	a := obj("alice", "dir/a", 10)
	a.Metadata = map[string]string{"k": "v"}
	put(t, s, a)
	got, err := s.MoveObject(ctx, "alice", "dir/a", "alice", "other/b", meta.Cond{})
	ok(t, err, "MoveObject")
	want := moved(a, "alice", "other/b")
	sameObject(t, got, want, "MoveObject result")
	wantObject(t, s, want)
	wantMissing(t, s, "alice", "dir/a")
	wantUsage(t, s, "alice", 10)
	wantGarbage(t, s)
	refs, err := s.ReferencedBlobs(ctx, []string{a.BlobKey})
	ok(t, err, "ReferencedBlobs")
	if !refs[a.BlobKey] {
		t.Errorf("the moved object's blob %q is not referenced", a.BlobKey)
	}
}

func testMoveSameOwner(t *testing.T, s store) {
	addUser(t, s, "alice", 15)
	addBucket(t, s, "alice-2", "alice")
	a := put1(t, s, obj("alice", "a", 10))
	// Usage does not move: the quota (10 of 15 used) is not in the way.
	got, err := s.MoveObject(t.Context(), "alice", "a", "alice-2", "a", meta.Cond{})
	ok(t, err, "MoveObject")
	sameObject(t, got, moved(a, "alice-2", "a"), "MoveObject result")
	wantObject(t, s, moved(a, "alice-2", "a"))
	wantMissing(t, s, "alice", "a")
	wantUsage(t, s, "alice", 10)
	wantGarbage(t, s)
}

func testMoveAcrossOwners(t *testing.T, s store) {
	addUser(t, s, "alice", 0)
	addUser(t, s, "bob", 0)
	a := obj("alice", "a", 10)
	keep := obj("alice", "keep", 3)
	put(t, s, a, keep)
	got, err := s.MoveObject(t.Context(), "alice", "a", "bob", "from-alice", meta.Cond{})
	ok(t, err, "MoveObject")
	sameObject(t, got, moved(a, "bob", "from-alice"), "MoveObject result")
	wantObject(t, s, moved(a, "bob", "from-alice"))
	wantMissing(t, s, "alice", "a")
	wantUsage(t, s, "alice", 3)
	wantUsage(t, s, "bob", 10)
	wantGarbage(t, s)
}

func testMoveQuota(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	addUser(t, s, "bob", 15)
	a := obj("alice", "a", 10)
	small := obj("alice", "small", 2)
	b := obj("bob", "b", 10)
	put(t, s, a, small, b)

	_, err := s.MoveObject(ctx, "alice", "a", "bob", "a", meta.Cond{})
	wantCode(t, err, errcode.QuotaExceeded, "MoveObject beyond the destination owner's quota")
	wantObject(t, s, a)
	wantMissing(t, s, "bob", "a")
	wantUsage(t, s, "alice", 12)
	wantUsage(t, s, "bob", 10)

	// Bob goes over quota; a move that shrinks his usage still passes.
	ok(t, s.SetQuota(ctx, "bob", 5), "SetQuota")
	got, err := s.MoveObject(ctx, "alice", "small", "bob", "b", meta.Cond{})
	ok(t, err, "MoveObject that shrinks the destination usage")
	sameObject(t, got, moved(small, "bob", "b"), "MoveObject result")
	wantUsage(t, s, "alice", 10)
	wantUsage(t, s, "bob", 2)
	wantGarbage(t, s, b.BlobKey)

	// And one that grows it fails even though the source shrinks.
	_, err = s.MoveObject(ctx, "alice", "a", "bob", "a2", meta.Cond{})
	wantCode(t, err, errcode.QuotaExceeded, "MoveObject that grows an over-quota destination")
	wantObject(t, s, a)
	wantUsage(t, s, "alice", 10)
	wantUsage(t, s, "bob", 2)
}

func testMoveOntoExisting(t *testing.T, s store) {
	addUser(t, s, "alice", 0)
	a, b := obj("alice", "a", 10), obj("alice", "b", 25)
	put(t, s, a, b)
	got, err := s.MoveObject(t.Context(), "alice", "a", "alice", "b", meta.Cond{})
	ok(t, err, "MoveObject onto an existing key")
	sameObject(t, got, moved(a, "alice", "b"), "MoveObject result")
	wantObject(t, s, moved(a, "alice", "b"))
	wantMissing(t, s, "alice", "a")
	wantUsage(t, s, "alice", 10)
	wantGarbage(t, s, b.BlobKey)
}

func testMoveCond(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	a, b, c := obj("alice", "a", 10), obj("alice", "b", 20), obj("alice", "c", 30)
	put(t, s, a, b, c)
	for _, tc := range []struct {
		name string
		dst  string
		cond meta.Cond
	}{
		{"IfNoneMatch onto an existing key", "b", meta.Cond{IfNoneMatch: true}},
		{"IfMatch with a wrong ETag", "b", meta.Cond{IfMatch: c.ETag}},
		{"IfMatch onto a missing key", "missing", meta.Cond{IfMatch: b.ETag}},
	} {
		_, err := s.MoveObject(ctx, "alice", "a", "alice", tc.dst, tc.cond)
		wantCode(t, err, errcode.PreconditionFailed, "MoveObject, "+tc.name)
	}
	wantObject(t, s, a)
	wantObject(t, s, b)
	wantMissing(t, s, "alice", "missing")
	wantUsage(t, s, "alice", 60)
	wantGarbage(t, s)

	got, err := s.MoveObject(ctx, "alice", "a", "alice", "b", meta.Cond{IfMatch: b.ETag})
	ok(t, err, "MoveObject with the destination's ETag")
	sameObject(t, got, moved(a, "alice", "b"), "MoveObject result")
	_, err = s.MoveObject(ctx, "alice", "c", "alice", "new", meta.Cond{IfNoneMatch: true})
	ok(t, err, "MoveObject with IfNoneMatch onto a new key")
	wantObject(t, s, moved(c, "alice", "new"))
	wantUsage(t, s, "alice", 40)
	wantGarbage(t, s, b.BlobKey)
}

func testMoveNotFound(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	a := put1(t, s, obj("alice", "a", 10))
	for _, tc := range []struct{ name, sb, sk, db, dk string }{
		{"missing source key", "alice", "nope", "alice", "x"},
		{"missing source bucket", "nope", "a", "alice", "x"},
		{"missing destination bucket", "alice", "a", "nope", "x"},
	} {
		_, err := s.MoveObject(ctx, tc.sb, tc.sk, tc.db, tc.dk, meta.Cond{})
		wantCode(t, err, errcode.NotFound, "MoveObject, "+tc.name)
	}
	wantObject(t, s, a)
	wantMissing(t, s, "alice", "x")
	wantUsage(t, s, "alice", 10)
	wantGarbage(t, s)
}

func testMoveOntoItself(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	a := put1(t, s, obj("alice", "a", 10))
	got, err := s.MoveObject(ctx, "alice", "a", "alice", "a", meta.Cond{})
	ok(t, err, "MoveObject onto itself")
	sameObject(t, got, a, "MoveObject result")
	wantObject(t, s, a)
	wantUsage(t, s, "alice", 10)
	wantGarbage(t, s)
	_, err = s.MoveObject(ctx, "alice", "nope", "alice", "nope", meta.Cond{})
	wantCode(t, err, errcode.NotFound, "MoveObject of a missing key onto itself")
}

var quotaTests = []test{
	{name: "Accounting", fn: testQuotaAccounting},
	{name: "ShrinkOverQuota", fn: testShrinkOverQuota},
	{name: "ConcurrentPuts", fn: testConcurrentQuota},
}

func testQuotaAccounting(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 100)
	put1(t, s, obj("alice", "a", 60))
	wantUsage(t, s, "alice", 60)

	_, err := s.PutObjects(ctx, []meta.Put{{Object: obj("alice", "b", 41)}})
	wantCode(t, err, errcode.QuotaExceeded, "a put one byte beyond the quota")
	wantMissing(t, s, "alice", "b")
	wantUsage(t, s, "alice", 60)

	b := put1(t, s, obj("alice", "b", 40)) // exactly full
	wantUsage(t, s, "alice", 100)
	_, err = s.PutObjects(ctx, []meta.Put{{Object: obj("alice", "c", 1)}})
	wantCode(t, err, errcode.QuotaExceeded, "a put into a full quota")
	put1(t, s, obj("alice", "empty", 0)) // zero bytes always fit

	// A replace counts only the difference.
	_, err = s.PutObjects(ctx, []meta.Put{{Object: obj("alice", "b", 41)}})
	wantCode(t, err, errcode.QuotaExceeded, "a replace growing beyond the quota")
	wantObject(t, s, b)
	put1(t, s, obj("alice", "b", 30))
	wantUsage(t, s, "alice", 90)

	// Two puts that fit alone but not together.
	_, err = s.PutObjects(ctx, []meta.Put{{Object: obj("alice", "x", 6)}, {Object: obj("alice", "y", 6)}})
	wantCode(t, err, errcode.QuotaExceeded, "two puts beyond the quota together")
	wantMissing(t, s, "alice", "x")
	wantUsage(t, s, "alice", 90)

	_, err = s.DeleteObject(ctx, "alice", "a", meta.Cond{})
	ok(t, err, "DeleteObject")
	wantUsage(t, s, "alice", 30)
	_, err = s.MoveObject(ctx, "alice", "b", "alice", "b-moved", meta.Cond{})
	ok(t, err, "MoveObject")
	wantUsage(t, s, "alice", 30)

	ok(t, s.SetQuota(ctx, "alice", 0), "SetQuota unlimited")
	put1(t, s, obj("alice", "huge", 1<<40))
	wantUsage(t, s, "alice", 30+1<<40)
}

func testShrinkOverQuota(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 100)
	put(t, s, obj("alice", "a", 60), obj("alice", "b", 40))
	ok(t, s.SetQuota(ctx, "alice", 50), "SetQuota below usage")

	// Over quota: shrinking passes, growing does not.
	small := put1(t, s, obj("alice", "a", 59))
	wantUsage(t, s, "alice", 99)
	_, err := s.PutObjects(ctx, []meta.Put{{Object: obj("alice", "a", 60)}})
	wantCode(t, err, errcode.QuotaExceeded, "a growing replace while over quota")
	_, err = s.PutObjects(ctx, []meta.Put{{Object: obj("alice", "new", 1)}})
	wantCode(t, err, errcode.QuotaExceeded, "a new object while over quota")
	wantObject(t, s, small)
	wantUsage(t, s, "alice", 99)
	// Once shrinking brings usage under the quota, growth that fits passes.
	put(t, s, obj("alice", "a", 1), obj("alice", "b", 45))
	wantUsage(t, s, "alice", 46)
}

func testConcurrentQuota(t *testing.T, s store) {
	ctx := t.Context()
	const quota = 1000
	addUser(t, s, "alice", quota)
	addUser(t, s, "bob", 0)

	const n = 50
	size := func(i int) int64 { return int64(40 + i) } // 3225 bytes in all
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			_, errs[i] = s.PutObjects(ctx, []meta.Put{{Object: obj("alice", fmt.Sprintf("k%02d", i), size(i))}})
		})
	}
	// Another user's writes at the same time must not disturb alice's count.
	for i := range 10 {
		wg.Go(func() {
			<-start
			_, err := s.PutObjects(ctx, []meta.Put{{Object: obj("bob", fmt.Sprintf("k%02d", i), 1000)}})
			if err != nil {
				t.Errorf("bob's put %d: %v", i, err)
			}
		})
	}
	close(start)
	wg.Wait()

	var stored []string
	var sum int64
	for i, err := range errs {
		switch {
		case err == nil:
			stored = append(stored, fmt.Sprintf("k%02d", i))
			sum += size(i)
		case errcode.Of(err) != errcode.QuotaExceeded:
			t.Errorf("put %d: err = %v (code %v), want nil or quota_exceeded", i, err, errcode.Of(err))
		}
	}
	if len(stored) == 0 || len(stored) == n {
		t.Fatalf("%d of %d puts succeeded, want some but not all", len(stored), n)
	}
	if sum > quota {
		t.Errorf("the successful puts hold %d bytes, beyond the quota of %d", sum, quota)
	}
	wantUsage(t, s, "alice", sum)
	wantUsage(t, s, "bob", 10*1000)

	page, err := s.ListObjects(ctx, "alice", meta.ListOptions{})
	ok(t, err, "ListObjects")
	var listed []string
	var listedSum int64
	for _, o := range page.Objects {
		listed = append(listed, o.Key)
		listedSum += o.Size
	}
	sort.Strings(stored)
	if fmt.Sprint(listed) != fmt.Sprint(stored) {
		t.Errorf("stored keys = %q, want the successful puts %q", listed, stored)
	}
	if listedSum != sum {
		t.Errorf("stored objects hold %d bytes, want %d", listedSum, sum)
	}
}
