package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/test/testenv"
)

// trickle is a request body that sends size bytes in chunks of step, one
// every pause, and counts what it sent. With hold set, it sends nothing
// after its first chunk until hold is closed.
type trickle struct {
	ctx         context.Context
	left, step  int
	pause       time.Duration
	sent        atomic.Int64
	first, done chan struct{}
	once, fin   sync.Once
	hold        chan struct{}
}

func newTrickle(ctx context.Context, size, step int, pause time.Duration) *trickle {
	return &trickle{ctx: ctx, left: size, step: step, pause: pause, first: make(chan struct{}), done: make(chan struct{})}
}

func (b *trickle) Read(p []byte) (int, error) {
	b.once.Do(func() { close(b.first) })
	if b.left == 0 {
		b.fin.Do(func() { close(b.done) })
		return 0, io.EOF
	}
	if b.sent.Load() > 0 {
		if b.hold != nil {
			select {
			case <-b.hold:
			case <-b.ctx.Done():
				return 0, b.ctx.Err()
			}
		}
		select {
		case <-time.After(b.pause):
		case <-b.ctx.Done():
			return 0, b.ctx.Err()
		}
	}
	n := min(len(p), b.step, b.left)
	for i := range p[:n] {
		p[i] = byte(i)
	}
	b.left -= n
	b.sent.Add(int64(n))
	return n, nil
}

// stagedBytesMetric reads coffer_upload_staged_bytes from the server's
// /metrics (loopback may read it).
func stagedBytesMetric(t *testing.T, base string) int64 {
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Errorf("GET /metrics: %v", err)
		return -1
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "coffer_upload_staged_bytes "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Errorf("coffer_upload_staged_bytes %q: %v", v, err)
			}
			return int64(f)
		}
	}
	t.Errorf("/metrics has no coffer_upload_staged_bytes")
	return -1
}

// bytesOnDisk sums the files under the data folder's blob store (written
// and being written); 0 in the scale-out shape, whose blobs are in MinIO.
func bytesOnDisk(dir string) int64 {
	var n int64
	filepath.WalkDir(filepath.Join(dir, "blobs"), func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

// TestQuotaBoundsStagedBytes: 20 slow uploads of 1 MiB at once into an
// account with a 5 MiB quota. The quota holds what is staged, not only what
// is committed: 5 are admitted, the other 15 get 507 at once, before a byte
// of their bodies is sent (Expect: 100-continue); the bytes staged (on
// disk, and as the node counts them) never pass 5 MiB; one admitted upload
// is cancelled midway, and once the rest have finished the usage is exact
// and the room the cancelled one held is free again.
func TestQuotaBoundsStagedBytes(t *testing.T) {
	const quota, size, n = 5 << 20, 1 << 20, 20
	srv := testenv.Start(t, "--default-quota", strconv.Itoa(quota))
	c := srv.NewUser(t)
	client := &http.Client{Transport: &http.Transport{ExpectContinueTimeout: 30 * time.Second}, Timeout: 2 * time.Minute}

	type result struct {
		status int
		err    error
	}
	results := make([]result, n)
	bodies := make([]*trickle, n)
	cancels := make([]context.CancelFunc, n)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		ctx, cancel := context.WithCancel(t.Context())
		cancels[i] = cancel
		bodies[i] = newTrickle(ctx, size, 64<<10, 120*time.Millisecond) // ~2 s each
		wg.Go(func() {
			req, _ := http.NewRequestWithContext(ctx, "PUT", srv.URL+testenv.FileURL(c.Bucket, fmt.Sprintf("slow/%02d", i)), bodies[i])
			req.ContentLength = size
			req.Header.Set("Authorization", "Bearer "+c.Token)
			req.Header.Set("Expect", "100-continue")
			resp, err := client.Do(req)
			results[i] = result{err: err}
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				results[i].status = resp.StatusCode
			}
		})
	}
	defer func() {
		for _, cancel := range cancels {
			cancel()
		}
	}()

	// Watch the staged bytes while the uploads run.
	var peakDisk, peakMetric atomic.Int64
	watchDone := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for {
			if d := bytesOnDisk(srv.Data); d > peakDisk.Load() {
				peakDisk.Store(d)
			}
			if m := stagedBytesMetric(t, srv.URL); m > peakMetric.Load() {
				peakMetric.Store(m)
			}
			select {
			case <-watchDone:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()

	// Cancel one upload that is sending its body, halfway.
	var cancelled int = -1
	for cancelled < 0 && time.Since(start) < 30*time.Second {
		for i, b := range bodies {
			if b.sent.Load() >= size/2 {
				cancelled = i
				break
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	if cancelled < 0 {
		t.Fatal("no upload sent half its body in 30 s")
	}
	cancels[cancelled]()
	wg.Wait()
	close(watchDone)
	<-watched

	admitted, refused := 0, 0
	for i, r := range results {
		sent := bodies[i].sent.Load()
		switch {
		case i == cancelled:
			if r.err == nil {
				t.Errorf("the cancelled upload got %d", r.status)
			}
		case r.err != nil:
			t.Errorf("upload %d: %v", i, r.err)
		case r.status == 201:
			admitted++
		case r.status == 507:
			refused++
			if sent != 0 {
				t.Errorf("refused upload %d sent %d bytes of its body, want 0", i, sent)
			}
		default:
			t.Errorf("upload %d: status %d", i, r.status)
		}
	}
	if admitted != quota/size-1 || refused != n-quota/size {
		t.Errorf("%d uploads stored, %d refused (and 1 cancelled); want %d and %d", admitted, refused, quota/size-1, n-quota/size)
	}
	if p := peakDisk.Load(); p > quota {
		t.Errorf("%d bytes on disk at once under a quota of %d", p, quota)
	}
	if p := peakMetric.Load(); p > quota || p <= 0 {
		t.Errorf("coffer_upload_staged_bytes peaked at %d, want 1 to %d", p, quota)
	}

	// Usage is exact, and the cancelled upload's reservation is released
	// (the server notices the broken connection at once; allow it a
	// moment).
	if u := usageOf(t, c); u != int64(admitted)*size {
		t.Errorf("usage = %d, want %d", u, int64(admitted)*size)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, _, p := put(t, c, c.Bucket, "after", make([]byte, size))
		if st == 201 {
			break
		}
		if st != 507 || time.Now().After(deadline) {
			t.Fatalf("upload into the room the cancelled upload held: %d %+v", st, p)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if st, _, p := put(t, c, c.Bucket, "over", make([]byte, 100<<10)); st != 507 || p.Code != "quota_exceeded" {
		t.Errorf("upload past the full quota: %d %q, want 507 quota_exceeded", st, p.Code)
	}
	if u := usageOf(t, c); u != quota {
		t.Errorf("usage = %d, want %d", u, quota)
	}
	if m := stagedBytesMetric(t, srv.URL); m != 0 {
		t.Errorf("coffer_upload_staged_bytes = %d with no upload in flight", m)
	}
}

func usageOf(t *testing.T, c *testenv.Client) int64 {
	t.Helper()
	var me struct {
		UsageBytes int64 `json:"usage_bytes"`
	}
	if st := c.JSON(t, "GET", "/api/v1/me", nil, &me); st != 200 {
		t.Fatalf("GET /me: %d", st)
	}
	return me.UsageBytes
}

// TestQuotaReservedAcrossAPIs: an upload in flight on the file API holds
// its reservation against the S3 API too: an S3 PutObject that would fit
// only if the slow upload were ignored gets QuotaExceeded while the slow
// upload is held after its first chunk (not after it ended), and nothing
// is stored; once the slow upload ends, usage is exact.
func TestQuotaReservedAcrossAPIs(t *testing.T) {
	const quota, size = 1 << 20, 600 << 10
	srv := testenv.Start(t, "--default-quota", strconv.Itoa(quota))
	u := newS3User(t, srv)
	slow := newTrickle(t.Context(), size, 32<<10, 10*time.Millisecond)
	slow.hold = make(chan struct{}) // in flight, past its first chunk, until the S3 PutObject is answered
	done := make(chan int, 1)
	go func() {
		// Expect: 100-continue: the body goes (and slow.first fires) only
		// once the server reads it, i.e. after it reserved the bytes.
		resp, err := u.DoErr(t.Context(), "PUT", testenv.FileURL(u.Bucket, "slow.bin"), slow, size, "Expect", "100-continue")
		if err != nil {
			t.Errorf("slow upload: %v", err)
			done <- 0
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		done <- resp.StatusCode
	}()
	<-slow.first
	r := u.s3(t, "PUT", "/"+u.Bucket+"/s3.bin", make([]byte, size), "")
	if r.status != 403 || r.code != "QuotaExceeded" {
		t.Errorf("S3 PutObject with the room reserved by an upload in flight: %d %s, want 403 QuotaExceeded", r.status, r.body)
	}
	close(slow.hold)
	if st := <-done; st != 201 {
		t.Errorf("slow upload: %d, want 201", st)
	}
	u.absent(t, "/"+u.Bucket+"/s3.bin")
	if got := usageOf(t, u.Client); got != size {
		t.Errorf("usage = %d, want %d", got, size)
	}
}
