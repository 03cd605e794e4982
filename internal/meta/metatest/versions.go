package metatest

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

// Versions (meta/versions.go): a bucket's versioning state, the versions
// and delete markers of a key, the null version's rules, listings of
// versions, and what quotas, stats, moves and the encryption jobs make of
// them.
var versionTests = []test{
	{name: "SetVersioning", fn: testSetVersioning},
	{name: "EnabledKeepsVersions", fn: testEnabledKeepsVersions},
	{name: "DeleteMarker", fn: testDeleteMarker},
	{name: "DeleteVersionPromotes", fn: testDeleteVersionPromotes},
	{name: "SuspendedNullVersion", fn: testSuspendedNullVersion},
	{name: "UnversionedNullVersion", fn: testUnversionedNullVersion},
	{name: "ListVersions", fn: testListVersions},
	{name: "ListVersionsPaging", fn: testListVersionsPaging},
	{name: "ListDeleted", fn: testListDeleted},
	{name: "QuotaCountsVersions", fn: testQuotaCountsVersions},
	{name: "StagingCredit", fn: testVersionStagingCredit},
	{name: "BucketNotEmpty", fn: testVersionsKeepBucket},
	{name: "MoveRefused", fn: testMoveVersioned},
	{name: "MultipartVersions", fn: testMultipartVersions},
	{name: "InPlace", fn: testInPlaceVersion},
	{name: "Envelopes", fn: testVersionEnvelopes},
	{name: "ConcurrentOneLatest", fn: testConcurrentOneLatest},
}

// versioned makes a bucket name owned by owner (created with the user)
// with versioning v.
func setVersioning(t *testing.T, s store, bucket string, v meta.Versioning) {
	t.Helper()
	ok(t, s.SetBucketVersioning(t.Context(), bucket, v), fmt.Sprintf("SetBucketVersioning %s %q", bucket, v))
}

// putVersion stores o with one PutObjects and returns it as stored.
func putVersion(t *testing.T, s store, o meta.Object) meta.Object {
	t.Helper()
	res, err := s.PutObjects(t.Context(), []meta.Put{{Object: o}})
	ok(t, err, "PutObjects "+o.Key)
	got := res[0].Object
	if !got.IsLatest || !meta.ValidVersionID(got.VersionID) {
		t.Fatalf("PutObjects stored %s as version %q, latest %v", o.Key, got.VersionID, got.IsLatest)
	}
	sameObject(t, got, o, "the stored version")
	return got
}

// versionsOf lists every version of bucket (one page).
func versionsOf(t *testing.T, s store, bucket string) []meta.Object {
	t.Helper()
	p, err := s.ListObjectVersions(t.Context(), bucket, meta.VersionListOptions{})
	ok(t, err, "ListObjectVersions "+bucket)
	if p.Truncated {
		t.Fatal("ListObjectVersions truncated")
	}
	return p.Versions
}

// describe writes versions as key@version(flags) for comparisons.
func describe(vs []meta.Object) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		flags := ""
		if v.IsLatest {
			flags += "L"
		}
		if v.DeleteMarker {
			flags += "M"
		}
		out[i] = fmt.Sprintf("%s@%s(%s)", v.Key, v.VersionID, flags)
	}
	return out
}

// wantVersions fails unless bucket's versions are want (describe's form).
func wantVersions(t *testing.T, s store, bucket string, want ...string) {
	t.Helper()
	if got := describe(versionsOf(t, s, bucket)); !slices.Equal(got, want) {
		t.Errorf("versions of %s:\n\t%q\nwant\n\t%q", bucket, got, want)
	}
}

// vid is how describe writes a version.
func vid(o meta.Object, flags string) string {
	return fmt.Sprintf("%s@%s(%s)", o.Key, o.VersionID, flags)
}

// wantVersion fails unless version id of bucket/key is want (latest or
// not as want says).
func wantVersion(t *testing.T, s store, want meta.Object) {
	t.Helper()
	got, err := s.GetObjectVersion(t.Context(), want.Bucket, want.Key, want.VersionID)
	ok(t, err, fmt.Sprintf("GetObjectVersion %s %s", want.Key, want.VersionID))
	sameObject(t, got, want, "version "+want.VersionID)
	if got.VersionID != want.VersionID || got.IsLatest != want.IsLatest || got.DeleteMarker != want.DeleteMarker {
		t.Errorf("version %s of %s: id %q latest %v marker %v, want latest %v marker %v", want.VersionID, want.Key,
			got.VersionID, got.IsLatest, got.DeleteMarker, want.IsLatest, want.DeleteMarker)
	}
}

// wantDeleteMarker fails unless GetObject of bucket/key answers that its
// latest version is the delete marker id.
func wantDeleteMarker(t *testing.T, s store, bucket, key, id string) {
	t.Helper()
	_, err := s.GetObject(t.Context(), bucket, key)
	wantCode(t, err, errcode.NotFound, "GetObject of a deleted key")
	if e := errcode.As(err); e.Detail["delete_marker"] != true || e.Detail["version_id"] != id {
		t.Errorf("GetObject of a deleted key: detail %v, want the delete marker %s", e.Detail, id)
	}
}

func testSetVersioning(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	b, err := s.GetBucket(ctx, "alice")
	ok(t, err, "GetBucket")
	if b.Versioning != meta.Unversioned {
		t.Errorf("a new bucket's versioning = %q, want unversioned", b.Versioning)
	}
	for _, v := range []meta.Versioning{meta.VersioningEnabled, meta.VersioningSuspended, meta.VersioningEnabled} {
		setVersioning(t, s, "alice", v)
		b, err := s.GetBucket(ctx, "alice")
		ok(t, err, "GetBucket")
		if b.Versioning != v {
			t.Errorf("versioning = %q, want %q", b.Versioning, v)
		}
	}
	for _, v := range []meta.Versioning{meta.Unversioned, "enabled", "Off"} {
		wantCode(t, s.SetBucketVersioning(ctx, "alice", v), errcode.InvalidArgument, fmt.Sprintf("SetBucketVersioning %q", v))
	}
	wantCode(t, s.SetBucketVersioning(ctx, "nope", meta.VersioningEnabled), errcode.NotFound, "SetBucketVersioning of a missing bucket")
	ok(t, s.PutGatewayBucket(ctx, meta.Bucket{Name: "gate", OwnerID: "alice", Gateway: "s3://b?endpoint=http://127.0.0.1:1"}), "PutGatewayBucket")
	wantCode(t, s.SetBucketVersioning(ctx, "gate", meta.VersioningEnabled), errcode.Conflict, "SetBucketVersioning of a gateway bucket")
	if b, err := s.GetBucket(ctx, "alice"); err != nil || b.Versioning != meta.VersioningEnabled {
		t.Errorf("after the refusals: %q, %v; want Enabled", b.Versioning, err)
	}
}

func testEnabledKeepsVersions(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	setVersioning(t, s, "alice", meta.VersioningEnabled)
	v1 := putVersion(t, s, obj("alice", "k", 10))
	v2 := putVersion(t, s, obj("alice", "k", 20))
	if v1.VersionID == meta.NullVersion || v2.VersionID == v1.VersionID || v2.VersionID > v1.VersionID {
		t.Errorf("version IDs %q then %q: want two IDs, the newer sorting first", v1.VersionID, v2.VersionID)
	}
	wantObject(t, s, v2)
	v1.IsLatest = false
	wantVersion(t, s, v1)
	wantVersion(t, s, v2)
	wantUsage(t, s, "alice", 30)
	wantGarbage(t, s)
	wantVersions(t, s, "alice", vid(v2, "L"), vid(v1, ""))
	page, err := s.ListObjects(ctx, "alice", meta.ListOptions{})
	ok(t, err, "ListObjects")
	if len(page.Objects) != 1 || page.Objects[0].ETag != v2.ETag || !page.Objects[0].IsLatest {
		t.Errorf("ListObjects = %q, want the latest version only", describe(page.Objects))
	}
	_, err = s.GetObjectVersion(ctx, "alice", "k", meta.NullVersion)
	wantCode(t, err, errcode.NotFound, "GetObjectVersion of a null version that is not there")
	if e := errcode.As(err); e.Detail["reason"] != "no_such_version" {
		t.Errorf("no such version: detail %v", e.Detail)
	}
	_, err = s.GetObjectVersion(ctx, "nope", "k", v1.VersionID)
	wantCode(t, err, errcode.NotFound, "GetObjectVersion in a missing bucket")
	// A condition applies to the latest version.
	_, err = s.PutObjects(ctx, []meta.Put{{Object: obj("alice", "k", 1), Cond: meta.Cond{IfMatch: v1.ETag}}})
	wantCode(t, err, errcode.PreconditionFailed, "IfMatch of an older version")
	_, err = s.PutObjects(ctx, []meta.Put{{Object: obj("alice", "k", 1), Cond: meta.Cond{IfNoneMatch: true}}})
	wantCode(t, err, errcode.PreconditionFailed, "IfNoneMatch on a versioned key")
	wantUsage(t, s, "alice", 30)
}

func testDeleteMarker(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	setVersioning(t, s, "alice", meta.VersioningEnabled)
	v1 := putVersion(t, s, obj("alice", "k", 10))
	m, err := s.DeleteObject(ctx, "alice", "k", meta.Cond{})
	ok(t, err, "DeleteObject")
	if !m.DeleteMarker || !m.IsLatest || m.VersionID == meta.NullVersion || !meta.ValidVersionID(m.VersionID) {
		t.Fatalf("DeleteObject in an enabled bucket returned %+v, want a delete marker", m)
	}
	wantDeleteMarker(t, s, "alice", "k", m.VersionID)
	wantVersion(t, s, m)
	v1.IsLatest = false
	wantVersion(t, s, v1)
	wantUsage(t, s, "alice", 10)
	wantGarbage(t, s)
	page, err := s.ListObjects(ctx, "alice", meta.ListOptions{})
	ok(t, err, "ListObjects")
	if len(page.Objects) != 0 {
		t.Errorf("ListObjects of a deleted key = %q", describe(page.Objects))
	}
	// A delete of a deleted key adds another marker; a condition on it
	// fails (there is no object).
	_, err = s.DeleteObject(ctx, "alice", "k", meta.Cond{IfMatch: "*"})
	wantCode(t, err, errcode.PreconditionFailed, "IfMatch delete of a deleted key")
	m2, err := s.DeleteObject(ctx, "alice", "k", meta.Cond{})
	ok(t, err, "DeleteObject again")
	m.IsLatest = false
	wantVersions(t, s, "alice", vid(m2, "LM"), vid(m, "M"), vid(v1, ""))
	// A delete of a key that never was writes a marker too.
	m3, err := s.DeleteObject(ctx, "alice", "never", meta.Cond{})
	ok(t, err, "DeleteObject of a missing key")
	wantDeleteMarker(t, s, "alice", "never", m3.VersionID)
	// Deleting the markers brings the object back.
	for _, id := range []string{m2.VersionID, m.VersionID} {
		got, err := s.DeleteVersion(ctx, "alice", "k", id, meta.Cond{})
		ok(t, err, "DeleteVersion of a marker")
		if !got.DeleteMarker || got.VersionID != id {
			t.Errorf("DeleteVersion returned %+v, want the marker %s", got, id)
		}
	}
	v1.IsLatest = true
	wantObject(t, s, v1)
	wantVersion(t, s, v1)
	wantVersions(t, s, "alice", vid(v1, "L"), vid(m3, "LM"))
	wantUsage(t, s, "alice", 10)
	wantGarbage(t, s)
	_, err = s.DeleteVersion(ctx, "alice", "k", m.VersionID, meta.Cond{})
	wantCode(t, err, errcode.NotFound, "DeleteVersion of a deleted marker")
	_, err = s.DeleteVersion(ctx, "nope", "k", m.VersionID, meta.Cond{})
	wantCode(t, err, errcode.NotFound, "DeleteVersion in a missing bucket")
}

func testDeleteVersionPromotes(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	setVersioning(t, s, "alice", meta.VersioningEnabled)
	v1 := putVersion(t, s, obj("alice", "k", 1))
	v2 := putVersion(t, s, obj("alice", "k", 2))
	v3 := putVersion(t, s, obj("alice", "k", 4))
	// A version in the middle: the latest stays.
	got, err := s.DeleteVersion(ctx, "alice", "k", v2.VersionID, meta.Cond{})
	ok(t, err, "DeleteVersion of a noncurrent version")
	v2.IsLatest = false
	sameObject(t, got, v2, "the deleted version")
	wantObject(t, s, v3)
	wantGarbage(t, s, v2.BlobKey)
	wantUsage(t, s, "alice", 5)
	// The latest: the next newest becomes the latest.
	_, err = s.DeleteVersion(ctx, "alice", "k", v3.VersionID, meta.Cond{IfMatch: v1.ETag})
	wantCode(t, err, errcode.PreconditionFailed, "DeleteVersion with the ETag of another version")
	_, err = s.DeleteVersion(ctx, "alice", "k", v3.VersionID, meta.Cond{IfMatch: v3.ETag})
	ok(t, err, "DeleteVersion of the latest version")
	v1.IsLatest = true
	wantObject(t, s, v1)
	wantVersions(t, s, "alice", vid(v1, "L"))
	wantGarbage(t, s, v2.BlobKey, v3.BlobKey)
	wantUsage(t, s, "alice", 1)
	// The last: the key is gone.
	_, err = s.DeleteVersion(ctx, "alice", "k", v1.VersionID, meta.Cond{})
	ok(t, err, "DeleteVersion of the last version")
	wantMissing(t, s, "alice", "k")
	wantVersions(t, s, "alice")
	wantUsage(t, s, "alice", 0)
}

func testSuspendedNullVersion(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	n0 := putVersion(t, s, obj("alice", "k", 1))
	if n0.VersionID != meta.NullVersion {
		t.Fatalf("a write into an unversioned bucket is version %q, want null", n0.VersionID)
	}
	setVersioning(t, s, "alice", meta.VersioningEnabled)
	v1 := putVersion(t, s, obj("alice", "k", 2))
	n0.IsLatest = false
	wantVersions(t, s, "alice", vid(v1, "L"), vid(n0, ""))
	setVersioning(t, s, "alice", meta.VersioningSuspended)
	// A write replaces the null version, wherever it is, and is the latest.
	s1 := putVersion(t, s, obj("alice", "k", 4))
	if s1.VersionID != meta.NullVersion {
		t.Errorf("a write into a suspended bucket is version %q, want null", s1.VersionID)
	}
	v1.IsLatest = false
	wantVersions(t, s, "alice", vid(s1, "L"), vid(v1, ""))
	wantGarbage(t, s, n0.BlobKey)
	wantUsage(t, s, "alice", 6)
	s2 := putVersion(t, s, obj("alice", "k", 8))
	wantVersions(t, s, "alice", vid(s2, "L"), vid(v1, ""))
	wantGarbage(t, s, n0.BlobKey, s1.BlobKey)
	wantUsage(t, s, "alice", 10)
	// A delete replaces the null version by a null delete marker.
	m, err := s.DeleteObject(ctx, "alice", "k", meta.Cond{})
	ok(t, err, "DeleteObject in a suspended bucket")
	if !m.DeleteMarker || m.VersionID != meta.NullVersion {
		t.Errorf("DeleteObject in a suspended bucket returned %+v, want a null delete marker", m)
	}
	wantDeleteMarker(t, s, "alice", "k", meta.NullVersion)
	wantVersions(t, s, "alice", vid(m, "LM"), vid(v1, ""))
	wantGarbage(t, s, n0.BlobKey, s1.BlobKey, s2.BlobKey)
	wantUsage(t, s, "alice", 2)
	// Deleting the null marker brings v1 back.
	_, err = s.DeleteVersion(ctx, "alice", "k", meta.NullVersion, meta.Cond{})
	ok(t, err, "DeleteVersion null")
	v1.IsLatest = true
	wantObject(t, s, v1)
	// Enabled again: a new version keeps the null one where it is.
	s3 := putVersion(t, s, obj("alice", "k", 16))
	setVersioning(t, s, "alice", meta.VersioningEnabled)
	v4 := putVersion(t, s, obj("alice", "k", 32))
	s3.IsLatest, v1.IsLatest = false, false
	wantVersions(t, s, "alice", vid(v4, "L"), vid(s3, ""), vid(v1, ""))
	wantUsage(t, s, "alice", 50)
}

func testUnversionedNullVersion(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	o := putVersion(t, s, obj("alice", "k", 3))
	wantVersion(t, s, o)
	_, err := s.GetObjectVersion(ctx, "alice", "k", "0123456789abcdef0123456789abcdef")
	wantCode(t, err, errcode.NotFound, "GetObjectVersion of another version")
	_, err = s.GetObjectVersion(ctx, "alice", "k", "")
	wantCode(t, err, errcode.NotFound, "GetObjectVersion of the empty version")
	wantVersions(t, s, "alice", vid(o, "L"))
	got, err := s.DeleteVersion(ctx, "alice", "k", meta.NullVersion, meta.Cond{})
	ok(t, err, "DeleteVersion null")
	sameObject(t, got, o, "the deleted null version")
	wantMissing(t, s, "alice", "k")
	wantGarbage(t, s, o.BlobKey)
	wantUsage(t, s, "alice", 0)
	// A delete without a version removes the object: no marker.
	put1(t, s, obj("alice", "k", 3))
	_, err = s.DeleteObject(ctx, "alice", "k", meta.Cond{})
	ok(t, err, "DeleteObject")
	wantVersions(t, s, "alice")
}

func testListVersions(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	a0 := putVersion(t, s, obj("alice", "a", 1))
	setVersioning(t, s, "alice", meta.VersioningEnabled)
	a1 := putVersion(t, s, obj("alice", "a", 1))
	d1 := putVersion(t, s, obj("alice", "dir/x", 1))
	d2 := putVersion(t, s, obj("alice", "dir/y", 1))
	dm, err := s.DeleteObject(ctx, "alice", "dir/y", meta.Cond{})
	ok(t, err, "DeleteObject")
	b1 := putVersion(t, s, obj("alice", "b", 1))
	a0.IsLatest, d2.IsLatest = false, false
	wantVersions(t, s, "alice", vid(a1, "L"), vid(a0, ""), vid(b1, "L"), vid(d1, "L"), vid(dm, "LM"), vid(d2, ""))

	for _, tc := range []struct {
		name string
		opts meta.VersionListOptions
		want []string
		cps  []string
	}{
		{"prefix", meta.VersionListOptions{Prefix: "dir/"}, []string{vid(d1, "L"), vid(dm, "LM"), vid(d2, "")}, nil},
		{"delimiter", meta.VersionListOptions{Delimiter: "/"}, []string{vid(a1, "L"), vid(a0, ""), vid(b1, "L")}, []string{"dir/"}},
		{"key marker", meta.VersionListOptions{KeyMarker: "a"}, []string{vid(b1, "L"), vid(d1, "L"), vid(dm, "LM"), vid(d2, "")}, nil},
		{"version marker", meta.VersionListOptions{KeyMarker: "a", VersionIDMarker: a1.VersionID}, []string{vid(a0, ""), vid(b1, "L"), vid(d1, "L"), vid(dm, "LM"), vid(d2, "")}, nil},
		{"null marker", meta.VersionListOptions{KeyMarker: "a", VersionIDMarker: meta.NullVersion}, []string{vid(b1, "L"), vid(d1, "L"), vid(dm, "LM"), vid(d2, "")}, nil},
		{"marker of a version gone", meta.VersionListOptions{KeyMarker: "b", VersionIDMarker: meta.NullVersion}, []string{vid(b1, "L"), vid(d1, "L"), vid(dm, "LM"), vid(d2, "")}, nil},
		{"common prefix marker", meta.VersionListOptions{KeyMarker: "dir/", Delimiter: "/"}, nil, nil},
		{"common prefix marker with a version marker", meta.VersionListOptions{KeyMarker: "dir/", VersionIDMarker: meta.NullVersion, Delimiter: "/"}, nil, nil},
		{"marker before the prefix", meta.VersionListOptions{Prefix: "dir/", KeyMarker: "a"}, []string{vid(d1, "L"), vid(dm, "LM"), vid(d2, "")}, nil},
	} {
		p, err := s.ListObjectVersions(ctx, "alice", tc.opts)
		ok(t, err, "ListObjectVersions "+tc.name)
		if got := describe(p.Versions); !slices.Equal(got, tc.want) || !slices.Equal(p.CommonPrefixes, tc.cps) || p.Truncated {
			t.Errorf("%s: %q %q (truncated %v), want %q %q", tc.name, got, p.CommonPrefixes, p.Truncated, tc.want, tc.cps)
		}
	}
	for _, bad := range []meta.VersionListOptions{{VersionIDMarker: a1.VersionID}, {KeyMarker: "a", VersionIDMarker: "nope"}} {
		_, err := s.ListObjectVersions(ctx, "alice", bad)
		wantCode(t, err, errcode.InvalidArgument, fmt.Sprintf("ListObjectVersions %+v", bad))
	}
	_, err = s.ListObjectVersions(ctx, "nope", meta.VersionListOptions{})
	wantCode(t, err, errcode.NotFound, "ListObjectVersions of a missing bucket")
}

func testListVersionsPaging(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	setVersioning(t, s, "alice", meta.VersioningEnabled)
	for _, k := range []string{"a", "b/1", "b/2", "c", "d"} {
		for range 3 {
			putVersion(t, s, obj("alice", k, 1))
		}
	}
	_, err := s.DeleteObject(ctx, "alice", "c", meta.Cond{})
	ok(t, err, "DeleteObject")
	setVersioning(t, s, "alice", meta.VersioningSuspended)
	putVersion(t, s, obj("alice", "d", 1))
	for _, delim := range []string{"", "/"} {
		full, err := s.ListObjectVersions(ctx, "alice", meta.VersionListOptions{Delimiter: delim})
		ok(t, err, "ListObjectVersions")
		all := append(describe(full.Versions), full.CommonPrefixes...)
		for limit := 1; limit <= 4; limit++ {
			var got []string
			opts := meta.VersionListOptions{Delimiter: delim, Limit: limit}
			for pages := 0; ; pages++ {
				if pages > 20 {
					t.Fatalf("delimiter %q, limit %d: no end", delim, limit)
				}
				p, err := s.ListObjectVersions(ctx, "alice", opts)
				ok(t, err, "ListObjectVersions page")
				if n := len(p.Versions) + len(p.CommonPrefixes); n > limit || n < limit && p.Truncated {
					t.Fatalf("delimiter %q, limit %d: a page of %d (truncated %v)", delim, limit, n, p.Truncated)
				}
				got = append(append(got, describe(p.Versions)...), p.CommonPrefixes...)
				if !p.Truncated {
					break
				}
				opts.KeyMarker, opts.VersionIDMarker = p.NextKeyMarker, p.NextVersionIDMarker
			}
			if slices.Sort(got); !slices.Equal(got, slices.Sorted(slices.Values(all))) {
				t.Errorf("delimiter %q, limit %d: pages hold %q, want %q", delim, limit, got, all)
			}
		}
	}
}

// testListDeleted: ListObjects with DeleteMarkers lists the keys whose
// latest version is a delete marker, each as its marker, with the
// listing's prefix, delimiter and paging; a key whose marker was removed,
// or that was written again, is not deleted any more.
func testListDeleted(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	setVersioning(t, s, "alice", meta.VersioningEnabled)
	for _, k := range []string{"a", "b", "dir/x", "dir/y", "e", "f"} {
		putVersion(t, s, obj("alice", k, 1))
	}
	marker := map[string]meta.Object{}
	for _, k := range []string{"a", "dir/x", "dir/y", "e", "f", "never"} {
		m, err := s.DeleteObject(ctx, "alice", k, meta.Cond{})
		ok(t, err, "DeleteObject "+k)
		marker[k] = m
	}
	m2, err := s.DeleteObject(ctx, "alice", "a", meta.Cond{}) // a second marker: the newest one is listed
	ok(t, err, "DeleteObject a again")
	marker["a"] = m2
	_, err = s.DeleteVersion(ctx, "alice", "e", marker["e"].VersionID, meta.Cond{})
	ok(t, err, "DeleteVersion of e's marker") // undeleted
	putVersion(t, s, obj("alice", "f", 2))    // written again
	list := func(opts meta.ListOptions) ([]string, meta.ListPage) {
		t.Helper()
		opts.DeleteMarkers = true
		p, err := s.ListObjects(ctx, "alice", opts)
		ok(t, err, "ListObjects DeleteMarkers")
		for _, o := range p.Objects {
			if m := marker[o.Key]; o.VersionID != m.VersionID || !o.DeleteMarker || !o.IsLatest || o.Bucket != "alice" || !o.ModTime.Equal(m.ModTime) {
				t.Errorf("deleted %s listed as %+v, want its marker %+v", o.Key, o, m)
			}
		}
		return describe(p.Objects), p
	}
	all := []string{vid(marker["a"], "LM"), vid(marker["dir/x"], "LM"), vid(marker["dir/y"], "LM"), vid(marker["never"], "LM")}
	if got, _ := list(meta.ListOptions{}); !slices.Equal(got, all) {
		t.Errorf("deleted keys %q, want %q", got, all)
	}
	if got, p := list(meta.ListOptions{Prefix: "dir/"}); !slices.Equal(got, all[1:3]) || p.Truncated {
		t.Errorf("prefix dir/: %q, want %q", got, all[1:3])
	}
	if got, p := list(meta.ListOptions{Delimiter: "/"}); !slices.Equal(got, []string{all[0], all[3]}) || !slices.Equal(p.CommonPrefixes, []string{"dir/"}) {
		t.Errorf("delimiter /: %q %q", got, p.CommonPrefixes)
	}
	var paged []string
	opts := meta.ListOptions{Limit: 1}
	for range 10 {
		got, p := list(opts)
		paged = append(paged, got...)
		if !p.Truncated {
			break
		}
		opts.StartAfter = p.NextStartAfter
	}
	if !slices.Equal(paged, all) {
		t.Errorf("pages of 1: %q, want %q", paged, all)
	}
	// The plain listing is unchanged: the objects, no markers.
	p, err := s.ListObjects(ctx, "alice", meta.ListOptions{})
	ok(t, err, "ListObjects")
	if got := describe(p.Objects); len(got) != 3 {
		t.Errorf("ListObjects = %q, want b, e, f", got)
	}
	_, err = s.ListObjects(ctx, "nope", meta.ListOptions{DeleteMarkers: true})
	wantCode(t, err, errcode.NotFound, "ListObjects DeleteMarkers of a missing bucket")
}

func testQuotaCountsVersions(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 100)
	setVersioning(t, s, "alice", meta.VersioningEnabled)
	putVersion(t, s, obj("alice", "k", 60))
	_, err := s.PutObjects(ctx, []meta.Put{{Object: obj("alice", "k", 60)}})
	wantCode(t, err, errcode.QuotaExceeded, "a second version of 60 with a quota of 100")
	// Suspended: a write replaces the null version only (there is none).
	setVersioning(t, s, "alice", meta.VersioningSuspended)
	_, err = s.PutObjects(ctx, []meta.Put{{Object: obj("alice", "k", 60)}})
	wantCode(t, err, errcode.QuotaExceeded, "a null version of 60 next to a version of 60")
	n := putVersion(t, s, obj("alice", "k", 40))
	putVersion(t, s, obj("alice", "k", 40)) // replaces n
	wantUsage(t, s, "alice", 100)
	wantGarbage(t, s, n.BlobKey)
	b, err := s.GetBucket(ctx, "alice")
	ok(t, err, "GetBucket")
	if b.Objects != 2 || b.Bytes != 100 {
		t.Errorf("bucket stats: %d objects, %d bytes; want 2, 100", b.Objects, b.Bytes)
	}
	_, err = s.DeleteObject(ctx, "alice", "k", meta.Cond{})
	ok(t, err, "DeleteObject")
	wantUsage(t, s, "alice", 60)
	bs, err := s.ListBuckets(ctx, "alice")
	ok(t, err, "ListBuckets")
	if bs[0].Objects != 1 || bs[0].Bytes != 60 {
		t.Errorf("bucket stats with a delete marker: %d objects, %d bytes; want 1, 60 (markers are no objects)", bs[0].Objects, bs[0].Bytes)
	}
}

func testVersionStagingCredit(t *testing.T, s store) {
	addUser(t, s, "alice", 100)
	put1(t, s, obj("alice", "k", 60))
	// Unversioned: an overwrite frees the object, so 80 fit.
	st := stage(t, s, meta.Staging{BlobKey: "blob/s1", OwnerID: "alice", Bucket: "alice", Key: "k", Bytes: 80}, 80)
	if st.Credit != 60 {
		t.Errorf("credit of an overwrite in an unversioned bucket = %d, want 60", st.Credit)
	}
	ok(t, s.Unstage(t.Context(), []string{"blob/s1"}), "Unstage")
	// Enabled: it frees nothing.
	setVersioning(t, s, "alice", meta.VersioningEnabled)
	_, _, err := s.Stage(t.Context(), meta.Staging{BlobKey: "blob/s2", OwnerID: "alice", Bucket: "alice", Key: "k", Bytes: 80, ExpiresAt: live()}, 80)
	wantCode(t, err, errcode.QuotaExceeded, "Stage of 80 over a version of 60 kept")
	// Suspended: it replaces the null version.
	setVersioning(t, s, "alice", meta.VersioningSuspended)
	st = stage(t, s, meta.Staging{BlobKey: "blob/s3", OwnerID: "alice", Bucket: "alice", Key: "k", Bytes: 80}, 80)
	if st.Credit != 60 {
		t.Errorf("credit of an overwrite of the null version in a suspended bucket = %d, want 60", st.Credit)
	}
}

func testVersionsKeepBucket(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	setVersioning(t, s, "alice", meta.VersioningEnabled)
	v := putVersion(t, s, obj("alice", "k", 1))
	m, err := s.DeleteObject(ctx, "alice", "k", meta.Cond{})
	ok(t, err, "DeleteObject")
	_, err = s.DeleteVersion(ctx, "alice", "k", v.VersionID, meta.Cond{})
	ok(t, err, "DeleteVersion")
	wantCode(t, s.DeleteBucket(ctx, "alice"), errcode.Conflict, "DeleteBucket holding a delete marker")
	_, err = s.DeleteVersion(ctx, "alice", "k", m.VersionID, meta.Cond{})
	ok(t, err, "DeleteVersion of the marker")
	ok(t, s.DeleteBucket(ctx, "alice"), "DeleteBucket once empty")
}

func testMoveVersioned(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	addBucket(t, s, "plain", "alice")
	o := put1(t, s, obj("alice", "k", 1))
	put1(t, s, obj("plain", "p", 1))
	setVersioning(t, s, "alice", meta.VersioningSuspended)
	for _, tc := range [][4]string{{"alice", "k", "alice", "k2"}, {"alice", "k", "plain", "k2"}, {"plain", "p", "alice", "p"}} {
		_, err := s.MoveObject(ctx, tc[0], tc[1], tc[2], tc[3], meta.Cond{})
		if !meta.IsMoveVersioned(err) {
			t.Errorf("MoveObject %v involving a versioned bucket: %v, want ErrMoveVersioned", tc, err)
		}
	}
	wantObject(t, s, o)
	_, err := s.MoveObject(ctx, "plain", "p", "plain", "p2", meta.Cond{})
	ok(t, err, "MoveObject within an unversioned bucket")
}

func testMultipartVersions(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	setVersioning(t, s, "alice", meta.VersioningEnabled)
	v1 := putVersion(t, s, obj("alice", "mp", 3))
	mp := addMultipart(t, s, "alice", "mp", 5, 7)
	if !meta.ValidVersionID(mp.VersionID) || mp.VersionID == meta.NullVersion || !mp.IsLatest {
		t.Errorf("CompleteUpload in an enabled bucket made version %q (latest %v)", mp.VersionID, mp.IsLatest)
	}
	v1.IsLatest = false
	wantVersions(t, s, "alice", vid(mp, "L"), vid(v1, ""))
	wantUsage(t, s, "alice", 15)
	wantGarbage(t, s)
	got, err := s.DeleteVersion(ctx, "alice", "mp", mp.VersionID, meta.Cond{})
	ok(t, err, "DeleteVersion of a multipart version")
	sameObject(t, got, mp, "the deleted multipart version")
	wantGarbageSet(t, s, mp.BlobKeys()...)
	wantUsage(t, s, "alice", 3)
	v1.IsLatest = true
	wantObject(t, s, v1)
}

func testInPlaceVersion(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	setVersioning(t, s, "alice", meta.VersioningEnabled)
	v1 := putVersion(t, s, obj("alice", "k", 3))
	v2 := putVersion(t, s, obj("alice", "k", 5))
	v1.IsLatest = false
	cur, err := s.GetObjectVersion(ctx, "alice", "k", v1.VersionID)
	ok(t, err, "GetObjectVersion")
	re := cur
	re.BlobKey = fmt.Sprintf("blob/re-%d", seq.Add(1))
	re.Encryption, re.EncryptionKEK = envelope("enc"), "local:default#1"
	res, err := s.PutObjects(ctx, []meta.Put{{Object: re, InPlace: true, Cond: meta.Cond{IfVersion: meta.Version(cur)}}})
	ok(t, err, "PutObjects InPlace")
	if r := res[0]; r.Object.VersionID != v1.VersionID || r.Object.IsLatest || r.Replaced.BlobKey != v1.BlobKey {
		t.Errorf("InPlace put: %q latest %v, replaced %q; want version %q, not latest, replacing %q",
			r.Object.VersionID, r.Object.IsLatest, r.Replaced.BlobKey, v1.VersionID, v1.BlobKey)
	}
	wantVersion(t, s, re)
	wantObject(t, s, v2)
	wantVersions(t, s, "alice", vid(v2, "L"), vid(v1, ""))
	wantGarbage(t, s, v1.BlobKey)
	wantUsage(t, s, "alice", 8)
	_, err = s.PutObjects(ctx, []meta.Put{{Object: re, InPlace: true, Cond: meta.Cond{IfVersion: meta.Version(cur)}}})
	wantCode(t, err, errcode.PreconditionFailed, "InPlace put of a rewritten version")
	gone := re
	gone.VersionID = "0123456789abcdef0123456789abcdef"
	_, err = s.PutObjects(ctx, []meta.Put{{Object: gone, InPlace: true}})
	wantCode(t, err, errcode.NotFound, "InPlace put of a missing version")
	gone.VersionID = "latest"
	_, err = s.PutObjects(ctx, []meta.Put{{Object: gone, InPlace: true}})
	wantCode(t, err, errcode.InvalidArgument, "InPlace put of an invalid version")
}

func testVersionEnvelopes(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	setVersioning(t, s, "alice", meta.VersioningEnabled)
	v1 := putVersion(t, s, obj("alice", "k", 3))
	v2 := putVersion(t, s, encrypted(obj("alice", "k", 5)))
	m, err := s.DeleteObject(ctx, "alice", "k", meta.Cond{})
	ok(t, err, "DeleteObject")
	// The plaintext version is listed, the marker is not.
	refs, err := s.ListPlaintextObjects(ctx, "alice", nil, 0)
	ok(t, err, "ListPlaintextObjects")
	if len(refs) != 1 || refs[0].VersionID != v1.VersionID {
		t.Errorf("ListPlaintextObjects = %+v, want version %s only (not the marker %s)", refs, v1.VersionID, m.VersionID)
	}
	refs, err = s.ListPlaintextObjects(ctx, "alice", &refs[0], 0)
	ok(t, err, "ListPlaintextObjects after")
	if len(refs) != 0 {
		t.Errorf("ListPlaintextObjects after the last = %+v", refs)
	}
	// A noncurrent encrypted version is listed and swapped by its version.
	rows, err := s.ListEnvelopes(ctx, meta.EnvelopeObjects, nil, "", 0)
	ok(t, err, "ListEnvelopes")
	if len(rows) != 1 || rows[0].Ref.VersionID != v2.VersionID {
		t.Fatalf("ListEnvelopes = %+v, want version %s", rows, v2.VersionID)
	}
	next := envelope("rewrapped")
	swapped, err := s.SwapEnvelope(ctx, rows[0].Ref, v2.Encryption, next, "local:default#2")
	ok(t, err, "SwapEnvelope")
	if !swapped {
		t.Error("SwapEnvelope of a noncurrent version did not swap")
	}
	v2.Encryption, v2.EncryptionKEK, v2.IsLatest = next, "local:default#2", false
	wantVersion(t, s, v2)
	rows, err = s.ListEnvelopes(ctx, meta.EnvelopeObjects, &rows[0].Ref, "", 0)
	ok(t, err, "ListEnvelopes after")
	if len(rows) != 0 {
		t.Errorf("ListEnvelopes after the last = %+v", rows)
	}
}

// testConcurrentOneLatest: many writers putting and deleting one key at
// once, in each versioning state, leave exactly one latest version, and
// usage and the bucket's stats equal what the versions listed hold.
func testConcurrentOneLatest(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	for _, v := range []meta.Versioning{meta.Unversioned, meta.VersioningEnabled, meta.VersioningSuspended} {
		bucket := "b-" + string(v)
		if v == meta.Unversioned {
			bucket = "b-never"
		}
		addBucket(t, s, bucket, "alice")
		if v != meta.Unversioned {
			setVersioning(t, s, bucket, v)
		}
		var wg sync.WaitGroup
		errs := make(chan error, 64)
		for w := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 6 {
					var err error
					if (w+i)%3 == 2 {
						_, err = s.DeleteObject(ctx, bucket, "k", meta.Cond{})
						if errcode.Is(err, errcode.NotFound) {
							err = nil // unversioned: nothing to delete
						}
					} else {
						_, err = s.PutObjects(ctx, []meta.Put{{Object: obj(bucket, "k", int64(1+w+i))}})
					}
					if err != nil && !errcode.Is(err, errcode.Unavailable) {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("%s: %v", bucket, err)
		}
		vs := versionsOf(t, s, bucket)
		latest, nulls := 0, 0
		var bytes, objects int64
		for _, o := range vs {
			if o.IsLatest {
				latest++
			}
			if o.VersionID == meta.NullVersion {
				nulls++
			}
			if !o.DeleteMarker {
				objects++
				bytes += o.Size
			}
		}
		if latest != 1 && len(vs) > 0 || nulls > 1 {
			t.Errorf("%s: %d latest and %d null versions among %q", bucket, latest, nulls, describe(vs))
		}
		if len(vs) > 0 && !vs[0].IsLatest {
			t.Errorf("%s: the newest version is not the latest: %q", bucket, describe(vs))
		}
		bs, err := s.ListBuckets(ctx, "alice")
		ok(t, err, "ListBuckets")
		for _, b := range bs {
			if b.Name == bucket && (b.Objects != objects || b.Bytes != bytes) {
				t.Errorf("%s: stats %d objects, %d bytes; the versions hold %d, %d", bucket, b.Objects, b.Bytes, objects, bytes)
			}
		}
	}
	var total int64
	for _, b := range []string{"b-never", "b-Enabled", "b-Suspended"} {
		for _, o := range versionsOf(t, s, b) {
			total += o.Size
		}
	}
	wantUsage(t, s, "alice", total)
}
