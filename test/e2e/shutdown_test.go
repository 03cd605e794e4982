package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/test/testenv"
)

// slowReader yields data in chunks spread over d.
type slowReader struct {
	data  []byte
	chunk int
	pause time.Duration
	off   int
}

func (s *slowReader) Read(p []byte) (int, error) {
	if s.off >= len(s.data) {
		return 0, io.EOF
	}
	if s.off > 0 {
		time.Sleep(s.pause)
	}
	n := copy(p[:min(len(p), s.chunk)], s.data[s.off:])
	s.off += n
	return n, nil
}

// TestGracefulShutdown sends SIGTERM while uploads are in flight: uploads
// that finish within the shutdown timeout succeed and are durable; uploads
// still running at the deadline are cut off and leave nothing visible.
func TestGracefulShutdown(t *testing.T) {
	srv := testenv.Start(t, "--shutdown-timeout", "3s")
	c := srv.NewUser(t)
	type result struct {
		key    string
		sha    string
		status int
		err    error
	}
	var mu sync.Mutex
	var results []result
	var wg sync.WaitGroup
	upload := func(key string, data []byte, chunk int, pause time.Duration) {
		defer wg.Done()
		s := sha256.Sum256(data)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		resp, err := c.DoErr(ctx, "PUT", testenv.FileURL(c.Bucket, key), &slowReader{data: data, chunk: chunk, pause: pause}, int64(len(data)))
		r := result{key: key, sha: hex.EncodeToString(s[:]), err: err}
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			r.status = resp.StatusCode
		}
		mu.Lock()
		results = append(results, r)
		mu.Unlock()
	}
	// 20 uploads that take ~1.5s (finish within the 3s deadline), and 10
	// that would take ~12s (cut off).
	for i := range 20 {
		wg.Add(1)
		go upload(fmt.Sprintf("finishes/%02d", i), randBytes(t, 150_000), 10_000, 100*time.Millisecond)
	}
	for i := range 10 {
		wg.Add(1)
		go upload(fmt.Sprintf("cut-off/%02d", i), randBytes(t, 120_000), 10_000, time.Second)
	}
	time.Sleep(300 * time.Millisecond) // all requests are in flight
	start := time.Now()
	if err := srv.Term(20 * time.Second); err != nil {
		t.Fatalf("server exit after SIGTERM: %v\n%s", err, srv.Stderr())
	}
	elapsed := time.Since(start)
	wg.Wait()
	if elapsed > 10*time.Second {
		t.Errorf("shutdown took %v, want about the 3s timeout", elapsed)
	}
	srv.Restart()
	okFinish, cut := 0, 0
	for _, r := range results {
		resp := c.Do(t, "GET", testenv.FileURL(c.Bucket, r.key), nil)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		s := sha256.Sum256(body)
		switch {
		case r.status == 201:
			if resp.StatusCode != 200 || hex.EncodeToString(s[:]) != r.sha {
				t.Errorf("%s was acknowledged but reads back %d", r.key, resp.StatusCode)
			}
			if r.key[:8] == "finishes" {
				okFinish++
			}
		case resp.StatusCode == 200 && hex.EncodeToString(s[:]) != r.sha:
			t.Errorf("%s: unacknowledged upload visible with wrong content", r.key)
		case resp.StatusCode != 404 && resp.StatusCode != 200:
			t.Errorf("%s: status %d after restart", r.key, resp.StatusCode)
		}
		if r.key[:7] == "cut-off" && r.status != 201 {
			cut++
			if resp.StatusCode != 404 {
				t.Errorf("%s was cut off but is visible", r.key)
			}
		}
	}
	if okFinish != 20 {
		t.Errorf("%d of 20 short uploads finished during shutdown, want 20", okFinish)
	}
	if cut != 10 {
		t.Errorf("%d of 10 long uploads were cut off, want 10", cut)
	}
	_ = bytes.MinRead
}
