package s3blob

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/coffer-storage/coffer/internal/blob"
	"github.com/coffer-storage/coffer/internal/blob/blobtest"
	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/testbackend"
)

func TestMain(m *testing.M) { testbackend.Main(m) }

// newStore makes a fresh bucket on m and opens a store on it.
func newStore(t testing.TB, m *testbackend.MinIO, opts Options) *Store {
	t.Helper()
	ctx := context.Background()
	opts.Bucket = "t-" + testbackend.RandomHex(6)
	opts.Endpoint, opts.AccessKey, opts.SecretKey = m.Endpoint(), m.AccessKey, m.SecretKey
	opts.PathStyle = true
	if _, err := Open(ctx, opts); err == nil {
		t.Fatal("Open of a missing bucket succeeded")
	}
	raw, err := openUnchecked(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &opts.Bucket}); err != nil {
		t.Fatal(err)
	}
	s, err := Open(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	m := testbackend.SharedMinIO(t)
	// MinIO keeps objects as files: it cannot hold "a" and "a/b" both.
	blobtest.RunWith(t, func(t *testing.T) blob.Store {
		return newStore(t, m, Options{PartSize: 5 << 20})
	}, blobtest.Options{NoNestedKeys: true})
}

func TestLargeStreamed(t *testing.T) {
	if testing.Short() {
		t.Skip("256 MiB object skipped in -short mode")
	}
	blobtest.RunLarge(t, newStore(t, testbackend.SharedMinIO(t), Options{PartSize: 5 << 20}))
}

func TestConformanceWithPrefix(t *testing.T) {
	m := testbackend.SharedMinIO(t)
	s := newStore(t, m, Options{Prefix: "coffer/node/"})
	ctx := t.Context()
	if _, err := s.Put(ctx, "o/a", strings.NewReader("hello"), 5); err != nil {
		t.Fatal(err)
	}
	// The object lives under the prefix, and List strips it.
	if _, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &s.opts.Bucket, Key: aws.String("coffer/node/o/a")}); err != nil {
		t.Fatalf("object not under the prefix: %v", err)
	}
	var keys []string
	if err := s.List(ctx, "o/", func(i blob.Info) error { keys = append(keys, i.Key); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(keys) != 1 || keys[0] != "o/a" {
		t.Fatalf("List = %q", keys)
	}
}

func TestParseURL(t *testing.T) {
	o, err := ParseURL("s3://bkt/some/prefix?endpoint=http://127.0.0.1:9000&region=eu-west-1&part_size=16777216")
	if err != nil {
		t.Fatal(err)
	}
	if o.Bucket != "bkt" || o.Prefix != "some/prefix/" || o.Endpoint != "http://127.0.0.1:9000" || o.Region != "eu-west-1" || !o.PathStyle || o.PartSize != 16<<20 {
		t.Fatalf("ParseURL = %+v", o)
	}
	for _, bad := range []string{"http://bkt", "s3://", "s3://k:s@bkt", "s3://bkt?nope=1", "s3://bkt?path_style=maybe"} {
		if _, err := ParseURL(bad); err == nil {
			t.Errorf("ParseURL(%q) succeeded", bad)
		}
	}
}

// TestMultipartPresigned uploads parts straight to MinIO with presigned
// URLs, as a browser would, and completes.
func TestMultipartPresigned(t *testing.T) {
	m := testbackend.SharedMinIO(t)
	s := newStore(t, m, Options{})
	ctx := t.Context()
	id, err := s.CreateMultipart(ctx, "o/direct")
	if err != nil {
		t.Fatal(err)
	}
	part1 := bytes.Repeat([]byte("a"), 5<<20)
	part2 := []byte("tail")
	for i, data := range [][]byte{part1, part2} {
		u, err := s.PresignPart(ctx, "o/direct", id, i+1, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest(http.MethodPut, u, bytes.NewReader(data))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("PUT part %d: %s %s", i+1, resp.Status, body)
		}
	}
	// Nothing visible before completion.
	if _, err := s.Stat(ctx, "o/direct"); !errcode.Is(err, errcode.NotFound) {
		t.Fatalf("Stat before completion: %v", err)
	}
	parts, err := s.ListMultipartParts(ctx, "o/direct", id)
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) != 2 || parts[0].Size != 5<<20 || parts[1].Size != 4 || parts[0].ETag == "" {
		t.Fatalf("parts = %+v", parts)
	}
	info, err := s.CompleteMultipart(ctx, "o/direct", id, parts)
	if err != nil {
		t.Fatal(err)
	}
	if info.Size != 5<<20+4 {
		t.Fatalf("size = %d", info.Size)
	}
	// A second completion (another node, a retry) reports the same blob.
	if info, err := s.CompleteMultipart(ctx, "o/direct", id, parts); err != nil || info.Size != 5<<20+4 {
		t.Fatalf("second completion: %+v %v", info, err)
	}
	rc, err := s.Get(ctx, "o/direct", 5<<20, -1)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(rc)
	rc.Close()
	if string(got) != "tail" {
		t.Fatalf("tail = %q", got)
	}
	if err := s.AbortMultipart(ctx, "o/direct", id); err != nil {
		t.Fatalf("abort of a completed upload: %v", err)
	}
}

// TestUnavailable: a stopped store gives Unavailable quickly, and the same
// Store works again once the store is back.
func TestUnavailable(t *testing.T) {
	m := testbackend.StartMinIO(t)
	s := newStore(t, m, Options{})
	ctx := t.Context()
	if _, err := s.Put(ctx, "o/x", strings.NewReader("x"), 1); err != nil {
		t.Fatal(err)
	}
	m.Stop()
	start := time.Now()
	_, err := s.Put(ctx, "o/y", strings.NewReader("y"), 1)
	if !errcode.Is(err, errcode.Unavailable) {
		t.Fatalf("Put with the store down: %v (code %v)", err, errcode.Of(err))
	}
	_, err = s.Stat(ctx, "o/x")
	if !errcode.Is(err, errcode.Unavailable) {
		t.Fatalf("Stat with the store down: %v", err)
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Fatalf("failing took %v", d)
	}
	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Stat(ctx, "o/x"); err != nil {
		t.Fatalf("Stat after restart: %v", err)
	}
}

// TestCopy: Copy makes the destination a copy of the source in the store;
// a missing source is NotFound.
func TestCopy(t *testing.T) {
	s := newStore(t, testbackend.SharedMinIO(t), Options{Prefix: "p/"})
	ctx := t.Context()
	data := bytes.Repeat([]byte("copy me "), 1000)
	if _, err := s.Put(ctx, "o/src", bytes.NewReader(data), int64(len(data))); err != nil {
		t.Fatal(err)
	}
	info, err := s.Copy(ctx, "o/src", "o/dst")
	if err != nil || info.Size != int64(len(data)) || info.Key != "o/dst" {
		t.Fatalf("Copy: %+v, %v", info, err)
	}
	rc, err := s.Get(ctx, "o/dst", 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(rc)
	rc.Close()
	if !bytes.Equal(got, data) {
		t.Errorf("copy holds %d bytes, not the source's %d", len(got), len(data))
	}
	if _, err := s.Copy(ctx, "o/missing", "o/dst2"); !errcode.Is(err, errcode.NotFound) {
		t.Errorf("Copy of a missing source: %v, want NotFound", err)
	}
}
