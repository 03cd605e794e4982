package object

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/meta"
)

// wholeHashedObject makes object key of alice's bucket as the tus store
// does: parts with WholeHashed (no MD5 of their own), completed with the
// whole MD5 and SHA-256 of data. It returns the object.
func wholeHashedObject(t *testing.T, svc *Service, f *fixture, key string, data []byte) meta.Object {
	t.Helper()
	ctx := t.Context()
	u, err := svc.CreateUpload(ctx, f.alice, CreateUploadInput{Bucket: "alice-bucket", Key: key})
	if err != nil {
		t.Fatal(err)
	}
	half := len(data) / 2
	for i, b := range [][]byte{data[:half], data[half:]} {
		p, err := svc.PutPart(ctx, f.alice, PartInput{UploadID: u.ID, Number: i + 1, Body: bytes.NewReader(b), Size: -1, WholeHashed: true})
		if err != nil {
			t.Fatal(err)
		}
		if p.ETag != "" {
			t.Errorf("part %d of a WholeHashed upload has ETag %q, want none (no MD5 of its own)", i+1, p.ETag)
		}
	}
	m, s := md5.Sum(data), sha256.Sum256(data)
	o, err := svc.CompleteWhole(ctx, f.alice, u.ID, hex.EncodeToString(m[:]), hex.EncodeToString(s[:]))
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Parts) != 2 {
		t.Fatalf("object of %d parts, want 2", len(o.Parts))
	}
	return o
}

// flipPart overwrites o's part i with the same number of other bytes.
func flipPart(t *testing.T, f *fixture, o meta.Object, i int) {
	t.Helper()
	bad := bytes.Repeat([]byte("X"), int(o.Parts[i].Size))
	if _, err := f.blobs.Put(t.Context(), o.Parts[i].BlobKey, bytes.NewReader(bad), int64(len(bad))); err != nil {
		t.Fatal(err)
	}
}

// TestScrubWholeHashedParts: the parts of a tus upload have no MD5 of
// their own; the scrub checks them together against the object's SHA-256:
// a good object is good, one with a part's bytes replaced (same size) is
// corrupt, with a finding on each of its parts.
func TestScrubWholeHashedParts(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, 0)
	data := bytes.Repeat([]byte("whole hashed "), 100_000)
	good := wholeHashedObject(t, f.svc, f, "good", data)
	bad := wholeHashedObject(t, f.svc, f, "bad", data)
	flipPart(t, f, bad, 1)
	p, err := f.svc.Scrubber().Scrub(ctx, ScrubOptions{Owner: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if p.Objects != 2 || p.Corrupt == 0 || p.Missing+p.Unreadable+p.Unverified != 0 {
		t.Errorf("scrub: %+v, want 2 objects, the damaged one corrupt", p)
	}
	fs, err := f.meta.ListScrubFindings(ctx, "", 10)
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]string{}
	for _, fd := range fs {
		if fd.Key != "bad" {
			t.Errorf("finding on %s (%s), want none on the good object %v", fd.Key, fd.BlobKey, good.Parts)
		}
		found[fd.BlobKey] = fd.Problem
	}
	for _, pt := range bad.Parts {
		if found[pt.BlobKey] != meta.ScrubCorrupt {
			t.Errorf("part %s of the damaged object: finding %q, want corrupt (all: %v)", pt.BlobKey, found[pt.BlobKey], found)
		}
	}
}

// TestEncryptWholeHashedParts: the encryption job checks the parts of a
// tus upload together against the object's SHA-256 before it swaps them:
// a damaged one fails (and stays as it was), a good one is encrypted.
func TestEncryptWholeHashedParts(t *testing.T) {
	f, keys := encFixture(t)
	ctx := t.Context()
	plain := New(f.meta, f.blobs, testConfig(func(c *Config) { c.GarbageGrace, c.Keys = time.Nanosecond, keys }), nil)
	data := markerData(3 * MinPartSize)
	wholeHashedObject(t, plain, f, "good", data)
	bad := wholeHashedObject(t, plain, f, "bad", data)
	flipPart(t, f, bad, 0)
	if _, err := plain.StartEncrypt(ctx, "alice-bucket"); err != nil {
		t.Fatal(err)
	}
	j := runJobs(t, plain, meta.EncryptJobName("alice-bucket"), fastJobs("a"))
	if j.Done != 1 || j.Failed != 1 {
		t.Errorf("job: %+v, want 1 done, 1 failed", j)
	}
	o, err := f.meta.GetObject(ctx, "alice-bucket", "bad")
	if err != nil {
		t.Fatal(err)
	}
	if EncryptionOf(o).Mode != 0 || o.Parts[0].BlobKey != bad.Parts[0].BlobKey {
		t.Errorf("the damaged object changed: %+v", o)
	}
	if o, err = f.meta.GetObject(ctx, "alice-bucket", "good"); err != nil || EncryptionOf(o).Mode == 0 {
		t.Errorf("the good object: %+v, %v; want encrypted", o, err)
	}
	wantRanges(t, f, "alice-bucket", "good", data, MinPartSize)
}

// BenchmarkPutPart: one 8 MiB part as S3's UploadPart writes it (its own
// MD5 for the ETag) and as a tus PATCH writes it (WholeHashed: the caller
// hashes it once, into the upload's running hashes). Issue 23's first
// lever: the difference is the MD5 and SHA-256 no longer computed twice.
func BenchmarkPutPart(b *testing.B) {
	for _, whole := range []bool{false, true} {
		name := "own-md5"
		if whole {
			name = "whole-hashed"
		}
		b.Run(name, func(b *testing.B) {
			f := newFixture(b, 0)
			ctx := b.Context()
			u, err := f.svc.CreateUpload(ctx, f.alice, CreateUploadInput{Bucket: "alice-bucket", Key: "bench"})
			if err != nil {
				b.Fatal(err)
			}
			data := markerData(8 << 20)
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				if _, err := f.svc.PutPart(ctx, f.alice, PartInput{UploadID: u.ID, Number: i%MaxParts + 1, Body: bytes.NewReader(data), Size: -1, WholeHashed: whole}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
