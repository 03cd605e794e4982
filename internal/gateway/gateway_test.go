package gateway_test

import (
	"bytes"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/coffer-storage/coffer/internal/blob/memblob"
	"github.com/coffer-storage/coffer/internal/config"
	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/gateway"
	"github.com/coffer-storage/coffer/internal/kms"
	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/meta/sqlite"
	"github.com/coffer-storage/coffer/internal/object"
	"github.com/coffer-storage/coffer/internal/testbackend"
)

func TestMain(m *testing.M) { testbackend.Main(m) }

// env is an object service over SQLite with a gateway bucket "gate" owned
// by alice, fronting a fresh MinIO bucket, and a client writing to that
// bucket directly (behind Coffer's back).
type env struct {
	svc    *object.Service
	meta   meta.Buckets
	direct *s3.Client
	bucket string // the MinIO bucket
	alice  object.Actor
	bob    object.Actor
}

func newEnv(t *testing.T, m *testbackend.MinIO, mode, prefix string, cfg object.Config) *env {
	t.Helper()
	return newEnvAt(t, m, m.Endpoint(), mode, prefix, cfg, gateway.Open)
}

// newEnvAt is newEnv with the gateway reaching MinIO at endpoint (a
// proxy in front of it) and opened by open.
func newEnvAt(t *testing.T, m *testbackend.MinIO, endpoint, mode, prefix string, cfg object.Config, open object.OpenGateway) *env {
	t.Helper()
	ctx := t.Context()
	ms, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "meta.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ms.Close() })
	for _, u := range []string{"alice", "bob"} {
		if err := ms.CreateUser(ctx, meta.User{ID: u, Email: u + "@x.io", CreatedAt: time.Now()},
			meta.Bucket{Name: u + "-bucket", OwnerID: u, CreatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	bucket := m.CreateBucket(t)
	creds := filepath.Join(t.TempDir(), "creds")
	if err := os.WriteFile(creds, []byte("# MinIO\naccess_key="+m.AccessKey+"\nsecret_key="+m.SecretKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	raw := "gate=s3://" + bucket + prefix + "?endpoint=" + endpoint + "&region=us-east-1&mode=" + mode +
		"&owner=alice@x.io&credentials_file=" + creds
	sp, err := gateway.ParseSpec(raw)
	if err != nil {
		t.Fatal(err)
	}
	if err := ms.PutGatewayBucket(ctx, meta.Bucket{Name: sp.Name, OwnerID: "alice", Visibility: sp.Visibility(), Gateway: sp.URL()}); err != nil {
		t.Fatal(err)
	}
	cfg.OpenGateway = open
	svc := object.New(object.StoresOf(ms.Stores()), memblob.New(), cfg, nil)
	direct := s3.NewFromConfig(aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider(m.AccessKey, m.SecretKey, "")},
		func(o *s3.Options) { o.BaseEndpoint = aws.String(m.Endpoint()); o.UsePathStyle = true })
	return &env{svc: svc, meta: ms, direct: direct, bucket: bucket, alice: object.Actor{UserID: "alice"}, bob: object.Actor{UserID: "bob"}}
}

// putDirect writes key to the MinIO bucket, not through Coffer.
func (e *env) putDirect(t *testing.T, key, data string) string {
	t.Helper()
	out, err := e.direct.PutObject(t.Context(), &s3.PutObjectInput{Bucket: &e.bucket, Key: &key, Body: strings.NewReader(data), ContentType: aws.String("text/plain")})
	if err != nil {
		t.Fatalf("direct put %q: %v", key, err)
	}
	return strings.Trim(aws.ToString(out.ETag), `"`)
}

func (e *env) getDirect(t *testing.T, key string) (string, map[string]string) {
	t.Helper()
	out, err := e.direct.GetObject(t.Context(), &s3.GetObjectInput{Bucket: &e.bucket, Key: &key})
	if err != nil {
		t.Fatalf("direct get %q: %v", key, err)
	}
	defer out.Body.Close()
	b, _ := io.ReadAll(out.Body)
	return string(b), out.Metadata
}

// read reads [off, off+n) of key through Coffer.
func read(t *testing.T, svc *object.Service, a object.Actor, key string, off, n int64) (string, meta.Object) {
	t.Helper()
	r, err := svc.Get(t.Context(), a, "gate", key)
	if err != nil {
		t.Fatalf("Get %q: %v", key, err)
	}
	rc, err := r.Open(t.Context(), off, n)
	if err != nil {
		t.Fatalf("Open %q: %v", key, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("read %q: %v", key, err)
	}
	return string(b), r.Object
}

func md5hex(s string) string { h := md5.Sum([]byte(s)); return hex.EncodeToString(h[:]) }

func TestReadOnlyGateway(t *testing.T) {
	e := newEnv(t, testbackend.SharedMinIO(t), "ro", "", testConfig(nil))
	ctx := t.Context()
	etag := e.putDirect(t, "docs/a.txt", "hello, gateway")
	got, o := read(t, e.svc, e.alice, "docs/a.txt", 0, -1)
	if got != "hello, gateway" || o.ETag != etag || o.Size != 14 || o.ContentType != "text/plain" {
		t.Errorf("read: %q, %+v; want the backend's bytes, ETag %s, size 14, text/plain", got, o, etag)
	}
	// Ranges: first byte, last byte, a middle slice.
	for _, tc := range []struct {
		off, n int64
		want   string
	}{{0, 1, "h"}, {13, 1, "y"}, {7, 7, "gateway"}, {14, -1, ""}} {
		if got, _ := read(t, e.svc, e.alice, "docs/a.txt", tc.off, tc.n); got != tc.want {
			t.Errorf("range %d+%d: got %q, want %q", tc.off, tc.n, got, tc.want)
		}
	}
	// Written during the test: visible at once, in reads and listings.
	e.putDirect(t, "docs/b.txt", "bee")
	if got, _ := read(t, e.svc, e.alice, "docs/b.txt", 0, -1); got != "bee" {
		t.Errorf("object written during the test: got %q", got)
	}
	// Only the owner (private bucket).
	if _, err := e.svc.Get(ctx, e.bob, "gate", "docs/a.txt"); !errcode.Is(err, errcode.PermissionDenied) {
		t.Errorf("bob's Get: %v; want PermissionDenied", err)
	}
	if _, err := e.svc.Get(ctx, e.alice, "gate", "docs/missing"); !errcode.Is(err, errcode.NotFound) {
		t.Errorf("Get of a missing key: %v; want NotFound", err)
	}
	// Writes are refused, and nothing changes in the backend.
	_, err := e.svc.Put(ctx, e.alice, object.PutInput{Bucket: "gate", Key: "docs/a.txt", Body: strings.NewReader("x"), Size: 1})
	if !errcode.Is(err, errcode.PermissionDenied) || errcode.As(err).Detail["reason"] != "read_only_gateway" {
		t.Errorf("Put: %v; want PermissionDenied read_only_gateway", err)
	}
	if _, err := e.svc.Delete(ctx, e.alice, "gate", "docs/a.txt", meta.Cond{}); !errcode.Is(err, errcode.PermissionDenied) {
		t.Errorf("Delete: %v; want PermissionDenied", err)
	}
	if _, err := e.svc.CreateUpload(ctx, e.alice, object.CreateUploadInput{Bucket: "gate", Key: "big"}); !errcode.Is(err, errcode.PermissionDenied) {
		t.Errorf("CreateUpload: %v; want PermissionDenied", err)
	}
	if err := e.svc.DeleteBucket(ctx, e.alice, "gate"); !errcode.Is(err, errcode.PermissionDenied) {
		t.Errorf("DeleteBucket: %v; want PermissionDenied", err)
	}
	if got, _ := e.getDirect(t, "docs/a.txt"); got != "hello, gateway" {
		t.Errorf("backend after refused writes: %q", got)
	}
}

func TestGatewayList(t *testing.T) {
	e := newEnv(t, testbackend.SharedMinIO(t), "ro", "/pre", testConfig(nil))
	// Written under the prefix, and one outside it that must not show.
	for _, k := range []string{"pre/a", "pre/b/1", "pre/b/2", "pre/c", "pre/d/x", "other"} {
		e.putDirect(t, k, "v")
	}
	ctx := t.Context()
	var keys, prefixes []string
	opts := meta.ListOptions{Delimiter: "/", Limit: 2}
	for range 10 {
		p, err := e.svc.List(ctx, e.alice, "gate", opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range p.Objects {
			keys = append(keys, o.Key)
		}
		prefixes = append(prefixes, p.CommonPrefixes...)
		if !p.Truncated {
			break
		}
		opts.StartAfter = p.NextStartAfter
	}
	if got, want := strings.Join(keys, ","), "a,c"; got != want {
		t.Errorf("keys: got %s, want %s", got, want)
	}
	if got, want := strings.Join(prefixes, ","), "b/,d/"; got != want {
		t.Errorf("common prefixes: got %s, want %s", got, want)
	}
	p, err := e.svc.List(ctx, e.alice, "gate", meta.ListOptions{Prefix: "b/"})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Objects) != 2 || p.Objects[0].Key != "b/1" || p.Objects[0].ETag != md5hex("v") || p.Objects[0].Size != 1 {
		t.Errorf("prefix b/: %+v", p.Objects)
	}
	if _, err := e.svc.List(ctx, e.bob, "gate", meta.ListOptions{}); !errcode.Is(err, errcode.PermissionDenied) {
		t.Errorf("bob's List: %v; want PermissionDenied", err)
	}
}

func TestReadWriteGateway(t *testing.T) {
	e := newEnv(t, testbackend.SharedMinIO(t), "rw", "/p", testConfig(func(c *object.Config) { c.MaxObjectSize = 1 << 20 }))
	ctx := t.Context()
	data := "written through coffer"
	sum := sha256.Sum256([]byte(data))
	o, err := e.svc.Put(ctx, e.alice, object.PutInput{Bucket: "gate", Key: "w.txt", Body: strings.NewReader(data), Size: int64(len(data)),
		SHA256: sum[:], Metadata: map[string]string{"color": "blue"}})
	if err != nil {
		t.Fatal(err)
	}
	if o.ETag != md5hex(data) || o.SHA256 != hex.EncodeToString(sum[:]) {
		t.Errorf("Put: %+v", o)
	}
	got, md := e.getDirect(t, "p/w.txt")
	if got != data || md["color"] != "blue" || md["coffer-sha256"] != hex.EncodeToString(sum[:]) {
		t.Errorf("backend object: %q %v", got, md)
	}
	if got, ro := read(t, e.svc, e.alice, "w.txt", 0, -1); got != data || ro.Metadata["color"] != "blue" || ro.SHA256 != o.SHA256 || ro.Metadata["coffer-sha256"] != "" {
		t.Errorf("read back: %q %+v", got, ro)
	}
	// A digest mismatch stores nothing.
	bad := sha256.Sum256([]byte("other"))
	_, err = e.svc.Put(ctx, e.alice, object.PutInput{Bucket: "gate", Key: "bad", Body: strings.NewReader(data), Size: int64(len(data)), SHA256: bad[:]})
	if !errcode.Is(err, errcode.ChecksumMismatch) {
		t.Errorf("Put with a wrong SHA-256: %v; want ChecksumMismatch", err)
	}
	// Over the size limit, of unknown size: refused, nothing stored.
	_, err = e.svc.Put(ctx, e.alice, object.PutInput{Bucket: "gate", Key: "bad", Body: bytes.NewReader(make([]byte, 2<<20)), Size: -1})
	if !errcode.Is(err, errcode.TooLarge) {
		t.Errorf("Put over the limit: %v; want TooLarge", err)
	}
	if _, err := e.svc.Get(ctx, e.alice, "gate", "bad"); !errcode.Is(err, errcode.NotFound) {
		t.Errorf("Get after failed puts: %v; want NotFound", err)
	}
	// Create-only on an existing key; If-Match on the current ETag.
	_, err = e.svc.Put(ctx, e.alice, object.PutInput{Bucket: "gate", Key: "w.txt", Body: strings.NewReader("x"), Size: 1, Cond: meta.Cond{IfNoneMatch: true}})
	if !errcode.Is(err, errcode.PreconditionFailed) {
		t.Errorf("If-None-Match: * on an existing key: %v; want PreconditionFailed", err)
	}
	// Copy within the gateway, and from it to a native bucket.
	if _, err := e.svc.Copy(ctx, e.alice, object.CopyInput{SrcBucket: "gate", SrcKey: "w.txt", DstBucket: "alice-bucket", DstKey: "copy"}); err != nil {
		t.Errorf("Copy to a native bucket: %v", err)
	}
	if _, err := e.svc.Copy(ctx, e.alice, object.CopyInput{SrcBucket: "alice-bucket", SrcKey: "copy", DstBucket: "gate", DstKey: "copy2"}); err != nil {
		t.Errorf("Copy into the gateway: %v", err)
	}
	if got, _ := e.getDirect(t, "p/copy2"); got != data {
		t.Errorf("copied into the backend: %q", got)
	}
	// Delete with a stale If-Match is refused; then deleted.
	if _, err := e.svc.Delete(ctx, e.alice, "gate", "w.txt", meta.Cond{IfMatch: "0123"}); !errcode.Is(err, errcode.PreconditionFailed) {
		t.Errorf("Delete with a stale If-Match: %v", err)
	}
	if _, err := e.svc.Delete(ctx, e.alice, "gate", "w.txt", meta.Cond{IfMatch: o.ETag}); err != nil {
		t.Errorf("Delete: %v", err)
	}
	if _, err := e.svc.Get(ctx, e.alice, "gate", "w.txt"); !errcode.Is(err, errcode.NotFound) {
		t.Errorf("Get after delete: %v; want NotFound", err)
	}
	if _, err := e.svc.Delete(ctx, e.alice, "gate", "w.txt", meta.Cond{}); !errcode.Is(err, errcode.NotFound) {
		t.Errorf("Delete of a missing key: %v; want NotFound", err)
	}
	// Unsupported, clearly.
	if _, err := e.svc.Move(ctx, e.alice, "gate", "copy2", "gate", "moved", meta.Cond{}); !errcode.Is(err, errcode.NotImplemented) {
		t.Errorf("Move: %v; want NotImplemented", err)
	}
	if _, err := e.svc.CreateUpload(ctx, e.alice, object.CreateUploadInput{Bucket: "gate", Key: "big"}); !errcode.Is(err, errcode.NotImplemented) {
		t.Errorf("CreateUpload: %v; want NotImplemented", err)
	}
	bt := e.svc.NewBatch(e.alice)
	if _, err := bt.Add(ctx, object.PutInput{Bucket: "gate", Key: "x", Body: strings.NewReader("x"), Size: 1}); !errcode.Is(err, errcode.NotImplemented) {
		t.Errorf("Batch.Add: %v; want NotImplemented", err)
	}
	bt.Abort()
}

func TestLargeWriteGoesMultipart(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	e := newEnv(t, testbackend.SharedMinIO(t), "rw", "", testConfig(nil))
	data := bytes.Repeat([]byte("0123456789abcdef"), (70<<20)/16) // over s3blob's 64 MiB part size
	o, err := e.svc.Put(t.Context(), e.alice, object.PutInput{Bucket: "gate", Key: "big", Body: bytes.NewReader(data), Size: int64(len(data))})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(o.ETag, "-2") {
		t.Errorf("ETag %q: want a 2-part multipart ETag", o.ETag)
	}
	got, ro := read(t, e.svc, e.alice, "big", int64(len(data))-16, -1)
	if got != "0123456789abcdef" || ro.Size != int64(len(data)) {
		t.Errorf("tail: %q, size %d", got, ro.Size)
	}
}

func TestReplacedBehindCoffersBack(t *testing.T) {
	e := newEnv(t, testbackend.SharedMinIO(t), "ro", "", testConfig(nil))
	ctx := t.Context()
	e1 := e.putDirect(t, "k", "version one")
	if got, o := read(t, e.svc, e.alice, "k", 0, -1); got != "version one" || o.ETag != e1 {
		t.Fatalf("first read: %q %s", got, o.ETag)
	}
	e2 := e.putDirect(t, "k", "version two!")
	if e1 == e2 {
		t.Fatal("same ETag for different bytes")
	}
	if got, o := read(t, e.svc, e.alice, "k", 0, -1); got != "version two!" || o.ETag != e2 || o.Size != 12 {
		t.Errorf("after replacement: %q, ETag %s, size %d; want the new bytes and ETag %s", got, o.ETag, o.Size, e2)
	}
	// A handle on the old version never serves the new bytes.
	r, err := e.svc.Get(ctx, e.alice, "gate", "k")
	if err != nil {
		t.Fatal(err)
	}
	e.putDirect(t, "k", "version three")
	if _, err := r.Open(ctx, 0, -1); !errcode.Is(err, errcode.Unavailable) {
		t.Errorf("Open of a version replaced since Get: %v; want Unavailable (retry)", err)
	}
}

func TestBackendDownAndBack(t *testing.T) {
	m := testbackend.StartMinIO(t)
	e := newEnv(t, m, "rw", "", testConfig(nil))
	ctx := t.Context()
	e.putDirect(t, "k", "data")
	read(t, e.svc, e.alice, "k", 0, -1)
	m.Stop()
	_, err := e.svc.Get(ctx, e.alice, "gate", "k")
	if !errcode.Is(err, errcode.Unavailable) || errcode.As(err).RetryAfter <= 0 {
		t.Errorf("Get with MinIO stopped: %v; want Unavailable with a retry hint", err)
	}
	if _, err := e.svc.List(ctx, e.alice, "gate", meta.ListOptions{}); !errcode.Is(err, errcode.Unavailable) {
		t.Errorf("List with MinIO stopped: %v; want Unavailable", err)
	}
	if _, err := e.svc.Put(ctx, e.alice, object.PutInput{Bucket: "gate", Key: "n", Body: strings.NewReader("x"), Size: 1}); !errcode.Is(err, errcode.Unavailable) {
		t.Errorf("Put with MinIO stopped: %v; want Unavailable", err)
	}
	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
	if got, _ := read(t, e.svc, e.alice, "k", 0, -1); got != "data" {
		t.Errorf("after MinIO came back: %q", got)
	}
}

func TestEncryptedWrites(t *testing.T) {
	keys, err := kms.Open(t.Context(), "", kms.Options{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, testbackend.SharedMinIO(t), "rw", "/enc", testConfig(func(c *object.Config) { c.Encrypt, c.Keys = true, keys }))
	ctx := t.Context()
	data := strings.Repeat("secret bytes ", 10000)
	o, err := e.svc.Put(ctx, e.alice, object.PutInput{Bucket: "gate", Key: "s", Body: strings.NewReader(data), Size: int64(len(data))})
	if err != nil {
		t.Fatal(err)
	}
	raw, md := e.getDirect(t, "enc/s")
	if strings.Contains(raw, "secret bytes") || md["coffer-sse"] == "" || md["coffer-size"] == "" {
		t.Errorf("backend holds plaintext or no envelope: %d bytes, %v", len(raw), md)
	}
	got, ro := read(t, e.svc, e.alice, "s", 0, -1)
	if got != data || ro.Size != int64(len(data)) || ro.ETag != o.ETag || object.EncryptionOf(ro).Mode == 0 {
		t.Errorf("read back: %d bytes (want %d), %+v", len(got), len(data), ro)
	}
	if got, _ := read(t, e.svc, e.alice, "s", 65530, 20); got != data[65530:65550] {
		t.Errorf("range across a segment: %q", got)
	}
	// Plaintext objects written by others stay readable.
	e.putDirect(t, "enc/plain", "abc")
	if got, _ := read(t, e.svc, e.alice, "plain", 0, -1); got != "abc" {
		t.Errorf("plaintext object: %q", got)
	}
	// Another gateway over the whole bucket reads it under its full key.
	b, err := e.meta.GetBucket(ctx, "gate")
	if err != nil {
		t.Fatal(err)
	}
	whole := strings.Replace(b.Gateway, e.bucket+"/enc/", e.bucket, 1)
	if err := e.meta.PutGatewayBucket(ctx, meta.Bucket{Name: "whole", OwnerID: "alice", Gateway: whole}); err != nil {
		t.Fatal(err)
	}
	r, err := e.svc.Get(ctx, e.alice, "whole", "enc/s")
	if err != nil {
		t.Fatal(err)
	}
	rc, err := r.Open(ctx, 0, -1)
	if err != nil {
		t.Fatalf("open through the other gateway: %v", err)
	}
	all, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || string(all) != data {
		t.Errorf("through the other gateway: %d bytes, %v", len(all), err)
	}
}

func TestParseSpec(t *testing.T) {
	good := []struct{ raw, url string }{
		{"photos=s3://bk?endpoint=http://127.0.0.1:9000&mode=ro&owner=a@x.io", "s3://bk?endpoint=http%3A%2F%2F127.0.0.1%3A9000&mode=ro"},
		{"photos=s3://bk/pre/fix?region=eu-west-1&mode=rw&owner=a@x.io&public=true&credentials_file=/etc/c", "s3://bk/pre/fix/?credentials_file=%2Fetc%2Fc&mode=rw&region=eu-west-1"},
	}
	for _, tc := range good {
		t.Run(tc.raw, func(t *testing.T) {
			sp, err := gateway.ParseSpec(tc.raw)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := sp.URL(), tc.url; got != want {
				t.Errorf("URL: got %q, want %q", got, want)
			}
			back, err := gateway.ParseURL(sp.URL())
			if err != nil || back.URL() != sp.URL() {
				t.Errorf("ParseURL(URL()): %+v, %v", back, err)
			}
		})
	}
	bad := []string{
		"", "photos", "=s3://bk?mode=ro&owner=a@x.io", "Bad_Name=s3://bk?mode=ro&owner=a@x.io",
		"photos=http://bk?mode=ro&owner=a@x.io", "photos=s3://bk?owner=a@x.io", "photos=s3://bk?mode=rx&owner=a@x.io",
		"photos=s3://bk?mode=ro", "photos=s3://bk?mode=ro&owner=a@x.io&secret_key=s", "photos=s3://bk?mode=ro&owner=a@x.io&access_key=k",
		"photos=s3://key:secret@bk?mode=ro&owner=a@x.io", "photos=s3://bk?mode=ro&owner=a@x.io&bogus=1",
		"photos=s3://bk?mode=ro&mode=rw&owner=a@x.io", "photos=s3://bk?mode=ro&owner=a@x.io&endpoint=ftp://h",
		"photos=s3://bk?mode=ro&owner=a@x.io&public=maybe", "photos=s3://bk//x?mode=ro&owner=a@x.io",
	}
	for _, raw := range bad {
		t.Run("bad/"+raw, func(t *testing.T) {
			if sp, err := gateway.ParseSpec(raw); err == nil {
				t.Errorf("ParseSpec(%q) = %+v; want an error", raw, sp)
			}
		})
	}
	if _, err := gateway.ParseURL("s3://bk?mode=ro&owner=a@x.io"); err == nil {
		t.Error("ParseURL with owner: want an error (the record holds the owner)")
	}
}

func FuzzParseGateway(f *testing.F) {
	for _, s := range []string{
		"photos=s3://bk?endpoint=http://127.0.0.1:9000&mode=ro&owner=a@x.io",
		"photos=s3://bk/pre?region=eu&mode=rw&owner=a@x.io&public=true&credentials_file=/c&path_style=false",
		"x=s3://b?mode=ro&owner=@", "a=s3://%zz", "a=s3://b?mode=ro&owner=a@b&secret_key=x",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		sp, err := gateway.ParseSpec(raw)
		if err != nil {
			return
		}
		if sp.Name == "" || sp.Bucket == "" || (sp.Mode != gateway.ReadOnly && sp.Mode != gateway.ReadWrite) || sp.Owner == "" {
			t.Fatalf("accepted %q as %+v", raw, sp)
		}
		if strings.Contains(raw, "secret_key=") && strings.Contains(sp.URL(), "secret_key") {
			t.Fatalf("a secret made it into the URL: %q", sp.URL())
		}
		back, err := gateway.ParseURL(sp.URL())
		if err != nil {
			t.Fatalf("ParseURL(%q) of accepted %q: %v", sp.URL(), raw, err)
		}
		if back.URL() != sp.URL() || back.Bucket != sp.Bucket || back.Prefix != sp.Prefix || back.Mode != sp.Mode {
			t.Fatalf("round trip of %q: %+v != %+v", raw, back, sp)
		}
	})
}

// testConfig is the object service's default configuration
// (config.Defaults()) changed by change, if not nil.
func testConfig(change func(*object.Config)) object.Config {
	c := object.ConfigFrom(config.Defaults())
	if change != nil {
		change(&c)
	}
	return c
}
