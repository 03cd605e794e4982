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

var shareTests = []test{
	{name: "RoundTrip", fn: testShareRoundTrip},
	{name: "CreateRejected", fn: testShareCreateRejected},
	{name: "UseAndLimit", fn: testShareUseAndLimit},
	{name: "RevokeAndExpire", fn: testShareRevokeAndExpire},
	{name: "ConcurrentLastDownload", fn: testShareConcurrentLastDownload},
	{name: "GoWithOwner", fn: testShareGoWithOwner},
	{name: "DownloadAndResume", fn: testShareDownloadAndResume},
	{name: "ResumeRefusals", fn: testShareResumeRefusals},
	{name: "ConcurrentResumes", fn: testShareConcurrentResumes},
	{name: "DeleteAndGrants", fn: testShareDeleteAndGrants},
	{name: "DeleteExpired", fn: testShareDeleteExpired},
}

// testShareDeleteExpired: DeleteExpiredShares removes every share that
// expired before t — active until then, revoked, used up or a grant —
// with the downloads recorded for it, and keeps every share that expires
// at t or later, revoked and used-up ones included, whoever owns it.
func testShareDeleteExpired(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	addUser(t, s, "bob", 0)
	cut := baseTime.Add(10 * time.Hour)
	now := baseTime.Add(time.Minute)
	revoke := func(sh meta.Share) { ok(t, s.RevokeShare(ctx, sh.ID), "RevokeShare") }
	useUp := func(sh meta.Share) {
		ok(t, s.StartShareDownload(ctx, download(sh.ID, 0, now), now), "StartShareDownload")
	}
	mk := func(owner string, grant bool, expires time.Duration, then func(meta.Share)) meta.Share {
		sh := newShare(owner, 1)
		sh.Grant, sh.ExpiresAt = grant, baseTime.Add(expires)
		ok(t, s.CreateShare(ctx, sh), "CreateShare")
		if then != nil {
			then(sh)
		}
		return sh
	}
	dead := []meta.Share{
		mk("alice", false, 9*time.Hour, nil),
		mk("alice", false, time.Hour, revoke),
		mk("alice", false, 2*time.Hour, useUp), // with a download recorded
		mk("bob", false, -time.Hour, nil),
		mk("alice", true, time.Hour, nil),
	}
	live := []meta.Share{
		mk("alice", false, 10*time.Hour, nil), // expires exactly at the cut
		mk("alice", false, 11*time.Hour, revoke),
		mk("alice", false, 48*time.Hour, useUp),
		mk("bob", true, 48*time.Hour, nil),
	}
	n, err := s.DeleteExpiredShares(ctx, cut)
	ok(t, err, "DeleteExpiredShares")
	if got, want := n, len(dead); got != want {
		t.Errorf("DeleteExpiredShares = %d, want %d", got, want)
	}
	for _, sh := range dead {
		_, err := s.GetShare(ctx, sh.ID)
		wantCode(t, err, errcode.NotFound, "a share that expired before the cut")
		_, err = s.GetShareByHash(ctx, sh.Hash)
		wantCode(t, err, errcode.NotFound, "the token of a share that expired before the cut")
	}
	for _, sh := range live {
		_, err := s.GetShare(ctx, sh.ID)
		ok(t, err, "a share that expires at the cut or later")
	}
	// The used-up share's download went with it: a share made again under
	// its ID (a new row) has no download to resume.
	again := dead[2]
	again.ExpiresAt = baseTime.Add(48 * time.Hour)
	ok(t, s.CreateShare(ctx, again), "CreateShare under a purged share's ID")
	if resumed, err := s.ResumeShareDownload(ctx, download(again.ID, 100, now), 3, now); err != nil || resumed {
		t.Errorf("resuming a purged share's download: %v, %v; want false", resumed, err)
	}
	// The live used-up share's download is still resumable.
	if resumed, err := s.ResumeShareDownload(ctx, download(live[2].ID, 100, now), 3, now); err != nil || !resumed {
		t.Errorf("resuming a kept share's download: %v, %v; want true", resumed, err)
	}
	n, err = s.DeleteExpiredShares(ctx, cut)
	ok(t, err, "DeleteExpiredShares again")
	if n != 0 {
		t.Errorf("second DeleteExpiredShares = %d, want 0", n)
	}
}

// testShareDeleteAndGrants: DeleteShare removes a share (its token is
// unknown after); DeleteSpentGrants removes exactly the owner's grants
// that are revoked, expired or used up, and keeps its active grants, its
// links that are not grants whatever their state, and others' grants.
func testShareDeleteAndGrants(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	addUser(t, s, "bob", 0)
	now := baseTime.Add(time.Hour)
	mk := func(owner string, grant bool, mod func(*meta.Share)) meta.Share {
		sh := newShare(owner, 1)
		sh.Grant = grant
		if mod != nil {
			mod(&sh)
		}
		ok(t, s.CreateShare(ctx, sh), "CreateShare")
		return sh
	}
	expired := func(sh *meta.Share) { sh.ExpiresAt = baseTime.Add(time.Minute) }
	activeGrant := mk("alice", true, nil)
	usedGrant := mk("alice", true, nil)
	ok(t, s.UseShare(ctx, usedGrant.ID, true, now), "UseShare")
	expiredGrant := mk("alice", true, expired)
	revokedGrant := mk("alice", true, nil)
	ok(t, s.RevokeShare(ctx, revokedGrant.ID), "RevokeShare")
	expiredLink := mk("alice", false, expired)
	bobsGrant := mk("bob", true, expired)

	got, err := s.GetShare(ctx, activeGrant.ID)
	ok(t, err, "GetShare")
	if !got.Grant {
		t.Errorf("a grant reads back with Grant false")
	}
	if got, err := s.GetShare(ctx, expiredLink.ID); err != nil || got.Grant {
		t.Errorf("a link reads back as %+v, %v; want Grant false", got, err)
	}
	n, err := s.DeleteSpentGrants(ctx, "alice", now)
	ok(t, err, "DeleteSpentGrants")
	if n != 3 {
		t.Errorf("DeleteSpentGrants removed %d, want 3", n)
	}
	for _, sh := range []meta.Share{usedGrant, expiredGrant, revokedGrant} {
		_, err := s.GetShareByHash(ctx, sh.Hash)
		wantCode(t, err, errcode.NotFound, "a spent grant after DeleteSpentGrants")
	}
	for _, sh := range []meta.Share{activeGrant, expiredLink, bobsGrant} {
		_, err := s.GetShare(ctx, sh.ID)
		ok(t, err, "a share DeleteSpentGrants must keep")
	}
	ok(t, s.DeleteShare(ctx, expiredLink.ID), "DeleteShare")
	_, err = s.GetShareByHash(ctx, expiredLink.Hash)
	wantCode(t, err, errcode.NotFound, "GetShareByHash after DeleteShare")
	wantCode(t, s.DeleteShare(ctx, expiredLink.ID), errcode.NotFound, "DeleteShare twice")
	list, err := s.ListShares(ctx, "alice")
	ok(t, err, "ListShares")
	if len(list) != 1 || list[0].ID != activeGrant.ID {
		t.Errorf("ListShares after the deletes = %v, want the active grant only", list)
	}
}

func newShare(owner string, max int64) meta.Share {
	n := seq.Add(1)
	return meta.Share{
		ID: fmt.Sprintf("sh%d", n), Hash: fmt.Sprintf("%064x", n), OwnerID: owner, Bucket: owner,
		Key: "docs/", Folder: true, Password: "$argon2id$x", Note: "for you", AllowUpload: true,
		MaxDownloads: max, CreatedAt: baseTime, ExpiresAt: baseTime.Add(24 * time.Hour),
	}
}

func testShareRoundTrip(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	addUser(t, s, "bob", 0)
	sh := newShare("alice", 3)
	ok(t, s.CreateShare(ctx, sh), "CreateShare")
	older := newShare("alice", 0)
	older.CreatedAt = baseTime.Add(-time.Hour)
	ok(t, s.CreateShare(ctx, older), "CreateShare older")
	ok(t, s.CreateShare(ctx, newShare("bob", 0)), "CreateShare bob")
	for _, get := range []func() (meta.Share, error){
		func() (meta.Share, error) { return s.GetShare(ctx, sh.ID) },
		func() (meta.Share, error) { return s.GetShareByHash(ctx, sh.Hash) },
	} {
		got, err := get()
		ok(t, err, "get share")
		if got.ID != sh.ID || got.Hash != sh.Hash || got.OwnerID != "alice" || got.Bucket != "alice" || got.Key != "docs/" ||
			!got.Folder || got.Password != sh.Password || got.Note != sh.Note || !got.AllowUpload || got.MaxDownloads != 3 ||
			got.Downloads != 0 || got.Revoked || !got.LastAccess.IsZero() || !sameTime(got.CreatedAt, baseTime) || !sameTime(got.ExpiresAt, sh.ExpiresAt) {
			t.Errorf("got %+v, want %+v", got, sh)
		}
	}
	list, err := s.ListShares(ctx, "alice")
	ok(t, err, "ListShares")
	if got, want := len(list), 2; got != want {
		t.Fatalf("ListShares: %d shares, want %d", got, want)
	}
	if list[0].ID != sh.ID || list[1].ID != older.ID {
		t.Errorf("ListShares order: %s, %s; want newest first", list[0].ID, list[1].ID)
	}
	_, err = s.GetShare(ctx, "nope")
	wantCode(t, err, errcode.NotFound, "GetShare unknown")
	_, err = s.GetShareByHash(ctx, "nope")
	wantCode(t, err, errcode.NotFound, "GetShareByHash unknown")
	later := baseTime.Add(48 * time.Hour)
	got, err := s.SetShareExpiry(ctx, sh.ID, later)
	ok(t, err, "SetShareExpiry")
	if !sameTime(got.ExpiresAt, later) {
		t.Errorf("expiry %v, want %v", got.ExpiresAt, later)
	}
	_, err = s.SetShareExpiry(ctx, "nope", later)
	wantCode(t, err, errcode.NotFound, "SetShareExpiry unknown")
	wantCode(t, s.CreateShare(ctx, sh), errcode.AlreadyExists, "CreateShare twice")
}

func testShareCreateRejected(t *testing.T, s store) {
	addUser(t, s, "alice", 0)
	for name, mod := range map[string]func(*meta.Share){
		"no id":     func(sh *meta.Share) { sh.ID = "" },
		"no hash":   func(sh *meta.Share) { sh.Hash = "" },
		"no owner":  func(sh *meta.Share) { sh.OwnerID = "" },
		"no bucket": func(sh *meta.Share) { sh.Bucket = "" },
		"no expiry": func(sh *meta.Share) { sh.ExpiresAt = time.Time{} },
		"negative":  func(sh *meta.Share) { sh.MaxDownloads = -1 },
	} {
		sh := newShare("alice", 0)
		mod(&sh)
		wantCode(t, s.CreateShare(t.Context(), sh), errcode.InvalidArgument, name)
	}
}

func testShareUseAndLimit(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	sh := newShare("alice", 2)
	ok(t, s.CreateShare(ctx, sh), "CreateShare")
	now := baseTime.Add(time.Minute)
	ok(t, s.UseShare(ctx, sh.ID, false, now), "UseShare listing")
	ok(t, s.UseShare(ctx, sh.ID, true, now), "UseShare 1")
	ok(t, s.UseShare(ctx, sh.ID, true, now.Add(time.Second)), "UseShare 2")
	err := s.UseShare(ctx, sh.ID, true, now)
	wantCode(t, err, errcode.NotFound, "UseShare 3")
	if e := errcode.As(err); e == nil || e.Detail["state"] != "used_up" {
		t.Errorf("UseShare 3: %v, want state used_up", err)
	}
	got, err := s.GetShare(ctx, sh.ID)
	ok(t, err, "GetShare")
	if got.Downloads != 2 || !sameTime(got.LastAccess, now.Add(time.Second)) {
		t.Errorf("downloads %d last access %v; want 2, %v", got.Downloads, got.LastAccess, now.Add(time.Second))
	}
	wantCode(t, s.UseShare(ctx, "nope", true, now), errcode.NotFound, "UseShare unknown")
}

func testShareRevokeAndExpire(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	sh := newShare("alice", 0)
	ok(t, s.CreateShare(ctx, sh), "CreateShare")
	err := s.UseShare(ctx, sh.ID, true, sh.ExpiresAt)
	if e := errcode.As(err); e == nil || e.Detail["state"] != "expired" {
		t.Errorf("UseShare at expiry: %v, want state expired", err)
	}
	ok(t, s.RevokeShare(ctx, sh.ID), "RevokeShare")
	ok(t, s.RevokeShare(ctx, sh.ID), "RevokeShare again")
	err = s.UseShare(ctx, sh.ID, false, baseTime)
	if e := errcode.As(err); e == nil || e.Detail["state"] != "revoked" {
		t.Errorf("UseShare revoked: %v, want state revoked", err)
	}
	wantCode(t, s.RevokeShare(ctx, "nope"), errcode.NotFound, "RevokeShare unknown")
}

func testShareConcurrentLastDownload(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	sh := newShare("alice", 3)
	ok(t, s.CreateShare(ctx, sh), "CreateShare")
	okN := concurrently(10, func() bool { return s.UseShare(ctx, sh.ID, true, baseTime) == nil })
	if got, want := okN, 3; got != want {
		t.Errorf("%d downloads succeeded, want %d", got, want)
	}
}

func testShareGoWithOwner(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	sh := newShare("alice", 0)
	ok(t, s.CreateShare(ctx, sh), "CreateShare")
	ok(t, s.StartShareDownload(ctx, download(sh.ID, 0, baseTime), baseTime), "StartShareDownload") // its record goes too
	_, err := s.DeleteUser(ctx, "alice", true)
	ok(t, err, "DeleteUser")
	_, err = s.GetShare(ctx, sh.ID)
	wantCode(t, err, errcode.NotFound, "GetShare after the owner is deleted")
}

// download is a download of share id by client 192.0.2.1 of docs/a.txt
// (ETag "e1") from offset, resumable for an hour after now.
func download(id string, offset int64, now time.Time) meta.ShareDownload {
	return meta.ShareDownload{ShareID: id, Client: "192.0.2.1", Key: "docs/a.txt", ETag: "e1", Offset: offset, Until: now.Add(time.Hour)}
}

func testShareDownloadAndResume(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	sh := newShare("alice", 1)
	ok(t, s.CreateShare(ctx, sh), "CreateShare")
	now := baseTime.Add(time.Minute)
	ok(t, s.StartShareDownload(ctx, download(sh.ID, 0, now), now), "StartShareDownload")
	got, err := s.GetShare(ctx, sh.ID)
	ok(t, err, "GetShare")
	if got.Downloads != 1 || got.State(now) != "used_up" || !sameTime(got.LastAccess, now) {
		t.Fatalf("after the download: %d downloads, state %s, last access %v", got.Downloads, got.State(now), got.LastAccess)
	}
	// The same client resumes further on, several times, though the link
	// is used up; the share is not counted again but was accessed.
	for i, off := range []int64{100, 5000, 5001} {
		at := now.Add(time.Duration(i+1) * time.Second)
		resumed, err := s.ResumeShareDownload(ctx, download(sh.ID, off, at), 3, at)
		ok(t, err, "ResumeShareDownload")
		if !resumed {
			t.Fatalf("resume %d from %d refused", i+1, off)
		}
	}
	got, err = s.GetShare(ctx, sh.ID)
	ok(t, err, "GetShare")
	if got.Downloads != 1 || !sameTime(got.LastAccess, now.Add(3*time.Second)) {
		t.Errorf("after resumes: %d downloads, last access %v; want 1, %v", got.Downloads, got.LastAccess, now.Add(3*time.Second))
	}
	// A fourth resume passes maxResumes 3.
	if resumed, err := s.ResumeShareDownload(ctx, download(sh.ID, 9000, now), 3, now); err != nil || resumed {
		t.Errorf("resume past maxResumes: %v, %v", resumed, err)
	}
	// Another download is refused (used up), and records nothing.
	other := download(sh.ID, 0, now)
	other.Client = "192.0.2.99"
	err = s.StartShareDownload(ctx, other, now)
	if e := errcode.As(err); e == nil || e.Detail["state"] != "used_up" {
		t.Errorf("second download: %v, want state used_up", err)
	}
	other.Offset = 10
	if resumed, err := s.ResumeShareDownload(ctx, other, 3, now); err != nil || resumed {
		t.Errorf("resume of a refused download: %v, %v", resumed, err)
	}
	wantCode(t, s.StartShareDownload(ctx, download("nope", 0, now), now), errcode.NotFound, "StartShareDownload unknown")
	bad := download(sh.ID, 0, now)
	bad.Client = ""
	wantCode(t, s.StartShareDownload(ctx, bad, now), errcode.InvalidArgument, "StartShareDownload without a client")
}

func testShareResumeRefusals(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	sh := newShare("alice", 10)
	ok(t, s.CreateShare(ctx, sh), "CreateShare")
	now := baseTime.Add(time.Minute)
	ok(t, s.StartShareDownload(ctx, download(sh.ID, 50, now), now), "StartShareDownload")
	for name, mod := range map[string]func(d *meta.ShareDownload, at *time.Time){
		"same offset":       func(d *meta.ShareDownload, _ *time.Time) { d.Offset = 50 },
		"earlier offset":    func(d *meta.ShareDownload, _ *time.Time) { d.Offset = 10 },
		"another ETag":      func(d *meta.ShareDownload, _ *time.Time) { d.ETag = "e2" },
		"another client":    func(d *meta.ShareDownload, _ *time.Time) { d.Client = "192.0.2.2" },
		"another key":       func(d *meta.ShareDownload, _ *time.Time) { d.Key = "docs/b.txt" },
		"another share":     func(d *meta.ShareDownload, _ *time.Time) { d.ShareID = "nope" },
		"window over":       func(_ *meta.ShareDownload, at *time.Time) { *at = now.Add(time.Hour) },
		"share expired":     func(_ *meta.ShareDownload, at *time.Time) { *at = sh.ExpiresAt },
		"no resumes at all": func(d *meta.ShareDownload, at *time.Time) {},
	} {
		d, at, max := download(sh.ID, 100, now), now, 5
		mod(&d, &at)
		if name == "no resumes at all" {
			max = 0
		}
		if resumed, err := s.ResumeShareDownload(ctx, d, max, at); err != nil || resumed {
			t.Errorf("%s: resumed %v, %v; want refused", name, resumed, err)
		}
	}
	// A new download of the same file by the same client replaces the
	// record (from its offset, resumes back to zero).
	ok(t, s.StartShareDownload(ctx, download(sh.ID, 0, now), now), "StartShareDownload again")
	if resumed, err := s.ResumeShareDownload(ctx, download(sh.ID, 10, now), 1, now); err != nil || !resumed {
		t.Errorf("resume after a new download from 0: %v, %v", resumed, err)
	}
	ok(t, s.RevokeShare(ctx, sh.ID), "RevokeShare")
	if resumed, err := s.ResumeShareDownload(ctx, download(sh.ID, 20, now), 5, now); err != nil || resumed {
		t.Errorf("resume through a revoked link: %v, %v", resumed, err)
	}
}

func testShareConcurrentResumes(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	sh := newShare("alice", 1)
	ok(t, s.CreateShare(ctx, sh), "CreateShare")
	ok(t, s.StartShareDownload(ctx, download(sh.ID, 0, baseTime), baseTime), "StartShareDownload")
	okN := concurrently(10, func() bool {
		resumed, err := s.ResumeShareDownload(ctx, download(sh.ID, 1, baseTime), 100, baseTime)
		return err == nil && resumed
	})
	if got, want := okN, 1; got != want {
		t.Errorf("%d of 10 concurrent resumes from one offset passed, want %d", got, want)
	}
}

// concurrently runs fn n times at once and returns how many returned true.
func concurrently(n int, fn func() bool) int {
	var wg sync.WaitGroup
	var passed atomic.Int64
	for range n {
		wg.Go(func() {
			if fn() {
				passed.Add(1)
			}
		})
	}
	wg.Wait()
	return int(passed.Load())
}
