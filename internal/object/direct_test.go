package object

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"regexp"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/integrity"
	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/metacache"
)

// directETagRE is a direct-upload part's ETag: 24 hex digits, never the
// 32 of an MD5.
var directETagRE = regexp.MustCompile(`^[0-9a-f]{24}$`)

// TestDirectPartOpaqueETag: a part of a file-API direct upload sent to the
// URL the file API presigned (PartInput.Direct) gets an opaque ETag, not
// its MD5 (which is not computed); an announced Content-MD5 is still
// checked, and a wrong one is refused with nothing recorded; a part sent
// again gets another ETag, so a completion naming the first is refused;
// the object keeps the multipart ETag form "<32 hex>-N" and its bytes. An
// upload S3's CreateMultipartUpload made (no declared part size) keeps the
// MD5 ETag even if the flag is set.
func TestDirectPartOpaqueETag(t *testing.T) {
	f := newFixture(t, 0)
	ctx := t.Context()
	one := bytes.Repeat([]byte("direct part one "), MinPartSize/16)
	two := []byte("and the last, short part")
	u, err := f.svc.CreateUpload(ctx, f.alice, CreateUploadInput{Bucket: "alice-bucket", Key: "direct.bin",
		Size: int64(len(one) + len(two)), PartSize: MinPartSize})
	if err != nil {
		t.Fatal(err)
	}
	put := func(n int, b, announced []byte) (meta.Part, error) {
		return f.svc.PutPart(ctx, f.alice, PartInput{UploadID: u.ID, Number: n, Body: bytes.NewReader(b), Size: int64(len(b)), MD5: announced, Direct: true})
	}
	p1, err := put(1, one, nil)
	if err != nil {
		t.Fatal(err)
	}
	sum := md5.Sum(one)
	if !directETagRE.MatchString(p1.ETag) || p1.ETag == hex.EncodeToString(sum[:]) {
		t.Fatalf("direct part's ETag %q: want 24 hex digits, not its MD5", p1.ETag)
	}
	// A wrong Content-MD5 is refused, and nothing is recorded.
	bad := md5.Sum([]byte("not these bytes"))
	if _, err := put(2, two, bad[:]); errcode.Of(err) != errcode.ChecksumMismatch {
		t.Fatalf("wrong Content-MD5: %v, want ChecksumMismatch", err)
	}
	if _, ps, _, err := f.svc.ListParts(ctx, f.alice, "", "", u.ID, 0, 10); err != nil || len(ps) != 1 {
		t.Fatalf("parts after a refused one: %+v, %v; want part 1 only", ps, err)
	}
	good := md5.Sum(two)
	p2, err := put(2, two, good[:])
	if err != nil || !directETagRE.MatchString(p2.ETag) {
		t.Fatalf("right Content-MD5: %+v, %v; want an opaque ETag", p2, err)
	}
	// Sent again: another ETag; the first no longer completes.
	again, err := put(2, two, nil)
	if err != nil || again.ETag == p2.ETag {
		t.Fatalf("part 2 again: ETag %q (before %q), %v", again.ETag, p2.ETag, err)
	}
	stale := []meta.CompletePart{{Number: 1, ETag: `"` + p1.ETag + `"`}, {Number: 2, ETag: p2.ETag}}
	_, err = f.svc.CompleteUpload(ctx, f.alice, "", "", u.ID, stale, meta.Cond{})
	if e := errcode.As(err); e == nil || e.Detail["reason"] != "invalid_part" {
		t.Fatalf("completion with a replaced part's ETag: %v, want invalid_part", err)
	}
	o, err := f.svc.CompleteUpload(ctx, f.alice, "", "", u.ID, []meta.CompletePart{{Number: 1, ETag: p1.ETag}, {Number: 2, ETag: again.ETag}}, meta.Cond{})
	if err != nil {
		t.Fatal(err)
	}
	raw1, _ := hex.DecodeString(p1.ETag)
	raw2, _ := hex.DecodeString(again.ETag)
	whole := md5.Sum(append(raw1, raw2...))
	if want := hex.EncodeToString(whole[:]) + "-2"; o.ETag != want {
		t.Errorf("object ETag %q, want %q", o.ETag, want)
	}
	if got := f.read(t, f.alice, "alice-bucket", "direct.bin"); got != string(one)+string(two) {
		t.Errorf("object bytes differ (%d bytes, want %d)", len(got), len(one)+len(two))
	}

	// S3's own upload: the MD5, whatever the flag says.
	s3u, err := f.svc.CreateUpload(ctx, f.alice, CreateUploadInput{Bucket: "alice-bucket", Key: "s3.bin"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := f.svc.PutPart(ctx, f.alice, PartInput{Bucket: "alice-bucket", Key: "s3.bin", UploadID: s3u.ID, Number: 1,
		Body: bytes.NewReader(two), Size: int64(len(two)), Direct: true})
	if err != nil || p.ETag != hex.EncodeToString(good[:]) {
		t.Errorf("S3 upload's part: ETag %q, %v; want its MD5 %x", p.ETag, err, good)
	}
}

// directObject completes a file-API direct upload of data in one part
// sent as PartInput.Direct through svc, and returns the object.
func directObject(t *testing.T, f *fixture, svc *Service, key string, data []byte) meta.Object {
	t.Helper()
	ctx := t.Context()
	u, err := svc.CreateUpload(ctx, f.alice, CreateUploadInput{Bucket: "alice-bucket", Key: key, Size: int64(len(data)), PartSize: MinPartSize})
	if err != nil {
		t.Fatal(err)
	}
	p, err := svc.PutPart(ctx, f.alice, PartInput{UploadID: u.ID, Number: 1, Body: bytes.NewReader(data), Size: int64(len(data)), Direct: true})
	if err != nil {
		t.Fatal(err)
	}
	o, err := svc.CompleteUpload(ctx, f.alice, "", "", u.ID, []meta.CompletePart{{Number: 1, ETag: p.ETag}}, meta.Cond{})
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Parts) != 1 || !directETagRE.MatchString(o.Parts[0].ETag) {
		t.Fatalf("direct object's parts: %+v", o.Parts)
	}
	return o
}

// flipByte overwrites blob key with its bytes, one of them changed: the
// same size, other bytes.
func flipByte(t *testing.T, f *fixture, key string) {
	t.Helper()
	ctx := t.Context()
	rc, err := f.blobs.Get(ctx, key, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(rc)
	rc.Close()
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 1
	if _, err := f.blobs.Put(ctx, key, bytes.NewReader(b), int64(len(b))); err != nil {
		t.Fatal(err)
	}
}

// TestScrubChecksDirectPart: a direct-upload part has no MD5, so the scrub
// checks its bytes against the CRC-32C its ETag records: a flipped byte
// (same size) is found corrupt, the intact object is not. Without the
// CRC check the scrub sees only the size and finds nothing.
func TestScrubChecksDirectPart(t *testing.T) {
	f := newFixture(t, 0)
	data := bytes.Repeat([]byte("scrub a direct part "), 3000)
	directObject(t, f, f.svc, "good", data)
	bad := directObject(t, f, f.svc, "bad", data)
	flipByte(t, f, bad.Parts[0].BlobKey)
	p, err := f.svc.Scrubber().Scrub(t.Context(), ScrubOptions{Owner: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if p.Objects != 2 || p.Corrupt != 1 || p.Bad() != 1 {
		t.Fatalf("scrub pass: %+v, want 2 objects, the flipped one corrupt", p)
	}
	if fs, _ := f.meta.ListScrubFindings(t.Context(), "", 10); len(fs) != 1 || fs[0].Key != "bad" || fs[0].Problem != meta.ScrubCorrupt {
		t.Errorf("findings: %+v, want bad corrupt", fs)
	}
}

// TestEncryptJobChecksDirectPart: encrypting a plaintext bucket re-reads
// every part against the digest its ETag records; a direct-upload part
// whose bytes no longer match its CRC-32C is not sealed as if good: the
// row fails and stays as it was. Without the check it is encrypted.
func TestEncryptJobChecksDirectPart(t *testing.T) {
	f, keys := encFixture(t)
	ctx := t.Context()
	plain := New(f.meta, f.blobs, testConfig(func(c *Config) { c.GarbageGrace, c.Keys = time.Nanosecond, keys }), nil)
	data := bytes.Repeat([]byte("encrypt a direct part "), 3000)
	directObject(t, f, plain, "good", data)
	bad := directObject(t, f, plain, "bad", data)
	flipByte(t, f, bad.Parts[0].BlobKey)
	if _, err := plain.StartEncrypt(ctx, "alice-bucket"); err != nil {
		t.Fatal(err)
	}
	j := runJobs(t, plain, meta.EncryptJobName("alice-bucket"), fastJobs("a"))
	if j.Done != 1 || j.Failed != 1 {
		t.Errorf("job: %+v, want 1 done, 1 failed", j)
	}
	if o, err := f.meta.GetObject(ctx, "alice-bucket", "bad"); err != nil || !isPlaintext(o) || o.Parts[0].BlobKey != bad.Parts[0].BlobKey {
		t.Errorf("damaged object after the job: %+v, %v; want it unchanged", o, err)
	}
}

// BenchmarkPutPartDirect: one 1 MiB part (the GoVault scenario's upload)
// as S3's UploadPart writes it (its MD5 for the ETag) and as a direct
// upload's part URL does (PartInput.Direct: a CRC-32C and an opaque ETag,
// no MD5). Issue 23's third pass: the difference is the part's MD5.
func BenchmarkPutPartDirect(b *testing.B) {
	for _, direct := range []bool{false, true} {
		name := "s3-md5"
		if direct {
			name = "direct-opaque"
		}
		b.Run(name, func(b *testing.B) {
			f := newFixture(b, 0)
			ctx := b.Context()
			u, err := f.svc.CreateUpload(ctx, f.alice, CreateUploadInput{Bucket: "alice-bucket", Key: "bench", Size: 1 << 20, PartSize: MinPartSize})
			if err != nil {
				b.Fatal(err)
			}
			data := markerData(1 << 20)
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if _, err := f.svc.PutPart(ctx, f.alice, PartInput{UploadID: u.ID, Number: 1, Body: bytes.NewReader(data), Size: int64(len(data)), Direct: direct}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkPartDigest: what a 1 MiB part's bytes cost to hash on their
// way to the blob, without the store around it: S3's UploadPart (the
// integrity reader's MD5, for the ETag) and a direct-upload part (the
// reader without MD5, and the CRC-32C of directETag). The lever of
// issue 23's third pass, isolated from PutPart's disk and commits
// (BenchmarkPutPartDirect).
func BenchmarkPartDigest(b *testing.B) {
	data := markerData(1 << 20)
	for _, direct := range []bool{false, true} {
		name := "s3-md5"
		if direct {
			name = "direct-crc32c"
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			buf := make([]byte, 256<<10)
			for range b.N {
				r := integrity.NewReader(bytes.NewReader(data), integrity.Options{Size: int64(len(data)), Limit: MaxPartSize, NoSHA256: true, NoMD5: direct})
				var body io.Reader = r
				var crc *crcReader
				if direct {
					crc = &crcReader{r: r}
					body = crc
				}
				if _, err := io.CopyBuffer(io.Discard, struct{ io.Reader }{body}, buf); err != nil {
					b.Fatal(err)
				}
				if direct {
					_ = directETag(crc.crc)
				} else {
					_ = hex.EncodeToString(r.MD5())
				}
			}
		})
	}
}

// FuzzPartDigest: what partDigest reads from a stored part ETag is an MD5
// (16 bytes) for 32 hex digits, a CRC-32C (4 bytes) for 24, and nothing
// for anything else; never a panic. A directETag always reads back as
// its CRC-32C.
func FuzzPartDigest(f *testing.F) {
	for _, s := range []string{"", "d41d8cd98f00b204e9800998ecf8427e", "0123456789abcdef01234567", "zz", "0123456789abcdef0123456", directETag(42)} {
		f.Add(s, uint32(7))
	}
	f.Fuzz(func(t *testing.T, etag string, crc uint32) {
		m, c := partDigest(etag)
		raw, err := hex.DecodeString(etag)
		switch {
		case err == nil && len(raw) == md5.Size:
			if !bytes.Equal(m, raw) || c != nil {
				t.Fatalf("%q: md5 %x crc %x, want the MD5", etag, m, c)
			}
		case err == nil && len(raw) == directETagSize:
			if m != nil || !bytes.Equal(c, raw[:4]) {
				t.Fatalf("%q: md5 %x crc %x, want the CRC-32C", etag, m, c)
			}
		case m != nil || c != nil:
			t.Fatalf("%q: md5 %x crc %x, want neither", etag, m, c)
		}
		tag := directETag(crc)
		if _, c := partDigest(tag); !directETagRE.MatchString(tag) || binary.BigEndian.Uint32(c) != crc {
			t.Fatalf("directETag(%d) = %q reads back %x", crc, tag, c)
		}
	})
}

// countingUploads counts the upload reads of a metadata store.
type countingUploads struct {
	meta.Uploads
	getUpload, listParts atomic.Int64
}

func (c *countingUploads) GetUpload(ctx context.Context, id string) (meta.Upload, error) {
	c.getUpload.Add(1)
	return c.Uploads.GetUpload(ctx, id)
}

func (c *countingUploads) ListParts(ctx context.Context, id string, after, limit int) ([]meta.Part, bool, error) {
	c.listParts.Add(1)
	return c.Uploads.ListParts(ctx, id, after, limit)
}

// directFixture is a fixture whose metadata store is counted, under the
// metadata cache as coffer serve runs it.
func directFixture(t testing.TB) (*fixture, *countingUploads) {
	var cu *countingUploads
	f := newFixtureOver(t, 0, func(m meta.Stores) meta.Stores {
		cu = &countingUploads{Uploads: m.Uploads}
		m.Uploads = cu
		return metacache.NewStore(m, metacache.NewBus(), metacache.StoreOptions{
			Objects: metacache.Options{TTL: time.Minute}, Buckets: metacache.Options{TTL: time.Minute}}).Stores()
	})
	return f, cu
}

// directUpload is GoVault's direct flow at the service: create a direct
// upload of data (declared size), send its one part as to the presigned
// URL, complete it by ID (the file API's route).
func directUpload(tb testing.TB, f *fixture, key string, data []byte) meta.Object {
	ctx := context.Background()
	u, err := f.svc.CreateUpload(ctx, f.alice, CreateUploadInput{Bucket: "alice-bucket", Key: key, Size: int64(len(data)), PartSize: MinPartSize})
	if err != nil {
		tb.Fatal(err)
	}
	p, err := f.svc.PutPart(ctx, f.alice, PartInput{UploadID: u.ID, Number: 1, Body: bytes.NewReader(data), Size: int64(len(data)), Direct: true})
	if err != nil {
		tb.Fatal(err)
	}
	o, err := f.svc.CompleteUpload(ctx, f.alice, "", "", u.ID, []meta.CompletePart{{Number: 1, ETag: p.ETag}}, meta.Cond{})
	if err != nil {
		tb.Fatal(err)
	}
	return o
}

// TestCompleteDirectReadsTheUploadOnce: completing a direct upload through
// the metadata cache reads the upload once (to authorise it); the cache
// names the key the completion changes from that read (metacache's
// places) instead of reading the upload again. Before issue 23's fifth
// pass: twice. The parts are read once before the commit (the declared
// size's check).
func TestCompleteDirectReadsTheUploadOnce(t *testing.T) {
	f, cu := directFixture(t)
	data := markerData(1 << 20)
	directUpload(t, f, "warm", data) // the bucket in the cache
	ctx := t.Context()
	u, err := f.svc.CreateUpload(ctx, f.alice, CreateUploadInput{Bucket: "alice-bucket", Key: "k", Size: int64(len(data)), PartSize: MinPartSize})
	if err != nil {
		t.Fatal(err)
	}
	p, err := f.svc.PutPart(ctx, f.alice, PartInput{UploadID: u.ID, Number: 1, Body: bytes.NewReader(data), Size: int64(len(data)), Direct: true})
	if err != nil {
		t.Fatal(err)
	}
	g0, l0 := cu.getUpload.Load(), cu.listParts.Load()
	o, err := f.svc.CompleteUpload(ctx, f.alice, "", "", u.ID, []meta.CompletePart{{Number: 1, ETag: p.ETag}}, meta.Cond{})
	if err != nil || o.Size != int64(len(data)) || o.Key != "k" {
		t.Fatalf("complete: %+v, %v", o, err)
	}
	if g, l := cu.getUpload.Load()-g0, cu.listParts.Load()-l0; g != 1 || l != 1 {
		t.Errorf("the completion read the upload %d times and its parts %d times, want 1 and 1", g, l)
	}
	if got := f.read(t, f.alice, "alice-bucket", "k"); got != string(data) {
		t.Fatal("the object does not read back as its part")
	}
}

// BenchmarkDirectUpload: GoVault's direct flow at the service, per upload
// (create with a declared size, one 1 MiB part as sent to its presigned
// URL, complete by ID), over SQLite on disk (three durable commits and a
// staging) and memblob, through the metadata cache, with -benchmem. The
// wall time includes the commits' fsyncs: the allocations are the figure.
func BenchmarkDirectUpload(b *testing.B) {
	f, _ := directFixture(b)
	data := markerData(1 << 20)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		directUpload(b, f, fmt.Sprintf("bench/%d", i), data)
		i++
	}
}
