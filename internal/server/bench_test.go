package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/coffer-storage/coffer/internal/config"
)

// benchServer builds a full server (SQLite + disk in a temp folder, the
// whole middleware stack) and a logged-in user.
func benchServer(b testing.TB, change ...func(*config.Config)) (*Server, string, string) {
	b.Helper()
	cfg := config.Defaults()
	for _, c := range change {
		c(&cfg)
	}
	cfg.Data = b.TempDir()
	cfg.Argon2Memory, cfg.Argon2Time = 8192, 1
	// The handler stack, not the load shedder: under adaptive admission a
	// busy machine shrinks one client's share (16 goroutines got 429 with
	// "limit 8 now"), which is admission's job (bench-overload.sh), not
	// what these benchmarks measure.
	cfg.Admission = "fixed"
	s, err := New(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	ctx := context.Background()
	_, bk, err := s.auth.Signups.Signup(ctx, "bench@example.com", "bench password")
	if err != nil {
		b.Fatal(err)
	}
	sess, err := s.auth.Sessions.Login(ctx, "bench@example.com", "bench password", "127.0.0.1")
	if err != nil {
		b.Fatal(err)
	}
	return s, bk.Name, sess.AccessToken
}

var sizes = []int{4 << 10, 1 << 20}

func sizeName(n int) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%dMiB", n>>20)
	}
	return fmt.Sprintf("%dKiB", n>>10)
}

// BenchmarkUpload measures PUT through the whole handler stack, in process
// (no sockets): what Coffer itself costs per upload, durable on disk.
func BenchmarkUpload(b *testing.B) {
	for _, size := range sizes {
		b.Run(sizeName(size), func(b *testing.B) {
			s, bucket, token := benchServer(b)
			data := make([]byte, size)
			rand.Read(data)
			h := s.Handler()
			b.SetBytes(int64(size))
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				req := httptest.NewRequest("PUT", fmt.Sprintf("/api/v1/buckets/%s/files/k%d", bucket, i), bytes.NewReader(data))
				req.Header.Set("Authorization", "Bearer "+token)
				w := httptest.NewRecorder()
				h.ServeHTTP(w, req)
				if w.Code != 201 {
					b.Fatalf("status %d: %s", w.Code, w.Body)
				}
				i++
			}
		})
	}
}

// BenchmarkUploadParallel is BenchmarkUpload from many goroutines, which is
// where group commit pays.
func BenchmarkUploadParallel(b *testing.B) {
	for _, size := range sizes {
		b.Run(sizeName(size), func(b *testing.B) {
			s, bucket, token := benchServer(b)
			data := make([]byte, size)
			rand.Read(data)
			h := s.Handler()
			b.SetBytes(int64(size))
			b.ReportAllocs()
			b.SetParallelism(8)
			var n int64
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					k := fmt.Sprintf("/api/v1/buckets/%s/files/p%d-%p", bucket, n, pb)
					n++
					req := httptest.NewRequest("PUT", k, bytes.NewReader(data))
					req.Header.Set("Authorization", "Bearer "+token)
					w := httptest.NewRecorder()
					h.ServeHTTP(w, req)
					if w.Code != 201 {
						b.Errorf("status %d: %s", w.Code, w.Body)
						return
					}
				}
			})
		})
	}
}

// BenchmarkDownload measures GET of one object through the whole handler
// stack over a real loopback connection, client included: with
// --verify-reads (the default: the CRC-32C checked while streaming) and
// without (the sendfile path).
func BenchmarkDownload(b *testing.B) {
	for _, size := range append(sizes, 16<<20) {
		for _, verify := range []bool{true, false} {
			b.Run(fmt.Sprintf("%s/verify=%v", sizeName(size), verify), func(b *testing.B) {
				benchDownload(b, size, verify)
			})
		}
	}
}

func benchDownload(b *testing.B, size int, verify bool) {
	s, bucket, token := benchServer(b, func(c *config.Config) { c.VerifyReads, c.InlineMax = verify, 0 })
	data := make([]byte, size)
	rand.Read(data)
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	url := ts.URL + "/api/v1/buckets/" + bucket + "/files/obj"
	req, _ := http.NewRequest("PUT", url, bytes.NewReader(data))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 201 {
		b.Fatal(err, resp)
	}
	resp.Body.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	buf := make([]byte, 256<<10)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		req, _ := http.NewRequest("GET", url, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		n, _ := io.CopyBuffer(io.Discard, resp.Body, buf)
		resp.Body.Close()
		if resp.StatusCode != 200 || n != int64(size) {
			b.Fatalf("status %d, %d bytes", resp.StatusCode, n)
		}
	}
}

// BenchmarkUploadLoopback is BenchmarkUpload over a real loopback socket.
func BenchmarkUploadLoopback(b *testing.B) {
	for _, size := range sizes {
		b.Run(sizeName(size), func(b *testing.B) {
			s, bucket, token := benchServer(b)
			data := make([]byte, size)
			rand.Read(data)
			ts := httptest.NewServer(s.Handler())
			defer ts.Close()
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
			b.SetBytes(int64(size))
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				req, _ := http.NewRequest("PUT", fmt.Sprintf("%s/api/v1/buckets/%s/files/k%d", ts.URL, bucket, i), bytes.NewReader(data))
				req.Header.Set("Authorization", "Bearer "+token)
				resp, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 201 {
					b.Fatalf("status %d", resp.StatusCode)
				}
				i++
			}
		})
	}
}
