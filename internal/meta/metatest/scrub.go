package metatest

import (
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

var scrubTests = []test{
	{name: "Lease", fn: testScrubLease},
	{name: "Findings", fn: testScrubFindings},
	{name: "Versions", fn: testScrubVersions},
}

// testScrubLease: the scrub's run is leased to one owner at a time, and
// its cursor, counts and last summary survive a lapsed lease.
func testScrubLease(t *testing.T, s store) {
	ctx := t.Context()
	if r, err := s.GetScrubRun(ctx); err != nil || r != (meta.ScrubRun{}) {
		t.Fatalf("GetScrubRun before any run = %+v, %v; want none", r, err)
	}
	now := time.Now().Truncate(time.Millisecond).UTC()
	r, got, err := s.AcquireScrubRun(ctx, "n1", now.Add(time.Minute), now)
	ok(t, err, "AcquireScrubRun")
	if !got || r.Cursor != "" || r.LeaseOwner != "n1" {
		t.Fatalf("first AcquireScrubRun = %+v, %v; want a fresh run held by n1", r, got)
	}
	if _, got, err := s.AcquireScrubRun(ctx, "n2", now.Add(time.Minute), now); err != nil || got {
		t.Errorf("AcquireScrubRun by n2 while n1 holds it = %v, %v; want refused", got, err)
	}
	r.Cursor, r.Progress, r.Last, r.StartedAt = `{"after":{"b":"x"}}`, `{"objects":3}`, `{"objects":9}`, now
	ok(t, s.SaveScrubRun(ctx, r, "n1", now.Add(time.Minute), now), "SaveScrubRun")
	wantCode(t, s.SaveScrubRun(ctx, r, "n2", now.Add(time.Minute), now), errcode.Conflict, "SaveScrubRun by n2")
	later := now.Add(2 * time.Minute)
	r2, got, err := s.AcquireScrubRun(ctx, "n2", later.Add(time.Minute), later)
	ok(t, err, "AcquireScrubRun after the lease lapsed")
	if !got || r2.Cursor != r.Cursor || r2.Progress != r.Progress || r2.Last != r.Last || !r2.StartedAt.Equal(now) || r2.LeaseOwner != "n2" {
		t.Errorf("AcquireScrubRun after the lease lapsed = %+v, %v; want n2 with n1's cursor", r2, got)
	}
	wantCode(t, s.SaveScrubRun(ctx, r, "n1", later.Add(time.Minute), later), errcode.Conflict, "SaveScrubRun by n1 after losing the lease")
	if cur, err := s.GetScrubRun(ctx); err != nil || cur.LeaseOwner != "n2" || cur.Cursor != r.Cursor {
		t.Errorf("GetScrubRun = %+v, %v", cur, err)
	}
}

// testScrubFindings: findings are recorded once per blob (the latest
// wins), listed by blob key in pages, and deleted.
func testScrubFindings(t *testing.T, s store) {
	ctx := t.Context()
	at := time.Now().Truncate(time.Millisecond).UTC()
	key := "caf\xe9/\x00weird" // keys need not be UTF-8
	for _, f := range []meta.ScrubFinding{
		{BlobKey: "b2", Bucket: "alice", Key: key, VersionID: "null", Problem: meta.ScrubMissing, Detail: "gone", FoundAt: at},
		{BlobKey: "b1", Bucket: "alice", Key: "k", VersionID: "null", Problem: meta.ScrubUnreadable, Detail: "EIO", FoundAt: at},
		{BlobKey: "b1", Bucket: "alice", Key: "k", VersionID: "null", Problem: meta.ScrubCorrupt, Detail: "sha256", FoundAt: at},
	} {
		ok(t, s.RecordScrubFinding(ctx, f), "RecordScrubFinding")
	}
	wantCode(t, s.RecordScrubFinding(ctx, meta.ScrubFinding{Problem: meta.ScrubMissing}), errcode.InvalidArgument, "RecordScrubFinding without a blob key")
	fs, err := s.ListScrubFindings(ctx, "", 10)
	ok(t, err, "ListScrubFindings")
	if len(fs) != 2 || fs[0].BlobKey != "b1" || fs[0].Problem != meta.ScrubCorrupt || fs[1].Key != key || !fs[1].FoundAt.Equal(at) {
		t.Fatalf("ListScrubFindings = %+v; want b1 corrupt, then b2 with its key", fs)
	}
	if fs, err := s.ListScrubFindings(ctx, "b1", 10); err != nil || len(fs) != 1 || fs[0].BlobKey != "b2" {
		t.Errorf("ListScrubFindings after b1 = %+v, %v", fs, err)
	}
	ok(t, s.DeleteScrubFinding(ctx, "b1"), "DeleteScrubFinding")
	ok(t, s.DeleteScrubFinding(ctx, "b1"), "DeleteScrubFinding again")
	if fs, err := s.ListScrubFindings(ctx, "", 10); err != nil || len(fs) != 1 {
		t.Errorf("ListScrubFindings after a delete = %+v, %v", fs, err)
	}
}

// testScrubVersions: every version of every bucket, in (bucket, key,
// version ID) order, without delete markers, in pages.
func testScrubVersions(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	addBucket(t, s, "vers", "alice")
	ok(t, s.SetBucketVersioning(ctx, "vers", meta.VersioningEnabled), "SetBucketVersioning")
	putVersion(t, s, obj("alice", "b", 1))
	putVersion(t, s, obj("alice", "a", 1))
	putVersion(t, s, obj("vers", "k", 1))
	putVersion(t, s, obj("vers", "k", 2))
	_, err := s.DeleteObject(ctx, "vers", "k", meta.Cond{}) // a delete marker
	ok(t, err, "DeleteObject")
	var all []meta.VersionRef
	var after *meta.VersionRef
	for {
		page, err := s.ListScrubVersions(ctx, after, 2)
		ok(t, err, "ListScrubVersions")
		all = append(all, page...)
		if len(page) < 2 {
			break
		}
		after = &page[len(page)-1]
	}
	if len(all) != 4 || all[0].Key != "a" || all[1].Key != "b" || all[2].Bucket != "vers" || all[3].Bucket != "vers" ||
		all[2].VersionID >= all[3].VersionID {
		t.Errorf("ListScrubVersions = %+v; want alice/a, alice/b and vers/k's two versions in order", all)
	}
}
