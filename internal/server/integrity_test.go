package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/coffer-storage/coffer/internal/blob"
	"github.com/coffer-storage/coffer/internal/blob/faultblob"
	"github.com/coffer-storage/coffer/internal/config"
)

// faultServer is a full server (SQLite + disk in a temp folder) whose
// blob store is wrapped in faultblob, on a loopback listener, with a
// logged-in user: its base URL of files, token and the fault store.
func faultServer(t *testing.T) (*Server, string, string, *faultblob.Store) {
	t.Helper()
	cfg := config.Defaults()
	cfg.Data = t.TempDir()
	cfg.Argon2Memory, cfg.Argon2Time = 8192, 1
	cfg.InlineMax = 0
	cfg.S3Listen = "off"
	var fb *faultblob.Store
	s, err := newServer(context.Background(), cfg, slog.New(slog.DiscardHandler), func(b blob.Store) blob.Store {
		fb = faultblob.Wrap(b)
		return fb
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ctx := context.Background()
	_, bk, err := s.auth.Signups.Signup(ctx, "fault@example.com", "fault password")
	if err != nil {
		t.Fatal(err)
	}
	sess, err := s.auth.Sessions.Login(ctx, "fault@example.com", "fault password", "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return s, ts.URL + "/api/v1/buckets/" + bk.Name + "/files/", sess.AccessToken, fb
}

func do(t *testing.T, method, url, token string, body []byte) (*http.Response, []byte, error) {
	t.Helper()
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, _ := http.NewRequest(method, url, r)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	return resp, got, err
}

// TestDamagedDownloadIsCut: over a real loopback connection, a GET of an
// object whose blob was damaged (a flipped byte) or whose blob store fails
// mid-read (EIO) answers 200 with the object's Content-Length and then
// breaks the transfer before its end (the client sees an unexpected EOF,
// never a complete body); one failing before the first byte is a clean
// 500 problem; a PUT whose blob write fails is a 500 problem and leaves no
// object. Each damaged read is counted in the metrics. Without the
// verification (object/verify.go), the damaged GET completed as a clean
// 200 with the wrong bytes.
func TestDamagedDownloadIsCut(t *testing.T) {
	s, files, token, fb := faultServer(t)
	data := make([]byte, 1<<20)
	rand.Read(data)
	if resp, body, _ := do(t, "PUT", files+"obj", token, data); resp.StatusCode != 201 {
		t.Fatalf("PUT: %d %s", resp.StatusCode, body)
	}
	o, err := s.meta.Objects.GetObject(context.Background(), strings.Split(strings.TrimPrefix(files, "http://"), "/")[4], "obj")
	if err != nil {
		t.Fatal(err)
	}

	// EIO before the first byte: a clean error.
	fb.Add(faultblob.Rule{Op: faultblob.Get, After: -1, Times: 1})
	resp, body, err := do(t, "GET", files+"obj", token, nil)
	if err != nil || resp.StatusCode != 500 || resp.Header.Get("Content-Type") != "application/problem+json" {
		t.Errorf("GET failing at open: %d %q %s, err %v; want a 500 problem", resp.StatusCode, resp.Header.Get("Content-Type"), body, err)
	}
	// EIO mid-stream: the transfer breaks.
	fb.Add(faultblob.Rule{Op: faultblob.Get, After: 300 << 10, Times: 1})
	resp, body, err = do(t, "GET", files+"obj", token, nil)
	if resp.StatusCode != 200 || err == nil || len(body) >= len(data) {
		t.Errorf("GET failing mid-stream: %d, %d of %d bytes, err %v; want a broken transfer", resp.StatusCode, len(body), len(data), err)
	}

	// A damaged blob: the transfer breaks before its end.
	bad := bytes.Clone(data)
	bad[len(bad)/2] ^= 1
	if _, err := fb.Store.Put(context.Background(), o.BlobKey, bytes.NewReader(bad), int64(len(bad))); err != nil {
		t.Fatal(err)
	}
	resp, body, err = do(t, "GET", files+"obj", token, nil)
	if resp.StatusCode != 200 || resp.ContentLength != int64(len(data)) {
		t.Errorf("GET of a damaged blob: %d, Content-Length %d", resp.StatusCode, resp.ContentLength)
	}
	if err == nil || len(body) >= len(data) {
		t.Errorf("GET of a damaged blob completed: %d of %d bytes, err %v; want a broken transfer", len(body), len(data), err)
	}
	// A ranged GET serves the (unverifiable) range: the scrub's job.
	req, _ := http.NewRequest("GET", files+"obj", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Range", "bytes=0-99")
	if rr, err := http.DefaultClient.Do(req); err != nil || rr.StatusCode != 206 {
		t.Errorf("ranged GET: %v %v", rr, err)
	} else {
		rr.Body.Close()
	}
	if got := s.objects.ReadStats().Corrupt.Load(); got != 1 {
		t.Errorf("corrupt reads counted: %d, want 1", got)
	}
	if got := s.objects.ReadStats().Failed.Load(); got != 2 {
		t.Errorf("failed reads counted: %d, want 2", got)
	}
	rec := httptest.NewRecorder()
	mreq := httptest.NewRequest("GET", "/metrics", nil)
	mreq.RemoteAddr = "127.0.0.1:1"
	s.Handler().ServeHTTP(rec, mreq)
	if m := rec.Body.String(); !strings.Contains(m, "coffer_blob_corrupt_reads_total 1") || !strings.Contains(m, "coffer_blob_failed_reads_total 2") {
		t.Errorf("metrics lack the damaged reads:\n%s", m)
	}

	// EIO on write: a clean error, nothing visible.
	fb.Add(faultblob.Rule{Op: faultblob.Put, After: 100 << 10, Times: 1})
	resp, body, _ = do(t, "PUT", files+"new", token, data)
	if resp.StatusCode != 500 || resp.Header.Get("Content-Type") != "application/problem+json" {
		t.Errorf("PUT over a failing disk: %d %q %s; want a 500 problem", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	if resp, _, _ := do(t, "GET", files+"new", token, nil); resp.StatusCode != 404 {
		t.Errorf("GET after a failed PUT: %d, want 404", resp.StatusCode)
	}
}
