package metatest

import (
	"fmt"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

// Object lock (meta/lock.go): a bucket's lock state and default
// retention, a version's retention and legal hold, and the removals and
// changes they refuse, decided inside the write's transaction at the
// store's time.
var lockTests = []test{
	{name: "Bucket", fn: testLockBucket},
	{name: "DefaultRetention", fn: testDefaultRetention},
	{name: "DeleteLocked", fn: testDeleteLocked},
	{name: "RetentionChange", fn: testRetentionChange},
	{name: "LegalHold", fn: testLegalHold},
	{name: "InPlaceKeepsLock", fn: testInPlaceKeepsLock},
	{name: "PurgeRefused", fn: testPurgeRefused},
	{name: "Upload", fn: testUploadLock},
}

// lockBucket creates bucket name of owner with object lock and default
// retention d.
func lockBucket(t *testing.T, s store, owner, name string, d meta.DefaultRetention) {
	t.Helper()
	ok(t, s.CreateBucket(t.Context(), meta.Bucket{Name: name, OwnerID: owner, ObjectLock: meta.ObjectLock{Enabled: true, Default: d}}),
		"CreateBucket with object lock "+name)
}

// wantLocked fails unless err is meta.ErrLocked.
func wantLocked(t *testing.T, err error, what string) {
	t.Helper()
	if !meta.IsLocked(err) {
		t.Fatalf("%s: err = %v, want the object_locked refusal", what, err)
	}
	wantCode(t, err, errcode.PermissionDenied, what)
}

// retained returns o with retention mode until until.
func retained(o meta.Object, mode meta.RetentionMode, until time.Time) meta.Object {
	o.Retention = meta.Retention{Mode: mode, Until: until}
	return o
}

func testLockBucket(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	gov := meta.DefaultRetention{Mode: meta.Governance, Days: 1}
	lockBucket(t, s, "alice", "locked", gov)
	b, err := s.GetBucket(ctx, "locked")
	ok(t, err, "GetBucket")
	if !b.ObjectLock.Enabled || b.ObjectLock.Default != gov || b.Versioning != meta.VersioningEnabled {
		t.Errorf("a bucket created with object lock: lock %+v versioning %q, want enabled with %+v, versioning Enabled", b.ObjectLock, b.Versioning, gov)
	}
	// Never suspended; enabling again is no change.
	err = s.SetBucketVersioning(ctx, "locked", meta.VersioningSuspended)
	wantCode(t, err, errcode.Conflict, "suspending a bucket with object lock")
	if e := errcode.As(err); e.Detail["reason"] != "object_lock_enabled" {
		t.Errorf("suspending a bucket with object lock: detail %v, want reason object_lock_enabled", e.Detail)
	}
	ok(t, s.SetBucketVersioning(ctx, "locked", meta.VersioningEnabled), "enabling a bucket with object lock")
	// The default retention: Years, none, and invalid ones.
	years := meta.DefaultRetention{Mode: meta.Compliance, Years: 2}
	for _, d := range []meta.DefaultRetention{years, {}} {
		ok(t, s.SetBucketObjectLock(ctx, "locked", d), fmt.Sprintf("SetBucketObjectLock %+v", d))
		b, err := s.GetBucket(ctx, "locked")
		ok(t, err, "GetBucket")
		if b.ObjectLock != (meta.ObjectLock{Enabled: true, Default: d}) {
			t.Errorf("lock = %+v, want enabled with %+v", b.ObjectLock, d)
		}
	}
	for _, d := range []meta.DefaultRetention{
		{Mode: meta.Governance}, {Mode: meta.Governance, Days: 1, Years: 1}, {Mode: meta.Governance, Days: -1},
		{Mode: "governance", Days: 1}, {Days: 1}, {Mode: meta.Compliance, Years: meta.MaxRetentionYears + 1},
	} {
		wantCode(t, s.SetBucketObjectLock(ctx, "locked", d), errcode.InvalidArgument, fmt.Sprintf("SetBucketObjectLock %+v", d))
	}
	wantCode(t, s.SetBucketObjectLock(ctx, "nope", gov), errcode.NotFound, "SetBucketObjectLock of a missing bucket")
	// A bucket without object lock never gets it, nor a default.
	if err := s.SetBucketObjectLock(ctx, "alice", gov); !meta.IsLockNotEnabled(err) {
		t.Errorf("SetBucketObjectLock of a bucket without object lock = %v, want object_lock_disabled", err)
	}
	b, err = s.GetBucket(ctx, "alice")
	ok(t, err, "GetBucket")
	if b.ObjectLock != (meta.ObjectLock{}) || b.Versioning != meta.Unversioned {
		t.Errorf("a bucket without object lock: %+v, versioning %q", b.ObjectLock, b.Versioning)
	}
	err = s.CreateBucket(ctx, meta.Bucket{Name: "half", OwnerID: "alice", ObjectLock: meta.ObjectLock{Default: gov}})
	if !meta.IsLockNotEnabled(err) {
		t.Errorf("CreateBucket with a default retention and no object lock = %v, want object_lock_disabled", err)
	}
	wantCode(t, s.CreateBucket(ctx, meta.Bucket{Name: "bad", OwnerID: "alice", ObjectLock: meta.ObjectLock{Enabled: true, Default: meta.DefaultRetention{Mode: meta.Governance}}}),
		errcode.InvalidArgument, "CreateBucket with an invalid default retention")
	ok(t, s.PutGatewayBucket(ctx, meta.Bucket{Name: "gate", OwnerID: "alice", Gateway: "s3://b?endpoint=http://127.0.0.1:1"}), "PutGatewayBucket")
	if err := s.SetBucketObjectLock(ctx, "gate", gov); !meta.IsLockNotEnabled(err) {
		t.Errorf("SetBucketObjectLock of a gateway bucket = %v, want object_lock_disabled", err)
	}
}

func testDefaultRetention(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	lockBucket(t, s, "alice", "locked", meta.DefaultRetention{Mode: meta.Governance, Days: 2})
	before := time.Now()
	res, err := s.PutObjects(ctx, []meta.Put{{Object: obj("locked", "k", 1)}})
	ok(t, err, "PutObjects")
	after := time.Now()
	got, err := s.GetObjectVersion(ctx, "locked", "k", res[0].Object.VersionID)
	ok(t, err, "GetObjectVersion")
	r := got.Retention
	if r.Mode != meta.Governance || r.Until.Before(before.AddDate(0, 0, 2).Truncate(time.Millisecond)) || r.Until.After(after.AddDate(0, 0, 2)) {
		t.Errorf("a version written under a default of 2 days GOVERNANCE: retention %+v, want GOVERNANCE until 2 days after %v..%v", r, before, after)
	}
	if res[0].Object.Retention != r {
		t.Errorf("PutObjects answered retention %+v, the store holds %+v", res[0].Object.Retention, r)
	}
	// A retention of the write's own wins over the default.
	until := baseTime.AddDate(100, 0, 0)
	own := retained(obj("locked", "own", 1), meta.Compliance, until)
	own.LegalHold = true
	own = putVersion(t, s, own)
	wantObject(t, s, own)
	// The default in years; a delete marker is never locked.
	ok(t, s.SetBucketObjectLock(ctx, "locked", meta.DefaultRetention{Mode: meta.Compliance, Years: 1}), "SetBucketObjectLock")
	res, err = s.PutObjects(ctx, []meta.Put{{Object: obj("locked", "y", 1)}})
	ok(t, err, "PutObjects")
	if r := res[0].Object.Retention; r.Mode != meta.Compliance || r.Until.Before(before.AddDate(1, 0, 0).Truncate(time.Millisecond)) {
		t.Errorf("a version written under a default of 1 year COMPLIANCE: retention %+v", r)
	}
	m, err := s.DeleteObject(ctx, "locked", "y", meta.Cond{})
	ok(t, err, "DeleteObject")
	if !m.DeleteMarker || m.Retention != (meta.Retention{}) {
		t.Errorf("the delete marker: %+v, want a marker without retention", m)
	}
	if _, err := s.DeleteVersion(ctx, "locked", "y", m.VersionID, meta.Cond{}); err != nil {
		t.Errorf("DeleteVersion of a delete marker in a locked bucket: %v", err)
	}
	// No default: no retention.
	ok(t, s.SetBucketObjectLock(ctx, "locked", meta.DefaultRetention{}), "SetBucketObjectLock none")
	plain := putVersion(t, s, obj("locked", "plain", 1))
	wantObject(t, s, plain)
	// A lock in a bucket without object lock is refused, writing nothing.
	for _, o := range []meta.Object{retained(obj("alice", "r", 1), meta.Governance, until), {Bucket: "alice", Key: "h", LegalHold: true, BlobKey: "blob/h", ETag: "e", ContentType: "x"}} {
		if _, err := s.PutObjects(ctx, []meta.Put{{Object: o}}); !meta.IsLockNotEnabled(err) {
			t.Errorf("PutObjects of a locked version into a bucket without object lock = %v, want object_lock_disabled", err)
		}
	}
	if vs := versionsOf(t, s, "alice"); len(vs) != 0 {
		t.Errorf("the refused writes stored %v", describe(vs))
	}
}

func testDeleteLocked(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	lockBucket(t, s, "alice", "locked", meta.DefaultRetention{})
	future, past := time.Now().Add(time.Hour), time.Now().Add(-time.Hour)
	gov := putVersion(t, s, retained(obj("locked", "gov", 10), meta.Governance, future))
	comp := putVersion(t, s, retained(obj("locked", "comp", 10), meta.Compliance, future))
	expired := putVersion(t, s, retained(obj("locked", "old", 10), meta.Compliance, past))
	held := obj("locked", "held", 10)
	held.LegalHold = true
	held = putVersion(t, s, held)

	// A delete without a version ID only adds a marker: always allowed.
	m, err := s.DeleteObject(ctx, "locked", "comp", meta.Cond{})
	ok(t, err, "DeleteObject of a locked key")
	wantDeleteMarker(t, s, "locked", "comp", m.VersionID)

	wantLocked(t, deleteErr(t, s, gov, false), "DeleteVersion of a GOVERNANCE version")
	wantLocked(t, deleteErr(t, s, comp, false), "DeleteVersion of a COMPLIANCE version")
	wantLocked(t, deleteErr(t, s, comp, true), "DeleteVersion of a COMPLIANCE version with the bypass")
	wantLocked(t, deleteErr(t, s, held, true), "DeleteVersion of a version under a legal hold with the bypass")
	comp.IsLatest = false
	wantVersion(t, s, comp)
	wantVersion(t, s, held)
	// The bypass removes GOVERNANCE retention; an expired retention
	// holds nothing.
	ok(t, deleteErr(t, s, gov, true), "DeleteVersion of a GOVERNANCE version with the bypass")
	ok(t, deleteErr(t, s, expired, false), "DeleteVersion of a version whose retention expired")
	// Released from the hold, it goes.
	_, err = s.SetObjectLegalHold(ctx, "locked", "held", "", false)
	ok(t, err, "SetObjectLegalHold off")
	ok(t, deleteErr(t, s, held, false), "DeleteVersion after the legal hold was lifted")
	// A precondition is checked before the lock; a missing version is
	// NotFound whatever its bypass.
	wantCode(t, deleteErrCond(t, s, comp, meta.Cond{IfMatch: "other"}), errcode.PreconditionFailed, "DeleteVersion with a failing If-Match")
	wantCode(t, deleteErr(t, s, gov, true), errcode.NotFound, "DeleteVersion of a version removed")
	wantVersions(t, s, "locked", vid(m, "LM"), vid(comp, ""))
}

// deleteErr is the error of DeleteVersion of o, with the bypass or not.
func deleteErr(t *testing.T, s store, o meta.Object, bypass bool) error {
	return deleteErrCond(t, s, o, meta.Cond{BypassGovernance: bypass})
}

func deleteErrCond(t *testing.T, s store, o meta.Object, cond meta.Cond) error {
	_, err := s.DeleteVersion(t.Context(), o.Bucket, o.Key, o.VersionID, cond)
	return err
}

// setRetention sets the retention of version o and fails unless it is
// taken and the store holds it.
func setRetention(t *testing.T, s store, o meta.Object, r meta.Retention, bypass bool) meta.Object {
	t.Helper()
	got, err := s.SetObjectRetention(t.Context(), o.Bucket, o.Key, o.VersionID, r, bypass)
	ok(t, err, fmt.Sprintf("SetObjectRetention %s %+v bypass %v", o.Key, r, bypass))
	if got.VersionID != o.VersionID || got.Retention.Mode != r.Mode || !sameTime(got.Retention.Until, r.Until) {
		t.Errorf("SetObjectRetention answered %q %+v, want %q %+v", got.VersionID, got.Retention, o.VersionID, r)
	}
	o.Retention = r
	wantVersion(t, s, o)
	return o
}

func testRetentionChange(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	lockBucket(t, s, "alice", "locked", meta.DefaultRetention{})
	now := time.Now()
	t1, t2, t3 := now.Add(time.Hour), now.Add(2*time.Hour), now.Add(3*time.Hour)
	o := putVersion(t, s, obj("locked", "k", 1))
	o = setRetention(t, s, o, meta.Retention{Mode: meta.Governance, Until: t2}, false)
	// GOVERNANCE: lengthened by anyone, shortened or removed with the bypass.
	o = setRetention(t, s, o, meta.Retention{Mode: meta.Governance, Until: t3}, false)
	for _, r := range []meta.Retention{{Mode: meta.Governance, Until: t1}, {}} {
		_, err := s.SetObjectRetention(ctx, "locked", "k", o.VersionID, r, false)
		wantLocked(t, err, fmt.Sprintf("shortening GOVERNANCE retention to %+v without the bypass", r))
	}
	wantVersion(t, s, o)
	o = setRetention(t, s, o, meta.Retention{Mode: meta.Governance, Until: t1}, true)
	o = setRetention(t, s, o, meta.Retention{}, true)
	// COMPLIANCE: lengthened, never shortened, removed or weakened, bypass or not.
	o = setRetention(t, s, o, meta.Retention{Mode: meta.Governance, Until: t1}, false)
	// GOVERNANCE to COMPLIANCE: with the bypass only, as S3.
	_, err := s.SetObjectRetention(ctx, "locked", "k", "", meta.Retention{Mode: meta.Compliance, Until: t2}, false)
	wantLocked(t, err, "GOVERNANCE to COMPLIANCE without the bypass")
	o = setRetention(t, s, o, meta.Retention{Mode: meta.Compliance, Until: t2}, true)
	for _, r := range []meta.Retention{{Mode: meta.Compliance, Until: t1}, {Mode: meta.Governance, Until: t3}, {}} {
		_, err := s.SetObjectRetention(ctx, "locked", "k", "", r, true)
		wantLocked(t, err, fmt.Sprintf("changing COMPLIANCE retention to %+v with the bypass", r))
	}
	wantVersion(t, s, o)
	o = setRetention(t, s, o, meta.Retention{Mode: meta.Compliance, Until: t3}, false)
	// Invalid retentions, missing versions, delete markers, buckets
	// without object lock.
	for _, r := range []meta.Retention{{Mode: "governance", Until: t3}, {Mode: meta.Governance}, {Until: t3}} {
		_, err := s.SetObjectRetention(ctx, "locked", "k", "", r, false)
		wantCode(t, err, errcode.InvalidArgument, fmt.Sprintf("SetObjectRetention %+v", r))
	}
	r := meta.Retention{Mode: meta.Governance, Until: t3}
	_, err = s.SetObjectRetention(ctx, "locked", "k", "0000000000000000ffffffffffffffff", r, false)
	wantCode(t, err, errcode.NotFound, "SetObjectRetention of a missing version")
	_, err = s.SetObjectRetention(ctx, "locked", "nokey", "", r, false)
	wantCode(t, err, errcode.NotFound, "SetObjectRetention of a missing key")
	_, err = s.SetObjectRetention(ctx, "nope", "k", "", r, false)
	wantCode(t, err, errcode.NotFound, "SetObjectRetention in a missing bucket")
	m, err := s.DeleteObject(ctx, "locked", "k", meta.Cond{})
	ok(t, err, "DeleteObject")
	_, err = s.SetObjectRetention(ctx, "locked", "k", m.VersionID, r, false)
	wantCode(t, err, errcode.MethodNotAllowed, "SetObjectRetention of a delete marker")
	_, err = s.SetObjectRetention(ctx, "locked", "k", "", r, false)
	wantCode(t, err, errcode.NotFound, "SetObjectRetention of a key whose latest version is a delete marker")
	putVersion(t, s, obj("alice", "plain", 1))
	if _, err := s.SetObjectRetention(ctx, "alice", "plain", "", r, false); !meta.IsLockNotEnabled(err) {
		t.Errorf("SetObjectRetention in a bucket without object lock = %v, want object_lock_disabled", err)
	}
}

func testLegalHold(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	lockBucket(t, s, "alice", "locked", meta.DefaultRetention{})
	o := putVersion(t, s, obj("locked", "k", 1))
	newer := putVersion(t, s, obj("locked", "k", 2))
	o.IsLatest = false
	got, err := s.SetObjectLegalHold(ctx, "locked", "k", o.VersionID, true)
	ok(t, err, "SetObjectLegalHold on")
	if got.VersionID != o.VersionID || !got.LegalHold {
		t.Errorf("SetObjectLegalHold answered %+v", got)
	}
	o.LegalHold = true
	wantVersion(t, s, o)
	wantObject(t, s, newer) // the latest is not held
	got, err = s.SetObjectLegalHold(ctx, "locked", "k", "", true)
	ok(t, err, "SetObjectLegalHold of the latest")
	if got.VersionID != newer.VersionID {
		t.Errorf("SetObjectLegalHold of the latest answered version %q, want %q", got.VersionID, newer.VersionID)
	}
	newer.LegalHold = true
	wantObject(t, s, newer)
	wantLocked(t, deleteErr(t, s, o, true), "DeleteVersion of a held version")
	putVersion(t, s, obj("alice", "plain", 1))
	if _, err := s.SetObjectLegalHold(ctx, "alice", "plain", "", true); !meta.IsLockNotEnabled(err) {
		t.Errorf("SetObjectLegalHold in a bucket without object lock = %v, want object_lock_disabled", err)
	}
	_, err = s.SetObjectLegalHold(ctx, "locked", "nokey", "", true)
	wantCode(t, err, errcode.NotFound, "SetObjectLegalHold of a missing key")
}

func testInPlaceKeepsLock(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	lockBucket(t, s, "alice", "locked", meta.DefaultRetention{})
	o := retained(obj("locked", "k", 10), meta.Compliance, time.Now().Add(time.Hour))
	o.LegalHold = true
	o = putVersion(t, s, o)
	// A background job rewrites the bytes: the lock stays, whatever the
	// put says.
	re := obj("locked", "k", 10)
	re.VersionID = o.VersionID
	res, err := s.PutObjects(ctx, []meta.Put{{Object: re, InPlace: true}})
	ok(t, err, "PutObjects in place")
	re.IsLatest, re.Retention, re.LegalHold = true, o.Retention, true
	sameObject(t, res[0].Object, re, "the rewritten version")
	wantObject(t, s, re)
}

func testPurgeRefused(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	lockBucket(t, s, "alice", "locked", meta.DefaultRetention{Mode: meta.Governance, Days: 1})
	o := putVersion(t, s, retained(obj("locked", "k", 10), meta.Governance, time.Now().Add(time.Hour)))
	_, err := s.DeleteUser(ctx, "alice", true)
	wantCode(t, err, errcode.Conflict, "DeleteUser with purge while a version is locked")
	if e := errcode.As(err); e.Detail["reason"] != "objects_locked" || e.Detail["locked"] != int64(1) {
		t.Errorf("DeleteUser with purge while a version is locked: detail %v", e.Detail)
	}
	wantObject(t, s, o)
	ok(t, deleteErr(t, s, o, true), "DeleteVersion with the bypass")
	res, err := s.DeleteUser(ctx, "alice", true)
	ok(t, err, "DeleteUser with purge once nothing is locked")
	if res.Buckets != 2 {
		t.Errorf("DeleteUser deleted %d buckets, want 2", res.Buckets)
	}
}

func testUploadLock(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	lockBucket(t, s, "alice", "locked", meta.DefaultRetention{})
	r := meta.Retention{Mode: meta.Compliance, Until: baseTime.AddDate(50, 0, 0)}
	u := meta.Upload{ID: "up1", Bucket: "locked", Key: "k", InitiatorID: "alice", Retention: r, LegalHold: true,
		CreatedAt: baseTime, ExpiresAt: baseTime.Add(time.Hour)}
	ok(t, s.CreateUpload(ctx, u), "CreateUpload with a lock")
	got, err := s.GetUpload(ctx, "up1")
	ok(t, err, "GetUpload")
	if got.Retention.Mode != r.Mode || !sameTime(got.Retention.Until, r.Until) || !got.LegalHold {
		t.Errorf("the upload's lock: %+v hold %v, want %+v hold true", got.Retention, got.LegalHold, r)
	}
	u.ID, u.Retention = "up2", meta.Retention{Mode: "forever", Until: r.Until}
	wantCode(t, s.CreateUpload(ctx, u), errcode.InvalidArgument, "CreateUpload with an invalid retention")
}
