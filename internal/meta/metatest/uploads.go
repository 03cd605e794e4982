package metatest

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

var uploadTests = []test{
	{name: "CreateAndGet", fn: testCreateUpload},
	{name: "PutPart", fn: testPutPart},
	{name: "PutPartRejected", fn: testPutPartRejected},
	{name: "PartQuota", fn: testPartQuota},
	{name: "Abort", fn: testAbortUpload},
	{name: "ListParts", fn: testListParts},
	{name: "ListUploads", fn: testListUploads},
	{name: "ListUploadsMarkers", fn: testListUploadsMarkers},
	{name: "ListExpired", fn: testListExpiredUploads},
	{name: "DeleteBucket", fn: testDeleteBucketWithUploads},
}

// newUpload returns an upload of bucket/key, initiated by alice, with a
// unique ID and creation time.
func newUpload(bucket, key string) meta.Upload {
	n := seq.Add(1)
	return meta.Upload{
		ID:          fmt.Sprintf("upload-%06d", n),
		Bucket:      bucket,
		Key:         key,
		InitiatorID: "alice",
		ContentType: "video/mp4",
		CreatedAt:   baseTime.Add(time.Duration(n) * time.Second),
		ExpiresAt:   baseTime.Add(7*24*time.Hour + time.Duration(n)*time.Second),
	}
}

// addUpload creates a new upload of bucket/key.
func addUpload(t *testing.T, s store, bucket, key string) meta.Upload {
	t.Helper()
	u := newUpload(bucket, key)
	ok(t, s.CreateUpload(t.Context(), u), "CreateUpload "+bucket+"/"+key)
	return u
}

// part returns a part of upload number n with a unique ETag, checksum and
// blob key.
func part(uploadID string, number int, size int64) meta.Part {
	n := seq.Add(1)
	return meta.Part{
		UploadID: uploadID,
		Number:   number,
		Size:     size,
		ETag:     fmt.Sprintf("%032x", n),
		Checksum: checksumValue(n, 4),
		BlobKey:  fmt.Sprintf("blob/part-%d", n),
		ModTime:  baseTime.Add(time.Duration(n) * time.Second),
	}
}

// putPart records p, which must be a new part number, and returns it.
func putPart(t *testing.T, s store, p meta.Part) meta.Part {
	t.Helper()
	old, err := s.PutPart(t.Context(), p)
	ok(t, err, fmt.Sprintf("PutPart %d", p.Number))
	if !reflect.DeepEqual(old, meta.Part{}) {
		t.Errorf("PutPart of new part %d returned %+v, want the zero Part", p.Number, old)
	}
	return p
}

// putParts records a new part of each size, numbered from 1.
func putParts(t *testing.T, s store, uploadID string, sizes ...int64) []meta.Part {
	t.Helper()
	ps := make([]meta.Part, len(sizes))
	for i, size := range sizes {
		ps[i] = putPart(t, s, part(uploadID, i+1, size))
	}
	return ps
}

func diffPart(got, want meta.Part) string {
	var d string
	add := func(field string, g, w any) { d += fmt.Sprintf(" %s=%v (want %v)", field, g, w) }
	if got.UploadID != want.UploadID {
		add("UploadID", got.UploadID, want.UploadID)
	}
	if got.Number != want.Number {
		add("Number", got.Number, want.Number)
	}
	if got.Size != want.Size {
		add("Size", got.Size, want.Size)
	}
	if got.ETag != want.ETag {
		add("ETag", got.ETag, want.ETag)
	}
	if got.Checksum != want.Checksum {
		add("Checksum", got.Checksum, want.Checksum)
	}
	if got.BlobKey != want.BlobKey {
		add("BlobKey", got.BlobKey, want.BlobKey)
	}
	if !sameTime(got.ModTime, want.ModTime) {
		add("ModTime", got.ModTime, want.ModTime)
	}
	return d
}

func partNumbers(ps []meta.Part) []int {
	out := make([]int, len(ps))
	for i, p := range ps {
		out[i] = p.Number
	}
	return out
}

// samePartList fails unless got and want hold the same parts in order.
func samePartList(t *testing.T, got, want []meta.Part, what string) {
	t.Helper()
	if fmt.Sprint(partNumbers(got)) != fmt.Sprint(partNumbers(want)) {
		t.Errorf("%s: part numbers %v, want %v", what, partNumbers(got), partNumbers(want))
		return
	}
	for i := range got {
		if d := diffPart(got[i], want[i]); d != "" {
			t.Errorf("%s: part %d differs:%s", what, got[i].Number, d)
		}
	}
}

// wantParts fails unless the upload's parts are want, ascending.
func wantParts(t *testing.T, s store, uploadID string, want ...meta.Part) {
	t.Helper()
	got, more, err := s.ListParts(t.Context(), uploadID, 0, 0)
	ok(t, err, "ListParts "+uploadID)
	if more {
		t.Errorf("ListParts %s: truncated, want everything", uploadID)
	}
	samePartList(t, got, want, "ListParts "+uploadID)
}

// wantNoUpload fails unless the upload is gone for every method that reads
// it.
func wantNoUpload(t *testing.T, s store, id string) {
	t.Helper()
	_, err := s.GetUpload(t.Context(), id)
	wantCode(t, err, errcode.NotFound, "GetUpload of a gone upload")
	_, _, err = s.ListParts(t.Context(), id, 0, 0)
	wantCode(t, err, errcode.NotFound, "ListParts of a gone upload")
}

func diffUpload(got, want meta.Upload) string {
	var d string
	add := func(field string, g, w any) { d += fmt.Sprintf(" %s=%v (want %v)", field, g, w) }
	if got.ID != want.ID {
		add("ID", got.ID, want.ID)
	}
	if got.Bucket != want.Bucket {
		add("Bucket", got.Bucket, want.Bucket)
	}
	if got.Key != want.Key {
		add("Key", got.Key, want.Key)
	}
	if got.InitiatorID != want.InitiatorID {
		add("InitiatorID", got.InitiatorID, want.InitiatorID)
	}
	if got.ContentType != want.ContentType {
		add("ContentType", got.ContentType, want.ContentType)
	}
	if !maps.Equal(got.Metadata, want.Metadata) {
		add("Metadata", got.Metadata, want.Metadata)
	}
	if got.ChecksumAlgorithm != want.ChecksumAlgorithm {
		add("ChecksumAlgorithm", got.ChecksumAlgorithm, want.ChecksumAlgorithm)
	}
	if got.ChecksumType != want.ChecksumType {
		add("ChecksumType", got.ChecksumType, want.ChecksumType)
	}
	if got.Size != want.Size {
		add("Size", got.Size, want.Size)
	}
	if got.PartSize != want.PartSize {
		add("PartSize", got.PartSize, want.PartSize)
	}
	if !sameTime(got.CreatedAt, want.CreatedAt) {
		add("CreatedAt", got.CreatedAt, want.CreatedAt)
	}
	if !sameTime(got.ExpiresAt, want.ExpiresAt) {
		add("ExpiresAt", got.ExpiresAt, want.ExpiresAt)
	}
	if got.BlobKey != want.BlobKey {
		add("BlobKey", got.BlobKey, want.BlobKey)
	}
	if got.BackendUploadID != want.BackendUploadID {
		add("BackendUploadID", got.BackendUploadID, want.BackendUploadID)
	}
	return d
}

// wantUpload fails unless GetUpload(want.ID) returns want.
func wantUpload(t *testing.T, s store, want meta.Upload) {
	t.Helper()
	got, err := s.GetUpload(t.Context(), want.ID)
	ok(t, err, "GetUpload "+want.ID)
	if d := diffUpload(got, want); d != "" {
		t.Errorf("GetUpload %s differs:%s", want.ID, d)
	}
}

func uploadIDs(us []meta.Upload) []string {
	out := make([]string, len(us))
	for i, u := range us {
		out[i] = u.ID
	}
	return out
}

func testCreateUpload(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	full := meta.Upload{
		ID:                "VXBsb2FkSUQtMTIzNDU2Nzg5MA_-",
		Bucket:            "alice",
		Key:               "videos/Ünïcode & spaces/film (final).mp4",
		InitiatorID:       "alice",
		ContentType:       "video/mp4; codecs=\"avc1\"",
		Metadata:          map[string]string{"author": "Ada", "empty": "", "ünï": "çødé"},
		ChecksumAlgorithm: "CRC64NVME",
		ChecksumType:      "FULL_OBJECT",
		Size:              3 << 30,
		PartSize:          64 << 20,
		CreatedAt:         time.Date(2024, 2, 29, 23, 59, 58, 987_654_321, time.FixedZone("CET", 3600)),
		ExpiresAt:         time.Date(2024, 3, 7, 23, 59, 58, 123_456_789, time.UTC),
	}
	ok(t, s.CreateUpload(ctx, full), "CreateUpload")
	wantUpload(t, s, full)
	bare := newUpload("alice", "bare")
	ok(t, s.CreateUpload(ctx, bare), "CreateUpload without metadata and checksum")
	wantUpload(t, s, bare)
	wantParts(t, s, full.ID)
	// Another upload of the same key is a separate upload.
	again := addUpload(t, s, "alice", full.Key)
	wantUpload(t, s, again)
	wantUpload(t, s, full)

	missing := newUpload("nope", "k")
	wantCode(t, s.CreateUpload(ctx, missing), errcode.NotFound, "CreateUpload into a missing bucket")
	wantNoUpload(t, s, missing.ID)

	dup := newUpload("alice", "other-key")
	dup.ID = full.ID
	wantCode(t, s.CreateUpload(ctx, dup), errcode.AlreadyExists, "CreateUpload with a taken ID")
	wantUpload(t, s, full)

	_, err := s.GetUpload(ctx, "never-created")
	wantCode(t, err, errcode.NotFound, "GetUpload of an unknown ID")
	// Uploads take no space and are no objects.
	wantUsage(t, s, "alice", 0)
	wantMissing(t, s, "alice", full.Key)
}

func testPutPart(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	u := addUpload(t, s, "alice", "big")
	other := addUpload(t, s, "alice", "big") // same key, must stay apart
	p1 := putPart(t, s, part(u.ID, 1, 100))
	p2 := putPart(t, s, part(u.ID, 2, 50))
	o1 := putPart(t, s, part(other.ID, 1, 7))
	wantParts(t, s, u.ID, p1, p2)
	wantParts(t, s, other.ID, o1)
	wantUsage(t, s, "alice", 157)
	wantGarbage(t, s)
	wantReferenced(t, s, "parts of uploads", []string{p1.BlobKey, p2.BlobKey, o1.BlobKey},
		map[string]bool{p1.BlobKey: true, p2.BlobKey: true, o1.BlobKey: true})

	// A part uploaded again replaces the earlier one.
	p1b := part(u.ID, 1, 30)
	old, err := s.PutPart(ctx, p1b)
	ok(t, err, "PutPart replacing part 1")
	if d := diffPart(old, p1); d != "" {
		t.Errorf("PutPart returned a replaced part that differs:%s", d)
	}
	wantParts(t, s, u.ID, p1b, p2)
	wantParts(t, s, other.ID, o1)
	wantUsage(t, s, "alice", 87)
	wantGarbage(t, s, p1.BlobKey)

	// Recording a part again with the same blob enqueues nothing.
	p2b := p2
	p2b.ETag, p2b.ModTime = fmt.Sprintf("%032x", 0xabc), p2.ModTime.Add(time.Minute)
	old, err = s.PutPart(ctx, p2b)
	ok(t, err, "PutPart replacing part 2 keeping its blob")
	if d := diffPart(old, p2); d != "" {
		t.Errorf("PutPart returned a replaced part that differs:%s", d)
	}
	wantParts(t, s, u.ID, p1b, p2b)
	wantUsage(t, s, "alice", 87)
	wantGarbage(t, s, p1.BlobKey)

	// Numbers need not come in order; the highest number is 10000.
	p9 := putPart(t, s, part(u.ID, 10000, 1))
	p5 := putPart(t, s, part(u.ID, 5, 2))
	wantParts(t, s, u.ID, p1b, p2b, p5, p9)
	wantUsage(t, s, "alice", 90)
}

func testPutPartRejected(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	u := addUpload(t, s, "alice", "k")
	p1 := putPart(t, s, part(u.ID, 1, 10))

	_, err := s.PutPart(ctx, part("never-created", 1, 10))
	wantCode(t, err, errcode.NotFound, "PutPart into an unknown upload")
	for _, n := range []int{0, -1, 10001} {
		_, err := s.PutPart(ctx, part(u.ID, n, 10))
		wantCode(t, err, errcode.InvalidArgument, fmt.Sprintf("PutPart number %d", n))
	}
	wantParts(t, s, u.ID, p1)
	wantUsage(t, s, "alice", 10)
	wantGarbage(t, s)

	ok(t, s.AbortUpload(ctx, u.ID), "AbortUpload")
	late := part(u.ID, 2, 10)
	_, err = s.PutPart(ctx, late)
	wantCode(t, err, errcode.NotFound, "PutPart into an aborted upload")
	wantNoUpload(t, s, u.ID)
	wantUsage(t, s, "alice", 0)
	// Only the aborted upload's part is queued: the late part's blob is the
	// caller's to delete.
	wantGarbage(t, s, p1.BlobKey)
	wantReferenced(t, s, "a rejected part", []string{late.BlobKey}, nil)
}

func testPartQuota(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 100)
	addUser(t, s, "bob", 0)
	put1(t, s, obj("alice", "a", 60))
	u := addUpload(t, s, "alice", "big")

	_, err := s.PutPart(ctx, part(u.ID, 1, 41))
	wantCode(t, err, errcode.QuotaExceeded, "a part one byte beyond the quota")
	wantParts(t, s, u.ID)
	wantUsage(t, s, "alice", 60)
	wantGarbage(t, s)

	p1 := putPart(t, s, part(u.ID, 1, 40)) // exactly full
	wantUsage(t, s, "alice", 100)
	// Parts in progress count like objects.
	_, err = s.PutObjects(ctx, []meta.Put{{Object: obj("alice", "b", 1)}})
	wantCode(t, err, errcode.QuotaExceeded, "a put while parts fill the quota")
	_, err = s.PutPart(ctx, part(u.ID, 2, 1))
	wantCode(t, err, errcode.QuotaExceeded, "a second part into a full quota")
	// A replace counts only the difference: shrinking passes, growth is checked.
	_, err = s.PutPart(ctx, part(u.ID, 1, 41))
	wantCode(t, err, errcode.QuotaExceeded, "a part replace growing beyond the quota")
	wantParts(t, s, u.ID, p1)
	wantUsage(t, s, "alice", 100)
	wantGarbage(t, s)
	p1b := part(u.ID, 1, 30)
	_, err = s.PutPart(ctx, p1b)
	ok(t, err, "PutPart shrinking part 1")
	wantUsage(t, s, "alice", 90)
	wantGarbage(t, s, p1.BlobKey)

	// The quota is the bucket owner's, whoever initiated the upload.
	bu := newUpload("bob", "from-alice")
	bu.InitiatorID = "alice"
	ok(t, s.CreateUpload(ctx, bu), "CreateUpload in bob's bucket")
	putPart(t, s, part(bu.ID, 1, 500))
	wantUsage(t, s, "bob", 500)
	wantUsage(t, s, "alice", 90)

	ok(t, s.AbortUpload(ctx, u.ID), "AbortUpload")
	wantUsage(t, s, "alice", 60)
	put1(t, s, obj("alice", "b", 40)) // the space is free again
}

func testAbortUpload(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	kept := put1(t, s, obj("alice", "k", 5))
	u := addUpload(t, s, "alice", "k")
	other := addUpload(t, s, "alice", "k")
	ps := putParts(t, s, u.ID, 10, 20, 30)
	o1 := putPart(t, s, part(other.ID, 1, 1))
	wantUsage(t, s, "alice", 66)

	ok(t, s.AbortUpload(ctx, u.ID), "AbortUpload")
	wantNoUpload(t, s, u.ID)
	wantUsage(t, s, "alice", 6)
	wantGarbageSet(t, s, ps[0].BlobKey, ps[1].BlobKey, ps[2].BlobKey)
	// The object at the key and the other upload of it are untouched.
	wantObject(t, s, kept)
	wantUpload(t, s, other)
	wantParts(t, s, other.ID, o1)

	wantCode(t, s.AbortUpload(ctx, u.ID), errcode.NotFound, "AbortUpload of an aborted upload")
	wantCode(t, s.AbortUpload(ctx, "never-created"), errcode.NotFound, "AbortUpload of an unknown upload")
	_, err := s.CompleteUpload(ctx, u.ID, meta.Object{ETag: "x-1"}, []meta.CompletePart{{Number: 1, ETag: ps[0].ETag}}, 0, meta.Cond{})
	wantCode(t, err, errcode.NotFound, "CompleteUpload of an aborted upload")
	wantObject(t, s, kept)
	wantUsage(t, s, "alice", 6)

	// An upload without parts aborts too.
	empty := addUpload(t, s, "alice", "empty")
	ok(t, s.AbortUpload(ctx, empty.ID), "AbortUpload of an upload without parts")
	wantNoUpload(t, s, empty.ID)
	wantGarbageSet(t, s, ps[0].BlobKey, ps[1].BlobKey, ps[2].BlobKey)
}

func testListParts(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	u := addUpload(t, s, "alice", "k")
	empty := addUpload(t, s, "alice", "k")
	byNumber := map[int]meta.Part{}
	for _, n := range []int{13, 2, 8, 1, 5, 3} {
		byNumber[n] = putPart(t, s, part(u.ID, n, int64(n)))
	}
	parts := func(ns ...int) []meta.Part {
		out := make([]meta.Part, len(ns))
		for i, n := range ns {
			out[i] = byNumber[n]
		}
		return out
	}
	for _, tc := range []struct {
		after, limit int
		want         []int
		more         bool
	}{
		{0, 0, []int{1, 2, 3, 5, 8, 13}, false},
		{0, 6, []int{1, 2, 3, 5, 8, 13}, false},
		{0, 1000, []int{1, 2, 3, 5, 8, 13}, false},
		{0, 2, []int{1, 2}, true},
		{2, 2, []int{3, 5}, true},
		{5, 2, []int{8, 13}, false}, // the page ends at the last part exactly
		{4, 10, []int{5, 8, 13}, false},
		{12, 1, []int{13}, false},
		{13, 5, nil, false},
		{9999, 5, nil, false},
		{0, 5, []int{1, 2, 3, 5, 8}, true},
	} {
		got, more, err := s.ListParts(ctx, u.ID, tc.after, tc.limit)
		what := fmt.Sprintf("ListParts(after %d, limit %d)", tc.after, tc.limit)
		ok(t, err, what)
		samePartList(t, got, parts(tc.want...), what)
		if more != tc.more {
			t.Errorf("%s: more = %v, want %v", what, more, tc.more)
		}
	}

	// Paging by the last number seen visits every part once.
	var all []meta.Part
	after := 0
	for range 10 {
		got, more, err := s.ListParts(ctx, u.ID, after, 4)
		ok(t, err, "ListParts page")
		all = append(all, got...)
		if !more {
			break
		}
		after = got[len(got)-1].Number
	}
	samePartList(t, all, parts(1, 2, 3, 5, 8, 13), "ListParts paging by 4")

	got, more, err := s.ListParts(ctx, empty.ID, 0, 0)
	ok(t, err, "ListParts of an upload without parts")
	if len(got) != 0 || more {
		t.Errorf("ListParts of an upload without parts = %v, %v; want none", partNumbers(got), more)
	}
	_, _, err = s.ListParts(ctx, "never-created", 0, 0)
	wantCode(t, err, errcode.NotFound, "ListParts of an unknown upload")
}

// listUploads lists one page of bucket's uploads.
func listUploads(t *testing.T, s store, bucket string, opts meta.ListUploadsOptions) ([]meta.Upload, bool) {
	t.Helper()
	us, more, err := s.ListUploads(t.Context(), bucket, opts)
	ok(t, err, fmt.Sprintf("ListUploads %s %+v", bucket, opts))
	return us, more
}

// wantUploads fails unless the page of opts holds the uploads want, in
// order, and more.
func wantUploads(t *testing.T, s store, bucket string, opts meta.ListUploadsOptions, more bool, want ...meta.Upload) {
	t.Helper()
	got, gotMore := listUploads(t, s, bucket, opts)
	if g, w := uploadIDs(got), uploadIDs(want); !slices.Equal(g, w) {
		t.Errorf("ListUploads %+v = %q, want %q", opts, g, w)
		return
	}
	if gotMore != more {
		t.Errorf("ListUploads %+v: more = %v, want %v", opts, gotMore, more)
	}
	for i := range got {
		if d := diffUpload(got[i], want[i]); d != "" {
			t.Errorf("ListUploads %+v: upload %s differs:%s", opts, got[i].ID, d)
		}
	}
}

// uploadSet creates uploads whose order (key, created, ID) differs from
// both their ID order and their creation order. It returns them in
// listing order.
func uploadSet(t *testing.T, s store) []meta.Upload {
	t.Helper()
	mk := func(key, id string, created time.Duration) meta.Upload {
		u := newUpload("alice", key)
		u.ID, u.CreatedAt = id, baseTime.Add(created)
		ok(t, s.CreateUpload(t.Context(), u), "CreateUpload "+id)
		return u
	}
	b := mk("b", "u1", 1*time.Hour)
	a3 := mk("a", "u7", 3*time.Hour)
	a1y := mk("a", "u9", 1*time.Hour) // created with a1x: ties are by ID
	a2 := mk("a", "u3", 2*time.Hour)
	a1x := mk("a", "u8", 1*time.Hour)
	ax := mk("a/x", "u2", 0)
	c := mk("c", "u0", 5*time.Hour)
	aa := mk("aa", "u5", 4*time.Hour)
	return []meta.Upload{a1x, a1y, a2, a3, ax, aa, b, c}
}

func testListUploads(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	addUser(t, s, "bob", 0)
	wantUploads(t, s, "alice", meta.ListUploadsOptions{}, false)
	all := uploadSet(t, s)
	a1x, a1y, a2, a3, ax, aa, b, c := all[0], all[1], all[2], all[3], all[4], all[5], all[6], all[7]
	addUpload(t, s, "bob", "a") // another bucket's upload never shows

	wantUploads(t, s, "alice", meta.ListUploadsOptions{}, false, all...)
	wantUploads(t, s, "alice", meta.ListUploadsOptions{Limit: 8}, false, all...)
	wantUploads(t, s, "alice", meta.ListUploadsOptions{Limit: 3}, true, a1x, a1y, a2)
	wantUploads(t, s, "alice", meta.ListUploadsOptions{Prefix: "a"}, false, a1x, a1y, a2, a3, ax, aa)
	wantUploads(t, s, "alice", meta.ListUploadsOptions{Prefix: "a/"}, false, ax)
	wantUploads(t, s, "alice", meta.ListUploadsOptions{Prefix: "a", Limit: 6}, false, a1x, a1y, a2, a3, ax, aa)
	wantUploads(t, s, "alice", meta.ListUploadsOptions{Prefix: "a", Limit: 5}, true, a1x, a1y, a2, a3, ax)
	wantUploads(t, s, "alice", meta.ListUploadsOptions{Prefix: "zz"}, false)

	// Paging by the last upload seen visits every upload once, in order.
	for _, limit := range []int{1, 2, 3} {
		var got []meta.Upload
		opts := meta.ListUploadsOptions{Limit: limit}
		for range 20 {
			page, more := listUploads(t, s, "alice", opts)
			got = append(got, page...)
			if !more {
				break
			}
			last := page[len(page)-1]
			opts.KeyMarker, opts.UploadIDMarker = last.Key, last.ID
		}
		if g, w := uploadIDs(got), uploadIDs(all); !slices.Equal(g, w) {
			t.Errorf("ListUploads paging by %d = %q, want %q", limit, g, w)
		}
	}

	// Completed and aborted uploads are no longer listed.
	p := putPart(t, s, part(a2.ID, 1, 1))
	_, err := s.CompleteUpload(ctx, a2.ID, meta.Object{ETag: "e-1"}, []meta.CompletePart{{Number: 1, ETag: p.ETag}}, 0, meta.Cond{})
	ok(t, err, "CompleteUpload")
	ok(t, s.AbortUpload(ctx, c.ID), "AbortUpload")
	wantUploads(t, s, "alice", meta.ListUploadsOptions{}, false, a1x, a1y, a3, ax, aa, b)

	_, _, err = s.ListUploads(ctx, "nope", meta.ListUploadsOptions{})
	wantCode(t, err, errcode.NotFound, "ListUploads of a missing bucket")
}

func testListUploadsMarkers(t *testing.T, s store) {
	addUser(t, s, "alice", 0)
	all := uploadSet(t, s)
	a1x, a1y, a2, a3, ax, aa, b, c := all[0], all[1], all[2], all[3], all[4], all[5], all[6], all[7]
	for _, tc := range []struct {
		name string
		opts meta.ListUploadsOptions
		want []meta.Upload
	}{
		{"key marker alone: after every upload of that key", meta.ListUploadsOptions{KeyMarker: "a"}, []meta.Upload{ax, aa, b, c}},
		{"key marker between keys", meta.ListUploadsOptions{KeyMarker: "a0"}, []meta.Upload{aa, b, c}},
		{"key marker before everything", meta.ListUploadsOptions{KeyMarker: "A"}, all},
		{"key marker after everything", meta.ListUploadsOptions{KeyMarker: "d"}, nil},
		{"upload marker: after it in listing order", meta.ListUploadsOptions{KeyMarker: "a", UploadIDMarker: a1x.ID}, []meta.Upload{a1y, a2, a3, ax, aa, b, c}},
		// u3 (a2) sorts before u7 (a3) by ID but after it by creation time.
		{"upload marker with a lower ID later in order", meta.ListUploadsOptions{KeyMarker: "a", UploadIDMarker: a2.ID}, []meta.Upload{a3, ax, aa, b, c}},
		{"upload marker of the last upload of a key", meta.ListUploadsOptions{KeyMarker: "a", UploadIDMarker: a3.ID}, []meta.Upload{ax, aa, b, c}},
		{"upload marker that no longer exists", meta.ListUploadsOptions{KeyMarker: "a", UploadIDMarker: "gone"}, all},
		{"upload marker of another key", meta.ListUploadsOptions{KeyMarker: "a", UploadIDMarker: b.ID}, all},
		{"upload marker without key marker is ignored", meta.ListUploadsOptions{UploadIDMarker: a3.ID}, all},
		{"markers with a prefix", meta.ListUploadsOptions{Prefix: "a", KeyMarker: "a", UploadIDMarker: a2.ID}, []meta.Upload{a3, ax, aa}},
		{"key marker before the prefix", meta.ListUploadsOptions{Prefix: "b", KeyMarker: "a"}, []meta.Upload{b}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantUploads(t, s, "alice", tc.opts, false, tc.want...)
		})
	}
}

func testListExpiredUploads(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	addUser(t, s, "bob", 0)
	cut := baseTime.Add(10 * time.Hour)
	mk := func(bucket string, expires time.Duration) meta.Upload {
		u := newUpload(bucket, "k")
		u.ExpiresAt = baseTime.Add(expires)
		ok(t, s.CreateUpload(ctx, u), "CreateUpload")
		return u
	}
	// Created in an order unlike their expiry.
	e9 := mk("alice", 9*time.Hour)
	mk("alice", 11*time.Hour)
	e1 := mk("bob", time.Hour)
	mk("alice", 10*time.Hour) // expires at cut: not before it
	e5 := mk("alice", 5*time.Hour)

	for _, tc := range []struct {
		before time.Time
		limit  int
		want   []meta.Upload
	}{
		{cut, 10, []meta.Upload{e1, e5, e9}},
		{cut, 0, []meta.Upload{e1, e5, e9}},
		{cut, 2, []meta.Upload{e1, e5}},
		{baseTime.Add(time.Hour), 10, nil},
		{baseTime.Add(time.Hour + time.Millisecond), 10, []meta.Upload{e1}},
	} {
		got, err := s.ListExpiredUploads(ctx, tc.before, tc.limit)
		what := fmt.Sprintf("ListExpiredUploads(before %v, limit %d)", tc.before.Sub(baseTime), tc.limit)
		ok(t, err, what)
		if g, w := uploadIDs(got), uploadIDs(tc.want); !slices.Equal(g, w) {
			t.Errorf("%s = %q, want %q (soonest expiry first)", what, g, w)
			continue
		}
		for i := range got {
			if d := diffUpload(got[i], tc.want[i]); d != "" {
				t.Errorf("%s: upload %s differs:%s", what, got[i].ID, d)
			}
		}
	}
	ok(t, s.AbortUpload(ctx, e5.ID), "AbortUpload")
	got, err := s.ListExpiredUploads(ctx, cut, 10)
	ok(t, err, "ListExpiredUploads after an abort")
	if g, w := uploadIDs(got), []string{e1.ID, e9.ID}; !slices.Equal(g, w) {
		t.Errorf("ListExpiredUploads after an abort = %q, want %q", g, w)
	}
}

func testDeleteBucketWithUploads(t *testing.T, s store) {
	ctx := t.Context()
	addUser(t, s, "alice", 0)
	addBucket(t, s, "uploads-only", "alice")
	addBucket(t, s, "full", "alice")
	u1 := addUpload(t, s, "uploads-only", "a")
	u2 := addUpload(t, s, "uploads-only", "b")
	empty := addUpload(t, s, "uploads-only", "c")
	p1 := putParts(t, s, u1.ID, 10, 20)
	p2 := putParts(t, s, u2.ID, 5)
	o := put1(t, s, obj("full", "k", 3))
	fu := addUpload(t, s, "full", "k")
	fp := putParts(t, s, fu.ID, 7)
	elsewhere := addUpload(t, s, "alice", "a")
	ep := putParts(t, s, elsewhere.ID, 1)
	wantUsage(t, s, "alice", 46)

	// A bucket with objects is not deleted, and its uploads live on.
	wantCode(t, s.DeleteBucket(ctx, "full"), errcode.Conflict, "DeleteBucket of a bucket with objects and uploads")
	wantObject(t, s, o)
	wantUpload(t, s, fu)
	wantParts(t, s, fu.ID, fp...)
	wantUsage(t, s, "alice", 46)
	wantGarbage(t, s)

	// A bucket with only uploads is deleted, aborting them.
	ok(t, s.DeleteBucket(ctx, "uploads-only"), "DeleteBucket of a bucket with uploads in progress")
	for _, u := range []meta.Upload{u1, u2, empty} {
		wantNoUpload(t, s, u.ID)
	}
	_, err := s.GetBucket(ctx, "uploads-only")
	wantCode(t, err, errcode.NotFound, "GetBucket after DeleteBucket")
	wantUsage(t, s, "alice", 11)
	wantGarbageSet(t, s, p1[0].BlobKey, p1[1].BlobKey, p2[0].BlobKey)
	wantUpload(t, s, elsewhere)
	wantParts(t, s, elsewhere.ID, ep...)

	// The name is free again, without the old uploads.
	addBucket(t, s, "uploads-only", "alice")
	wantUploads(t, s, "uploads-only", meta.ListUploadsOptions{}, false)
}
