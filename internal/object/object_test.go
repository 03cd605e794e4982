package object

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/blob"
	"github.com/coffer-storage/coffer/internal/blob/memblob"
	"github.com/coffer-storage/coffer/internal/config"
	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/meta/sqlite"
)

type fixture struct {
	svc   *Service
	meta  Stores
	blobs *memblob.Store
	alice Actor
	bob   Actor
}

// testConfig is the default configuration (config.Defaults()) changed by
// change, if not nil.
func testConfig(change func(*Config)) Config {
	c := ConfigFrom(config.Defaults())
	if change != nil {
		change(&c)
	}
	return c
}

func newFixture(t testing.TB, quota int64) *fixture {
	t.Helper()
	return newFixtureOver(t, quota, nil)
}

// newFixtureOver is newFixture with the metadata store wrapped by wrap
// (nil: as it is), e.g. in the metadata cache as coffer serve runs it.
func newFixtureOver(t testing.TB, quota int64, wrap func(meta.Stores) meta.Stores) *fixture {
	t.Helper()
	m, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "meta.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	b := memblob.New()
	stores := m.Stores()
	if wrap != nil {
		stores = wrap(stores)
	}
	f := &fixture{meta: StoresOf(stores), blobs: b, alice: Actor{UserID: "alice"}, bob: Actor{UserID: "bob"}}
	now := time.Now().UTC()
	for _, u := range []string{"alice", "bob"} {
		if err := m.CreateUser(context.Background(), meta.User{ID: u, Email: u + "@x.io", QuotaBytes: quota, CreatedAt: now},
			meta.Bucket{Name: u + "-bucket", OwnerID: u, Visibility: meta.Private, CreatedAt: now}); err != nil {
			t.Fatal(err)
		}
	}
	// Blobs for everything: these tests are about blob life cycles.
	f.svc = New(f.meta, b, testConfig(func(c *Config) { c.GarbageGrace, c.InlineMax = time.Nanosecond, 0 }), nil)
	return f
}

func (f *fixture) put(t *testing.T, a Actor, bucket, key, data string) (meta.Object, error) {
	t.Helper()
	return f.svc.Put(context.Background(), a, PutInput{Bucket: bucket, Key: key, Body: strings.NewReader(data), Size: int64(len(data))})
}

func (f *fixture) read(t *testing.T, a Actor, bucket, key string) string {
	t.Helper()
	r, err := f.svc.Get(context.Background(), a, bucket, key)
	if err != nil {
		t.Fatalf("Get %s/%s: %v", bucket, key, err)
	}
	rc, err := r.Open(context.Background(), 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, _ := io.ReadAll(rc)
	return string(b)
}

func (f *fixture) blobCount(t *testing.T) int {
	t.Helper()
	n := 0
	f.blobs.List(context.Background(), "", func(blob.Info) error { n++; return nil })
	return n
}

func TestOverwriteReclaimsOldBlob(t *testing.T) {
	f := newFixture(t, 0)
	ctx := context.Background()
	o1, err := f.put(t, f.alice, "alice-bucket", "k", "one")
	if err != nil {
		t.Fatal(err)
	}
	o2, err := f.put(t, f.alice, "alice-bucket", "k", "two!")
	if err != nil {
		t.Fatal(err)
	}
	if o1.BlobKey == o2.BlobKey {
		t.Fatal("overwrite reused the blob key")
	}
	if got := f.read(t, f.alice, "alice-bucket", "k"); got != "two!" {
		t.Fatalf("read %q", got)
	}
	if got, want := f.blobCount(t), 2; got != want {
		t.Fatalf("blobs before GC = %d, want %d", got, want)
	}
	n, err := f.svc.CollectGarbage(ctx)
	if err != nil || n != 1 {
		t.Fatalf("CollectGarbage = %d, %v; want 1", n, err)
	}
	if _, err := f.blobs.Stat(ctx, o1.BlobKey); !errcode.Is(err, errcode.NotFound) {
		t.Errorf("old blob still there: %v", err)
	}
	if got := f.read(t, f.alice, "alice-bucket", "k"); got != "two!" {
		t.Fatalf("after GC read %q", got)
	}
	if _, err := f.svc.Delete(ctx, f.alice, "alice-bucket", "k", meta.Cond{}); err != nil {
		t.Fatal(err)
	}
	f.svc.CollectGarbage(ctx)
	if got := f.blobCount(t); got != 0 {
		t.Errorf("blobs after delete + GC = %d", got)
	}
}

func TestOrphanCollection(t *testing.T) {
	f := newFixture(t, 0)
	ctx := context.Background()
	o, _ := f.put(t, f.alice, "alice-bucket", "kept", "kept")
	// A blob written but never committed (a crash between the two).
	if _, err := f.blobs.Put(ctx, "o/00/orphan", strings.NewReader("x"), 1); err != nil {
		t.Fatal(err)
	}
	// Young orphans are left alone (they may be an upload about to commit).
	if n, err := f.svc.CollectOrphans(ctx); err != nil || n != 0 {
		t.Fatalf("young orphans collected: %d %v", n, err)
	}
	f.svc.now = func() time.Time { return time.Now().Add(2 * time.Hour) }
	if n, err := f.svc.CollectOrphans(ctx); err != nil || n != 1 {
		t.Fatalf("CollectOrphans = %d, %v; want 1", n, err)
	}
	if _, err := f.blobs.Stat(ctx, o.BlobKey); err != nil {
		t.Errorf("referenced blob deleted: %v", err)
	}
}

// failingMeta fails PutObjects, to prove staged blobs are discarded.
type failingMeta struct {
	meta.Objects
}

func (failingMeta) PutObjects(context.Context, []meta.Put) ([]meta.PutResult, error) {
	return nil, errcode.New(errcode.Unavailable, "injected")
}

func TestFailedCommitLeavesNoBlob(t *testing.T) {
	f := newFixture(t, 0)
	st := f.meta
	st.Objects = failingMeta{f.meta.Objects}
	svc := New(st, f.blobs, testConfig(nil), nil)
	_, err := svc.Put(context.Background(), f.alice, PutInput{Bucket: "alice-bucket", Key: "k", Body: strings.NewReader("data"), Size: 4})
	if !errcode.Is(err, errcode.Unavailable) {
		t.Fatalf("err = %v", err)
	}
	if n := f.blobCount(t); n != 0 {
		t.Errorf("%d blobs left after failed commit", n)
	}
}

func TestFailedBodyLeavesNothing(t *testing.T) {
	f := newFixture(t, 0)
	wrong := sha256.Sum256([]byte("other"))
	_, err := f.svc.Put(context.Background(), f.alice, PutInput{Bucket: "alice-bucket", Key: "k", Body: strings.NewReader("data"), Size: -1, SHA256: wrong[:]})
	if !errcode.Is(err, errcode.ChecksumMismatch) {
		t.Fatalf("err = %v", err)
	}
	if n := f.blobCount(t); n != 0 {
		t.Errorf("%d blobs left", n)
	}
	if _, err := f.svc.Get(context.Background(), f.alice, "alice-bucket", "k"); !errcode.Is(err, errcode.NotFound) {
		t.Errorf("object visible: %v", err)
	}
}

func TestBatchAllOrNothing(t *testing.T) {
	f := newFixture(t, 0)
	ctx := context.Background()
	bt := f.svc.NewBatch(f.alice)
	if _, err := bt.Add(ctx, PutInput{Bucket: "alice-bucket", Key: "a", Body: strings.NewReader("a"), Size: -1}); err != nil {
		t.Fatal(err)
	}
	if _, err := bt.Add(ctx, PutInput{Bucket: "alice-bucket", Key: "a/../b", Body: strings.NewReader("b"), Size: -1}); err == nil {
		t.Fatal("invalid key accepted")
	}
	bt.Abort()
	if n := f.blobCount(t); n != 0 {
		t.Errorf("%d blobs left after abort", n)
	}
	if _, err := f.svc.Get(ctx, f.alice, "alice-bucket", "a"); !errcode.Is(err, errcode.NotFound) {
		t.Errorf("aborted object visible: %v", err)
	}
	bt = f.svc.NewBatch(f.alice)
	for _, k := range []string{"x", "y"} {
		if _, err := bt.Add(ctx, PutInput{Bucket: "alice-bucket", Key: k, Body: strings.NewReader(k), Size: -1}); err != nil {
			t.Fatal(err)
		}
	}
	objs, err := bt.Commit(ctx)
	bt.Abort() // no-op after commit
	if err != nil || len(objs) != 2 {
		t.Fatalf("commit: %v %v", objs, err)
	}
	if f.read(t, f.alice, "alice-bucket", "y") != "y" {
		t.Error("committed object unreadable")
	}
}

func TestAuthorization(t *testing.T) {
	f := newFixture(t, 0)
	ctx := context.Background()
	f.put(t, f.alice, "alice-bucket", "k", "secret")
	anon := Actor{}
	if _, err := f.svc.Get(ctx, f.bob, "alice-bucket", "k"); !errcode.Is(err, errcode.PermissionDenied) {
		t.Errorf("bob reads alice's private object: %v", err)
	}
	if _, err := f.svc.Get(ctx, anon, "alice-bucket", "k"); !errcode.Is(err, errcode.Unauthenticated) {
		t.Errorf("anonymous reads private object: %v", err)
	}
	if _, err := f.put(t, f.bob, "alice-bucket", "k", "evil"); !errcode.Is(err, errcode.PermissionDenied) {
		t.Errorf("bob writes: %v", err)
	}
	if _, err := f.svc.SetBucketVisibility(ctx, f.alice, "alice-bucket", meta.PublicRead); err != nil {
		t.Fatal(err)
	}
	if got := f.read(t, anon, "alice-bucket", "k"); got != "secret" {
		t.Errorf("anonymous public read = %q", got)
	}
	if _, err := f.svc.List(ctx, f.bob, "alice-bucket", meta.ListOptions{}); !errcode.Is(err, errcode.PermissionDenied) {
		t.Errorf("bob lists a public bucket: %v", err)
	}
	if _, err := f.svc.Delete(ctx, f.bob, "alice-bucket", "k", meta.Cond{}); !errcode.Is(err, errcode.PermissionDenied) {
		t.Errorf("bob deletes from a public bucket: %v", err)
	}
	if _, err := f.svc.Move(ctx, f.bob, "bob-bucket", "x", "alice-bucket", "k", meta.Cond{}); !errcode.Is(err, errcode.PermissionDenied) {
		t.Errorf("bob moves into alice's bucket: %v", err)
	}
	// Copy out of a public bucket is a read: allowed into bob's own bucket.
	if _, err := f.svc.Copy(ctx, f.bob, CopyInput{SrcBucket: "alice-bucket", SrcKey: "k", DstBucket: "bob-bucket", DstKey: "k"}); err != nil {
		t.Errorf("bob copies from a public bucket: %v", err)
	}
	if _, err := f.svc.Get(ctx, f.bob, "no-such-bucket", "k"); !errcode.Is(err, errcode.NotFound) {
		t.Errorf("missing bucket: %v", err)
	}
}

func TestQuotaUnderConcurrency(t *testing.T) {
	const quota, size, n = 100_000, 10_000, 25
	for _, c := range []struct {
		name     string
		declared int64 // Size of the puts
		minFit   int64 // of quota/size
	}{
		// Known sizes are reserved whole: exactly quota/size fit.
		{"known size", size, quota / size},
		// Unknown sizes reserve as bytes arrive, with a look-ahead of
		// half what arrived: concurrent ones may be refused while
		// others' look-ahead holds the room, never overfill it.
		{"chunked", -1, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, quota)
			var okCount atomic.Int64
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					data := bytes.Repeat([]byte{byte(i)}, size)
					_, err := f.svc.Put(context.Background(), f.alice, PutInput{Bucket: "alice-bucket", Key: string(rune('a' + i)), Body: bytes.NewReader(data), Size: c.declared})
					switch {
					case err == nil:
						okCount.Add(1)
					case !errcode.Is(err, errcode.QuotaExceeded):
						t.Errorf("unexpected error: %v", err)
					}
				})
			}
			wg.Wait()
			if got := okCount.Load(); got < c.minFit || got > quota/size {
				t.Errorf("%d uploads fit, want %d to %d", got, c.minFit, quota/size)
			}
			u, _ := f.meta.GetUser(context.Background(), "alice")
			if u.UsageBytes != okCount.Load()*size {
				t.Errorf("usage %d, want %d", u.UsageBytes, okCount.Load()*size)
			}
			if got := f.blobCount(t); int64(got) != okCount.Load() {
				t.Errorf("%d blobs for %d objects: refused uploads left blobs", got, okCount.Load())
			}
			if got := f.svc.StagedBytes(); got != 0 {
				t.Errorf("StagedBytes = %d after every upload ended", got)
			}
			// Every reservation was released: the rest of the quota is
			// free for one upload.
			rest := quota - u.UsageBytes
			if rest > 0 {
				if _, err := f.svc.Put(context.Background(), f.alice, PutInput{Bucket: "alice-bucket", Key: "rest", Body: bytes.NewReader(make([]byte, rest)), Size: rest}); err != nil {
					t.Errorf("an upload of the %d bytes left: %v", rest, err)
				}
			}
		})
	}
}

func TestCopyVerifiesAndMoveKeepsBlob(t *testing.T) {
	f := newFixture(t, 0)
	ctx := context.Background()
	o, _ := f.put(t, f.alice, "alice-bucket", "src", "payload")
	c, err := f.svc.Copy(ctx, f.alice, CopyInput{SrcBucket: "alice-bucket", SrcKey: "src", DstBucket: "alice-bucket", DstKey: "dst"})
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256([]byte("payload"))
	if c.SHA256 != hex.EncodeToString(s[:]) || c.BlobKey == o.BlobKey {
		t.Errorf("copy = %+v", c)
	}
	m, err := f.svc.Move(ctx, f.alice, "alice-bucket", "src", "alice-bucket", "moved", meta.Cond{})
	if err != nil || m.BlobKey != o.BlobKey {
		t.Fatalf("move: %+v %v", m, err)
	}
	if _, err := f.svc.Get(ctx, f.alice, "alice-bucket", "src"); !errcode.Is(err, errcode.NotFound) {
		t.Errorf("source remains after move: %v", err)
	}
	if got := f.read(t, f.alice, "alice-bucket", "moved"); got != "payload" {
		t.Errorf("moved = %q", got)
	}
}

func TestSmallObjectsInline(t *testing.T) {
	f := newFixture(t, 0)
	f.svc = New(f.meta, f.blobs, testConfig(func(c *Config) { c.GarbageGrace, c.InlineMax = time.Nanosecond, 1024 }), nil)
	ctx := context.Background()
	small, err := f.put(t, f.alice, "alice-bucket", "small", "tiny payload")
	if err != nil || !small.IsInline() {
		t.Fatalf("small put: %+v %v", small, err)
	}
	if f.blobCount(t) != 0 {
		t.Errorf("a small object wrote a blob")
	}
	r, _ := f.svc.Get(ctx, f.alice, "alice-bucket", "small")
	rc, err := r.Open(ctx, 5, 7)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(rc)
	if string(b) != "payload" {
		t.Errorf("ranged read of inline object = %q", b)
	}
	big, err := f.put(t, f.alice, "alice-bucket", "big", strings.Repeat("x", 1025))
	if err != nil || big.IsInline() || f.blobCount(t) != 1 {
		t.Errorf("object over InlineMax: inline %v, %d blobs, %v", big.IsInline(), f.blobCount(t), err)
	}
	// A wrong checksum on an inline upload stores nothing.
	wrong := sha256.Sum256([]byte("x"))
	if _, err := f.svc.Put(ctx, f.alice, PutInput{Bucket: "alice-bucket", Key: "bad", Body: strings.NewReader("abc"), Size: 3, SHA256: wrong[:]}); !errcode.Is(err, errcode.ChecksumMismatch) {
		t.Errorf("inline checksum mismatch: %v", err)
	}
	if _, err := f.svc.Get(ctx, f.alice, "alice-bucket", "bad"); !errcode.Is(err, errcode.NotFound) {
		t.Errorf("bad inline upload visible: %v", err)
	}
	// A body longer than announced is refused.
	if _, err := f.svc.Put(ctx, f.alice, PutInput{Bucket: "alice-bucket", Key: "long", Body: strings.NewReader("abcd"), Size: 3}); !errcode.Is(err, errcode.TooLarge) {
		t.Errorf("inline overlong body: %v", err)
	}
	if got := f.read(t, f.alice, "alice-bucket", "small"); got != "tiny payload" {
		t.Errorf("read %q", got)
	}
}
