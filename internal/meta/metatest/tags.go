package metatest

import (
	"fmt"
	"slices"
	"testing"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

// Tags (meta/tags.go): an object version's tag set, written with the
// version or replaced in place; a multipart upload's, carried to its
// object; a bucket's.
var tagTests = []test{
	{name: "ObjectTags", fn: testObjectTags},
	{name: "VersionTags", fn: testVersionTags},
	{name: "WritesReplaceTags", fn: testWritesReplaceTags},
	{name: "UploadTags", fn: testUploadTags},
	{name: "BucketTags", fn: testBucketTags},
}

var (
	tagsA = []meta.Tag{{Key: "project", Value: "coffer"}, {Key: "tier", Value: "gold"}}
	tagsB = []meta.Tag{{Key: "owner", Value: "ops team"}}
)

// setTags sets the tags of a version and fails unless the store answers
// with the version named.
func setTags(t *testing.T, s store, o meta.Object, versionID string, tags []meta.Tag) meta.Object {
	t.Helper()
	got, err := s.SetObjectTags(t.Context(), o.Bucket, o.Key, versionID, tags)
	ok(t, err, fmt.Sprintf("SetObjectTags %s %q", o.Key, versionID))
	if got.VersionID != o.VersionID || got.IsLatest != o.IsLatest || !slices.Equal(got.Tags, tags) {
		t.Errorf("SetObjectTags %s %q answered version %q latest %v tags %v; want %q latest %v tags %v",
			o.Key, versionID, got.VersionID, got.IsLatest, got.Tags, o.VersionID, o.IsLatest, tags)
	}
	o.Tags = tags
	return o
}

func testObjectTags(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	o := obj("alice", "k", 10)
	o.Tags = tagsA
	o = putVersion(t, s, o)
	wantObject(t, s, o)
	// Replaced whole, in place: same version, ETag, time; no new version.
	o = setTags(t, s, o, "", tagsB)
	wantObject(t, s, o)
	wantVersions(t, s, "alice", vid(o, "L"))
	o = setTags(t, s, o, meta.NullVersion, tagsA)
	wantObject(t, s, o)
	// Listings leave the tags out.
	page, err := s.ListObjects(ctx, "alice", meta.ListOptions{})
	ok(t, err, "ListObjects")
	if len(page.Objects) != 1 || page.Objects[0].Tags != nil {
		t.Errorf("ListObjects = %+v, want one object without tags", page.Objects)
	}
	// Bad tag sets change nothing.
	eleven := make([]meta.Tag, 11)
	for i := range eleven {
		eleven[i] = meta.Tag{Key: fmt.Sprint("k", i)}
	}
	for name, bad := range map[string][]meta.Tag{
		"eleven tags": eleven, "a duplicate key": {{Key: "a"}, {Key: "a"}}, "an aws: key": {{Key: "aws:x"}}, "an empty key": {{Value: "v"}},
	} {
		_, err := s.SetObjectTags(ctx, "alice", "k", "", bad)
		wantCode(t, err, errcode.InvalidArgument, "SetObjectTags with "+name)
		bad := obj("alice", "k2", 1)
		bad.Tags = eleven
		_, err = s.PutObjects(ctx, []meta.Put{{Object: bad}})
		wantCode(t, err, errcode.InvalidArgument, "PutObjects with "+name)
	}
	wantObject(t, s, o)
	wantMissing(t, s, "alice", "k2")
	// Removed.
	o = setTags(t, s, o, "", nil)
	wantObject(t, s, o)
	_, err = s.SetObjectTags(ctx, "alice", "missing", "", tagsA)
	wantCode(t, err, errcode.NotFound, "SetObjectTags of a missing key")
	_, err = s.SetObjectTags(ctx, "nope", "k", "", tagsA)
	wantCode(t, err, errcode.NotFound, "SetObjectTags in a missing bucket")
	_, err = s.SetObjectTags(ctx, "alice", "k", meta.NewVersionID(baseTime, ""), tagsA)
	wantCode(t, err, errcode.NotFound, "SetObjectTags of a missing version")
	if e := errcode.As(err); e.Detail["reason"] != "no_such_version" {
		t.Errorf("SetObjectTags of a missing version: detail %v", e.Detail)
	}
}

func testVersionTags(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	setVersioning(t, s, "alice", meta.VersioningEnabled)
	v1 := putVersion(t, s, obj("alice", "k", 10))
	v2 := putVersion(t, s, obj("alice", "k", 20))
	v1.IsLatest = false
	v1 = setTags(t, s, v1, v1.VersionID, tagsA)
	wantVersion(t, s, v1)
	wantObject(t, s, v2) // the latest has none
	v2 = setTags(t, s, v2, "", tagsB)
	wantVersion(t, s, v2)
	wantVersion(t, s, v1)
	wantVersions(t, s, "alice", vid(v2, "L"), vid(v1, ""))
	// A delete marker has no tags: the latest one reads as a missing key,
	// a named one is refused.
	m, err := s.DeleteObject(ctx, "alice", "k", meta.Cond{})
	ok(t, err, "DeleteObject")
	_, err = s.SetObjectTags(ctx, "alice", "k", "", tagsA)
	wantCode(t, err, errcode.NotFound, "SetObjectTags of a key whose latest version is a delete marker")
	if e := errcode.As(err); e.Detail["delete_marker"] != true || e.Detail["version_id"] != m.VersionID {
		t.Errorf("SetObjectTags of a deleted key: detail %v, want the delete marker %s", e.Detail, m.VersionID)
	}
	_, err = s.SetObjectTags(ctx, "alice", "k", m.VersionID, tagsA)
	wantCode(t, err, errcode.MethodNotAllowed, "SetObjectTags of a delete marker by its version")
	// The versions behind the marker keep theirs, and can still be tagged.
	v2.IsLatest = false
	wantVersion(t, s, v2)
	v1 = setTags(t, s, v1, v1.VersionID, nil)
	wantVersion(t, s, v1)
}

func testWritesReplaceTags(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	o := obj("alice", "k", 10)
	o.Tags = tagsA
	putVersion(t, s, o)
	// An overwrite is a new version: the tags it brings, or none.
	o2 := putVersion(t, s, obj("alice", "k", 5))
	wantObject(t, s, o2)
	// A job rewriting a version in place keeps its tags, even those set
	// after it read the version.
	o2 = setTags(t, s, o2, "", tagsB)
	cur, err := s.GetObject(ctx, "alice", "k")
	ok(t, err, "GetObject")
	setTags(t, s, o2, "", tagsA)
	re := cur
	re.BlobKey = fmt.Sprintf("blob/re-%d", seq.Add(1))
	re.Tags = nil
	_, err = s.PutObjects(ctx, []meta.Put{{Object: re, InPlace: true, Cond: meta.Cond{IfVersion: meta.Version(cur)}}})
	ok(t, err, "PutObjects InPlace")
	re.Tags = tagsA
	wantObject(t, s, re)
}

func testUploadTags(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	u := newUpload("alice", "mp")
	u.Tags = tagsA
	ok(t, s.CreateUpload(ctx, u), "CreateUpload with tags")
	got, err := s.GetUpload(ctx, u.ID)
	ok(t, err, "GetUpload")
	if !slices.Equal(got.Tags, tagsA) {
		t.Errorf("GetUpload tags = %v, want %v", got.Tags, tagsA)
	}
	// What the object service completes it with (the upload's tags).
	ps := putParts(t, s, u.ID, 5, 7)
	in := completion(len(ps))
	in.Tags = got.Tags
	o, err := s.CompleteUpload(ctx, u.ID, in, completeOf(ps...), 0, meta.Cond{})
	ok(t, err, "CompleteUpload")
	want := completed(u, in, ps...)
	want.Tags = tagsA
	sameObject(t, o, want, "CompleteUpload result")
	wantObject(t, s, want)
	bad := newUpload("alice", "mp2")
	bad.Tags = []meta.Tag{{Key: "aws:reserved", Value: "v"}}
	wantCode(t, s.CreateUpload(ctx, bad), errcode.InvalidArgument, "CreateUpload with a reserved tag key")
}

func testBucketTags(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	wantNoTagSet := func(what string) {
		t.Helper()
		_, err := s.GetBucketTags(ctx, "alice")
		wantCode(t, err, errcode.NotFound, what)
		if e := errcode.As(err); e.Detail["resource"] != "tag_set" {
			t.Errorf("%s: detail %v, want resource tag_set", what, e.Detail)
		}
	}
	wantNoTagSet("GetBucketTags of a new bucket")
	fifty := make([]meta.Tag, 50)
	for i := range fifty {
		fifty[i] = meta.Tag{Key: fmt.Sprint("key-", i), Value: fmt.Sprint(i)}
	}
	for _, tags := range [][]meta.Tag{tagsA, fifty} {
		ok(t, s.SetBucketTags(ctx, "alice", tags), "SetBucketTags")
		got, err := s.GetBucketTags(ctx, "alice")
		ok(t, err, "GetBucketTags")
		if !slices.Equal(got, tags) {
			t.Errorf("GetBucketTags = %v, want %v", got, tags)
		}
	}
	wantCode(t, s.SetBucketTags(ctx, "alice", append(fifty, meta.Tag{Key: "one-more"})), errcode.InvalidArgument, "SetBucketTags of 51")
	if got, err := s.GetBucketTags(ctx, "alice"); err != nil || len(got) != 50 {
		t.Errorf("after a refused SetBucketTags: %d tags, %v; want the 50", len(got), err)
	}
	if _, err := s.GetBucket(ctx, "alice"); err != nil {
		t.Errorf("GetBucket of a tagged bucket: %v", err)
	}
	ok(t, s.SetBucketTags(ctx, "alice", nil), "SetBucketTags nil")
	wantNoTagSet("GetBucketTags after the tags were removed")
	wantCode(t, s.SetBucketTags(ctx, "nope", tagsA), errcode.NotFound, "SetBucketTags of a missing bucket")
	_, err := s.GetBucketTags(ctx, "nope")
	wantCode(t, err, errcode.NotFound, "GetBucketTags of a missing bucket")
	if e := errcode.As(err); e.Detail["resource"] == "tag_set" {
		t.Errorf("GetBucketTags of a missing bucket: %v, want the bucket missing", err)
	}
	ok(t, s.PutGatewayBucket(ctx, meta.Bucket{Name: "gate", OwnerID: "alice", Gateway: "s3://b?endpoint=http://127.0.0.1:1"}), "PutGatewayBucket")
	wantCode(t, s.SetBucketTags(ctx, "gate", tagsA), errcode.Conflict, "SetBucketTags of a gateway bucket")
}
