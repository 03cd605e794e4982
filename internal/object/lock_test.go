package object

import (
	"errors"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

// TestObjectLock: a bucket created with object lock keeps what its
// retention and legal holds protect; the service passes the lock of
// every write (put, copy, multipart on completion) to the store, refuses
// a lock where there is none and a date in the past, and lets only the
// bucket's owner, never a share link, bypass GOVERNANCE retention.
func TestObjectLock(t *testing.T) {
	f := newFixture(t, 0)
	ctx := t.Context()
	b, err := f.svc.CreateLockedBucket(ctx, f.alice, "vault", "")
	if err != nil {
		t.Fatal(err)
	}
	if !b.ObjectLock.Enabled || b.Versioning != meta.VersioningEnabled {
		t.Fatalf("CreateLockedBucket = %+v, want object lock and versioning Enabled", b)
	}
	if _, err := f.svc.SetBucketVersioning(ctx, f.alice, "vault", meta.VersioningSuspended); err == nil {
		t.Error("a bucket with object lock was suspended")
	}
	if _, err := f.svc.SetObjectLock(ctx, f.alice, "vault", meta.DefaultRetention{Mode: meta.Governance, Days: 1}); err != nil {
		t.Fatal(err)
	}
	if l, err := f.svc.GetObjectLock(ctx, f.alice, "vault"); err != nil || l.Default != (meta.DefaultRetention{Mode: meta.Governance, Days: 1}) {
		t.Errorf("GetObjectLock = %+v, %v", l, err)
	}
	put := func(key string, l Lock) (meta.Object, error) {
		return f.svc.Put(ctx, f.alice, PutInput{Bucket: "vault", Key: key, Body: strings.NewReader("x"), Size: 1, Lock: l})
	}
	// The default retention; a write's own; a date in the past.
	o, err := put("k", Lock{})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := f.svc.GetLock(ctx, f.alice, "vault", "k", ""); err != nil || got.Retention.Mode != meta.Governance || !got.Retention.Until.After(time.Now()) {
		t.Errorf("GetLock of a version under the default = %+v, %v", got.Retention, err)
	}
	until := time.Now().Add(time.Hour).UTC()
	comp, err := put("c", Lock{Retention: meta.Retention{Mode: meta.Compliance, Until: until}, LegalHold: true})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := f.svc.GetLock(ctx, f.alice, "vault", "c", comp.VersionID); got.Retention.Mode != meta.Compliance || !got.LegalHold {
		t.Errorf("GetLock of a version written with its own lock = %+v hold %v", got.Retention, got.LegalHold)
	}
	if _, err := put("past", Lock{Retention: meta.Retention{Mode: meta.Governance, Until: time.Now().Add(-time.Minute)}}); !errcode.Is(err, errcode.InvalidArgument) {
		t.Errorf("Put with a retention in the past: %v, want InvalidArgument", err)
	}
	// Refused before the body is read.
	if _, err := f.svc.Put(ctx, f.alice, PutInput{Bucket: "alice-bucket", Key: "k", Body: iotest.ErrReader(errors.New("body read")), Size: 1,
		Lock: Lock{LegalHold: true}}); !meta.IsLockNotEnabled(err) {
		t.Errorf("Put with a lock into a bucket without object lock: %v", err)
	}
	// Copies and multipart uploads carry the request's lock.
	cp, err := f.svc.Copy(ctx, f.alice, CopyInput{SrcBucket: "vault", SrcKey: "k", DstBucket: "vault", DstKey: "copy", Lock: Lock{LegalHold: true}})
	if err != nil || !cp.LegalHold {
		t.Errorf("Copy with a legal hold = %+v, %v", cp, err)
	}
	u, err := f.svc.CreateUpload(ctx, f.alice, CreateUploadInput{Bucket: "vault", Key: "mp", Lock: Lock{Retention: meta.Retention{Mode: meta.Compliance, Until: until}}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := f.svc.PutPart(ctx, f.alice, PartInput{UploadID: u.ID, Number: 1, Body: strings.NewReader("part"), Size: 4})
	if err != nil {
		t.Fatal(err)
	}
	mp, err := f.svc.CompleteUpload(ctx, f.alice, "vault", "mp", u.ID, []meta.CompletePart{{Number: 1, ETag: p.ETag}}, meta.Cond{})
	if err != nil || mp.Retention.Mode != meta.Compliance {
		t.Errorf("CompleteUpload of an upload with a retention = %+v, %v", mp.Retention, err)
	}
	if _, err := f.svc.CreateUpload(ctx, f.alice, CreateUploadInput{Bucket: "alice-bucket", Key: "mp", Lock: Lock{LegalHold: true}}); !meta.IsLockNotEnabled(err) {
		t.Errorf("CreateUpload with a lock into a bucket without object lock: %v", err)
	}
	// Removal: refused while locked; the owner's bypass lifts GOVERNANCE
	// only; a share link never bypasses; a delete marker is always
	// allowed.
	if _, err := f.svc.DeleteVersion(ctx, f.alice, "vault", "k", o.VersionID, meta.Cond{}); !meta.IsLocked(err) {
		t.Errorf("DeleteVersion of a GOVERNANCE version: %v, want object_locked", err)
	}
	share := Actor{UserID: "alice", Share: true}
	if _, err := f.svc.DeleteVersion(ctx, share, "vault", "k", o.VersionID, meta.Cond{BypassGovernance: true}); !errcode.Is(err, errcode.PermissionDenied) || meta.IsLocked(err) {
		t.Errorf("DeleteVersion with the bypass through a share link: %v, want bypass_denied", err)
	}
	if _, err := f.svc.SetRetention(ctx, share, "vault", "k", o.VersionID, meta.Retention{}, true); !errcode.Is(err, errcode.PermissionDenied) {
		t.Errorf("SetRetention with the bypass through a share link: %v", err)
	}
	if _, err := f.svc.DeleteVersion(ctx, f.bob, "vault", "k", o.VersionID, meta.Cond{BypassGovernance: true}); !errcode.Is(err, errcode.PermissionDenied) {
		t.Errorf("another user's DeleteVersion: %v", err)
	}
	if _, err := f.svc.DeleteVersion(ctx, f.alice, "vault", "c", comp.VersionID, meta.Cond{BypassGovernance: true}); !meta.IsLocked(err) {
		t.Errorf("DeleteVersion of a COMPLIANCE version with the bypass: %v", err)
	}
	if m, err := f.svc.Delete(ctx, f.alice, "vault", "c", meta.Cond{}); err != nil || !m.DeleteMarker {
		t.Errorf("Delete of a locked key = %+v, %v; want a delete marker", m, err)
	}
	if _, err := f.svc.DeleteVersion(ctx, f.alice, "vault", "k", o.VersionID, meta.Cond{BypassGovernance: true}); err != nil {
		t.Errorf("the owner's DeleteVersion with the bypass: %v", err)
	}
	// Retention and legal hold changes.
	if _, err := f.svc.SetRetention(ctx, f.alice, "vault", "c", comp.VersionID, meta.Retention{Mode: meta.Compliance, Until: until.Add(-time.Minute)}, true); !meta.IsLocked(err) {
		t.Errorf("shortening COMPLIANCE retention with the bypass: %v", err)
	}
	if _, err := f.svc.SetRetention(ctx, f.alice, "vault", "c", comp.VersionID, meta.Retention{Mode: meta.Compliance, Until: time.Now().Add(-time.Minute)}, false); !errcode.Is(err, errcode.InvalidArgument) {
		t.Errorf("SetRetention in the past: %v", err)
	}
	if got, err := f.svc.SetLegalHold(ctx, f.alice, "vault", "c", comp.VersionID, false); err != nil || got.LegalHold {
		t.Errorf("SetLegalHold off = %+v, %v", got, err)
	}
	if _, err := f.svc.GetLock(ctx, f.bob, "vault", "c", comp.VersionID); !errcode.Is(err, errcode.PermissionDenied) {
		t.Errorf("another user's GetLock: %v", err)
	}
	if _, err := f.svc.GetLock(ctx, f.alice, "alice-bucket", "k", ""); !meta.IsLockNotEnabled(err) {
		t.Errorf("GetLock in a bucket without object lock: %v", err)
	}
}
