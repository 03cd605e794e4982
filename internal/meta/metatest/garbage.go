package metatest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

var garbageTests = []test{
	{name: "ListAndDelete", fn: testGarbageQueue},
	{name: "ReferencedBlobs", fn: testReferencedBlobs},
	{name: "ClaimRechecks", fn: testClaimGarbage},
	{name: "BackupLease", fn: testBackupLease},
}

// testBackupLease: while a backup lease is live, ClaimGarbage claims no
// blob queued at or after its since, nor one queued before it whose
// stale entry (a row pointed at it again) was followed by a new one after
// it; it claims them once the lease lapses (judged at the claimer's now)
// or ends. Renewing a lapsed or unknown lease is ErrJobLeaseLost;
// FinishBackup ends the lease and records the time LastBackup returns.
func testBackupLease(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	last, err := s.LastBackup(ctx)
	ok(t, err, "LastBackup")
	if !last.IsZero() {
		t.Fatalf("LastBackup of a new store = %v, want the zero time", last)
	}
	a := put1(t, s, obj("alice", "a", 1))
	b := put1(t, s, obj("alice", "b", 1))
	c := put1(t, s, obj("alice", "c", 1))
	for _, k := range []string{"a", "c"} {
		_, err := s.DeleteObject(ctx, "alice", k, meta.Cond{})
		ok(t, err, "DeleteObject")
	}
	c2 := obj("alice", "c2", 1)
	c2.BlobKey = c.BlobKey
	put(t, s, c2) // c's queue entry is stale now: c2 points at its blob

	since := time.Now()
	until := since.Add(time.Hour)
	ok(t, s.AcquireBackupLease(ctx, "b1", since, until), "AcquireBackupLease")
	if err := s.AcquireBackupLease(ctx, "b1", since, until); errcode.Of(err) != errcode.Conflict {
		t.Fatalf("AcquireBackupLease of a taken id = %v, want Conflict", err)
	}
	for _, k := range []string{"b", "c2"} { // queued while the lease is live
		_, err := s.DeleteObject(ctx, "alice", k, meta.Cond{})
		ok(t, err, "DeleteObject")
	}
	later := time.Now().Add(time.Hour)
	gs, err := s.ClaimGarbage(ctx, later, time.Now(), 10)
	ok(t, err, "ClaimGarbage under the lease")
	if got, want := blobKeys(gs), []string{a.BlobKey}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("ClaimGarbage under a live lease = %q, want %q (b queued after its start, c queued again after it)", got, want)
	}
	wantGarbageSet(t, s, a.BlobKey, b.BlobKey, c.BlobKey, c.BlobKey) // the held entries stay, even c's stale one

	// The lease lapses at until, judged at the claimer's now.
	gs, err = s.ClaimGarbage(ctx, later, until.Add(time.Second), 10)
	ok(t, err, "ClaimGarbage after the lease lapsed")
	all := slices.Sorted(slices.Values([]string{a.BlobKey, b.BlobKey, c.BlobKey, c.BlobKey}))
	if got := slices.Sorted(slices.Values(blobKeys(gs))); !slices.Equal(got, all) {
		t.Fatalf("ClaimGarbage after the lease lapsed = %q, want %q (c's two entries)", got, all)
	}
	if err := s.RenewBackupLease(ctx, "b1", until.Add(time.Hour), until.Add(time.Second)); errcode.Of(err) != errcode.Conflict {
		t.Errorf("RenewBackupLease of a lapsed lease = %v, want ErrJobLeaseLost", err)
	}
	if err := s.RenewBackupLease(ctx, "nope", until, time.Now()); errcode.Of(err) != errcode.Conflict {
		t.Errorf("RenewBackupLease of an unknown lease = %v, want ErrJobLeaseLost", err)
	}
	ok(t, s.RenewBackupLease(ctx, "b1", until.Add(time.Hour), time.Now()), "RenewBackupLease")
	gs, err = s.ClaimGarbage(ctx, later, until.Add(time.Second), 10)
	ok(t, err, "ClaimGarbage")
	if len(gs) != 1 {
		t.Errorf("ClaimGarbage after the lease was renewed past now = %q, want a only", blobKeys(gs))
	}

	// Released: everything is claimable at once.
	ok(t, s.ReleaseBackupLease(ctx, "b1"), "ReleaseBackupLease")
	ok(t, s.ReleaseBackupLease(ctx, "b1"), "ReleaseBackupLease again")
	gs, err = s.ClaimGarbage(ctx, later, time.Now(), 10)
	ok(t, err, "ClaimGarbage after the release")
	if got := slices.Sorted(slices.Values(blobKeys(gs))); !slices.Equal(got, all) {
		t.Errorf("ClaimGarbage after the release = %q, want %q", got, all)
	}

	// FinishBackup ends the lease and records the time.
	at := time.Now().Add(-time.Minute)
	ok(t, s.AcquireBackupLease(ctx, "b2", time.Now(), later), "AcquireBackupLease")
	ok(t, s.FinishBackup(ctx, "b2", at), "FinishBackup")
	last, err = s.LastBackup(ctx)
	ok(t, err, "LastBackup")
	if !last.Equal(meta.StoredTime(at)) {
		t.Errorf("LastBackup = %v, want %v", last, meta.StoredTime(at))
	}
	ok(t, s.AcquireBackupLease(ctx, "b2", time.Now(), later), "AcquireBackupLease after FinishBackup (the lease ended)")
}

// testClaimGarbage: a queued blob that a row points at again (a
// metadata-only put of a queued blob, as a copy sharing blobs would make)
// is not claimed, and its stale queue entry goes; it is queued again when
// its last row goes.
func testClaimGarbage(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	a := put1(t, s, obj("alice", "a", 1))
	gone := put1(t, s, obj("alice", "gone", 1))
	_, err := s.DeleteObject(ctx, "alice", "a", meta.Cond{}) // enqueues a's blob
	ok(t, err, "DeleteObject")
	_, err = s.DeleteObject(ctx, "alice", "gone", meta.Cond{})
	ok(t, err, "DeleteObject")
	wantGarbage(t, s, a.BlobKey, gone.BlobKey)

	b := obj("alice", "b", 1)
	b.BlobKey = a.BlobKey
	put(t, s, b) // points at the queued blob again
	later := time.Now().Add(time.Hour)
	gs, err := s.ClaimGarbage(ctx, later, time.Now(), 10)
	ok(t, err, "ClaimGarbage")
	if got, want := blobKeys(gs), []string{gone.BlobKey}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("ClaimGarbage = %q, want %q (the re-referenced blob left out)", got, want)
	}
	if gs[0].ID == 0 || gs[0].CreatedAt.IsZero() {
		t.Errorf("ClaimGarbage entry %+v lacks its ID or CreatedAt", gs[0])
	}
	wantGarbage(t, s, gone.BlobKey)
	gs, err = s.ClaimGarbage(ctx, time.Now().Add(-time.Hour), time.Now(), 10)
	ok(t, err, "ClaimGarbage before everything")
	if len(gs) != 0 {
		t.Errorf("ClaimGarbage(before any enqueue) = %q, want none", blobKeys(gs))
	}

	// A live staging counts as a reference too.
	st := put1(t, s, obj("alice", "st", 1))
	_, err = s.DeleteObject(ctx, "alice", "st", meta.Cond{})
	ok(t, err, "DeleteObject")
	_, _, err = s.Stage(ctx, meta.Staging{BlobKey: st.BlobKey, OwnerID: "alice", Bytes: 1, ExpiresAt: time.Now().Add(time.Hour)}, 1)
	ok(t, err, "Stage")
	gs, err = s.ClaimGarbage(ctx, later, time.Now(), 10)
	ok(t, err, "ClaimGarbage")
	if got, want := blobKeys(gs), []string{gone.BlobKey}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("ClaimGarbage with a staged blob queued = %q, want %q", got, want)
	}

	_, err = s.DeleteObject(ctx, "alice", "b", meta.Cond{})
	ok(t, err, "DeleteObject of the last row")
	gs, err = s.ClaimGarbage(ctx, later, time.Now(), 10)
	ok(t, err, "ClaimGarbage")
	if got, want := blobKeys(gs), []string{gone.BlobKey, a.BlobKey}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("ClaimGarbage after the last row went = %q, want %q", got, want)
	}
}

func testGarbageQueue(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	start := time.Now()

	gs, err := s.ListGarbage(ctx, start.Add(time.Hour), 10)
	ok(t, err, "ListGarbage of an empty queue")
	if len(gs) != 0 {
		t.Fatalf("ListGarbage of an empty queue = %+v", gs)
	}

	a1 := put1(t, s, obj("alice", "a", 1))
	put(t, s, obj("alice", "a", 2)) // enqueues a1
	time.Sleep(20 * time.Millisecond)
	mid := time.Now()
	time.Sleep(20 * time.Millisecond)
	b1 := put1(t, s, obj("alice", "b", 1))
	put(t, s, obj("alice", "b", 2)) // enqueues b1
	c := put1(t, s, obj("alice", "c", 1))
	_, err = s.DeleteObject(ctx, "alice", "c", meta.Cond{}) // enqueues c
	ok(t, err, "DeleteObject")

	later := time.Now().Add(time.Hour)
	all, err := s.ListGarbage(ctx, later, 10)
	ok(t, err, "ListGarbage")
	if got, want := blobKeys(all), []string{a1.BlobKey, b1.BlobKey, c.BlobKey}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("ListGarbage = %q, want %q (oldest first)", got, want)
	}
	ids := map[int64]bool{}
	for i, g := range all {
		if ids[g.ID] {
			t.Errorf("garbage id %d appears twice", g.ID)
		}
		ids[g.ID] = true
		if g.CreatedAt.IsZero() {
			t.Errorf("garbage %q has no CreatedAt", g.BlobKey)
		}
		if i > 0 && g.CreatedAt.Before(all[i-1].CreatedAt) {
			t.Errorf("garbage %q (%v) listed after the younger %q (%v)", g.BlobKey, g.CreatedAt, all[i-1].BlobKey, all[i-1].CreatedAt)
		}
	}

	gs, err = s.ListGarbage(ctx, mid, 10)
	ok(t, err, "ListGarbage before mid")
	if got, want := blobKeys(gs), []string{a1.BlobKey}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("ListGarbage(before the second replace) = %q, want %q", got, want)
	}
	gs, err = s.ListGarbage(ctx, later, 2)
	ok(t, err, "ListGarbage with a limit")
	if got, want := blobKeys(gs), []string{a1.BlobKey, b1.BlobKey}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("ListGarbage(limit 2) = %q, want %q", got, want)
	}
	gs, err = s.ListGarbage(ctx, start.Add(-time.Hour), 10)
	ok(t, err, "ListGarbage before everything")
	if len(gs) != 0 {
		t.Errorf("ListGarbage(before any enqueue) = %q, want none", blobKeys(gs))
	}

	ok(t, s.DeleteGarbage(ctx, []int64{all[0].ID, all[2].ID}), "DeleteGarbage")
	wantGarbage(t, s, b1.BlobKey)
	ok(t, s.DeleteGarbage(ctx, []int64{all[0].ID}), "DeleteGarbage of a deleted id")
	ok(t, s.DeleteGarbage(ctx, nil), "DeleteGarbage of nothing")
	wantGarbage(t, s, b1.BlobKey)
	ok(t, s.DeleteGarbage(ctx, []int64{all[1].ID}), "DeleteGarbage of the last entry")
	wantGarbage(t, s)
}

func blobKeys(gs []meta.Garbage) []string {
	keys := make([]string, len(gs))
	for i, g := range gs {
		keys[i] = g.BlobKey
	}
	return keys
}

func testReferencedBlobs(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	addUser(t, s, "bob", 0)
	a := put1(t, s, obj("alice", "a", 1))
	old := put1(t, s, obj("bob", "b", 1))
	cur := put1(t, s, obj("bob", "b", 2)) // old is now garbage

	check := func(what string, want map[string]bool) {
		t.Helper()
		keys := []string{a.BlobKey, old.BlobKey, cur.BlobKey, "blob/unknown", ""}
		got, err := s.ReferencedBlobs(ctx, keys)
		ok(t, err, "ReferencedBlobs")
		for _, k := range keys {
			if got[k] != want[k] {
				t.Errorf("%s: ReferencedBlobs[%q] = %v, want %v", what, k, got[k], want[k])
			}
		}
	}
	check("objects and garbage", map[string]bool{a.BlobKey: true, old.BlobKey: true, cur.BlobKey: true})

	gs, err := s.ListGarbage(ctx, time.Now().Add(time.Hour), 10)
	ok(t, err, "ListGarbage")
	ok(t, s.DeleteGarbage(ctx, []int64{gs[0].ID}), "DeleteGarbage")
	check("after DeleteGarbage", map[string]bool{a.BlobKey: true, cur.BlobKey: true})

	_, err = s.DeleteObject(ctx, "alice", "a", meta.Cond{})
	ok(t, err, "DeleteObject")
	check("a deleted object's blob waits in the queue", map[string]bool{a.BlobKey: true, cur.BlobKey: true})

	got, err := s.ReferencedBlobs(ctx, nil)
	ok(t, err, "ReferencedBlobs of no keys")
	if len(got) != 0 {
		t.Errorf("ReferencedBlobs(nil) = %v, want empty", got)
	}

	// Many keys at once.
	many := make([]string, 0, 2500)
	for i := range 2500 {
		many = append(many, fmt.Sprintf("blob/none-%d", i))
	}
	many = append(many, cur.BlobKey)
	got, err = s.ReferencedBlobs(ctx, many)
	ok(t, err, "ReferencedBlobs of many keys")
	n := 0
	for _, v := range got {
		if v {
			n++
		}
	}
	if n != 1 || !got[cur.BlobKey] {
		t.Errorf("ReferencedBlobs of 2501 keys reports %d referenced (want 1: %q)", n, cur.BlobKey)
	}
}

var storeTests = []test{
	{name: "Ping", fn: func(t *testing.T, s store) { ok(t, s.Ping(t.Context()), "Ping") }},
	{name: "Close", raw: testClose},
}

func testClose(t *testing.T, newStore func(t *testing.T) store) {
	s := newStore(t)
	addUser(t, s, "alice", 0)
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Ping(t.Context()); err == nil {
		t.Error("Ping after Close succeeded")
	}
	if _, err := s.PutObjects(t.Context(), []meta.Put{{Object: obj("alice", "k", 1)}}); err == nil {
		t.Error("PutObjects after Close succeeded")
	}
	if _, err := s.GetUser(t.Context(), "alice"); err == nil {
		t.Error("GetUser after Close succeeded")
	}
}
