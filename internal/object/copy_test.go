package object

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"testing"

	"github.com/coffer-storage/coffer/internal/blob"
	"github.com/coffer-storage/coffer/internal/blob/cacheblob"
	"github.com/coffer-storage/coffer/internal/blob/s3blob"
	"github.com/coffer-storage/coffer/internal/crypt"
	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/kms"
	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/testbackend"
)

// byteProxy forwards to an S3 store and counts the body bytes it passes,
// both ways: what goes through Coffer.
type byteProxy struct {
	*httptest.Server
	up, down atomic.Int64
}

func (p *byteProxy) total() int64 { return p.up.Load() + p.down.Load() }

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (c countingBody) Read(b []byte) (int, error) {
	n, err := c.ReadCloser.Read(b)
	c.n.Add(int64(n))
	return n, err
}

func newByteProxy(t *testing.T, target string) *byteProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &byteProxy{}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ModifyResponse = func(r *http.Response) error {
		r.Body = countingBody{r.Body, &p.down}
		return nil
	}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil {
			r.Body = countingBody{r.Body, &p.up}
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(p.Close)
	return p
}

// TestServerSideCopy: on an S3 blob store (alone, and read through the
// blob cache, as server stacks it), CopyObject and UploadPartCopy of a
// plaintext blob into a plaintext blob are made by the store: a proxy in
// front of MinIO sees next to no body bytes (request and answer XML), the
// copy is whole under a fresh blob key, with the source's ETag, SHA-256
// and checksum, and a copy that cannot fit the owner's quota is refused
// before it is made. An encrypted destination and a part of a range of
// the source stream through Coffer as before.
func TestServerSideCopy(t *testing.T) {
	m := testbackend.SharedMinIO(t)
	proxy := newByteProxy(t, m.Endpoint())
	ctx := t.Context()
	s3, err := s3blob.Open(ctx, s3blob.Options{Bucket: m.CreateBucket(t), Endpoint: proxy.URL, AccessKey: m.AccessKey, SecretKey: m.SecretKey, PathStyle: true})
	if err != nil {
		t.Fatal(err)
	}
	cache, err := cacheblob.Open(cacheblob.Options{Dir: t.TempDir(), DiskBytes: 64 << 20, ChunkSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cache.Close() })
	keys, err := kms.Open(ctx, "", kms.Options{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 1<<20+7)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	const slack = 16 << 10 // request and answer XML: far below the object's bytes
	for _, stack := range []struct {
		name  string
		blobs blob.Store
	}{{"s3blob", s3}, {"cacheblob over s3blob", cacheblob.New(s3, cache, nil)}} {
		t.Run(stack.name, func(t *testing.T) {
			f := newFixture(t, 0)
			svc := New(f.meta, stack.blobs, testConfig(func(c *Config) { c.Keys = keys }), nil)
			f.svc = svc
			read := func(key string) []byte { return []byte(f.read(t, f.alice, "alice-bucket", key)) }
			through := func(what string, fn func(), min, max int64) {
				t.Helper()
				before := proxy.total()
				fn()
				if n := proxy.total() - before; n < min || n > max {
					t.Errorf("%s: %d bytes through Coffer, want %d to %d", what, n, min, max)
				}
			}
			src, err := svc.Put(ctx, f.alice, PutInput{Bucket: "alice-bucket", Key: "src", Body: bytes.NewReader(data), Size: int64(len(data)),
				ContentType: "application/x-test", ChecksumAlgorithm: "CRC32"})
			if err != nil {
				t.Fatal(err)
			}

			var cp meta.Object
			through("CopyObject", func() {
				cp, err = svc.Copy(ctx, f.alice, CopyInput{SrcBucket: "alice-bucket", SrcKey: "src", DstBucket: "alice-bucket", DstKey: "dst"})
			}, 0, slack)
			if err != nil {
				t.Fatal(err)
			}
			if cp.ETag != src.ETag || cp.SHA256 != src.SHA256 || cp.Checksum != src.Checksum || cp.Size != src.Size ||
				cp.ContentType != src.ContentType || cp.BlobKey == src.BlobKey || cp.BlobKey == "" {
				t.Errorf("copy %+v\nof %+v: want the source's size, digests and type under a fresh blob", cp, src)
			}
			if !bytes.Equal(read("dst"), data) {
				t.Error("the copy's bytes differ from the source's")
			}

			u, err := svc.CreateUpload(ctx, f.alice, CreateUploadInput{Bucket: "alice-bucket", Key: "mp"})
			if err != nil {
				t.Fatal(err)
			}
			r, err := svc.Get(ctx, f.alice, "alice-bucket", "src")
			if err != nil {
				t.Fatal(err)
			}
			var p meta.Part
			through("UploadPartCopy", func() {
				p, err = svc.CopyPart(ctx, f.alice, PartInput{Bucket: "alice-bucket", Key: "mp", UploadID: u.ID, Number: 1}, r, 0, -1)
			}, 0, slack)
			if err != nil {
				t.Fatal(err)
			}
			if p.ETag != src.ETag || p.Size != src.Size {
				t.Errorf("part %+v: want the source's ETag and size", p)
			}
			if _, err := svc.CompleteUpload(ctx, f.alice, "alice-bucket", "mp", u.ID, []meta.CompletePart{{Number: 1, ETag: p.ETag}}, meta.Cond{}); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(read("mp"), data) {
				t.Error("the copied part's bytes differ from the source's")
			}

			// Streamed: the bytes go up again (and come down, unless the
			// blob cache holds them).
			n := int64(len(data))
			through("CopyObject to an encrypted destination", func() {
				_, err = svc.Copy(ctx, f.alice, CopyInput{SrcBucket: "alice-bucket", SrcKey: "src", DstBucket: "alice-bucket", DstKey: "enc",
					SSE: SSE{Mode: crypt.ModeServer}})
			}, n, 3*n)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(read("enc"), data) {
				t.Error("the encrypted copy's bytes differ from the source's")
			}
			through("UploadPartCopy of a range", func() {
				_, err = svc.CopyPart(ctx, f.alice, PartInput{Bucket: "alice-bucket", Key: "mp2", UploadID: mustUpload(t, svc, f.alice, "mp2"), Number: 1}, r, 1, -1)
			}, n-1, 3*n)
			if err != nil {
				t.Fatal(err)
			}

			// The quota is reserved before the store copies anything.
			owner, err := f.meta.GetUser(ctx, "alice")
			if err != nil {
				t.Fatal(err)
			}
			if err := f.meta.SetQuota(ctx, "alice", owner.UsageBytes+n/2); err != nil {
				t.Fatal(err)
			}
			var blobs int
			count := func() int {
				c := 0
				stack.blobs.List(ctx, "o/", func(blob.Info) error { c++; return nil })
				return c
			}
			blobs = count()
			_, err = svc.Copy(ctx, f.alice, CopyInput{SrcBucket: "alice-bucket", SrcKey: "src", DstBucket: "alice-bucket", DstKey: "over"})
			if !errcode.Is(err, errcode.QuotaExceeded) {
				t.Errorf("copy over the quota: %v, want QuotaExceeded", err)
			}
			if got := count(); got != blobs {
				t.Errorf("a refused copy left %d blobs (had %d)", got, blobs)
			}
			if err := f.meta.SetQuota(ctx, "alice", 0); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func mustUpload(t *testing.T, svc *Service, a Actor, key string) string {
	t.Helper()
	u, err := svc.CreateUpload(context.Background(), a, CreateUploadInput{Bucket: "alice-bucket", Key: key})
	if err != nil {
		t.Fatal(err)
	}
	return u.ID
}
