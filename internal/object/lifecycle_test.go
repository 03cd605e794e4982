package object

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

// Rules for the worker's tests.
func ptr[T any](v T) *T { return &v }

func expireRule(id, prefix string, days int) meta.LifecycleRule {
	return meta.LifecycleRule{ID: id, Status: "Enabled", Filter: &meta.LifecycleFilter{Prefix: &prefix}, Expiration: &meta.LifecycleExpiration{Days: &days}}
}

// setRules gives bucket the rules.
func setRules(t *testing.T, f *fixture, bucket string, rules ...meta.LifecycleRule) {
	t.Helper()
	if err := f.meta.SetBucketLifecycle(context.Background(), bucket, &meta.Lifecycle{Rules: rules}); err != nil {
		t.Fatalf("SetBucketLifecycle: %v", err)
	}
}

// runAt runs the worker once with its clock at now.
func runAt(t *testing.T, f *fixture, now time.Time, change func(*LifecycleOptions)) *LifecycleStats {
	t.Helper()
	opts := LifecycleOptions{Owner: "test", Interval: time.Nanosecond, PageSize: 10, Now: func() time.Time { return now }}
	if change != nil {
		change(&opts)
	}
	ran, err := f.svc.Lifecycle().RunOnce(context.Background(), opts)
	if err != nil || !ran {
		t.Fatalf("RunOnce at %v: ran %v, %v", now, ran, err)
	}
	return f.svc.Lifecycle().Stats()
}

// keyVersions lists the versions of key in bucket, newest first, as
// "v" (a version) or "m" (a marker).
func keyVersions(t *testing.T, f *fixture, bucket, key string) string {
	t.Helper()
	page, err := f.meta.ListObjectVersions(context.Background(), bucket, meta.VersionListOptions{Prefix: key})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, v := range page.Versions {
		if v.Key != key {
			continue
		}
		if v.DeleteMarker {
			out = append(out, "m")
		} else {
			out = append(out, "v"+string(v.Metadata["n"]))
		}
	}
	return strings.Join(out, ",")
}

func (f *fixture) putN(t *testing.T, bucket, key, n string, tags ...meta.Tag) meta.Object {
	t.Helper()
	o, err := f.svc.Put(context.Background(), f.alice, PutInput{Bucket: bucket, Key: key, Body: strings.NewReader("data " + n), Size: int64(len("data " + n)),
		Metadata: map[string]string{"n": n}, Tags: tags})
	if err != nil {
		t.Fatalf("Put %s: %v", key, err)
	}
	return o
}

// TestLifecycleDayBoundary: an object expires at the first midnight UTC
// at or after its creation plus Days, not a nanosecond before; a key the
// rule's prefix does not select stays.
func TestLifecycleDayBoundary(t *testing.T) {
	f := newFixture(t, 0)
	setRules(t, f, "alice-bucket", expireRule("logs", "logs/", 2))
	o := f.putN(t, "alice-bucket", "logs/a", "1")
	f.putN(t, "alice-bucket", "other/b", "1")
	at, rule, ok := meta.Lifecycle{Rules: []meta.LifecycleRule{expireRule("logs", "logs/", 2)}}.CurrentExpiry(o, meta.Lifecycle24h)
	if !ok || rule != "logs" || at.Hour() != 0 || at.Sub(o.ModTime) < 48*time.Hour || at.Sub(o.ModTime) > 72*time.Hour {
		t.Fatalf("expiry %v of an object made at %v", at, o.ModTime)
	}
	st := runAt(t, f, at.Add(-time.Nanosecond), nil)
	if got := keyVersions(t, f, "alice-bucket", "logs/a"); got != "v1" || st.Expired.Load() != 0 {
		t.Fatalf("a nanosecond before the boundary: %q, %d expired; want it kept", got, st.Expired.Load())
	}
	runAt(t, f, at, nil)
	if got := keyVersions(t, f, "alice-bucket", "logs/a"); got != "" || st.Expired.Load() != 1 {
		t.Errorf("at the boundary: %q, %d expired; want it gone", got, st.Expired.Load())
	}
	if got := keyVersions(t, f, "alice-bucket", "other/b"); got != "v1" {
		t.Errorf("a key outside the rule's prefix: %q, want kept", got)
	}
	// A short (test) day: the same rule, days of 2 seconds.
	f = newFixture(t, 0)
	setRules(t, f, "alice-bucket", expireRule("logs", "logs/", 2))
	o = f.putN(t, "alice-bucket", "logs/c", "1")
	day := meta.Day(2 * time.Second)
	at, _, _ = meta.Lifecycle{Rules: []meta.LifecycleRule{expireRule("logs", "logs/", 2)}}.CurrentExpiry(o, day)
	if d := at.Sub(o.ModTime); d < 4*time.Second || d > 6*time.Second {
		t.Fatalf("2 days of 2s after %v: %v", o.ModTime, at)
	}
	runAt(t, f, at.Add(-time.Millisecond), func(o *LifecycleOptions) { o.Day = day })
	if got := keyVersions(t, f, "alice-bucket", "logs/c"); got != "v1" {
		t.Errorf("short day, before the boundary: %q", got)
	}
	runAt(t, f, at, func(o *LifecycleOptions) { o.Day = day })
	if got := keyVersions(t, f, "alice-bucket", "logs/c"); got != "" {
		t.Errorf("short day, at the boundary: %q, want gone", got)
	}
}

// TestLifecycleVersioned: in a versioned bucket an expired current
// version gets a delete marker; noncurrent versions go NoncurrentDays
// after their successor was made, beyond the NewerNoncurrentVersions
// newest; a delete marker left alone is removed; an upload is aborted
// DaysAfterInitiation after it began.
func TestLifecycleVersioned(t *testing.T) {
	f := newFixture(t, 0)
	ctx := context.Background()
	if _, err := f.svc.SetBucketVersioning(ctx, f.alice, "alice-bucket", meta.VersioningEnabled); err != nil {
		t.Fatal(err)
	}
	setRules(t, f, "alice-bucket", expireRule("exp", "k", 1),
		meta.LifecycleRule{ID: "nc", Status: "Enabled", Filter: &meta.LifecycleFilter{Prefix: ptr("k")},
			NoncurrentVersionExpiration: &meta.NoncurrentExpiration{NoncurrentDays: ptr(1), NewerNoncurrentVersions: ptr(1)}},
		meta.LifecycleRule{ID: "dm", Status: "Enabled", Filter: &meta.LifecycleFilter{Prefix: ptr("m/")},
			Expiration: &meta.LifecycleExpiration{ExpiredObjectDeleteMarker: ptr(true)}},
		meta.LifecycleRule{ID: "mp", Status: "Enabled", Filter: &meta.LifecycleFilter{Prefix: ptr("u/")},
			AbortIncompleteMultipartUpload: &meta.AbortIncompleteUpload{DaysAfterInitiation: ptr(3)}})
	var last meta.Object
	for _, n := range []string{"1", "2", "3"} {
		last = f.putN(t, "alice-bucket", "k", n)
	}
	m := f.putN(t, "alice-bucket", "m/k", "1")
	if _, err := f.svc.Delete(ctx, f.alice, "alice-bucket", "m/k", meta.Cond{}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.DeleteVersion(ctx, f.alice, "alice-bucket", "m/k", m.VersionID, meta.Cond{}); err != nil {
		t.Fatal(err)
	}
	up, err := f.svc.CreateUpload(ctx, f.alice, CreateUploadInput{Bucket: "alice-bucket", Key: "u/big"})
	if err != nil {
		t.Fatal(err)
	}
	day := last.ModTime.UTC().Truncate(24 * time.Hour)
	st := runAt(t, f, day.Add(24*time.Hour-time.Nanosecond), nil)
	if got := keyVersions(t, f, "alice-bucket", "k"); got != "v3,v2,v1" || st.Expired.Load()+st.VersionsRemoved.Load() != 0 {
		t.Fatalf("before a day passed: %q", got)
	}
	// The marker rule has no days: a lone marker goes on the first run.
	if got := keyVersions(t, f, "alice-bucket", "m/k"); got != "" || st.MarkersRemoved.Load() != 1 {
		t.Errorf("a lone delete marker: %q, %d removed; want it removed", got, st.MarkersRemoved.Load())
	}
	runAt(t, f, day.Add(48*time.Hour), nil)
	// v3 expired (a marker on top); v1 went (v2 is the one newer
	// noncurrent version kept, as v3 is now).
	if got := keyVersions(t, f, "alice-bucket", "k"); got != "m,v3,v2" {
		t.Errorf("after a day: %q, want m,v3,v2", got)
	}
	runAt(t, f, day.Add(30*24*time.Hour), nil)
	if got := keyVersions(t, f, "alice-bucket", "k"); got != "m,v3" {
		t.Errorf("after 30 days: %q, want m,v3 (one newer noncurrent version kept)", got)
	}
	if _, err := f.meta.GetUpload(ctx, up.ID); !errcode.Is(err, errcode.NotFound) {
		t.Errorf("an upload 30 days old: %v, want aborted", err)
	}
	if st.Expired.Load() != 1 || st.VersionsRemoved.Load() != 2 || st.MarkersRemoved.Load() != 1 || st.UploadsAborted.Load() != 1 {
		t.Errorf("counters: expired %d, versions %d, markers %d, uploads %d; want 1, 2, 1, 1",
			st.Expired.Load(), st.VersionsRemoved.Load(), st.MarkersRemoved.Load(), st.UploadsAborted.Load())
	}
}

// TestLifecycleChangedBeforeDelete: what changed between a page's
// decision and its delete is not deleted: the rule (changed or removed),
// the version (overwritten), its tags (re-tagged), even when the tags
// change after the worker re-read the version (the delete is pinned to
// it, tags included).
func TestLifecycleChangedBeforeDelete(t *testing.T) {
	ctx := context.Background()
	tag := meta.Tag{Key: "tier", Value: "tmp"}
	tagged := meta.LifecycleRule{ID: "tmp", Status: "Enabled", Filter: &meta.LifecycleFilter{Tag: &tag}, Expiration: &meta.LifecycleExpiration{Days: ptr(1)}}
	later := time.Now().Add(10 * 24 * time.Hour)
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, f *fixture)
		// between runs inside the delete's step, after the re-read.
		between func(f *fixture) func(ctx context.Context, bucket, key string)
	}{
		{"rule changed", func(t *testing.T, f *fixture) {
			setRules(t, f, "alice-bucket", meta.LifecycleRule{ID: "tmp", Status: "Enabled", Filter: &meta.LifecycleFilter{Tag: &tag},
				Expiration: &meta.LifecycleExpiration{Days: ptr(100)}})
		}, nil},
		{"rule disabled", func(t *testing.T, f *fixture) {
			r := tagged
			r.Status = "Disabled"
			setRules(t, f, "alice-bucket", r)
		}, nil},
		{"rules removed", func(t *testing.T, f *fixture) {
			if err := f.meta.SetBucketLifecycle(ctx, "alice-bucket", nil); err != nil {
				t.Fatal(err)
			}
		}, nil},
		{"overwritten", func(t *testing.T, f *fixture) { f.putN(t, "alice-bucket", "k", "2") }, nil},
		{"re-tagged", func(t *testing.T, f *fixture) {
			if _, err := f.meta.SetObjectTags(ctx, "alice-bucket", "k", "", []meta.Tag{{Key: "tier", Value: "keep"}}); err != nil {
				t.Fatal(err)
			}
		}, nil},
		{"re-tagged inside the delete", nil, func(f *fixture) func(ctx context.Context, bucket, key string) {
			return func(ctx context.Context, bucket, key string) {
				if _, err := f.meta.SetObjectTags(ctx, bucket, key, "", []meta.Tag{{Key: "tier", Value: "keep"}}); err != nil {
					panic(err)
				}
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var hook *hookObjects
			f := newFixtureOver(t, 0, func(m meta.Stores) meta.Stores {
				hook = &hookObjects{Objects: m.Objects}
				m.Objects = hook
				return m
			})
			if tc.between != nil {
				hook.beforeDelete = tc.between(f)
			}
			setRules(t, f, "alice-bucket", tagged)
			f.putN(t, "alice-bucket", "k", "1", tag)
			st := runAt(t, f, later, func(o *LifecycleOptions) {
				if tc.change != nil {
					o.beforeDelete = func() { tc.change(t, f) }
				}
			})
			if got := keyVersions(t, f, "alice-bucket", "k"); got == "" {
				t.Errorf("the object was deleted")
			}
			if st.Expired.Load() != 0 || st.SkippedChanged.Load() != 1 {
				t.Errorf("expired %d, skipped (changed) %d; want 0, 1", st.Expired.Load(), st.SkippedChanged.Load())
			}
		})
	}
}

// hookObjects runs beforeDelete inside DeleteObject, before the store's
// (the moment between the worker's re-read and its delete), and refuses
// the keys in locked as object lock does.
type hookObjects struct {
	meta.Objects
	beforeDelete func(ctx context.Context, bucket, key string)
	locked       map[string]bool
}

func lockedErr() error {
	return &errcode.Error{Code: errcode.PermissionDenied, Message: "locked", Detail: map[string]any{"reason": "object_locked"}}
}

func (h *hookObjects) DeleteObject(ctx context.Context, bucket, key string, cond meta.Cond) (meta.Object, error) {
	if h.locked[key] {
		return meta.Object{}, lockedErr()
	}
	if h.beforeDelete != nil {
		h.beforeDelete(ctx, bucket, key)
	}
	return h.Objects.DeleteObject(ctx, bucket, key, cond)
}

func (h *hookObjects) DeleteVersion(ctx context.Context, bucket, key, versionID string, cond meta.Cond) (meta.Object, error) {
	if h.locked[key] {
		return meta.Object{}, lockedErr()
	}
	return h.Objects.DeleteVersion(ctx, bucket, key, versionID, cond)
}

// TestLifecycleSkipsLocked: a delete the store refuses as locked (object
// lock) is skipped and counted; the worker goes on with the rest.
func TestLifecycleSkipsLocked(t *testing.T) {
	var hook *hookObjects
	f := newFixtureOver(t, 0, func(m meta.Stores) meta.Stores {
		hook = &hookObjects{Objects: m.Objects, locked: map[string]bool{"a": true}}
		m.Objects = hook
		return m
	})
	setRules(t, f, "alice-bucket", expireRule("all", "", 1))
	f.putN(t, "alice-bucket", "a", "1")
	f.putN(t, "alice-bucket", "b", "1")
	st := runAt(t, f, time.Now().Add(10*24*time.Hour), nil)
	if got := keyVersions(t, f, "alice-bucket", "a"); got != "v1" {
		t.Errorf("a locked object: %q, want kept", got)
	}
	if got := keyVersions(t, f, "alice-bucket", "b"); got != "" {
		t.Errorf("an unlocked object: %q, want expired", got)
	}
	if st.SkippedLocked.Load() != 1 || st.Expired.Load() != 1 {
		t.Errorf("skipped (locked) %d, expired %d; want 1, 1", st.SkippedLocked.Load(), st.Expired.Load())
	}
}

// failingSaves fails SaveLifecycleRun from the n-th call on (a node
// that stops mid-run), and records the key markers the worker lists
// from.
type failingSaves struct {
	meta.Lifecycles
	n, calls int
}

func (s *failingSaves) SaveLifecycleRun(ctx context.Context, r meta.LifecycleRun, owner string, until, now time.Time) error {
	s.calls++
	if s.n > 0 && s.calls >= s.n {
		return errcode.New(errcode.Unavailable, "injected: the node stopped")
	}
	return s.Lifecycles.SaveLifecycleRun(ctx, r, owner, until, now)
}

type listMarkers struct {
	meta.Objects
	markers []string
}

func (l *listMarkers) ListObjectVersions(ctx context.Context, bucket string, opts meta.VersionListOptions) (meta.VersionPage, error) {
	l.markers = append(l.markers, opts.KeyMarker)
	return l.Objects.ListObjectVersions(ctx, bucket, opts)
}

// TestLifecycleResumes: a run that stops after some pages resumes from
// its saved cursor (on another node, once the lease lapsed), and every
// object due expires exactly once.
func TestLifecycleResumes(t *testing.T) {
	var (
		saves *failingSaves
		lists *listMarkers
	)
	f := newFixtureOver(t, 0, func(m meta.Stores) meta.Stores {
		saves = &failingSaves{Lifecycles: m.Lifecycles, n: 4} // the bucket, two pages, then the node stops
		lists = &listMarkers{Objects: m.Objects}
		m.Lifecycles, m.Objects = saves, lists
		return m
	})
	setRules(t, f, "alice-bucket", expireRule("all", "", 1))
	for i := range 45 {
		f.putN(t, "alice-bucket", fmt.Sprintf("k%02d", i), "1")
	}
	now := time.Now().Add(10 * 24 * time.Hour)
	opts := LifecycleOptions{Owner: "n1", Interval: time.Nanosecond, PageSize: 10, Lease: time.Minute, Now: func() time.Time { return now }}
	if _, err := f.svc.Lifecycle().RunOnce(context.Background(), opts); err == nil {
		t.Fatal("the stopped run reported no error")
	}
	st := f.svc.Lifecycle().Stats()
	left := 0
	for i := range 45 {
		if keyVersions(t, f, "alice-bucket", fmt.Sprintf("k%02d", i)) != "" {
			left++
		}
	}
	if left == 0 || left == 45 {
		t.Fatalf("after the stopped run %d objects are left; want some", left)
	}
	// Another node, once n1's lease lapsed: it resumes from the cursor.
	saves.n = 0
	lists.markers = nil
	later := now.Add(2 * time.Minute)
	opts.Owner, opts.Now = "n2", func() time.Time { return later }
	if ran, err := f.svc.Lifecycle().RunOnce(context.Background(), opts); err != nil || !ran {
		t.Fatalf("the resumed run: %v, %v", ran, err)
	}
	if len(lists.markers) == 0 || lists.markers[0] == "" {
		t.Errorf("the resumed run listed from %q, want from the saved cursor", lists.markers)
	}
	for i := range 45 {
		if got := keyVersions(t, f, "alice-bucket", fmt.Sprintf("k%02d", i)); got != "" {
			t.Errorf("k%02d: %q after the resumed run", i, got)
		}
	}
	if st.Expired.Load() != 45 {
		t.Errorf("expired %d, want 45 (each once)", st.Expired.Load())
	}
	// The run finished: the next starts only an interval later.
	opts.Interval = time.Hour
	if ran, err := f.svc.Lifecycle().RunOnce(context.Background(), opts); err != nil || ran {
		t.Errorf("a run right after a finished one: %v, %v; want none", ran, err)
	}
}

// TestLifecycleGatewayBucket: a gateway bucket has no lifecycle in
// Coffer: its configuration operations are NotImplemented (not the
// store's Conflict), reading and writing alike.
func TestLifecycleGatewayBucket(t *testing.T) {
	f := newFixture(t, 0)
	ctx := context.Background()
	if err := f.meta.PutGatewayBucket(ctx, meta.Bucket{Name: "gate", OwnerID: "alice", Gateway: "s3://b?endpoint=http://127.0.0.1:1"}); err != nil {
		t.Fatal(err)
	}
	lc := &meta.Lifecycle{Rules: []meta.LifecycleRule{expireRule("r", "", 1)}}
	if err := f.svc.SetBucketLifecycle(ctx, f.alice, "gate", lc); !errcode.Is(err, errcode.NotImplemented) {
		t.Errorf("SetBucketLifecycle of a gateway bucket: %v, want NotImplemented", err)
	}
	if _, err := f.svc.GetBucketLifecycle(ctx, f.alice, "gate"); !errcode.Is(err, errcode.NotImplemented) {
		t.Errorf("GetBucketLifecycle of a gateway bucket: %v, want NotImplemented", err)
	}
	if err := f.svc.SetBucketLifecycle(ctx, f.bob, "alice-bucket", lc); !errcode.Is(err, errcode.PermissionDenied) {
		t.Errorf("SetBucketLifecycle of another's bucket: %v, want PermissionDenied", err)
	}
}

// TestLifecycleRealLock: with object lock itself (not a fake refusal),
// the worker removes no version under retention or a legal hold, however
// far its own clock has run: the store decides a lock at its own clock,
// inside the delete's transaction. A delete marker on top is allowed (S3:
// a delete without a version ID is never refused by a lock).
func TestLifecycleRealLock(t *testing.T) {
	f := newFixture(t, 0)
	ctx := context.Background()
	if _, err := f.svc.CreateLockedBucket(ctx, f.alice, "locked", meta.Private); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.SetObjectLock(ctx, f.alice, "locked", meta.DefaultRetention{Mode: meta.Governance, Days: 30}); err != nil {
		t.Fatal(err)
	}
	setRules(t, f, "locked", expireRule("exp", "", 1),
		meta.LifecycleRule{ID: "nc", Status: "Enabled", Filter: &meta.LifecycleFilter{},
			NoncurrentVersionExpiration: &meta.NoncurrentExpiration{NoncurrentDays: ptr(1)}})
	for _, n := range []string{"1", "2", "3"} {
		f.putN(t, "locked", "k", n)
	}
	if _, err := f.svc.SetObjectLock(ctx, f.alice, "locked", meta.DefaultRetention{}); err != nil {
		t.Fatal(err)
	}
	h := f.putN(t, "locked", "h", "1") // no retention: a legal hold only
	if _, err := f.svc.SetLegalHold(ctx, f.alice, "locked", "h", h.VersionID, true); err != nil {
		t.Fatal(err)
	}
	var st *LifecycleStats
	for _, days := range []int{2, 40, 400} {
		st = runAt(t, f, time.Now().Add(time.Duration(days)*24*time.Hour), nil)
	}
	if got := keyVersions(t, f, "locked", "k"); got != "m,v3,v2,v1" {
		t.Errorf("versions under GOVERNANCE retention: %q, want m,v3,v2,v1 (a marker on top, every version kept)", got)
	}
	if got := keyVersions(t, f, "locked", "h"); got != "m,v1" {
		t.Errorf("a version under a legal hold: %q, want m,v1", got)
	}
	if st.SkippedLocked.Load() == 0 || st.VersionsRemoved.Load() != 0 {
		t.Errorf("skipped (locked) %d, versions removed %d; want some skipped, none removed", st.SkippedLocked.Load(), st.VersionsRemoved.Load())
	}
}
