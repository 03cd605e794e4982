package tus

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/blob"
	"github.com/coffer-storage/coffer/internal/blob/memblob"
	"github.com/coffer-storage/coffer/internal/config"
	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/kms"
	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/meta/sqlite"
	"github.com/coffer-storage/coffer/internal/object"
)

// lockSpy is the metadata store's tus role with a record of the lock
// calls and a count of the writes after a PATCH's part (fault-free: every
// call goes to the real store).
type lockSpy struct {
	meta.Tus
	locked                      chan string  // upload IDs, each time a lock is taken
	askedRelease                atomic.Int64 // TryLockTus calls asking a holder to let go
	setHash, unlock, unlockHash atomic.Int64
}

func (s *lockSpy) SetTusHash(ctx context.Context, id string, offset int64, state []byte) error {
	s.setHash.Add(1)
	return s.Tus.SetTusHash(ctx, id, offset, state)
}

func (s *lockSpy) UnlockTus(ctx context.Context, id, holder string) error {
	s.unlock.Add(1)
	return s.Tus.UnlockTus(ctx, id, holder)
}

func (s *lockSpy) UnlockTusHash(ctx context.Context, id, holder string, offset int64, state []byte) error {
	s.unlockHash.Add(1)
	return s.Tus.UnlockTusHash(ctx, id, holder, offset, state)
}

// countingObjects is the object service with a count of the tus store's
// reads of an upload and its parts (fault-free).
type countingObjects struct {
	*object.Service
	getUpload, allParts *atomic.Int64
}

func (o countingObjects) GetUpload(ctx context.Context, a object.Actor, bucket, key, id string) (meta.Upload, error) {
	o.getUpload.Add(1)
	return o.Service.GetUpload(ctx, a, bucket, key, id)
}

func (o countingObjects) AllParts(ctx context.Context, a object.Actor, id string) (meta.Upload, []meta.Part, error) {
	o.allParts.Add(1)
	return o.Service.AllParts(ctx, a, id)
}

func (s *lockSpy) TryLockTus(ctx context.Context, id, holder string, until time.Time, requestRelease bool) (meta.TusLock, error) {
	if requestRelease {
		s.askedRelease.Add(1)
	}
	got, err := s.Tus.TryLockTus(ctx, id, holder, until, requestRelease)
	if err == nil && got == meta.TusLocked {
		select {
		case s.locked <- id:
		default:
		}
	}
	return got, err
}

// countingBlobs is the blob store with a count of reads (fault-free).
type countingBlobs struct {
	blob.Store
	gets atomic.Int64
}

func (b *countingBlobs) Get(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	b.gets.Add(1)
	return b.Store.Get(ctx, key, off, n)
}

// harness is the tus endpoint over a real object service (SQLite and an
// in-memory blob store) on a loopback HTTP server; the caller is the user
// named by the X-Test-User header (users "alice" and "bob", each with a
// bucket "<name>-bucket").
type harness struct {
	url     string
	dbPath  string
	stores  meta.Stores // the store's roles, Tus being meta
	meta    *lockSpy
	blobs   *countingBlobs
	objects *object.Service
	cfg     object.Config
	lease   time.Duration
	// the tus stores' reads through object.Service (every node's)
	getUpload, allParts atomic.Int64
}

func newHarness(t testing.TB, cfg object.Config, lease time.Duration) *harness {
	t.Helper()
	dbPath := filepath.Join(t.TempDir(), "meta.db")
	m, err := sqlite.Open(t.Context(), dbPath, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	now := time.Now().UTC()
	for _, u := range []string{"alice", "bob"} {
		if err := m.CreateUser(t.Context(), meta.User{ID: u, Email: u + "@x.io", CreatedAt: now},
			meta.Bucket{Name: u + "-bucket", OwnerID: u, Visibility: meta.Private, CreatedAt: now}); err != nil {
			t.Fatal(err)
		}
	}
	h := &harness{dbPath: dbPath, stores: m.Stores(), meta: &lockSpy{Tus: m, locked: make(chan string, 16)},
		blobs: &countingBlobs{Store: memblob.New()}, cfg: cfg, lease: lease}
	h.objects, h.url = h.node(t)
	return h
}

// node starts another node over h's stores (as scale-out nodes share
// PostgreSQL and the blob store), with its own object service and tus
// handler, and returns them.
func (h *harness) node(t testing.TB) (*object.Service, string) {
	t.Helper()
	objects := object.New(object.StoresOf(h.stores), h.blobs, h.cfg, nil)
	cfg := ConfigFrom(config.Defaults())
	cfg.BasePath = "/tus/"
	if h.lease > 0 {
		cfg.LockLease = h.lease
	}
	cfg.Error = func(_ context.Context, err error) (int, http.Header, []byte) {
		status := http.StatusInternalServerError
		switch errcode.Of(err) {
		case errcode.NotFound:
			status = http.StatusNotFound
		case errcode.PermissionDenied:
			status = http.StatusForbidden
		case errcode.InvalidArgument:
			status = http.StatusBadRequest
		}
		return status, http.Header{"Content-Type": {"text/plain"}}, []byte(err.Error())
	}
	th, err := New(countingObjects{Service: objects, getUpload: &h.getUpload, allParts: &h.allParts}, h.meta, cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		th.ServeHTTP(w, r, object.Actor{UserID: r.Header.Get("X-Test-User")})
	}))
	t.Cleanup(srv.Close)
	return objects, srv.URL
}

// do sends a tus request as user and returns the status and body.
func (h *harness) do(t testing.TB, user, method, path string, body io.Reader, hdr ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, h.url+path, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Tus-Resumable", "1.0.0")
	req.Header.Set("X-Test-User", user)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// create creates an upload of length bytes into user's bucket and returns
// its path.
func (h *harness) create(t testing.TB, user, key string, length int) string {
	t.Helper()
	md := "bucket " + base64.StdEncoding.EncodeToString([]byte(user+"-bucket")) + ",key " + base64.StdEncoding.EncodeToString([]byte(key))
	resp, body := h.do(t, user, "POST", "/tus/", nil, "Upload-Length", strconv.Itoa(length), "Upload-Metadata", md)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d %s", resp.StatusCode, body)
	}
	loc := resp.Header.Get("Location")
	return loc[strings.Index(loc, "/tus/"):]
}

func (h *harness) object(t *testing.T, user, key string) []byte {
	t.Helper()
	r, err := h.objects.Get(t.Context(), object.Actor{UserID: user}, user+"-bucket", key)
	if err != nil {
		t.Fatalf("object %s: %v", key, err)
	}
	rc, err := r.Open(t.Context(), 0, r.Object.Size)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

const octets = "application/offset+octet-stream"

// TestPatchContentType: a PATCH without Content-Type
// application/offset+octet-stream is 415 (tus 1.0, docs/errors.md), not
// tusd's 400, and stores nothing.
func TestPatchContentType(t *testing.T) {
	h := newHarness(t, testConfig(nil), 0)
	path := h.create(t, "alice", "ct.bin", 4)
	for _, ct := range []string{"", "application/octet-stream", "text/plain"} {
		resp, body := h.do(t, "alice", "PATCH", path, strings.NewReader("abcd"), "Upload-Offset", "0", "Content-Type", ct)
		if got, want := resp.StatusCode, http.StatusUnsupportedMediaType; got != want {
			t.Errorf("Content-Type %q: %d %s, want %d", ct, got, body, want)
		}
		if !strings.HasPrefix(body, "ERR_INVALID_CONTENT_TYPE") || resp.Header.Get("Tus-Resumable") != "1.0.0" {
			t.Errorf("Content-Type %q: body %q, Tus-Resumable %q", ct, body, resp.Header.Get("Tus-Resumable"))
		}
	}
	resp, _ := h.do(t, "alice", "HEAD", path, nil)
	if got := resp.Header.Get("Upload-Offset"); got != "0" {
		t.Errorf("Upload-Offset after refused PATCHes %q, want 0", got)
	}
	if resp, body := h.do(t, "alice", "PATCH", path, strings.NewReader("abcd"), "Upload-Offset", "0", "Content-Type", octets); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("PATCH: %d %s", resp.StatusCode, body)
	}
	if got := h.object(t, "alice", "ct.bin"); string(got) != "abcd" {
		t.Errorf("object %q", got)
	}
}

// TestOtherUserCannotInterrupt (issue 18, N5): while alice's PATCH holds
// her upload's lock, bob's HEAD, PATCH and DELETE on its URL answer 404
// without asking for the lock, and alice's PATCH completes.
func TestOtherUserCannotInterrupt(t *testing.T) {
	// A short lease: the holder learns of a release request within a
	// third of it, so a regression shows at once.
	h := newHarness(t, testConfig(func(c *object.Config) { c.InlineMax = 0 }), 300*time.Millisecond)
	const first, rest = 256 << 10, 1000
	data := bytes.Repeat([]byte("0123456789abcdef"), (first+rest)/16+1)[:first+rest]
	path := h.create(t, "alice", "slow.bin", len(data))
	id := path[strings.LastIndex(path, "/")+1:]

	pr, pw := io.Pipe()
	defer pr.CloseWithError(io.ErrClosedPipe)
	type result struct {
		status int
		body   string
		offset string
	}
	done := make(chan result, 1)
	go func() {
		req, _ := http.NewRequestWithContext(t.Context(), "PATCH", h.url+path, pr)
		req.Header.Set("Tus-Resumable", "1.0.0")
		req.Header.Set("X-Test-User", "alice")
		req.Header.Set("Upload-Offset", "0")
		req.Header.Set("Content-Type", octets)
		req.ContentLength = int64(len(data))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- result{body: err.Error()}
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		done <- result{resp.StatusCode, string(b), resp.Header.Get("Upload-Offset")}
	}()
	go pw.Write(data[:first])
	// Alice's PATCH holds the lock (and reads her body).
	if got := <-h.meta.locked; got != id {
		t.Fatalf("locked %q, want %q", got, id)
	}
	for _, m := range []string{"HEAD", "PATCH", "DELETE"} {
		var body io.Reader
		if m == "PATCH" {
			body = strings.NewReader("evil")
		}
		resp, text := h.do(t, "bob", m, path, body, "Upload-Offset", "0", "Content-Type", octets)
		if got, want := resp.StatusCode, http.StatusNotFound; got != want {
			t.Errorf("bob's %s: %d %s, want %d", m, got, text, want)
		}
	}
	if n := h.meta.askedRelease.Load(); n != 0 {
		t.Errorf("bob's requests asked alice's PATCH to release its lock %d times", n)
	}
	// (Had bob's HEAD asked for the lock, it would have got it only once
	// alice's PATCH had let go: interrupted.)
	go func() {
		pw.Write(data[first:])
		pw.Close()
	}()
	r := <-done
	if r.status != http.StatusNoContent || r.offset != strconv.Itoa(len(data)) {
		t.Fatalf("alice's PATCH: %d %q (Upload-Offset %q), want 204 at %d", r.status, r.body, r.offset, len(data))
	}
	if got := h.object(t, "alice", "slow.bin"); !bytes.Equal(got, data) {
		t.Errorf("alice's object: %d bytes, want %d", len(got), len(data))
	}
}

// stateMarker is plaintext that must never rest in the metadata store of
// an encrypting server.
const stateMarker = "TUS-STATE-MARKER-4b1d9e|"

// markerBytes returns n bytes: zeros with stateMarker at at.
func markerBytes(n, at int) []byte {
	b := make([]byte, n)
	copy(b[at:], stateMarker)
	return b
}

// wantNoMarker fails if the metadata store's files (the database and its
// WAL) or any blob hold stateMarker.
func (h *harness) wantNoMarker(t *testing.T, when string) {
	t.Helper()
	for _, p := range []string{h.dbPath, h.dbPath + "-wal"} {
		b, err := os.ReadFile(p)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(stateMarker)) {
			t.Errorf("%s: plaintext in %s", when, filepath.Base(p))
		}
	}
	h.blobs.List(t.Context(), "", func(i blob.Info) error {
		rc, err := h.blobs.Get(t.Context(), i.Key, 0, -1)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(rc)
		rc.Close()
		if bytes.Contains(b, []byte(stateMarker)) {
			t.Errorf("%s: plaintext in blob %s", when, i.Key)
		}
		return nil
	})
}

func (h *harness) patch(t testing.TB, url, path string, off int, chunk []byte) {
	t.Helper()
	saved := h.url
	h.url = url
	defer func() { h.url = saved }()
	if resp, body := h.do(t, "alice", "PATCH", path, bytes.NewReader(chunk), "Upload-Offset", strconv.Itoa(off), "Content-Type", octets); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("PATCH at %d: %d %s", off, resp.StatusCode, body)
	}
}

// wantObject checks alice's object key: its bytes, ETag (MD5) and SHA-256.
func (h *harness) wantObject(t *testing.T, key string, data []byte) {
	t.Helper()
	r, err := h.objects.Get(t.Context(), object.Actor{UserID: "alice"}, "alice-bucket", key)
	if err != nil {
		t.Fatal(err)
	}
	md, sha := md5.Sum(data), sha256.Sum256(data)
	if r.Object.ETag != hex.EncodeToString(md[:]) || r.Object.SHA256 != hex.EncodeToString(sha[:]) {
		t.Errorf("%s: ETag %s SHA-256 %s, want %x %x", key, r.Object.ETag, r.Object.SHA256, md, sha)
	}
	if got := h.object(t, "alice", key); !bytes.Equal(got, data) {
		t.Errorf("%s: %d bytes, not the uploaded ones", key, len(got))
	}
}

// TestHashStateAtRest (issue 18, N3): with encryption at rest, a tus
// upload's running hash state (which holds the last offset mod 64 bytes of
// plaintext, a whole file under 64 bytes) never rests in the clear in the
// metadata store; it is sealed under the upload's kind of key, bound to
// the upload and offset, so another node (or a restart) resumes without
// reading the parts back, and a state moved to another upload is not used.
func TestHashStateAtRest(t *testing.T) {
	keys, err := kms.Open(t.Context(), "", kms.Options{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { keys.Close() })
	h := newHarness(t, testConfig(func(c *object.Config) { c.Encrypt, c.Keys = true, keys }), 0)
	_, other := h.node(t)

	t.Run("paused mid-way, the marker in the last partial block", func(t *testing.T) {
		data := markerBytes(300, 64+10) // first PATCH: 100 bytes, 36 past a block boundary
		path := h.create(t, "alice", "paused.bin", len(data))
		h.patch(t, h.url, path, 0, data[:100])
		h.wantNoMarker(t, "paused at 100")
		// Resumed on another node: the sealed state is used (no part is
		// read back), and the result is exact.
		before := h.blobs.gets.Load()
		h.patch(t, other, path, 100, data[100:])
		if n := h.blobs.gets.Load() - before; n != 0 {
			t.Errorf("the last PATCH read %d blobs back: the sealed state was not used", n)
		}
		h.wantObject(t, "paused.bin", data)
		h.wantNoMarker(t, "finished")
	})
	t.Run("a file under 64 bytes", func(t *testing.T) {
		data := markerBytes(50, 2)
		path := h.create(t, "alice", "tiny.bin", len(data))
		h.patch(t, h.url, path, 0, data[:40])
		h.wantNoMarker(t, "paused at 40")
		h.patch(t, other, path, 40, data[40:])
		h.wantObject(t, "tiny.bin", data)
		h.wantNoMarker(t, "finished")
	})
	t.Run("a state moved to another upload is not used", func(t *testing.T) {
		a, b := markerBytes(200, 70), markerBytes(200, 80)
		pa, pb := h.create(t, "alice", "a.bin", len(a)), h.create(t, "alice", "b.bin", len(b))
		h.patch(t, h.url, pa, 0, a[:100])
		h.patch(t, h.url, pb, 0, b[:100])
		idOf := func(p string) string { return p[strings.LastIndex(p, "/")+1:] }
		ta, err := h.meta.GetTus(t.Context(), idOf(pa))
		if err != nil {
			t.Fatal(err)
		}
		if err := h.meta.SetTusHash(t.Context(), idOf(pb), 100, ta.HashState); err != nil {
			t.Fatal(err)
		}
		before := h.blobs.gets.Load()
		h.patch(t, h.url, pb, 100, b[100:])
		if h.blobs.gets.Load() == before {
			t.Error("b's upload finished with a's state: its parts were not read back")
		}
		h.wantObject(t, "b.bin", b)
	})
}

// TestConfigFrom: the lifetimes come from config.Defaults() alone; New
// refuses a configuration without them instead of defaulting.
func TestConfigFrom(t *testing.T) {
	if c := ConfigFrom(config.Defaults()); c.TTL != 24*time.Hour || c.LockLease != 30*time.Second {
		t.Errorf("config.Defaults(): %+v", c)
	}
	h := newHarness(t, testConfig(nil), 0)
	for _, c := range []Config{{BasePath: "/tus/"}, {BasePath: "/tus/", TTL: time.Hour}, {BasePath: "/tus/", LockLease: time.Second}} {
		if _, err := New(h.objects, h.meta, c); err == nil {
			t.Errorf("New accepted %+v", c)
		}
	}
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

// TestPartsHashedOnce (issue 23): a PATCH's bytes are hashed once, into
// the upload's running MD5/SHA-256: its part gets no MD5 of its own (an
// empty ETag), and the object still has the whole MD5 and SHA-256.
func TestPartsHashedOnce(t *testing.T) {
	h := newHarness(t, testConfig(nil), 0)
	data := markerBytes(3000, 7)
	path := h.create(t, "alice", "once.bin", len(data))
	h.patch(t, h.url, path, 0, data[:1000])
	h.patch(t, h.url, path, 1000, data[1000:])
	h.wantObject(t, "once.bin", data)
	r, err := h.objects.Get(t.Context(), object.Actor{UserID: "alice"}, "alice-bucket", "once.bin")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Object.Parts) != 2 {
		t.Fatalf("%d parts, want 2", len(r.Object.Parts))
	}
	for i, p := range r.Object.Parts {
		if p.ETag != "" {
			t.Errorf("part %d has ETag %q: hashed again for itself", i+1, p.ETag)
		}
	}
}

// TestOneTusWritePerPatch (issue 23, third pass): a PATCH records its
// hash state in its unlock's commit (meta.Tus.UnlockTusHash), not in a
// write of its own, and reads its upload and the upload's parts once
// each (the lock's ownership check and GetInfo's listing serve the whole
// request). The state recorded is exact: the upload finishes on another
// node without reading a part back.
func TestOneTusWritePerPatch(t *testing.T) {
	h := newHarness(t, testConfig(nil), 0)
	_, other := h.node(t)
	data := markerBytes(3000, 3)
	path := h.create(t, "alice", "one-write.bin", len(data))
	id := path[strings.LastIndex(path, "/")+1:]
	for off := 0; off < 2000; off += 1000 {
		setHash, unlock, unlockHash := h.meta.setHash.Load(), h.meta.unlock.Load(), h.meta.unlockHash.Load()
		gets, lists := h.getUpload.Load(), h.allParts.Load()
		h.patch(t, h.url, path, off, data[off:off+1000])
		if n := h.meta.setHash.Load() - setHash; n != 0 {
			t.Errorf("PATCH at %d: %d SetTusHash writes, want none (the unlock records the state)", off, n)
		}
		if n, m := h.meta.unlockHash.Load()-unlockHash, h.meta.unlock.Load()-unlock; n != 1 || m != 0 {
			t.Errorf("PATCH at %d: %d UnlockTusHash and %d UnlockTus, want 1 and 0", off, n, m)
		}
		if n, m := h.getUpload.Load()-gets, h.allParts.Load()-lists; n != 1 || m != 1 {
			t.Errorf("PATCH at %d: the upload read %d times and its parts listed %d times, want once each", off, n, m)
		}
		tu, err := h.meta.GetTus(t.Context(), id)
		if err != nil || tu.HashOffset != int64(off+1000) {
			t.Errorf("after the PATCH at %d: hash state after %d bytes (%v), want %d", off, tu.HashOffset, err, off+1000)
		}
	}
	reads := h.blobs.gets.Load()
	h.patch(t, other, path, 2000, data[2000:])
	if n := h.blobs.gets.Load() - reads; n != 0 {
		t.Errorf("the last PATCH read %d blobs back: the recorded state was not used", n)
	}
	h.wantObject(t, "one-write.bin", data)
	// A HEAD has no hash state to record: a plain unlock.
	unlock, unlockHash := h.meta.unlock.Load(), h.meta.unlockHash.Load()
	p2 := h.create(t, "alice", "head.bin", 10)
	if resp, body := h.do(t, "alice", "HEAD", p2, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("HEAD: %d %s", resp.StatusCode, body)
	}
	if n, m := h.meta.unlockHash.Load()-unlockHash, h.meta.unlock.Load()-unlock; n != 0 || m != 1 {
		t.Errorf("HEAD: %d UnlockTusHash and %d UnlockTus, want 0 and 1", n, m)
	}
}

// BenchmarkPatch: a 64 MiB tus upload in 8 MiB PATCHes (optionally each
// with a sha256 Upload-Checksum), and in 1 MiB PATCHes, where a PATCH's
// fixed cost shows, through the whole endpoint over loopback HTTP, real
// SQLite and an in-memory blob store: the per-PATCH cost of issue 23's
// levers (each byte hashed once into the running hashes; third pass: one
// tus write a PATCH, the hash state in the unlock's commit, and one read
// of the upload and of its parts).
func BenchmarkPatch(b *testing.B) {
	for _, bc := range []struct {
		name  string
		chunk int
		sum   bool
	}{{"no-checksum", 8 << 20, false}, {"sha256-checksum", 8 << 20, true}, {"no-checksum-1MiB", 1 << 20, false}} {
		b.Run(bc.name, func(b *testing.B) {
			h := newHarness(b, testConfig(nil), 0)
			chunk := bc.chunk
			const total = 64 << 20
			data := markerBytes(total, 1)
			b.SetBytes(total)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				path := h.create(b, "alice", "bench-"+strconv.Itoa(i), total)
				for off := 0; off < total; off += chunk {
					hdr := []string{"Upload-Offset", strconv.Itoa(off), "Content-Type", octets}
					if bc.sum {
						s := sha256.Sum256(data[off : off+chunk])
						hdr = append(hdr, "Upload-Checksum", "sha256 "+base64.StdEncoding.EncodeToString(s[:]))
					}
					if resp, body := h.do(b, "alice", "PATCH", path, bytes.NewReader(data[off:off+chunk]), hdr...); resp.StatusCode != http.StatusNoContent {
						b.Fatalf("PATCH at %d: %d %s", off, resp.StatusCode, body)
					}
				}
			}
			patches := float64(b.N * total / chunk)
			b.ReportMetric(float64(h.meta.askedRelease.Load())/patches, "lock-waits/PATCH")
			b.ReportMetric(float64(h.meta.setHash.Load()+h.meta.unlock.Load()+h.meta.unlockHash.Load())/patches, "hash+unlock-writes/PATCH")
			b.ReportMetric(float64(h.getUpload.Load()+h.allParts.Load())/patches, "upload+parts-reads/PATCH")
		})
	}
}
