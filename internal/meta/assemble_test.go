package meta

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
)

func testPart(n int, size int64) Part {
	return Part{UploadID: "u", Number: n, Size: size, ETag: fmt.Sprintf("e%d", n), Checksum: fmt.Sprintf("c%d", n),
		BlobKey: fmt.Sprintf("blob/%d", n), Encryption: []byte{byte(n)}, EncryptionKEK: "kek"}
}

func TestAssembleUploadRefusals(t *testing.T) {
	have := []Part{testPart(3, 10), testPart(1, 10), testPart(2, 5), testPart(4, 1)}
	cp := func(n int, etag string) CompletePart { return CompletePart{Number: n, ETag: etag} }
	for _, c := range []struct {
		name   string
		parts  []CompletePart
		reason string // "" = accepted
		number int
	}{
		{"none listed", nil, "invalid_part_order", 0},
		{"descending", []CompletePart{cp(2, "e2"), cp(1, "e1")}, "invalid_part_order", 0},
		{"repeated", []CompletePart{cp(1, "e1"), cp(1, "e1")}, "invalid_part_order", 0},
		{"order before a missing part", []CompletePart{cp(9, "e9"), cp(1, "e1")}, "invalid_part_order", 0},
		{"missing part", []CompletePart{cp(1, "e1"), cp(7, "e7")}, "invalid_part", 7},
		{"other etag", []CompletePart{cp(1, "e1"), cp(3, "nope")}, "invalid_part", 3},
		{"the first bad etag", []CompletePart{cp(1, "x"), cp(3, "y")}, "invalid_part", 1},
		{"bad etag before a small part", []CompletePart{cp(2, "e2"), cp(3, "x")}, "invalid_part", 3},
		{"small part", []CompletePart{cp(1, "e1"), cp(2, "e2"), cp(3, "e3")}, "entity_too_small", 2},
		{"small last part", []CompletePart{cp(1, "e1"), cp(2, "e2")}, "", 0},
		{"the minimum is inclusive", []CompletePart{cp(1, "e1"), cp(3, "e3")}, "", 0},
		{"quoted etags", []CompletePart{cp(1, `"e1"`), cp(3, `"e3"`)}, "", 0},
		{"one small part", []CompletePart{cp(4, "e4")}, "", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := AssembleUpload(Object{}, "b", "k", have, c.parts, 10, time.Now())
			if c.reason == "" {
				if err != nil {
					t.Fatalf("AssembleUpload = %v, want accepted", err)
				}
				return
			}
			e := errcode.As(err)
			if e == nil || e.Code != errcode.InvalidArgument || e.Detail["reason"] != c.reason {
				t.Fatalf("AssembleUpload = %v, want invalid_argument %s", err, c.reason)
			}
			if got, ok := e.Detail["part_number"]; c.number != 0 && got != c.number || c.number == 0 && ok {
				t.Errorf("part_number = %v, want %d", got, c.number)
			}
		})
	}
}

func TestAssembleUpload(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	have := []Part{testPart(5, 3), testPart(2, 10), testPart(4, 10), testPart(1, 10), testPart(3, 7)}
	in := Object{Bucket: "other", Key: "other", BlobKey: "caller's", Size: 99, ETag: "x-2", ContentType: "text/plain",
		Metadata: map[string]string{"a": "b"}, Inline: []byte("stale"), Checksum: Checksum{Algorithm: "CRC32", Type: "COMPOSITE", Value: "v-2"}}
	a, err := AssembleUpload(in, "b", "k", have, []CompletePart{{Number: 1, ETag: "e1"}, {Number: 4, ETag: `"e4"`}}, 10, now)
	if err != nil {
		t.Fatal(err)
	}
	o := a.Object
	if o.Bucket != "b" || o.Key != "k" || o.BlobKey != "" || o.Inline != nil || o.IsInline() || o.Size != 20 || !o.ModTime.Equal(now) {
		t.Errorf("object = %+v", o)
	}
	if o.ETag != in.ETag || o.ContentType != in.ContentType || o.Metadata["a"] != "b" || o.Checksum != in.Checksum {
		t.Errorf("the caller's fields are not kept: %+v", o)
	}
	want := []ObjectPart{
		{BlobKey: "blob/1", Size: 10, ETag: "e1", Checksum: "c1", Encryption: []byte{1}, EncryptionKEK: "kek"},
		{BlobKey: "blob/4", Size: 10, ETag: "e4", Checksum: "c4", Encryption: []byte{4}, EncryptionKEK: "kek"},
	}
	if fmt.Sprint(o.Parts) != fmt.Sprint(want) {
		t.Errorf("parts = %+v, want %+v", o.Parts, want)
	}
	if !slices.Equal(a.Numbers, []int{1, 4}) {
		t.Errorf("numbers = %v", a.Numbers)
	}
	freed, blobs := a.Freed()
	if freed != 20 || !slices.Equal(blobs, []string{"blob/2", "blob/3", "blob/5"}) {
		t.Errorf("discarded = %d bytes, %q; want 20, blob/2, blob/3, blob/5", freed, blobs)
	}
	given := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	in.ModTime = given
	if a, _ := AssembleUpload(in, "b", "k", have, []CompletePart{{Number: 5, ETag: "e5"}}, 10, now); !a.Object.ModTime.Equal(given) {
		t.Errorf("ModTime = %v, want the caller's %v", a.Object.ModTime, given)
	}
}

func TestAssembleBackendUpload(t *testing.T) {
	now := time.Now()
	u := Upload{ID: "u", Bucket: "b", Key: "k", BlobKey: "blob/assembled"}
	in := Object{Bucket: "x", Key: "y", BlobKey: "blob/assembled", Size: 7, Inline: []byte("stale"), Parts: []ObjectPart{{BlobKey: "p"}}}
	o, err := AssembleBackendUpload(in, u, now)
	if err != nil {
		t.Fatal(err)
	}
	if o.Bucket != "b" || o.Key != "k" || o.Parts != nil || o.Inline != nil || o.BlobKey != u.BlobKey || o.Size != 7 || !o.ModTime.Equal(now) {
		t.Errorf("object = %+v", o)
	}
	for _, c := range []struct {
		upload, obj string
	}{{"blob/assembled", "blob/other"}, {"", ""}, {"", "blob/x"}} {
		u.BlobKey, in.BlobKey = c.upload, c.obj
		if _, err := AssembleBackendUpload(in, u, now); !errcode.Is(err, errcode.InvalidArgument) {
			t.Errorf("upload blob %q, object blob %q: %v, want invalid_argument", c.upload, c.obj, err)
		}
	}
}

func TestPartsFreed(t *testing.T) {
	freed, blobs := PartsFreed([]Part{testPart(3, 1), testPart(1, 2), testPart(2, 4)})
	if freed != 7 || !slices.Equal(blobs, []string{"blob/1", "blob/2", "blob/3"}) {
		t.Errorf("PartsFreed = %d, %q", freed, blobs)
	}
	if freed, blobs := PartsFreed(nil); freed != 0 || len(blobs) != 0 {
		t.Errorf("PartsFreed(nil) = %d, %q", freed, blobs)
	}
}

func TestMoveUsage(t *testing.T) {
	for _, c := range []struct {
		src, dst         string
		srcSize, dstSize int64
		want             []UsageDelta
	}{
		{"a", "a", 10, 0, []UsageDelta{{"a", 0}}},
		{"a", "a", 10, 4, []UsageDelta{{"a", -4}}},
		{"a", "b", 10, 0, []UsageDelta{{"a", -10}, {"b", 10}}},
		{"b", "a", 10, 4, []UsageDelta{{"a", 6}, {"b", -10}}},
		{"a", "b", 3, 8, []UsageDelta{{"a", -3}, {"b", -5}}},
	} {
		if got := MoveUsage(c.src, c.srcSize, c.dst, c.dstSize); !slices.Equal(got, c.want) {
			t.Errorf("MoveUsage(%s %d → %s %d) = %v, want %v", c.src, c.srcSize, c.dst, c.dstSize, got, c.want)
		}
	}
}

func TestPrecheckMove(t *testing.T) {
	cur := Object{Bucket: "b", Key: "k", ETag: "e"}
	get := func(_ context.Context, bucket, key string) (Object, error) {
		if bucket == "b" && key == "k" {
			return cur, nil
		}
		return Object{}, errcode.New(errcode.NotFound, "no object")
	}
	for _, c := range []struct {
		name           string
		sb, sk, db, dk string
		cond           Cond
		done           bool
		code           errcode.Code // of err, if not nil
		ok             bool         // err is nil
	}{
		{"another key", "b", "k", "b", "k2", Cond{}, false, 0, true},
		{"another bucket", "b", "k", "c", "k", Cond{IfNoneMatch: true}, false, 0, true},
		{"no destination bucket", "b", "k", "", "k", Cond{}, true, errcode.InvalidArgument, false},
		{"no destination key", "b", "k", "b", "", Cond{}, true, errcode.InvalidArgument, false},
		{"onto itself", "b", "k", "b", "k", Cond{IfMatch: "e"}, true, 0, true},
		{"onto itself, cond fails", "b", "k", "b", "k", Cond{IfNoneMatch: true}, true, errcode.PreconditionFailed, false},
		{"onto itself, missing", "b", "gone", "b", "gone", Cond{}, true, errcode.NotFound, false},
	} {
		o, done, err := PrecheckMove(context.Background(), get, c.sb, c.sk, c.db, c.dk, c.cond)
		if done != c.done || (err == nil) != c.ok || err != nil && errcode.Of(err) != c.code || c.ok && done && o.ETag != "e" {
			t.Errorf("%s: PrecheckMove = %+v, %v, %v; want done %v, ok %v, code %v", c.name, o, done, err, c.done, c.ok, c.code)
		}
	}
}

func TestUnquote(t *testing.T) {
	for in, want := range map[string]string{`"a"`: "a", "a": "a", `"`: `"`, `""`: "", `"a`: `"a`, `a"`: `a"`} {
		if got := Unquote(in); got != want {
			t.Errorf("Unquote(%q) = %q, want %q", in, got, want)
		}
	}
}
