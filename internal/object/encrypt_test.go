package object

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/blob"
	"github.com/coffer-storage/coffer/internal/blob/s3blob"
	"github.com/coffer-storage/coffer/internal/crypt"
	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/kms"
	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/testbackend"
)

// marker is a string no ciphertext contains by chance: it must never be
// found in a blob or in the metadata of an encrypted object.
const marker = "COFFER-PLAINTEXT-MARKER-7f3a"

// flakyKeys is *kms.Keys with a switch that makes it fail as an
// unreachable key service does (fault injection).
type flakyKeys struct {
	*kms.Keys
	down atomic.Bool
}

func (k *flakyKeys) GenerateDataKey(ctx context.Context, id string) (kms.DataKey, error) {
	if k.down.Load() {
		return kms.DataKey{}, errcode.Retry(errcode.Unavailable, 5*time.Second, "key service unreachable")
	}
	return k.Keys.GenerateDataKey(ctx, id)
}

func (k *flakyKeys) Unwrap(ctx context.Context, w kms.Wrapped) ([]byte, error) {
	if k.down.Load() {
		return nil, errcode.Retry(errcode.Unavailable, 5*time.Second, "key service unreachable")
	}
	return k.Keys.Unwrap(ctx, w)
}

// encFixture is newFixture with encryption on (and inlining at the
// default), keys from a local keyring in a temporary folder.
func encFixture(t testing.TB) (*fixture, *flakyKeys) {
	t.Helper()
	f := newFixture(t, 0)
	k, err := kms.Open(t.Context(), "", kms.Options{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close() })
	keys := &flakyKeys{Keys: k}
	f.svc = New(f.meta, f.blobs, testConfig(func(c *Config) { c.GarbageGrace, c.Encrypt, c.Keys = time.Nanosecond, true, keys }), nil)
	return f, keys
}

// markerData returns n bytes full of marker.
func markerData(n int) []byte {
	return bytes.Repeat([]byte(marker), n/len(marker)+1)[:n]
}

// wantNoMarker fails if any blob, or the stored row of bucket/key, holds
// marker.
func wantNoMarker(t *testing.T, f *fixture, bucket, key string) {
	t.Helper()
	ctx := t.Context()
	f.blobs.List(ctx, "", func(i blob.Info) error {
		rc, err := f.blobs.Get(ctx, i.Key, 0, -1)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(rc)
		rc.Close()
		if bytes.Contains(b, []byte(marker)) {
			t.Errorf("blob %s holds plaintext", i.Key)
		}
		return nil
	})
	o, err := f.meta.GetObject(ctx, bucket, key)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(o.Inline, []byte(marker)) {
		t.Errorf("inline bytes of %s hold plaintext", key)
	}
}

// readRange reads [off, off+n) of bucket/key.
func readRange(t *testing.T, f *fixture, bucket, key string, off, n int64) ([]byte, error) {
	t.Helper()
	r, err := f.svc.Get(t.Context(), f.alice, bucket, key)
	if err != nil {
		return nil, err
	}
	rc, err := r.Open(t.Context(), off, n)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

// wantRanges checks the whole object and the ranges that matter.
func wantRanges(t *testing.T, f *fixture, bucket, key string, data []byte, boundaries ...int64) {
	t.Helper()
	size := int64(len(data))
	type rng struct{ off, n int64 }
	ranges := []rng{{0, -1}}
	if size > 0 {
		ranges = append(ranges, rng{0, 1}, rng{size - 1, 1}, rng{size - 1, -1}, rng{size / 3, size / 3})
	}
	for _, b := range append(boundaries, crypt.SegmentSize, 2*crypt.SegmentSize) {
		if b > 1 && b < size-1 {
			ranges = append(ranges, rng{b - 1, 2}, rng{b - 100, 200}, rng{b, -1})
		}
	}
	for _, r := range ranges {
		got, err := readRange(t, f, bucket, key, r.off, r.n)
		if err != nil {
			t.Errorf("%s [%d,+%d): %v", key, r.off, r.n, err)
			continue
		}
		end := size
		if r.n >= 0 {
			end = min(r.off+r.n, size)
		}
		if want := data[r.off:end]; !bytes.Equal(got, want) {
			t.Errorf("%s [%d,+%d): got %d bytes, want %d (differ)", key, r.off, r.n, len(got), len(want))
		}
	}
}

func TestEncryptedObjects(t *testing.T) {
	f, _ := encFixture(t)
	ctx := t.Context()
	for _, tc := range []struct {
		name   string
		size   int
		known  bool // size given up front
		inline bool
	}{
		{name: "empty", size: 0, known: true, inline: true},
		{name: "inline", size: 1000, known: true, inline: true},
		{name: "one segment inline", size: crypt.SegmentSize, known: true, inline: true},
		{name: "segment plus one", size: crypt.SegmentSize + 1, known: true},
		{name: "blob", size: 3*crypt.SegmentSize + 77, known: true},
		{name: "chunked", size: 2*crypt.SegmentSize + 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := markerData(tc.size)
			size := int64(-1)
			if tc.known {
				size = int64(tc.size)
			}
			o, err := f.svc.Put(ctx, f.alice, PutInput{Bucket: "alice-bucket", Key: tc.name, Body: bytes.NewReader(data), Size: size})
			if err != nil {
				t.Fatal(err)
			}
			md, sum := md5.Sum(data), sha256.Sum256(data)
			if o.Size != int64(tc.size) || o.ETag != hex.EncodeToString(md[:]) || o.SHA256 != hex.EncodeToString(sum[:]) {
				t.Errorf("object: size %d, ETag %s, SHA-256 %s; want the plaintext's %d, %x, %x", o.Size, o.ETag, o.SHA256, tc.size, md, sum)
			}
			if got := o.IsInline(); got != tc.inline {
				t.Errorf("inline = %v, want %v", got, tc.inline)
			}
			if o.Encryption == nil || o.EncryptionKEK != "local:default#1" {
				t.Errorf("Encryption %x, KEK %q; want an envelope under local:default#1", o.Encryption, o.EncryptionKEK)
			}
			if !tc.inline {
				info, err := f.blobs.Stat(ctx, o.BlobKey)
				if err != nil {
					t.Fatal(err)
				}
				if want, _ := crypt.CiphertextSize(int64(tc.size)); info.Size != want {
					t.Errorf("blob size %d, want the ciphertext size %d", info.Size, want)
				}
			}
			wantNoMarker(t, f, "alice-bucket", tc.name)
			wantRanges(t, f, "alice-bucket", tc.name, data)
		})
	}
}

func TestEncryptedMultipart(t *testing.T) {
	f, _ := encFixture(t)
	ctx := t.Context()
	u, err := f.svc.CreateUpload(ctx, f.alice, CreateUploadInput{Bucket: "alice-bucket", Key: "big"})
	if err != nil {
		t.Fatal(err)
	}
	sizes := []int{MinPartSize, MinPartSize + 3, 1000}
	var data []byte
	var parts []meta.CompletePart
	for i, n := range sizes {
		b := markerData(n)
		b[0] = byte('a' + i) // parts differ
		p, err := f.svc.PutPart(ctx, f.alice, PartInput{Bucket: "alice-bucket", Key: "big", UploadID: u.ID, Number: i + 1, Body: bytes.NewReader(b), Size: int64(n)})
		if err != nil {
			t.Fatal(err)
		}
		if p.Size != int64(n) || p.Encryption == nil {
			t.Fatalf("part %d: size %d, envelope %x; want %d and an envelope", i+1, p.Size, p.Encryption, n)
		}
		data = append(data, b...)
		parts = append(parts, meta.CompletePart{Number: i + 1, ETag: p.ETag})
	}
	o, err := f.svc.CompleteUpload(ctx, f.alice, "alice-bucket", "big", u.ID, parts, meta.Cond{})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for i, p := range o.Parts {
		if p.Encryption == nil || seen[string(p.Encryption)] {
			t.Errorf("part %d: envelope %x; want its own", i+1, p.Encryption)
		}
		seen[string(p.Encryption)] = true
	}
	wantNoMarker(t, f, "alice-bucket", "big")
	wantRanges(t, f, "alice-bucket", "big", data, MinPartSize, 2*MinPartSize+3)
}

// TestMixedStore: plaintext objects written before encryption was turned
// on stay readable; copies of them are encrypted.
func TestMixedStore(t *testing.T) {
	f, keys := encFixture(t)
	ctx := t.Context()
	plainSvc := New(f.meta, f.blobs, testConfig(func(c *Config) { c.GarbageGrace = time.Nanosecond }), nil)
	big, small := markerData(100_000), markerData(100)
	for key, data := range map[string][]byte{"old-big": big, "old-small": small} {
		if _, err := plainSvc.Put(ctx, f.alice, PutInput{Bucket: "alice-bucket", Key: key, Body: bytes.NewReader(data), Size: int64(len(data))}); err != nil {
			t.Fatal(err)
		}
	}
	f.svc = New(f.meta, f.blobs, testConfig(func(c *Config) { c.GarbageGrace, c.Encrypt, c.Keys = time.Nanosecond, true, keys }), nil)
	wantRanges(t, f, "alice-bucket", "old-big", big)
	wantRanges(t, f, "alice-bucket", "old-small", small)
	// Plaintext objects need no key service.
	keys.down.Store(true)
	wantRanges(t, f, "alice-bucket", "old-big", big)
	keys.down.Store(false)

	for _, src := range []string{"old-big", "old-small"} {
		dst := "copy-of-" + src
		o, err := f.svc.Copy(ctx, f.alice, CopyInput{SrcBucket: "alice-bucket", SrcKey: src, DstBucket: "alice-bucket", DstKey: dst})
		if err != nil {
			t.Fatal(err)
		}
		if o.Encryption == nil {
			t.Errorf("copy of %s is not encrypted", src)
		}
		want := big
		if src == "old-small" {
			want = small
		}
		wantRanges(t, f, "alice-bucket", dst, want)
	}
	// A copy of an encrypted object is encrypted with a key of its own.
	a, err := f.svc.Copy(ctx, f.alice, CopyInput{SrcBucket: "alice-bucket", SrcKey: "copy-of-old-big", DstBucket: "alice-bucket", DstKey: "copy2"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := f.meta.GetObject(ctx, "alice-bucket", "copy-of-old-big")
	if bytes.Equal(a.Encryption, b.Encryption) || a.BlobKey == b.BlobKey {
		t.Error("copy shares its source's envelope or blob")
	}
	wantRanges(t, f, "alice-bucket", "copy2", big)
}

// TestTamperedCiphertext: a flipped byte anywhere in a blob, or in inline
// ciphertext, fails the read with an integrity error; never wrong bytes.
func TestTamperedCiphertext(t *testing.T) {
	f, _ := encFixture(t)
	ctx := t.Context()
	data := markerData(3*crypt.SegmentSize + 10)
	o, err := f.svc.Put(ctx, f.alice, PutInput{Bucket: "alice-bucket", Key: "k", Body: bytes.NewReader(data), Size: int64(len(data))})
	if err != nil {
		t.Fatal(err)
	}
	rc, _ := f.blobs.Get(ctx, o.BlobKey, 0, -1)
	ct, _ := io.ReadAll(rc)
	rc.Close()
	for _, at := range []int{0, 20, crypt.SegmentSize + 40, len(ct) - 1} {
		t.Run(fmt.Sprint("byte ", at), func(t *testing.T) {
			bad := bytes.Clone(ct)
			bad[at] ^= 0x01
			f.blobs.Delete(ctx, o.BlobKey)
			if _, err := f.blobs.Put(ctx, o.BlobKey, bytes.NewReader(bad), int64(len(bad))); err != nil {
				t.Fatal(err)
			}
			if at < crypt.SegmentSize {
				// In the first segment: Open fails, before an API has
				// sent any header.
				r, err := f.svc.Get(ctx, f.alice, "alice-bucket", "k")
				if err != nil {
					t.Fatal(err)
				}
				if rc, err := r.Open(ctx, 0, -1); !crypt.IsIntegrity(err) {
					t.Errorf("Open: %v, want an integrity error", err)
					if rc != nil {
						rc.Close()
					}
				}
			}
			got, err := readRange(t, f, "alice-bucket", "k", 0, -1)
			if !crypt.IsIntegrity(err) {
				t.Fatalf("read: %v, want an integrity error", err)
			}
			if !bytes.Equal(got, data[:len(got)]) {
				t.Error("read returned wrong bytes before failing")
			}
			if e := errcode.As(err); e.Code != errcode.Internal || e.Detail["reason"] != "integrity" {
				t.Errorf("error %v: code %v, detail %v; want Internal, reason integrity", err, e.Code, e.Detail)
			}
		})
	}
	// Truncated: the last segment gone.
	f.blobs.Delete(ctx, o.BlobKey)
	f.blobs.Put(ctx, o.BlobKey, bytes.NewReader(ct[:len(ct)-42]), int64(len(ct)-42))
	if _, err := readRange(t, f, "alice-bucket", "k", 0, -1); !crypt.IsIntegrity(err) {
		t.Errorf("truncated blob: %v, want an integrity error", err)
	}
}

// TestKeyServiceOutage: with the key service down, new writes and reads
// of encrypted objects fail with Unavailable (503 + Retry-After), and
// nothing is written; when it is back, everything works again.
func TestKeyServiceOutage(t *testing.T) {
	f, keys := encFixture(t)
	ctx := t.Context()
	data := markerData(100_000)
	if _, err := f.svc.Put(ctx, f.alice, PutInput{Bucket: "alice-bucket", Key: "before", Body: bytes.NewReader(data), Size: int64(len(data))}); err != nil {
		t.Fatal(err)
	}
	blobs := f.blobCount(t)
	keys.down.Store(true)
	for _, size := range []int{100, 100_000} {
		_, err := f.svc.Put(ctx, f.alice, PutInput{Bucket: "alice-bucket", Key: fmt.Sprint("during-", size), Body: strings.NewReader(string(markerData(size))), Size: int64(size)})
		if e := errcode.As(err); err == nil || e.Code != errcode.Unavailable || e.RetryAfter <= 0 {
			t.Errorf("Put of %d bytes: %v, want Unavailable with RetryAfter", size, err)
		}
		if _, err := f.meta.GetObject(ctx, "alice-bucket", fmt.Sprint("during-", size)); !errcode.Is(err, errcode.NotFound) {
			t.Errorf("Put of %d bytes during the outage left an object: %v", size, err)
		}
	}
	if got := f.blobCount(t); got != blobs {
		t.Errorf("%d blobs after failed writes, want %d", got, blobs)
	}
	if _, err := readRange(t, f, "alice-bucket", "before", 0, -1); !errcode.Is(err, errcode.Unavailable) {
		t.Errorf("read during the outage: %v, want Unavailable", err)
	}
	keys.down.Store(false)
	wantRanges(t, f, "alice-bucket", "before", data)
	if _, err := f.svc.Put(ctx, f.alice, PutInput{Bucket: "alice-bucket", Key: "after", Body: bytes.NewReader(data), Size: int64(len(data))}); err != nil {
		t.Errorf("Put after the outage: %v", err)
	}
}

// TestBucketDefaultEncryption: a bucket's default encrypts what is written
// into it without an encryption of its own, with encryption off for the
// server; an unknown KMS key is refused and changes nothing.
func TestBucketDefaultEncryption(t *testing.T) {
	f, keys := encFixture(t)
	ctx := t.Context()
	f.svc = New(f.meta, f.blobs, testConfig(func(c *Config) { c.GarbageGrace, c.Keys = time.Nanosecond, keys }), nil)
	putEnc := func(key string) Encryption {
		t.Helper()
		o, err := f.svc.Put(ctx, f.alice, PutInput{Bucket: "alice-bucket", Key: key, Body: strings.NewReader(marker), Size: int64(len(marker))})
		if err != nil {
			t.Fatal(err)
		}
		return EncryptionOf(o)
	}
	if got := putEnc("plain"); got.Mode != 0 {
		t.Fatalf("no default: %+v, want plaintext", got)
	}
	for _, tc := range []struct {
		enc, key string
		want     Encryption
	}{
		{"AES256", "", Encryption{Mode: crypt.ModeServer}},
		{"aws:kms", "", Encryption{Mode: crypt.ModeKMSKey, KMSKeyID: "default"}},
		{"aws:kms", "default", Encryption{Mode: crypt.ModeKMSKey, KMSKeyID: "default"}},
		{"", "", Encryption{}},
	} {
		if _, err := f.svc.SetBucketEncryption(ctx, f.alice, "alice-bucket", tc.enc, tc.key); err != nil {
			t.Fatalf("SetBucketEncryption(%q, %q): %v", tc.enc, tc.key, err)
		}
		if got := putEnc("k-" + tc.enc + tc.key); got != tc.want {
			t.Errorf("default %q %q: object stored %+v, want %+v", tc.enc, tc.key, got, tc.want)
		}
		wantRanges(t, f, "alice-bucket", "k-"+tc.enc+tc.key, []byte(marker))
	}
	_, err := f.svc.SetBucketEncryption(ctx, f.alice, "alice-bucket", "aws:kms", "no-such-key")
	if e := errcode.As(err); err == nil || e.Code != errcode.NotFound || e.Detail["resource"] != "kms_key" {
		t.Errorf("unknown KMS key: %v, want NotFound kms_key", err)
	}
	if _, err := f.svc.SetBucketEncryption(ctx, f.bob, "alice-bucket", "AES256", ""); !errcode.Is(err, errcode.PermissionDenied) {
		t.Errorf("another user's bucket: %v, want PermissionDenied", err)
	}
	if b, _ := f.meta.GetBucket(ctx, "alice-bucket"); b.Encryption != "" {
		t.Errorf("refused settings changed the bucket: %q", b.Encryption)
	}
}

// TestCustomerKey: an object stored with a customer key (S3 SSE-C) reads
// only with that key; the key is stored nowhere.
func TestCustomerKey(t *testing.T) {
	f, _ := encFixture(t)
	ctx := t.Context()
	key, other := bytes.Repeat([]byte{7}, 32), bytes.Repeat([]byte{8}, 32)
	for _, size := range []int{100, 200_000} {
		name := fmt.Sprint("c-", size)
		data := markerData(size)
		o, err := f.svc.Put(ctx, f.alice, PutInput{Bucket: "alice-bucket", Key: name, Body: bytes.NewReader(data), Size: int64(size),
			SSE: SSE{Mode: crypt.ModeCustomer, CustomerKey: key}})
		if err != nil {
			t.Fatal(err)
		}
		if EncryptionOf(o).Mode != crypt.ModeCustomer || o.EncryptionKEK != "" || bytes.Contains(o.Encryption, key) {
			t.Errorf("envelope %x (KEK %q): want customer mode, no KEK, no key", o.Encryption, o.EncryptionKEK)
		}
		wantNoMarker(t, f, "alice-bucket", name)
		for _, tc := range []struct {
			name string
			key  []byte
			want error
		}{
			{"no key", nil, ErrCustomerKeyRequired()},
			{"wrong key", other, errcode.New(errcode.PermissionDenied, "")},
			{"right key", key, nil},
		} {
			if err := CheckCustomerKey(o, tc.key); errcode.Of(err) != errcode.Of(tc.want) {
				t.Errorf("%s: CheckCustomerKey = %v, want %v", tc.name, err, tc.want)
			}
			r, err := f.svc.Get(ctx, f.alice, "alice-bucket", name)
			if err != nil {
				t.Fatal(err)
			}
			r.CustomerKey = tc.key
			rc, err := r.Open(ctx, 1, -1)
			if errcode.Of(err) != errcode.Of(tc.want) {
				t.Errorf("%s: Open = %v, want %v", tc.name, err, tc.want)
			}
			if err == nil {
				got, err := io.ReadAll(rc)
				rc.Close()
				if err != nil || !bytes.Equal(got, data[1:]) {
					t.Errorf("%s: read %d bytes, %v", tc.name, len(got), err)
				}
			}
		}
	}
	plain, _ := f.svc.Put(ctx, f.alice, PutInput{Bucket: "alice-bucket", Key: "server", Body: strings.NewReader("x"), Size: 1})
	if err := CheckCustomerKey(plain, key); errcode.Of(err) != errcode.InvalidArgument {
		t.Errorf("customer key for a server-encrypted object: %v, want InvalidArgument", err)
	}
}

// TestReadAfterRotation: after the KEK is rotated, new objects name the new
// version and objects under the old one still read.
func TestReadAfterRotation(t *testing.T) {
	f, keys := encFixture(t)
	ctx := t.Context()
	data := markerData(100_000)
	put := func(key string) meta.Object {
		o, err := f.svc.Put(ctx, f.alice, PutInput{Bucket: "alice-bucket", Key: key, Body: bytes.NewReader(data), Size: int64(len(data))})
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	a := put("a")
	if _, err := keys.Rotate(ctx); err != nil {
		t.Fatal(err)
	}
	b := put("b")
	if a.EncryptionKEK != "local:default#1" || b.EncryptionKEK != "local:default#2" {
		t.Errorf("KEKs %q, %q; want local:default#1, #2", a.EncryptionKEK, b.EncryptionKEK)
	}
	wantRanges(t, f, "alice-bucket", "a", data)
	wantRanges(t, f, "alice-bucket", "b", data)
}

// TestMultipartSSE: an upload's encryption is chosen at CreateUpload (SSE-
// KMS with a named key, SSE-C) with the server's default off; every part
// is written under it with its own data key; SSE-C parts must bring the
// upload's key; only a salted check of the key is stored.
func TestMultipartSSE(t *testing.T) {
	f, keys := encFixture(t)
	ctx := t.Context()
	f.svc = New(f.meta, f.blobs, testConfig(func(c *Config) { c.GarbageGrace, c.Keys = time.Nanosecond, keys }), nil) // --encryption off
	key, other := bytes.Repeat([]byte{7}, 32), bytes.Repeat([]byte{8}, 32)
	reason := func(err error) string {
		if e := errcode.As(err); e != nil {
			r, _ := e.Detail["reason"].(string)
			return r
		}
		return ""
	}
	// upload uploads data in two parts (MinPartSize and the rest) with
	// customer key ck, and completes it.
	upload := func(name string, sse SSE, ck []byte, data []byte) meta.Object {
		t.Helper()
		u, err := f.svc.CreateUpload(ctx, f.alice, CreateUploadInput{Bucket: "alice-bucket", Key: name, SSE: sse})
		if err != nil {
			t.Fatalf("CreateUpload %s: %v", name, err)
		}
		if bytes.Contains(u.CustomerKeyCheck, key) {
			t.Fatalf("upload %s stores the customer key", name)
		}
		var parts []meta.CompletePart
		for i, b := range [][]byte{data[:MinPartSize], data[MinPartSize:]} {
			p, err := f.svc.PutPart(ctx, f.alice, PartInput{Bucket: "alice-bucket", Key: name, UploadID: u.ID, Number: i + 1,
				Body: bytes.NewReader(b), Size: int64(len(b)), CustomerKey: ck})
			if err != nil {
				t.Fatalf("PutPart %s %d: %v", name, i+1, err)
			}
			if got := PartEncryption(p).Mode; got != sse.Mode {
				t.Errorf("%s part %d: mode %v, want %v", name, i+1, got, sse.Mode)
			}
			parts = append(parts, meta.CompletePart{Number: i + 1, ETag: p.ETag})
		}
		o, err := f.svc.CompleteUpload(ctx, f.alice, "alice-bucket", name, u.ID, parts, meta.Cond{})
		if err != nil {
			t.Fatal(err)
		}
		if string(o.Parts[0].Encryption) == string(o.Parts[1].Encryption) {
			t.Errorf("%s: parts share an envelope", name)
		}
		wantNoMarker(t, f, "alice-bucket", name)
		return o
	}
	data := markerData(MinPartSize + 70_000)

	o := upload("kms", SSE{Mode: crypt.ModeKMSKey, KMSKeyID: "default"}, nil, data)
	if got, want := EncryptionOf(o), (Encryption{Mode: crypt.ModeKMSKey, KMSKeyID: "default"}); got != want {
		t.Errorf("SSE-KMS upload: object %+v, want %+v", got, want)
	}
	wantRanges(t, f, "alice-bucket", "kms", data, MinPartSize)

	_, err := f.svc.CreateUpload(ctx, f.alice, CreateUploadInput{Bucket: "alice-bucket", Key: "nokey", SSE: SSE{Mode: crypt.ModeKMSKey, KMSKeyID: "no-such-key"}})
	if e := errcode.As(err); err == nil || e.Code != errcode.NotFound || e.Detail["resource"] != "kms_key" {
		t.Errorf("unknown KMS key: %v, want NotFound kms_key", err)
	}
	if us, _, _ := f.svc.ListUploads(ctx, f.alice, "alice-bucket", meta.ListUploadsOptions{Prefix: "nokey"}); len(us) != 0 {
		t.Errorf("a refused upload was created: %+v", us)
	}

	// SSE-C: the parts must bring the upload's key.
	u, err := f.svc.CreateUpload(ctx, f.alice, CreateUploadInput{Bucket: "alice-bucket", Key: "c", SSE: SSE{Mode: crypt.ModeCustomer, CustomerKey: key}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		key  []byte
		want string
	}{{"no key", nil, "customer_key_required"}, {"wrong key", other, "customer_key_params_mismatch"}} {
		_, err := f.svc.PutPart(ctx, f.alice, PartInput{Bucket: "alice-bucket", Key: "c", UploadID: u.ID, Number: 1,
			Body: strings.NewReader("x"), Size: 1, CustomerKey: tc.key})
		if errcode.Of(err) != errcode.InvalidArgument || reason(err) != tc.want {
			t.Errorf("SSE-C part with %s: %v, want InvalidArgument %s", tc.name, err, tc.want)
		}
		if err := CheckUploadCustomerKey(u, tc.key); tc.key != nil && reason(err) != tc.want {
			t.Errorf("CheckUploadCustomerKey with %s: %v, want %s", tc.name, err, tc.want)
		}
	}
	if _, ps, _, _ := f.svc.ListParts(ctx, f.alice, "alice-bucket", "c", u.ID, 0, 10); len(ps) != 0 {
		t.Errorf("refused parts were stored: %+v", ps)
	}
	// A plain upload refuses a customer key.
	pu, err := f.svc.CreateUpload(ctx, f.alice, CreateUploadInput{Bucket: "alice-bucket", Key: "p"})
	if err != nil || pu.EncryptionMode != 0 {
		t.Fatalf("plain upload: %+v, %v", pu, err)
	}
	if _, err := f.svc.PutPart(ctx, f.alice, PartInput{Bucket: "alice-bucket", Key: "p", UploadID: pu.ID, Number: 1,
		Body: strings.NewReader("x"), Size: 1, CustomerKey: key}); reason(err) != "not_customer_encrypted" {
		t.Errorf("customer key on a plain upload: %v, want not_customer_encrypted", err)
	}

	o = upload("c2", SSE{Mode: crypt.ModeCustomer, CustomerKey: key}, key, data)
	for _, tc := range []struct {
		name string
		key  []byte
		want errcode.Code
	}{{"no key", nil, errcode.InvalidArgument}, {"wrong key", other, errcode.PermissionDenied}, {"right key", key, errcode.Unknown}} {
		if err := CheckCustomerKey(o, tc.key); errcode.Of(err) != tc.want {
			t.Errorf("SSE-C multipart object, %s: %v, want %q", tc.name, err, tc.want)
		}
	}
	r, err := f.svc.Get(ctx, f.alice, "alice-bucket", "c2")
	if err != nil {
		t.Fatal(err)
	}
	r.CustomerKey = key
	rc, err := r.Open(ctx, MinPartSize-10, 20) // across the part boundary
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || !bytes.Equal(got, data[MinPartSize-10:MinPartSize+10]) {
		t.Errorf("SSE-C multipart range: %q, %v", got, err)
	}

	// UploadPartCopy across modes: plain → SSE-C, SSE-C → SSE-KMS.
	plain, err := f.svc.Put(ctx, f.alice, PutInput{Bucket: "alice-bucket", Key: "plain-src", Body: bytes.NewReader(data), Size: int64(len(data))})
	if err != nil || plain.Encryption != nil {
		t.Fatalf("plain source: %v", err)
	}
	copyInto := func(dst string, sse SSE, dstKey []byte, src string, srcKey []byte) error {
		t.Helper()
		u, err := f.svc.CreateUpload(ctx, f.alice, CreateUploadInput{Bucket: "alice-bucket", Key: dst, SSE: sse})
		if err != nil {
			t.Fatal(err)
		}
		sr, err := f.svc.Get(ctx, f.alice, "alice-bucket", src)
		if err != nil {
			t.Fatal(err)
		}
		sr.CustomerKey = srcKey
		p, err := f.svc.CopyPart(ctx, f.alice, PartInput{Bucket: "alice-bucket", Key: dst, UploadID: u.ID, Number: 1, CustomerKey: dstKey}, sr, 0, -1)
		if err != nil {
			return err
		}
		if PartEncryption(p).Mode != sse.Mode {
			t.Errorf("copied part: mode %v, want %v", PartEncryption(p).Mode, sse.Mode)
		}
		if _, err := f.svc.CompleteUpload(ctx, f.alice, "alice-bucket", dst, u.ID, []meta.CompletePart{{Number: 1, ETag: p.ETag}}, meta.Cond{}); err != nil {
			t.Fatal(err)
		}
		return nil
	}
	if err := copyInto("to-c", SSE{Mode: crypt.ModeCustomer, CustomerKey: key}, key, "plain-src", nil); err != nil {
		t.Fatalf("plain → SSE-C: %v", err)
	}
	if err := copyInto("to-kms", SSE{Mode: crypt.ModeKMSKey}, nil, "to-c", key); err != nil {
		t.Fatalf("SSE-C → SSE-KMS: %v", err)
	}
	wantRanges(t, f, "alice-bucket", "to-kms", data)
	if err := copyInto("to-kms2", SSE{Mode: crypt.ModeKMSKey}, nil, "to-c", nil); !errcode.Is(err, errcode.InvalidArgument) {
		t.Errorf("SSE-C source without its key: %v, want InvalidArgument", err)
	}
}

// TestEncryptedUploadNotBackendDirect: on a blob backend that could take
// parts straight from clients (s3blob on MinIO), an upload that is to be
// encrypted (here by the bucket's default, with --encryption off) is not
// handed to the backend: its bytes must pass through Coffer.
func TestEncryptedUploadNotBackendDirect(t *testing.T) {
	m := testbackend.SharedMinIO(t)
	opts, err := s3blob.ParseURL(m.BlobURL(m.CreateBucket(t)))
	if err != nil {
		t.Fatal(err)
	}
	opts.AccessKey, opts.SecretKey = m.AccessKey, m.SecretKey
	blobs, err := s3blob.Open(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	f, keys := encFixture(t)
	ctx := t.Context()
	f.svc = New(f.meta, blobs, testConfig(func(c *Config) { c.GarbageGrace, c.Keys = time.Nanosecond, keys }), nil)
	if !f.svc.BackendDirect() {
		t.Fatal("test setup: s3blob without --encryption should allow backend-direct uploads")
	}
	u, err := f.svc.CreateUpload(ctx, f.alice, CreateUploadInput{Bucket: "alice-bucket", Key: "plain", Backend: true})
	if err != nil || u.BackendUploadID == "" {
		t.Fatalf("plain upload: backend id %q, %v; want one", u.BackendUploadID, err)
	}
	if _, err := f.svc.SetBucketEncryption(ctx, f.alice, "alice-bucket", "AES256", ""); err != nil {
		t.Fatal(err)
	}
	u, err = f.svc.CreateUpload(ctx, f.alice, CreateUploadInput{Bucket: "alice-bucket", Key: "enc", Backend: true})
	if err != nil || u.BackendUploadID != "" || crypt.Mode(u.EncryptionMode) != crypt.ModeServer {
		t.Fatalf("encrypted upload: backend id %q, mode %d, %v; want none and server mode", u.BackendUploadID, u.EncryptionMode, err)
	}
}

// TestBackendUploadAssertions: a completion of an upload the blob store
// assembles cannot check what the client asserts of the object or lists
// of its parts (a checksum type alone, a part checksum, a size, a whole
// checksum): NotImplemented, never a completion that ignores it.
func TestBackendUploadAssertions(t *testing.T) {
	m := testbackend.SharedMinIO(t)
	opts, err := s3blob.ParseURL(m.BlobURL(m.CreateBucket(t)))
	if err != nil {
		t.Fatal(err)
	}
	opts.AccessKey, opts.SecretKey = m.AccessKey, m.SecretKey
	blobs, err := s3blob.Open(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	f, keys := encFixture(t)
	ctx := t.Context()
	f.svc = New(f.meta, blobs, testConfig(func(c *Config) { c.GarbageGrace, c.Keys = time.Nanosecond, keys }), nil)
	u, err := f.svc.CreateUpload(ctx, f.alice, CreateUploadInput{Bucket: "alice-bucket", Key: "direct", Backend: true})
	if err != nil || u.BackendUploadID == "" {
		t.Fatalf("backend upload: id %q, %v", u.BackendUploadID, err)
	}
	part := meta.CompletePart{Number: 1, ETag: strings.Repeat("a", 32)}
	listed := part
	listed.Checksum = meta.Checksum{Algorithm: "CRC32", Value: "AAAAAA=="}
	for name, tc := range map[string]struct {
		parts []meta.CompletePart
		want  Expect
	}{
		"a checksum type": {[]meta.CompletePart{part}, Expect{Checksum: meta.Checksum{Type: "COMPOSITE"}, Size: -1}},
		"a part checksum": {[]meta.CompletePart{listed}, Expect{Size: -1}},
		"a size":          {[]meta.CompletePart{part}, Expect{Size: 1}},
		"a checksum":      {[]meta.CompletePart{part}, Expect{Checksum: meta.Checksum{Algorithm: "CRC32", Value: "AAAAAA=="}, Size: -1}},
	} {
		_, err := f.svc.CompleteUploadExpecting(ctx, f.alice, "alice-bucket", "direct", u.ID, tc.parts, meta.Cond{}, tc.want)
		if !errcode.Is(err, errcode.NotImplemented) {
			t.Errorf("%s: %v, want NotImplemented", name, err)
		}
	}
}

// TestUploadStateSealed: a tus upload's hash state is sealed when the
// upload's parts are encrypted (never containing its plaintext), opens only
// for the same upload and offset, and is left as it is for a plaintext
// upload; a plaintext state for an encrypted upload is refused.
func TestUploadStateSealed(t *testing.T) {
	ctx := t.Context()
	f, _ := encFixture(t)
	state := []byte("md5\x01" + marker + marker)
	u, err := f.svc.CreateUpload(ctx, f.alice, CreateUploadInput{Bucket: "alice-bucket", Key: "tus"})
	if err != nil {
		t.Fatal(err)
	}
	other, err := f.svc.CreateUpload(ctx, f.alice, CreateUploadInput{Bucket: "alice-bucket", Key: "tus2"})
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := f.svc.SealUploadState(ctx, u, 100, state)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, []byte(marker)) {
		t.Fatal("the sealed state holds the plaintext")
	}
	if got, err := f.svc.OpenUploadState(ctx, u, 100, sealed); err != nil || !bytes.Equal(got, state) {
		t.Fatalf("OpenUploadState = %q, %v", got, err)
	}
	for name, open := range map[string]func() ([]byte, error){
		"other offset":    func() ([]byte, error) { return f.svc.OpenUploadState(ctx, u, 101, sealed) },
		"other upload":    func() ([]byte, error) { return f.svc.OpenUploadState(ctx, other, 100, sealed) },
		"truncated":       func() ([]byte, error) { return f.svc.OpenUploadState(ctx, u, 100, sealed[:len(sealed)-1]) },
		"plaintext state": func() ([]byte, error) { return f.svc.OpenUploadState(ctx, u, 100, state) },
		"header only":     func() ([]byte, error) { return f.svc.OpenUploadState(ctx, u, 100, sealed[:5]) },
	} {
		if got, err := open(); err == nil {
			t.Errorf("%s: opened as %q", name, got)
		}
	}
	// Plaintext uploads keep their state as it is.
	plain := newFixture(t, 0)
	pu, err := plain.svc.CreateUpload(ctx, plain.alice, CreateUploadInput{Bucket: "alice-bucket", Key: "tus"})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := plain.svc.SealUploadState(ctx, pu, 100, state); err != nil || !bytes.Equal(got, state) {
		t.Errorf("plaintext upload: SealUploadState = %q, %v; want the state", got, err)
	}
	if got, err := plain.svc.OpenUploadState(ctx, pu, 100, state); err != nil || !bytes.Equal(got, state) {
		t.Errorf("plaintext upload: OpenUploadState = %q, %v; want the state", got, err)
	}
}

// BenchmarkUploadState is what sealing costs a tus PATCH of an encrypted
// upload (docs/encryption.md): sealing the new hash state, and opening
// it at the next PATCH (local keyring, intermediate key cached).
func BenchmarkUploadState(b *testing.B) {
	ctx := b.Context()
	f, _ := encFixture(b)
	u, err := f.svc.CreateUpload(ctx, f.alice, CreateUploadInput{Bucket: "alice-bucket", Key: "tus"})
	if err != nil {
		b.Fatal(err)
	}
	h := md5.New()
	s := sha256.New()
	m, _ := h.(interface{ MarshalBinary() ([]byte, error) }).MarshalBinary()
	x, _ := s.(interface{ MarshalBinary() ([]byte, error) }).MarshalBinary()
	state := append(m, x...)
	b.Run("seal", func(b *testing.B) {
		for b.Loop() {
			if _, err := f.svc.SealUploadState(ctx, u, 100, state); err != nil {
				b.Fatal(err)
			}
		}
	})
	sealed, _ := f.svc.SealUploadState(ctx, u, 100, state)
	b.Run("open", func(b *testing.B) {
		for b.Loop() {
			if _, err := f.svc.OpenUploadState(ctx, u, 100, sealed); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestKMSKeyAllowList (issue 18, N9): with a keyring holding "default" and
// "finance", the default key is everyone's; "finance" only its allow
// list's — for PutObject, CopyObject, CreateUpload and bucket defaults —
// and a key not allowed answers exactly as an unknown key does. A
// withdrawn grant stops new writes, under the bucket default it set too.
func TestKMSKeyAllowList(t *testing.T) {
	ctx := t.Context()
	f := newFixture(t, 0)
	keyring := filepath.Join(t.TempDir(), "keyring")
	if err := os.WriteFile(keyring, []byte("default 1 "+base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, 32))+"\n"+
		"finance 1 "+base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{2}, 32))+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	keys, err := kms.Open(ctx, "local://"+keyring, kms.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { keys.Close() })
	f.svc = New(f.meta, f.blobs, testConfig(func(c *Config) { c.GarbageGrace, c.Keys = time.Nanosecond, keys }), nil)
	if _, err := f.svc.AllowKMSKey(ctx, "finance", "alice"); err != nil {
		t.Fatal(err)
	}
	kmsSSE := func(key string) SSE { return SSE{Mode: crypt.ModeKMSKey, KMSKeyID: key} }
	put := func(a Actor, bucket, key string, sse SSE) error {
		_, err := f.svc.Put(ctx, a, PutInput{Bucket: bucket, Key: key, Body: strings.NewReader("data"), Size: 4, SSE: sse})
		return err
	}
	// refusal returns err's code, status-bearing detail and message with
	// the key's name taken out, which must be the same for every refusal.
	refusal := func(err error, key string) string {
		e := errcode.As(err)
		if e == nil {
			return fmt.Sprintf("not refused (%v)", err)
		}
		return fmt.Sprintf("%v %v %s", e.Code, e.Detail["resource"], strings.ReplaceAll(e.Message, key, "KEY"))
	}
	want := refusal(f.svc.checkKMSKey(ctx, "bob", "no-such-key"), "no-such-key")
	if !strings.HasPrefix(want, "not_found kms_key") {
		t.Fatalf("an unknown key: %s, want NotFound kms_key", want)
	}
	for name, try := range map[string]func(key string) error{
		"PutObject": func(key string) error { return put(f.bob, "bob-bucket", "x", kmsSSE(key)) },
		"CreateUpload": func(key string) error {
			_, err := f.svc.CreateUpload(ctx, f.bob, CreateUploadInput{Bucket: "bob-bucket", Key: "x", SSE: kmsSSE(key)})
			return err
		},
		"CopyObject": func(key string) error {
			_, err := f.svc.Copy(ctx, f.bob, CopyInput{SrcBucket: "bob-bucket", SrcKey: "src", DstBucket: "bob-bucket", DstKey: "x", SSE: kmsSSE(key)})
			return err
		},
		"SetBucketEncryption": func(key string) error {
			_, err := f.svc.SetBucketEncryption(ctx, f.bob, "bob-bucket", meta.EncryptKMS, key)
			return err
		},
	} {
		if err := put(f.bob, "bob-bucket", "src", SSE{}); err != nil {
			t.Fatal(err)
		}
		for _, key := range []string{"finance", "no-such-key"} {
			if got := refusal(try(key), key); got != want {
				t.Errorf("bob's %s under %q: %s; want %s (as an unknown key)", name, key, got, want)
			}
		}
		if err := try("default"); err != nil {
			t.Errorf("bob's %s under the default key: %v", name, err)
		}
		if err := try(""); err != nil {
			t.Errorf("bob's %s under the default key (unnamed): %v", name, err)
		}
	}
	if err := put(f.bob, "bob-bucket", "x", SSE{}); err != nil {
		t.Errorf("bob's put under the bucket default (the default key): %v", err)
	}
	if us, _, _ := f.svc.ListUploads(ctx, f.bob, "bob-bucket", meta.ListUploadsOptions{}); len(us) != 2 {
		t.Errorf("bob has %d uploads; want 2 (default, unnamed), none refused", len(us))
	}

	// Alice may: by request and by bucket default.
	if err := put(f.alice, "alice-bucket", "a", kmsSSE("finance")); err != nil {
		t.Fatalf("alice's put under finance: %v", err)
	}
	if _, err := f.svc.SetBucketEncryption(ctx, f.alice, "alice-bucket", meta.EncryptKMS, "finance"); err != nil {
		t.Fatalf("alice's bucket default finance: %v", err)
	}
	if err := put(f.alice, "alice-bucket", "b", SSE{}); err != nil {
		t.Fatalf("alice's put under the bucket default: %v", err)
	}
	r, err := f.svc.Get(ctx, f.alice, "alice-bucket", "b")
	if err != nil || EncryptionOf(r.Object).KMSKeyID != "finance" {
		t.Fatalf("alice's object under the bucket default: %+v, %v", EncryptionOf(r.Object), err)
	}
	// Withdrawn: no new writes under finance, the bucket default's
	// included; what was written stays readable.
	if err := f.svc.DisallowKMSKey(ctx, "finance", "alice"); err != nil {
		t.Fatal(err)
	}
	if got := refusal(put(f.alice, "alice-bucket", "c", kmsSSE("finance")), "finance"); got != want {
		t.Errorf("alice's put under finance after the grant was withdrawn: %s", got)
	}
	if got := refusal(put(f.alice, "alice-bucket", "c", SSE{}), "finance"); got != want {
		t.Errorf("alice's put under the bucket default after the grant was withdrawn: %s", got)
	}
	if got := f.read(t, f.alice, "alice-bucket", "b"); got != "data" {
		t.Errorf("alice's object after the grant was withdrawn: %q", got)
	}
}

// FuzzOpenUploadState: for an encrypted upload, stored bytes open (never
// panicking) only as the state SealUploadState sealed for the upload and
// offset: anything else fails authentication or parsing.
func FuzzOpenUploadState(f *testing.F) {
	fx, _ := encFixture(f)
	ctx := context.Background()
	u, err := fx.svc.CreateUpload(ctx, fx.alice, CreateUploadInput{Bucket: "alice-bucket", Key: "tus"})
	if err != nil {
		f.Fatal(err)
	}
	state := []byte("md5\x01 a hash state")
	sealed, err := fx.svc.SealUploadState(ctx, u, 100, state)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(sealed)
	f.Add(state)
	f.Add([]byte(sealedStateMagic + "\xff\xff"))
	f.Add([]byte(sealedStateMagic + "\x00\x02ab"))
	f.Fuzz(func(t *testing.T, stored []byte) {
		got, err := fx.svc.OpenUploadState(ctx, u, 100, stored)
		if err == nil && !bytes.Equal(got, state) {
			t.Fatalf("opened %q as %q", stored, got)
		}
	})
}
