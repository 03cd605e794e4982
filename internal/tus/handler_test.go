package tus

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/blob/memblob"
	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/meta/sqlite"
	"github.com/coffer-storage/coffer/internal/object"
)

// lockSpy is the metadata store with a record of the tus lock calls
// (fault-free: every call goes to the real store).
type lockSpy struct {
	meta.Store
	locked       chan string  // upload IDs, each time a lock is taken
	askedRelease atomic.Int64 // TryLockTus calls asking a holder to let go
}

func (s *lockSpy) TryLockTus(ctx context.Context, id, holder string, until time.Time, requestRelease bool) (meta.TusLock, error) {
	if requestRelease {
		s.askedRelease.Add(1)
	}
	got, err := s.Store.TryLockTus(ctx, id, holder, until, requestRelease)
	if err == nil && got == meta.TusLocked {
		select {
		case s.locked <- id:
		default:
		}
	}
	return got, err
}

// harness is the tus endpoint over a real object service (SQLite and an
// in-memory blob store) on a loopback HTTP server; the caller is the user
// named by the X-Test-User header (users "alice" and "bob", each with a
// bucket "<name>-bucket").
type harness struct {
	url     string
	meta    *lockSpy
	objects *object.Service
}

func newHarness(t *testing.T, cfg object.Config, lease time.Duration) *harness {
	t.Helper()
	m, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "meta.db"), sqlite.Options{})
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
	spy := &lockSpy{Store: m, locked: make(chan string, 16)}
	objects := object.New(spy, memblob.New(), cfg, nil)
	th, err := New(objects, spy, Config{BasePath: "/tus/", LockLease: lease,
		Error: func(_ context.Context, err error) (int, http.Header, []byte) {
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
		}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		th.ServeHTTP(w, r, object.Actor{UserID: r.Header.Get("X-Test-User")})
	}))
	t.Cleanup(srv.Close)
	return &harness{url: srv.URL, meta: spy, objects: objects}
}

// do sends a tus request as user and returns the status and body.
func (h *harness) do(t *testing.T, user, method, path string, body io.Reader, hdr ...string) (*http.Response, string) {
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
func (h *harness) create(t *testing.T, user, key string, length int) string {
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
	h := newHarness(t, object.Config{}, 0)
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
	h := newHarness(t, object.Config{InlineMax: -1}, 300*time.Millisecond)
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
