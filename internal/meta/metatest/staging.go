package metatest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

var stagingTests = []test{
	{name: "ReserveAndCommit", fn: testStageReserveAndCommit},
	{name: "Unlimited", fn: testStageUnlimited},
	{name: "Grow", fn: testStageGrow},
	{name: "LeaseExpiry", fn: testStageLeaseExpiry},
	{name: "OverwriteCredit", fn: testStageOverwriteCredit},
	{name: "Uploads", fn: testStageUploads},
	{name: "ConcurrentNeverOversubscribes", fn: testStageConcurrent},
	{name: "Invalid", fn: testStageInvalid},
}

// live returns an expiry an hour from now.
func live() time.Time { return time.Now().Add(time.Hour) }

// stage stages key for owner, reserving between min and bytes, and
// returns the stored staging.
func stage(t *testing.T, s store, st meta.Staging, minBytes int64) meta.Staging {
	t.Helper()
	if st.ExpiresAt.IsZero() {
		st.ExpiresAt = live()
	}
	got, _, err := s.Stage(t.Context(), st, minBytes)
	ok(t, err, "Stage "+st.BlobKey)
	return got
}

// wantStageRefused fails unless staging bytes (all required) is refused
// with QuotaExceeded.
func wantStageRefused(t *testing.T, s store, owner string, bytes int64, what string) {
	t.Helper()
	_, _, err := s.Stage(t.Context(), meta.Staging{BlobKey: fmt.Sprintf("refused/%d", seq.Add(1)), OwnerID: owner, Bytes: bytes, ExpiresAt: live()}, bytes)
	wantCode(t, err, errcode.QuotaExceeded, what)
}

// wantRoom fails unless exactly room more bytes can be staged for owner
// (probing with a staging it then removes).
func wantRoom(t *testing.T, s store, owner string, room int64, what string) {
	t.Helper()
	k := fmt.Sprintf("probe/%d", seq.Add(1))
	got, _, err := s.Stage(t.Context(), meta.Staging{BlobKey: k, OwnerID: owner, Bytes: 1 << 40, ExpiresAt: live()}, 0)
	ok(t, err, what+": Stage probe")
	ok(t, s.Unstage(t.Context(), []string{k}), what+": Unstage probe")
	if got.Bytes != room {
		t.Errorf("%s: room = %d, want %d", what, got.Bytes, room)
	}
}

func staged(o meta.Object) meta.Put { return meta.Put{Object: o, Staged: true} }

func testStageReserveAndCommit(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 1000)

	a := obj("alice", "a", 600)
	got, limited, err := s.Stage(ctx, meta.Staging{BlobKey: a.BlobKey, OwnerID: "alice", Bytes: 600, ExpiresAt: live()}, 600)
	ok(t, err, "Stage 600 of 1000")
	if !limited || got.Bytes != 600 || got.Credit != 0 || got.BlobKey != a.BlobKey || got.OwnerID != "alice" {
		t.Errorf("Stage = %+v, limited %v; want 600 bytes reserved, limited", got, limited)
	}
	wantStageRefused(t, s, "alice", 401, "Stage 401 with 600 of 1000 reserved")
	wantRoom(t, s, "alice", 400, "after reserving 600")
	wantUsage(t, s, "alice", 0)

	// A write that is not staged may not take reserved room either.
	_, err = s.PutObjects(ctx, []meta.Put{{Object: obj("alice", "unstaged", 401)}})
	wantCode(t, err, errcode.QuotaExceeded, "PutObjects of 401 unstaged bytes with 600 of 1000 reserved")

	// Committing moves the bytes from reserved to used, at once.
	old, err := s.PutObjects(ctx, []meta.Put{staged(a)})
	ok(t, err, "PutObjects staged")
	if len(old) != 1 {
		t.Fatalf("PutObjects returned %d objects", len(old))
	}
	wantUsage(t, s, "alice", 600)
	wantRoom(t, s, "alice", 400, "after committing the 600")

	// Committed once: its staging is gone, so committing again fails.
	_, err = s.PutObjects(ctx, []meta.Put{staged(obj("alice", "again", 1))})
	wantCode(t, err, errcode.Unavailable, "PutObjects of a blob never staged")
	if e := errcode.As(err); e == nil || e.Detail["reason"] != "staging_lease_lost" {
		t.Errorf("PutObjects of a blob never staged: %v, want reason staging_lease_lost", err)
	}
	wantMissing(t, s, "alice", "again")

	// A failed commit releases nothing: the staging stays.
	b := obj("alice", "b", 300)
	stage(t, s, meta.Staging{BlobKey: b.BlobKey, OwnerID: "alice", Bytes: 300}, 300)
	_, err = s.PutObjects(ctx, []meta.Put{{Object: b, Staged: true, Cond: meta.Cond{IfMatch: "*"}}})
	wantCode(t, err, errcode.PreconditionFailed, "PutObjects staged with a failing Cond")
	wantRoom(t, s, "alice", 100, "after a failed commit")
	// Unstage releases it.
	ok(t, s.Unstage(ctx, []string{b.BlobKey, "unknown/key"}), "Unstage")
	wantRoom(t, s, "alice", 400, "after Unstage")
	wantReferenced(t, s, "after Unstage", []string{b.BlobKey}, map[string]bool{})

	// Several staged puts in one commit.
	c, d := obj("alice", "c", 250), obj("alice", "d", 150)
	stage(t, s, meta.Staging{BlobKey: c.BlobKey, OwnerID: "alice", Bytes: 250}, 250)
	stage(t, s, meta.Staging{BlobKey: d.BlobKey, OwnerID: "alice", Bytes: 150}, 150)
	wantRoom(t, s, "alice", 0, "with 1000 used or reserved")
	_, err = s.PutObjects(ctx, []meta.Put{staged(c), staged(d)})
	ok(t, err, "PutObjects of two staged objects")
	wantUsage(t, s, "alice", 1000)
	wantRoom(t, s, "alice", 0, "with 1000 used")

	// AlreadyExists for a key staged twice; NotFound for an unknown owner.
	e := obj("alice", "e", 1)
	_, err = s.DeleteObject(ctx, "alice", "c", meta.Cond{})
	ok(t, err, "DeleteObject")
	stage(t, s, meta.Staging{BlobKey: e.BlobKey, OwnerID: "alice", Bytes: 1}, 1)
	_, _, err = s.Stage(ctx, meta.Staging{BlobKey: e.BlobKey, OwnerID: "alice", Bytes: 1, ExpiresAt: live()}, 1)
	wantCode(t, err, errcode.AlreadyExists, "Stage of a staged key")
	_, _, err = s.Stage(ctx, meta.Staging{BlobKey: "x/1", OwnerID: "nobody", Bytes: 1, ExpiresAt: live()}, 1)
	wantCode(t, err, errcode.NotFound, "Stage for an unknown owner")
}

func testStageUnlimited(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "bob", 0)
	k := obj("bob", "k", 1<<40)
	got, limited, err := s.Stage(ctx, meta.Staging{BlobKey: k.BlobKey, OwnerID: "bob", Bytes: 1 << 40, ExpiresAt: live()}, 1)
	ok(t, err, "Stage without a quota")
	if limited || got.Bytes != 1<<40 {
		t.Errorf("Stage without a quota = %+v, limited %v; want all bytes, unlimited", got, limited)
	}
	wantReferenced(t, s, "a live staging", []string{k.BlobKey}, map[string]bool{k.BlobKey: true})
	_, err = s.PutObjects(ctx, []meta.Put{staged(k)})
	ok(t, err, "PutObjects staged")
	wantUsage(t, s, "bob", 1<<40)
	wantReferenced(t, s, "a committed staging", []string{k.BlobKey}, map[string]bool{k.BlobKey: true})
}

func testStageGrow(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 100)
	put1(t, s, obj("alice", "used", 10))
	got := stage(t, s, meta.Staging{BlobKey: "g/1", OwnerID: "alice", Bytes: 20}, 1)
	if got.Bytes != 20 {
		t.Errorf("Stage = %d bytes, want 20", got.Bytes)
	}
	for _, c := range []struct {
		min, max, want int64
	}{
		{30, 40, 40},     // room for all
		{5, 5, 40},       // never shrinks
		{50, 200, 90},    // as much as fits
		{90, 90, 90},     // exactly
		{91, 91, -1},     // refused
		{0, 1 << 40, 90}, // nothing more fits
	} {
		n, err := s.GrowStaging(ctx, "g/1", c.min, c.max)
		if c.want < 0 {
			wantCode(t, err, errcode.QuotaExceeded, fmt.Sprintf("GrowStaging(%d, %d)", c.min, c.max))
			continue
		}
		ok(t, err, fmt.Sprintf("GrowStaging(%d, %d)", c.min, c.max))
		if n != c.want {
			t.Errorf("GrowStaging(%d, %d) = %d, want %d", c.min, c.max, n, c.want)
		}
	}
	wantRoom(t, s, "alice", 0, "after growing to the quota")
	_, err := s.GrowStaging(ctx, "g/unknown", 1, 1)
	wantCode(t, err, errcode.Unavailable, "GrowStaging of an unknown key")
	ok(t, s.Unstage(ctx, []string{"g/1"}), "Unstage")
	_, err = s.GrowStaging(ctx, "g/1", 1, 1)
	wantCode(t, err, errcode.Unavailable, "GrowStaging after Unstage")
	wantRoom(t, s, "alice", 90, "after Unstage")
}

func testStageLeaseExpiry(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 100)
	short := time.Now().Add(300 * time.Millisecond)
	a, b := obj("alice", "a", 60), obj("alice", "b", 40)
	stage(t, s, meta.Staging{BlobKey: a.BlobKey, OwnerID: "alice", Bytes: 60, ExpiresAt: short}, 60)
	stage(t, s, meta.Staging{BlobKey: b.BlobKey, OwnerID: "alice", Bytes: 40, ExpiresAt: short}, 40)
	wantStageRefused(t, s, "alice", 1, "Stage with the quota reserved")
	lost, err := s.RenewStaging(ctx, []string{b.BlobKey}, live())
	ok(t, err, "RenewStaging")
	if len(lost) != 0 {
		t.Errorf("RenewStaging of a live staging lost %q", lost)
	}
	time.Sleep(time.Until(short) + 50*time.Millisecond)

	// a expired: it reserves nothing, is never revived, and cannot be
	// committed or grown; it protects its blob until it is deleted.
	wantRoom(t, s, "alice", 60, "after a's lease expired")
	wantReferenced(t, s, "after a's lease expired", []string{a.BlobKey, b.BlobKey}, map[string]bool{a.BlobKey: true, b.BlobKey: true})
	lost, err = s.RenewStaging(ctx, []string{a.BlobKey, b.BlobKey, "unknown/key"}, live())
	ok(t, err, "RenewStaging")
	if fmt.Sprint(lost) != fmt.Sprint([]string{a.BlobKey, "unknown/key"}) {
		t.Errorf("RenewStaging lost %q, want %q", lost, []string{a.BlobKey, "unknown/key"})
	}
	_, err = s.GrowStaging(ctx, a.BlobKey, 61, 61)
	wantCode(t, err, errcode.Unavailable, "GrowStaging of an expired staging")
	_, err = s.PutObjects(ctx, []meta.Put{staged(a)})
	wantCode(t, err, errcode.Unavailable, "PutObjects of an expired staging")
	wantMissing(t, s, "alice", "a")
	wantUsage(t, s, "alice", 0)
	// All or nothing: b is live, a is not.
	_, err = s.PutObjects(ctx, []meta.Put{staged(b), staged(a)})
	wantCode(t, err, errcode.Unavailable, "PutObjects of a live and an expired staging")
	wantMissing(t, s, "alice", "b")

	n, err := s.DeleteExpiredStaging(ctx, short.Add(-time.Second))
	ok(t, err, "DeleteExpiredStaging before a expired")
	if n != 0 {
		t.Errorf("DeleteExpiredStaging(before a expired) = %d, want 0", n)
	}
	n, err = s.DeleteExpiredStaging(ctx, time.Now())
	ok(t, err, "DeleteExpiredStaging")
	if n != 1 {
		t.Errorf("DeleteExpiredStaging = %d, want 1", n)
	}
	wantReferenced(t, s, "after a's staging was deleted", []string{a.BlobKey, b.BlobKey}, map[string]bool{b.BlobKey: true})
	_, err = s.PutObjects(ctx, []meta.Put{staged(a)})
	wantCode(t, err, errcode.Unavailable, "PutObjects of a deleted staging")
	_, err = s.PutObjects(ctx, []meta.Put{staged(b)})
	ok(t, err, "PutObjects of the renewed staging")
	wantUsage(t, s, "alice", 40)
}

func testStageOverwriteCredit(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 100)
	put1(t, s, obj("alice", "a", 60))
	// Replacing a by 90 bytes leaves 90 used: it fits, 60 credited.
	a2 := obj("alice", "a", 90)
	got := stage(t, s, meta.Staging{BlobKey: a2.BlobKey, OwnerID: "alice", Bytes: 90, Bucket: "alice", Key: "a"}, 90)
	if got.Credit != 60 {
		t.Errorf("Stage of a replacement: credit %d, want 60", got.Credit)
	}
	wantRoom(t, s, "alice", 10, "with a replacement of 60 by 90 in flight")
	// The credit goes to one staging of a key at a time.
	_, _, err := s.Stage(ctx, meta.Staging{BlobKey: "a/3", OwnerID: "alice", Bytes: 40, Bucket: "alice", Key: "a", ExpiresAt: live()}, 40)
	wantCode(t, err, errcode.QuotaExceeded, "a second replacement of the same key")
	// A replacement smaller than the object reserves nothing, and may
	// grow up to the object's size and what is free.
	put1(t, s, obj("alice", "b", 5))
	got = stage(t, s, meta.Staging{BlobKey: "b/2", OwnerID: "alice", Bytes: 3, Bucket: "alice", Key: "b"}, 3)
	if got.Credit != 5 {
		t.Errorf("Stage of a smaller replacement: credit %d, want 5", got.Credit)
	}
	wantRoom(t, s, "alice", 5, "with a replacement of 5 by 3 in flight")
	n, err := s.GrowStaging(ctx, "b/2", 4, 100)
	ok(t, err, "GrowStaging of the replacement")
	if n != 10 {
		t.Errorf("GrowStaging of a replacement of 5 with 5 free = %d, want 10", n)
	}
	ok(t, s.Unstage(ctx, []string{"b/2"}), "Unstage")
	_, err = s.PutObjects(ctx, []meta.Put{staged(a2)})
	ok(t, err, "PutObjects of the replacement")
	wantUsage(t, s, "alice", 95)
	wantRoom(t, s, "alice", 5, "after the replacement")
}

func testStageUploads(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 100)

	// A declared size is reserved from CreateUpload on.
	u := newUpload("alice", "big")
	u.Size, u.ExpiresAt = 80, live()
	ok(t, s.CreateUpload(ctx, u), "CreateUpload of 80")
	wantRoom(t, s, "alice", 20, "with an upload of 80 declared")
	v := newUpload("alice", "too-big")
	v.Size, v.ExpiresAt = 21, live()
	wantCode(t, s.CreateUpload(ctx, v), errcode.QuotaExceeded, "CreateUpload of 21 with 20 free")
	_, err := s.GetUpload(ctx, v.ID)
	wantCode(t, err, errcode.NotFound, "GetUpload of a refused upload")
	wantReferenced(t, s, "a declared size", []string{meta.DeclaredStagingKey(u.ID)}, map[string]bool{meta.DeclaredStagingKey(u.ID): true})

	// Its parts in flight count within the declared size, not on top.
	p1, p2 := part(u.ID, 1, 50), part(u.ID, 2, 40)
	stage(t, s, meta.Staging{BlobKey: p1.BlobKey, OwnerID: "alice", UploadID: u.ID, Bytes: 50}, 50)
	wantRoom(t, s, "alice", 20, "with part 1 of the declared 80 in flight")
	stage(t, s, meta.Staging{BlobKey: p2.BlobKey, OwnerID: "alice", UploadID: u.ID, Bytes: 40}, 40)
	wantRoom(t, s, "alice", 10, "with parts of 90 of a declared 80 in flight")
	_, _, err = s.Stage(ctx, meta.Staging{BlobKey: "p/3", OwnerID: "alice", UploadID: u.ID, Bytes: 11, ExpiresAt: live()}, 11)
	wantCode(t, err, errcode.QuotaExceeded, "a third part past the quota")

	// A recorded part is used; the declared size still due shrinks.
	p1.Staged = true
	_, err = s.PutPart(ctx, p1)
	ok(t, err, "PutPart staged")
	wantUsage(t, s, "alice", 50)
	wantRoom(t, s, "alice", 10, "with part 1 recorded and part 2 in flight") // 50 + max(30, 40)
	p2.Staged = true
	_, err = s.PutPart(ctx, p2)
	ok(t, err, "PutPart staged")
	wantUsage(t, s, "alice", 90)
	wantRoom(t, s, "alice", 10, "with both parts recorded")
	parts, _, err := s.ListParts(ctx, u.ID, 0, 0)
	ok(t, err, "ListParts")
	for _, p := range parts {
		if p.Staged {
			t.Errorf("ListParts returned part %d with Staged set", p.Number)
		}
	}
	// PutPart of a blob never staged fails and records nothing.
	p3 := part(u.ID, 3, 1)
	p3.Staged = true
	_, err = s.PutPart(ctx, p3)
	wantCode(t, err, errcode.Unavailable, "PutPart of a blob never staged")
	wantUsage(t, s, "alice", 90)

	// Aborting releases the parts and what is left of the declared size.
	ok(t, s.AbortUpload(ctx, u.ID), "AbortUpload")
	wantUsage(t, s, "alice", 0)
	wantRoom(t, s, "alice", 100, "after AbortUpload")

	// Completing too; an upload without a declared size reserves nothing
	// itself.
	w := newUpload("alice", "w")
	w.Size, w.ExpiresAt = 30, live()
	ok(t, s.CreateUpload(ctx, w), "CreateUpload of 30")
	pw := part(w.ID, 1, 10)
	stage(t, s, meta.Staging{BlobKey: pw.BlobKey, OwnerID: "alice", UploadID: w.ID, Bytes: 10}, 10)
	pw.Staged = true
	_, err = s.PutPart(ctx, pw)
	ok(t, err, "PutPart")
	wantRoom(t, s, "alice", 70, "with 10 of a declared 30 recorded")
	_, err = s.CompleteUpload(ctx, w.ID, meta.Object{ETag: "x-1"}, []meta.CompletePart{{Number: 1, ETag: pw.ETag}}, 0, meta.Cond{})
	ok(t, err, "CompleteUpload")
	wantUsage(t, s, "alice", 10)
	wantRoom(t, s, "alice", 90, "after CompleteUpload")
	x := addUpload(t, s, "alice", "x")
	_ = x
	wantRoom(t, s, "alice", 90, "with an upload of no declared size")

	// DeleteBucket releases the declared sizes of its uploads.
	addBucket(t, s, "alice-2", "alice")
	y := newUpload("alice-2", "y")
	y.Size, y.ExpiresAt = 50, live()
	ok(t, s.CreateUpload(ctx, y), "CreateUpload of 50")
	wantRoom(t, s, "alice", 40, "with 50 declared")
	ok(t, s.DeleteBucket(ctx, "alice-2"), "DeleteBucket")
	wantRoom(t, s, "alice", 90, "after DeleteBucket")
}

// testStageConcurrent: concurrent reservations (some committed at once,
// some left in flight) never oversubscribe the quota, and one that is
// refused did not fit.
func testStageConcurrent(t *testing.T, s store) {
	ctx := t.Context()
	const quota, n = 1000, 50
	addUser(t, s, "alice", quota)
	addUser(t, s, "bob", 0)
	size := func(i int) int64 { return int64(40 + i) } // 3225 in all
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			o := obj("alice", fmt.Sprintf("k%02d", i), size(i))
			if _, _, errs[i] = s.Stage(ctx, meta.Staging{BlobKey: o.BlobKey, OwnerID: "alice", Bytes: size(i), ExpiresAt: live()}, size(i)); errs[i] != nil {
				return
			}
			if i%2 == 0 {
				if _, err := s.PutObjects(ctx, []meta.Put{staged(o)}); err != nil {
					t.Errorf("commit %d: %v", i, err)
				}
			}
		})
	}
	for i := range 10 {
		wg.Go(func() {
			<-start
			o := obj("bob", fmt.Sprintf("k%02d", i), 1000)
			if _, _, err := s.Stage(ctx, meta.Staging{BlobKey: o.BlobKey, OwnerID: "bob", Bytes: 1000, ExpiresAt: live()}, 1000); err != nil {
				t.Errorf("bob's stage %d: %v", i, err)
			}
		})
	}
	close(start)
	wg.Wait()

	var granted, committed int64
	for i, err := range errs {
		switch {
		case err == nil:
			granted += size(i)
			if i%2 == 0 {
				committed += size(i)
			}
		case errcode.Of(err) != errcode.QuotaExceeded:
			t.Errorf("stage %d: err = %v, want nil or quota_exceeded", i, err)
		}
	}
	if granted > quota {
		t.Fatalf("%d bytes reserved or used under a quota of %d", granted, quota)
	}
	for i, err := range errs {
		if err != nil && size(i) <= quota-granted {
			t.Errorf("stage %d of %d bytes refused, yet %d bytes are free", i, size(i), quota-granted)
		}
	}
	wantUsage(t, s, "alice", committed)
	wantRoom(t, s, "alice", quota-granted, "after the concurrent stagings")
}

func testStageInvalid(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 100)
	for _, c := range []struct {
		name string
		st   meta.Staging
		min  int64
	}{
		{"no key", meta.Staging{OwnerID: "alice", Bytes: 1}, 1},
		{"no owner", meta.Staging{BlobKey: "k", Bytes: 1}, 1},
		{"declared", meta.Staging{BlobKey: "k", OwnerID: "alice", Declared: true, Bytes: 1}, 1},
		{"min over bytes", meta.Staging{BlobKey: "k", OwnerID: "alice", Bytes: 1}, 2},
		{"negative", meta.Staging{BlobKey: "k", OwnerID: "alice", Bytes: -1}, -1},
		{"part replacing an object", meta.Staging{BlobKey: "k", OwnerID: "alice", UploadID: "u", Bucket: "alice", Key: "a", Bytes: 1}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.st.ExpiresAt = live()
			_, _, err := s.Stage(ctx, c.st, c.min)
			wantCode(t, err, errcode.InvalidArgument, "Stage")
		})
	}
	_, err := s.PutObjects(ctx, []meta.Put{{Object: meta.Object{Bucket: "alice", Key: "inline", Inline: []byte{}}, Staged: true}})
	wantCode(t, err, errcode.InvalidArgument, "PutObjects of a staged object without a blob key")
	wantRoom(t, s, "alice", 100, "after invalid stagings")
}
