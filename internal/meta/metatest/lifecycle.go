package metatest

import (
	"reflect"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

var lifecycleTests = []test{
	{name: "Configuration", fn: testLifecycleConfiguration},
	{name: "Lease", fn: testLifecycleLease},
	{name: "PinnedDelete", fn: testPinnedDelete},
}

// testPinnedDelete: a delete pinned to a version and its tags
// (Cond.IfVersion, Cond.IfTags), as lifecycle makes them, fails once the
// tags changed, in a versioned bucket and in one never versioned.
func testPinnedDelete(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	addBucket(t, s, "vers", "alice")
	ok(t, s.SetBucketVersioning(ctx, "vers", meta.VersioningEnabled), "SetBucketVersioning")
	for _, bucket := range []string{"alice", "vers"} {
		o := obj(bucket, "k", 10)
		o.Tags = []meta.Tag{{Key: "tier", Value: "tmp"}}
		putVersion(t, s, o)
		cur, err := s.GetObject(ctx, bucket, "k")
		ok(t, err, "GetObject")
		pin := meta.Cond{IfVersion: meta.Version(cur), IfTags: meta.TagsKey(cur.Tags)}
		_, err = s.SetObjectTags(ctx, bucket, "k", "", []meta.Tag{{Key: "tier", Value: "keep"}})
		ok(t, err, "SetObjectTags")
		_, err = s.DeleteObject(ctx, bucket, "k", pin)
		wantCode(t, err, errcode.PreconditionFailed, bucket+": DeleteObject pinned to the old tags")
		_, err = s.DeleteVersion(ctx, bucket, "k", cur.VersionID, pin)
		wantCode(t, err, errcode.PreconditionFailed, bucket+": DeleteVersion pinned to the old tags")
		cur, err = s.GetObject(ctx, bucket, "k")
		ok(t, err, "GetObject after the refused deletes")
		_, err = s.DeleteVersion(ctx, bucket, "k", cur.VersionID, meta.Cond{IfVersion: meta.Version(cur), IfTags: meta.TagsKey(cur.Tags)})
		ok(t, err, bucket+": DeleteVersion pinned to the tags as they are")
	}
}

func testLifecycleConfiguration(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	addUser(t, s, "bob", 0)
	_, err := s.GetBucketLifecycle(ctx, "alice")
	wantCode(t, err, errcode.NotFound, "GetBucketLifecycle of a bucket without one")
	if e := errcode.As(err); e.Detail["resource"] != "lifecycle" {
		t.Errorf("GetBucketLifecycle without one: detail %v, want resource lifecycle", e.Detail)
	}
	days, prefix := 3, "logs/"
	lc := meta.Lifecycle{Rules: []meta.LifecycleRule{{ID: "r1", Status: "Enabled", Filter: &meta.LifecycleFilter{Prefix: &prefix},
		Expiration: &meta.LifecycleExpiration{Days: &days}}}}
	ok(t, s.SetBucketLifecycle(ctx, "alice", &lc), "SetBucketLifecycle")
	got, err := s.GetBucketLifecycle(ctx, "alice")
	ok(t, err, "GetBucketLifecycle")
	if !reflect.DeepEqual(got.Rules, lc.Rules) {
		t.Errorf("GetBucketLifecycle = %+v, want %+v", got.Rules, lc.Rules)
	}
	// The configuration is part of the bucket record (a cache must drop
	// the record when it changes).
	if b, err := s.GetBucket(ctx, "alice"); err != nil || b.Lifecycle == nil || !reflect.DeepEqual(b.Lifecycle.Rules, lc.Rules) {
		t.Errorf("GetBucket after SetBucketLifecycle: %+v, %v; want its Lifecycle", b.Lifecycle, err)
	}
	bad := meta.Lifecycle{Rules: []meta.LifecycleRule{{ID: "r1", Status: "Enabled"}}}
	wantCode(t, s.SetBucketLifecycle(ctx, "alice", &bad), errcode.InvalidArgument, "SetBucketLifecycle without an action")
	if got, err := s.GetBucketLifecycle(ctx, "alice"); err != nil || !reflect.DeepEqual(got.Rules, lc.Rules) {
		t.Errorf("after a refused SetBucketLifecycle: %+v, %v; want the first", got, err)
	}
	ok(t, s.SetBucketLifecycle(ctx, "bob", &lc), "SetBucketLifecycle bob")
	list, err := s.ListLifecycleBuckets(ctx, "", 0)
	ok(t, err, "ListLifecycleBuckets")
	if len(list) != 2 || list[0].Bucket != "alice" || list[1].Bucket != "bob" || !reflect.DeepEqual(list[0].Lifecycle.Rules, lc.Rules) {
		t.Errorf("ListLifecycleBuckets = %+v, want alice and bob", list)
	}
	if list, err := s.ListLifecycleBuckets(ctx, "alice", 0); err != nil || len(list) != 1 || list[0].Bucket != "bob" {
		t.Errorf("ListLifecycleBuckets after alice = %+v, %v; want bob", list, err)
	}
	ok(t, s.SetBucketLifecycle(ctx, "alice", nil), "SetBucketLifecycle nil")
	_, err = s.GetBucketLifecycle(ctx, "alice")
	wantCode(t, err, errcode.NotFound, "GetBucketLifecycle after it was removed")
	if b, err := s.GetBucket(ctx, "alice"); err != nil || b.Lifecycle != nil {
		t.Errorf("GetBucket after the lifecycle was removed: %+v, %v; want none", b.Lifecycle, err)
	}
	if list, err := s.ListLifecycleBuckets(ctx, "", 0); err != nil || len(list) != 1 {
		t.Errorf("ListLifecycleBuckets after alice's was removed = %+v, %v; want bob only", list, err)
	}
	wantCode(t, s.SetBucketLifecycle(ctx, "nope", &lc), errcode.NotFound, "SetBucketLifecycle of a missing bucket")
	_, err = s.GetBucketLifecycle(ctx, "nope")
	wantCode(t, err, errcode.NotFound, "GetBucketLifecycle of a missing bucket")
	if e := errcode.As(err); e.Detail["resource"] == "lifecycle" {
		t.Errorf("GetBucketLifecycle of a missing bucket: %v, want the bucket missing", err)
	}
	ok(t, s.PutGatewayBucket(ctx, meta.Bucket{Name: "gate", OwnerID: "alice", Gateway: "s3://b?endpoint=http://127.0.0.1:1"}), "PutGatewayBucket")
	wantCode(t, s.SetBucketLifecycle(ctx, "gate", &lc), errcode.Conflict, "SetBucketLifecycle of a gateway bucket")
}

func testLifecycleLease(t *testing.T, s store) {
	ctx := t.Context()
	now := time.Now().Truncate(time.Millisecond).UTC()
	r, got, err := s.AcquireLifecycleRun(ctx, "n1", now.Add(time.Minute), now)
	ok(t, err, "AcquireLifecycleRun")
	if !got || r.Cursor != "" || r.LeaseOwner != "n1" {
		t.Fatalf("first AcquireLifecycleRun = %+v, %v; want a fresh run held by n1", r, got)
	}
	if _, got, err := s.AcquireLifecycleRun(ctx, "n2", now.Add(time.Minute), now); err != nil || got {
		t.Errorf("AcquireLifecycleRun by n2 while n1 holds it = %v, %v; want refused", got, err)
	}
	r.Cursor, r.StartedAt = `{"b":"x"}`, now
	ok(t, s.SaveLifecycleRun(ctx, r, "n1", now.Add(time.Minute), now), "SaveLifecycleRun")
	wantCode(t, s.SaveLifecycleRun(ctx, r, "n2", now.Add(time.Minute), now), errcode.Conflict, "SaveLifecycleRun by n2")
	// n1's lease lapses: n2 takes the run, with the cursor n1 saved.
	later := now.Add(2 * time.Minute)
	r2, got, err := s.AcquireLifecycleRun(ctx, "n2", later.Add(time.Minute), later)
	ok(t, err, "AcquireLifecycleRun after the lease lapsed")
	if !got || r2.Cursor != r.Cursor || !r2.StartedAt.Equal(now) || r2.LeaseOwner != "n2" {
		t.Errorf("AcquireLifecycleRun after the lease lapsed = %+v, %v; want n2 with n1's cursor", r2, got)
	}
	wantCode(t, s.SaveLifecycleRun(ctx, r, "n1", later.Add(time.Minute), later), errcode.Conflict, "SaveLifecycleRun by n1 after it lost the lease")
}
