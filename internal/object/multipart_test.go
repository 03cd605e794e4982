package object

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"hash/crc32"
	"hash/crc64"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/metacache"
)

// TestMultipartChecksumType: CreateUpload takes the checksum types S3
// allows for the algorithm (and refuses others, creating nothing); a
// FULL_OBJECT upload completes with the CRC of the whole object (combined
// from its parts' CRCs: compared here with a CRC over every byte, computed
// with the standard library), which a read returns; a COMPOSITE one with
// the checksum of the parts' checksums.
func TestMultipartChecksumType(t *testing.T) {
	f := newFixture(t, 0)
	ctx := t.Context()
	for _, tc := range []struct{ alg, typ string }{
		{"SHA256", "FULL_OBJECT"}, {"SHA1", "full_object"}, {"CRC64NVME", "COMPOSITE"}, {"CRC32", "garbage"}, {"", "COMPOSITE"},
	} {
		_, err := f.svc.CreateUpload(ctx, f.alice, CreateUploadInput{Bucket: "alice-bucket", Key: "k", ChecksumAlgorithm: tc.alg, ChecksumType: tc.typ})
		if e := errcode.As(err); e == nil || e.Code != errcode.InvalidArgument || e.Detail["reason"] != "invalid_checksum_type" {
			t.Errorf("%s %s: %v, want invalid_checksum_type", tc.alg, tc.typ, err)
		}
	}
	if us, _, err := f.svc.ListUploads(ctx, f.alice, "alice-bucket", meta.ListUploadsOptions{Limit: 10}); err != nil || len(us) != 0 {
		t.Fatalf("refused uploads were created: %v, %v", us, err)
	}

	sizes := []int{MinPartSize + 7, MinPartSize, 1234}
	var data []byte
	for i, n := range sizes {
		data = append(data, bytes.Repeat([]byte{byte('a' + i), byte(i)}, n/2+1)[:n]...)
	}
	crc := func(alg string, b []byte) []byte {
		switch alg {
		case "CRC32":
			return binary.BigEndian.AppendUint32(nil, crc32.ChecksumIEEE(b))
		case "CRC32C":
			return binary.BigEndian.AppendUint32(nil, crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)))
		}
		return binary.BigEndian.AppendUint64(nil, crc64.Checksum(b, crc64.MakeTable(0x9a6c9329ac4bc9b5)))
	}
	for _, tc := range []struct{ alg, typ, wantType string }{
		{"CRC32", "FULL_OBJECT", "FULL_OBJECT"},
		{"CRC32C", "full_object", "FULL_OBJECT"},
		{"CRC64NVME", "FULL_OBJECT", "FULL_OBJECT"},
		{"CRC64NVME", "", "FULL_OBJECT"}, // its only type, the default
		{"CRC32", "", "COMPOSITE"},
		{"CRC32C", "COMPOSITE", "COMPOSITE"},
	} {
		t.Run(tc.alg+" "+tc.typ, func(t *testing.T) {
			key := "mp-" + tc.alg + "-" + tc.typ
			u, err := f.svc.CreateUpload(ctx, f.alice, CreateUploadInput{Bucket: "alice-bucket", Key: key, ChecksumAlgorithm: tc.alg, ChecksumType: tc.typ})
			if err != nil {
				t.Fatal(err)
			}
			var parts []meta.CompletePart
			var partSums []byte
			off := 0
			for i, n := range sizes {
				b := data[off : off+n]
				off += n
				p, err := f.svc.PutPart(ctx, f.alice, PartInput{Bucket: "alice-bucket", Key: key, UploadID: u.ID, Number: i + 1,
					Body: bytes.NewReader(b), Size: int64(n)})
				if err != nil {
					t.Fatal(err)
				}
				parts = append(parts, meta.CompletePart{Number: i + 1, ETag: p.ETag, Checksum: meta.Checksum{Algorithm: tc.alg, Value: p.Checksum}})
				partSums = append(partSums, crc(tc.alg, b)...)
			}
			o, err := f.svc.CompleteUpload(ctx, f.alice, "alice-bucket", key, u.ID, parts, meta.Cond{})
			if err != nil {
				t.Fatal(err)
			}
			want := meta.Checksum{Algorithm: tc.alg, Type: tc.wantType, Value: base64.StdEncoding.EncodeToString(crc(tc.alg, data))}
			if tc.wantType == "COMPOSITE" {
				want.Value = base64.StdEncoding.EncodeToString(crc(tc.alg, partSums)) + "-3"
			}
			if o.Checksum != want {
				t.Errorf("completed with %+v, want %+v", o.Checksum, want)
			}
			r, err := f.svc.Get(ctx, f.alice, "alice-bucket", key)
			if err != nil || r.Object.Checksum != want {
				t.Errorf("read back %+v, %v; want %+v", r.Object.Checksum, err, want)
			}
		})
	}
}

// TestCompleteUploadAgain: completing an upload again with the same parts
// (a client whose first answer was lost retries) answers the object the
// first completion made, as S3 does (200 with the same ETag), while that
// object is still at the key; a different parts list, an overwritten
// object, another user or an upload never completed stay NoSuchUpload.
func TestCompleteUploadAgain(t *testing.T) {
	f := newFixture(t, 0)
	ctx := t.Context()
	upload := func(key string, parts ...string) (meta.Upload, []meta.CompletePart) {
		t.Helper()
		u, err := f.svc.CreateUpload(ctx, f.alice, CreateUploadInput{Bucket: "alice-bucket", Key: key})
		if err != nil {
			t.Fatal(err)
		}
		var list []meta.CompletePart
		for i, data := range parts {
			p, err := f.svc.PutPart(ctx, f.alice, PartInput{Bucket: "alice-bucket", Key: key, UploadID: u.ID, Number: i + 1,
				Body: strings.NewReader(data), Size: int64(len(data))})
			if err != nil {
				t.Fatal(err)
			}
			list = append(list, meta.CompletePart{Number: i + 1, ETag: `"` + p.ETag + `"`})
		}
		return u, list
	}
	noUpload := func(t *testing.T, err error) {
		t.Helper()
		if e := errcode.As(err); e == nil || e.Code != errcode.NotFound || e.Detail["resource"] != "upload" {
			t.Errorf("got %v, want the upload's NotFound", err)
		}
	}
	first := strings.Repeat("a", MinPartSize)
	u, parts := upload("k", first, "tail")
	o, err := f.svc.CompleteUpload(ctx, f.alice, "alice-bucket", "k", u.ID, slices.Clone(parts), meta.Cond{})
	if err != nil {
		t.Fatal(err)
	}
	again, err := f.svc.CompleteUpload(ctx, f.alice, "alice-bucket", "k", u.ID, slices.Clone(parts), meta.Cond{})
	if err != nil || again.ETag != o.ETag || again.Size != o.Size || !again.ModTime.Equal(o.ModTime) {
		t.Fatalf("completing again: %+v, %v; want the object %+v", again, err, o)
	}
	if got := f.read(t, f.alice, "alice-bucket", "k"); got != first+"tail" {
		t.Errorf("the object reads %d bytes", len(got))
	}

	t.Run("another parts list", func(t *testing.T) {
		_, err := f.svc.CompleteUpload(ctx, f.alice, "alice-bucket", "k", u.ID, parts[:1], meta.Cond{})
		noUpload(t, err)
		other := slices.Clone(parts)
		other[1].ETag = `"00000000000000000000000000000000"`
		_, err = f.svc.CompleteUpload(ctx, f.alice, "alice-bucket", "k", u.ID, other, meta.Cond{})
		noUpload(t, err)
	})
	t.Run("another key", func(t *testing.T) {
		_, err := f.svc.CompleteUpload(ctx, f.alice, "alice-bucket", "k2", u.ID, slices.Clone(parts), meta.Cond{})
		noUpload(t, err)
	})
	t.Run("another user", func(t *testing.T) {
		_, err := f.svc.CompleteUpload(ctx, f.bob, "alice-bucket", "k", u.ID, slices.Clone(parts), meta.Cond{})
		if !errcode.Is(err, errcode.PermissionDenied) {
			t.Errorf("bob completing alice's upload again: %v, want PermissionDenied", err)
		}
	})
	t.Run("overwritten", func(t *testing.T) {
		if _, err := f.put(t, f.alice, "alice-bucket", "k", "new"); err != nil {
			t.Fatal(err)
		}
		_, err := f.svc.CompleteUpload(ctx, f.alice, "alice-bucket", "k", u.ID, slices.Clone(parts), meta.Cond{})
		noUpload(t, err)
	})
	t.Run("aborted", func(t *testing.T) {
		a, list := upload("aborted", "x")
		if err := f.svc.AbortUpload(ctx, f.alice, "alice-bucket", "aborted", a.ID); err != nil {
			t.Fatal(err)
		}
		_, err := f.svc.CompleteUpload(ctx, f.alice, "alice-bucket", "aborted", a.ID, list, meta.Cond{})
		noUpload(t, err)
	})
}

// TestCompleteUploadAgainCached: a completion that finds the upload gone
// because another completion of it just committed answers the object
// even when this node's metadata cache still holds the key's previous
// object for a moment (the cache learns of a change just after its
// commit; from another node, a notification later). Here the other
// completion goes around the cache entirely, and the stale entry lives
// until its TTL (10ms), well within the time completedWith looks again.
func TestCompleteUploadAgainCached(t *testing.T) {
	var raw meta.Stores
	f := newFixtureOver(t, 0, func(m meta.Stores) meta.Stores {
		raw = m
		return metacache.NewStore(m, metacache.NewBus(), metacache.StoreOptions{
			Objects: metacache.Options{TTL: 10 * time.Millisecond}, Buckets: metacache.Options{TTL: time.Minute}}).Stores()
	})
	other := New(StoresOf(raw), f.blobs, testConfig(func(c *Config) { c.GarbageGrace, c.InlineMax = time.Nanosecond, 0 }), nil)
	ctx := t.Context()
	if _, err := f.put(t, f.alice, "alice-bucket", "k", "the previous object"); err != nil {
		t.Fatal(err)
	}
	if got := f.read(t, f.alice, "alice-bucket", "k"); got != "the previous object" { // now cached
		t.Fatalf("read %q", got)
	}
	u, err := f.svc.CreateUpload(ctx, f.alice, CreateUploadInput{Bucket: "alice-bucket", Key: "k"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := f.svc.PutPart(ctx, f.alice, PartInput{Bucket: "alice-bucket", Key: "k", UploadID: u.ID, Number: 1, Body: strings.NewReader("new"), Size: 3})
	if err != nil {
		t.Fatal(err)
	}
	parts := []meta.CompletePart{{Number: 1, ETag: p.ETag}}
	done, err := other.CompleteUpload(ctx, f.alice, "alice-bucket", "k", u.ID, slices.Clone(parts), meta.Cond{})
	if err != nil {
		t.Fatal(err)
	}
	again, err := f.svc.CompleteUpload(ctx, f.alice, "alice-bucket", "k", u.ID, slices.Clone(parts), meta.Cond{})
	if err != nil || again.ETag != done.ETag {
		t.Fatalf("completing again through the cache: %q, %v; want %q", again.ETag, err, done.ETag)
	}
}

// TestCompleteExpecting: the whole-object checksum and size a completion
// asserts are compared with what the parts make before the commit; a
// mismatch completes nothing, and the upload still completes afterwards.
func TestCompleteExpecting(t *testing.T) {
	f := newFixture(t, 0)
	ctx := t.Context()
	a, b := bytes.Repeat([]byte("a"), MinPartSize), []byte("tail")
	crc := func(p []byte) []byte { return binary.BigEndian.AppendUint32(nil, crc32.ChecksumIEEE(p)) }
	full := base64.StdEncoding.EncodeToString(crc(append(slices.Clone(a), b...)))
	composite := base64.StdEncoding.EncodeToString(crc(append(crc(a), crc(b)...)))
	upload := func(key, typ string) (meta.Upload, []meta.CompletePart) {
		u, err := f.svc.CreateUpload(ctx, f.alice, CreateUploadInput{Bucket: "alice-bucket", Key: key, ChecksumAlgorithm: "CRC32", ChecksumType: typ})
		if err != nil {
			t.Fatal(err)
		}
		var parts []meta.CompletePart
		for i, body := range [][]byte{a, b} {
			p, err := f.svc.PutPart(ctx, f.alice, PartInput{Bucket: "alice-bucket", Key: key, UploadID: u.ID, Number: i + 1, Body: bytes.NewReader(body), Size: int64(len(body))})
			if err != nil {
				t.Fatal(err)
			}
			parts = append(parts, meta.CompletePart{Number: i + 1, ETag: p.ETag, Checksum: meta.Checksum{Algorithm: "CRC32", Value: p.Checksum}})
		}
		return u, parts
	}
	size := int64(len(a) + len(b))
	for _, tc := range []struct {
		name, typ string
		want      Expect
		code      errcode.Code // 0: completes
	}{
		{"full object", "FULL_OBJECT", Expect{Checksum: meta.Checksum{Algorithm: "CRC32", Value: full}, Size: size}, 0},
		{"full object, typed", "FULL_OBJECT", Expect{Checksum: meta.Checksum{Algorithm: "CRC32", Type: "FULL_OBJECT", Value: full}, Size: -1}, 0},
		{"composite with -N", "COMPOSITE", Expect{Checksum: meta.Checksum{Algorithm: "CRC32", Value: composite + "-2"}, Size: -1}, 0},
		{"composite without -N", "COMPOSITE", Expect{Checksum: meta.Checksum{Algorithm: "CRC32", Value: composite}, Size: -1}, 0},
		{"another value", "FULL_OBJECT", Expect{Checksum: meta.Checksum{Algorithm: "CRC32", Value: composite}, Size: -1}, errcode.ChecksumMismatch},
		{"another algorithm", "FULL_OBJECT", Expect{Checksum: meta.Checksum{Algorithm: "CRC32C", Value: full}, Size: -1}, errcode.InvalidArgument},
		{"another type", "FULL_OBJECT", Expect{Checksum: meta.Checksum{Algorithm: "CRC32", Type: "COMPOSITE", Value: full}, Size: -1}, errcode.InvalidArgument},
		{"another size", "FULL_OBJECT", Expect{Size: size + 1}, errcode.InvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := "exp-" + strings.ReplaceAll(tc.name, " ", "-")
			u, parts := upload(key, tc.typ)
			_, err := f.svc.CompleteUploadExpecting(ctx, f.alice, "alice-bucket", key, u.ID, slices.Clone(parts), meta.Cond{}, tc.want)
			if tc.code == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errcode.Is(err, tc.code) {
				t.Fatalf("completion = %v, want %v", err, tc.code)
			}
			if _, err := f.svc.Get(ctx, f.alice, "alice-bucket", key); !errcode.Is(err, errcode.NotFound) {
				t.Errorf("a refused completion made the object: %v", err)
			}
			if _, err := f.svc.CompleteUpload(ctx, f.alice, "alice-bucket", key, u.ID, parts, meta.Cond{}); err != nil {
				t.Errorf("the upload does not complete after a refused completion: %v", err)
			}
		})
	}
	// An upload without a checksum algorithm cannot make the one asserted.
	u, err := f.svc.CreateUpload(ctx, f.alice, CreateUploadInput{Bucket: "alice-bucket", Key: "plain"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := f.svc.PutPart(ctx, f.alice, PartInput{Bucket: "alice-bucket", Key: "plain", UploadID: u.ID, Number: 1, Body: bytes.NewReader(b), Size: int64(len(b))})
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.svc.CompleteUploadExpecting(ctx, f.alice, "alice-bucket", "plain", u.ID, []meta.CompletePart{{Number: 1, ETag: p.ETag}}, meta.Cond{},
		Expect{Checksum: meta.Checksum{Algorithm: "CRC32", Value: full}, Size: -1})
	if e := errcode.As(err); e == nil || e.Code != errcode.InvalidArgument || e.Detail["reason"] != "invalid_request" {
		t.Errorf("plain upload with an asserted checksum: %v", err)
	}
}

// TestCompleteListedChecksums: the part checksums a completion lists are
// compared with the stored parts', as S3 does (CheckCompletion): another
// algorithm is BadDigest, another value InvalidPart, a COMPOSITE upload
// must list every part's; x-amz-checksum-type alone must be the upload's.
// A refused completion changes nothing.
func TestCompleteListedChecksums(t *testing.T) {
	f := newFixture(t, 0)
	ctx := t.Context()
	body := []byte("part")
	sha256sum := "n2alat9FhKiZXkZO18V2LLcZFM3IT8R7DjSMvK//7WU="
	for _, tc := range []struct {
		name, alg, typ string
		listed         func(stored string) meta.Checksum
		want           Expect
		code           errcode.Code // 0: completes
		reason, msg    string
	}{
		{"listed", "SHA1", "COMPOSITE", func(s string) meta.Checksum { return meta.Checksum{Algorithm: "SHA1", Value: s} }, Expect{Size: -1}, 0, "", ""},
		{"composite, missing", "SHA1", "COMPOSITE", func(string) meta.Checksum { return meta.Checksum{} }, Expect{Size: -1}, errcode.InvalidArgument, "invalid_request",
			"The upload was created using a sha1 checksum. The complete request must include the checksum for each part. It was missing for part 1 in the request."},
		{"full object, missing", "CRC32C", "FULL_OBJECT", func(string) meta.Checksum { return meta.Checksum{} }, Expect{Size: -1}, 0, "", ""},
		{"another algorithm", "CRC32C", "FULL_OBJECT", func(string) meta.Checksum { return meta.Checksum{Algorithm: "SHA256", Value: sha256sum} }, Expect{Size: -1},
			errcode.ChecksumMismatch, "", "The sha256 you specified for part 1 did not match what we received."},
		{"another value", "SHA256", "COMPOSITE", func(string) meta.Checksum { return meta.Checksum{Algorithm: "SHA256", Value: sha256sum} }, Expect{Size: -1},
			errcode.InvalidArgument, "invalid_part", ""},
		{"upload without a checksum", "", "", func(string) meta.Checksum { return meta.Checksum{Algorithm: "SHA256", Value: sha256sum} }, Expect{Size: -1},
			errcode.InvalidArgument, "invalid_part", ""},
		{"the upload's type", "CRC32", "FULL_OBJECT", func(string) meta.Checksum { return meta.Checksum{} }, Expect{Checksum: meta.Checksum{Type: "FULL_OBJECT"}, Size: -1}, 0, "", ""},
		{"another type", "CRC32", "FULL_OBJECT", func(string) meta.Checksum { return meta.Checksum{} }, Expect{Checksum: meta.Checksum{Type: "COMPOSITE"}, Size: -1},
			errcode.InvalidArgument, "invalid_request", "The upload was created using the FULL_OBJECT checksum mode. The complete request must use the same checksum mode."},
		{"a type, no checksum", "", "", func(string) meta.Checksum { return meta.Checksum{} }, Expect{Checksum: meta.Checksum{Type: "COMPOSITE"}, Size: -1},
			errcode.InvalidArgument, "invalid_request", "The upload was created using the null checksum mode. The complete request must use the same checksum mode."},
		{"another size", "", "", func(string) meta.Checksum { return meta.Checksum{} }, Expect{Size: 5}, errcode.InvalidArgument, "invalid_request",
			"The provided 'x-amz-mp-object-size' header value 4 does not match what was computed: 5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := "listed-" + strings.ReplaceAll(tc.name, " ", "-")
			u, err := f.svc.CreateUpload(ctx, f.alice, CreateUploadInput{Bucket: "alice-bucket", Key: key, ChecksumAlgorithm: tc.alg, ChecksumType: tc.typ})
			if err != nil {
				t.Fatal(err)
			}
			p, err := f.svc.PutPart(ctx, f.alice, PartInput{Bucket: "alice-bucket", Key: key, UploadID: u.ID, Number: 1, Body: bytes.NewReader(body), Size: int64(len(body))})
			if err != nil {
				t.Fatal(err)
			}
			parts := []meta.CompletePart{{Number: 1, ETag: p.ETag, Checksum: tc.listed(p.Checksum)}}
			_, err = f.svc.CompleteUploadExpecting(ctx, f.alice, "alice-bucket", key, u.ID, parts, meta.Cond{}, tc.want)
			if tc.code == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			e := errcode.As(err)
			if e == nil || e.Code != tc.code || tc.reason != "" && e.Detail["reason"] != tc.reason || tc.msg != "" && e.Message != tc.msg {
				t.Fatalf("completion = %v, want %v %s %q", err, tc.code, tc.reason, tc.msg)
			}
			if _, err := f.svc.Get(ctx, f.alice, "alice-bucket", key); !errcode.Is(err, errcode.NotFound) {
				t.Errorf("a refused completion made the object: %v", err)
			}
		})
	}
}
