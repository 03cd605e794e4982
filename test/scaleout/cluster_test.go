// Package scaleout tests the scale-out shape as a cluster: three coffer
// nodes on three loopback ports sharing one PostgreSQL database and one
// MinIO bucket, any node serving any request, and the faults of the
// shared stores.
package scaleout

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/testbackend"
	"github.com/coffer-storage/coffer/test/testenv"
)

func TestMain(m *testing.M) { testbackend.Main(m) }

func randBytes(t testing.TB, n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// on returns a copy of c talking to another node.
func on(c *testenv.Client, node *testenv.Server) *testenv.Client {
	d := *c
	d.Base = node.URL
	return &d
}

func put(t *testing.T, c *testenv.Client, key string, data []byte) int {
	t.Helper()
	resp := c.Do(t, "PUT", testenv.FileURL(c.Bucket, key), bytes.NewReader(data))
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func get(t *testing.T, c *testenv.Client, key string) (int, []byte) {
	t.Helper()
	resp := c.Do(t, "GET", testenv.FileURL(c.Bucket, key), nil)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

func usage(t *testing.T, c *testenv.Client) int64 {
	t.Helper()
	var me struct {
		UsageBytes int64 `json:"usage_bytes"`
	}
	if st := c.JSON(t, "GET", "/api/v1/me", nil, &me); st != 200 {
		t.Fatalf("GET /me: %d", st)
	}
	return me.UsageBytes
}

func TestThreeNodes(t *testing.T) {
	b := testenv.NewBackends(t)
	n1, n2, n3 := testenv.StartNode(t, b), testenv.StartNode(t, b), testenv.StartNode(t, b)
	c1 := n1.NewUser(t)
	c2, c3 := on(c1, n2), on(c1, n3)

	// Upload through node 1 (a blob, and a small inline object), read and
	// list through node 2.
	big, small := randBytes(t, 300_000), []byte("small and inline")
	if st := put(t, c1, "docs/a.bin", big); st != 201 {
		t.Fatalf("PUT via node 1: %d", st)
	}
	if st := put(t, c1, "docs/small.txt", small); st != 201 {
		t.Fatalf("PUT via node 1: %d", st)
	}
	if st, got := get(t, c2, "docs/a.bin"); st != 200 || !bytes.Equal(got, big) {
		t.Fatalf("GET via node 2 after PUT via node 1: %d, equal %v", st, bytes.Equal(got, big))
	}
	if st, got := get(t, c2, "docs/small.txt"); st != 200 || !bytes.Equal(got, small) {
		t.Fatalf("GET small via node 2: %d", st)
	}
	var list struct {
		Files []struct{ Key string } `json:"files"`
	}
	if st := c2.JSON(t, "GET", "/api/v1/buckets/"+c1.Bucket+"/files?prefix=docs/", nil, &list); st != 200 || len(list.Files) != 2 {
		t.Fatalf("list via node 2: %d %+v", st, list)
	}
	// Overwrite through node 3: nodes 1 and 2 serve the new bytes at once.
	newer := randBytes(t, 200_000)
	if st := put(t, c3, "docs/a.bin", newer); st != 201 && st != 200 {
		t.Fatalf("overwrite via node 3: %d", st)
	}
	for i, c := range []*testenv.Client{c1, c2} {
		if st, got := get(t, c, "docs/a.bin"); st != 200 || !bytes.Equal(got, newer) {
			t.Fatalf("GET via node %d after overwrite via node 3: %d, new bytes %v", i+1, st, bytes.Equal(got, newer))
		}
	}
	// Delete through node 1: node 2 answers 404 from then on.
	resp := c1.Do(t, "DELETE", testenv.FileURL(c1.Bucket, "docs/a.bin"), nil)
	resp.Body.Close()
	if resp.StatusCode != 204 {
		t.Fatalf("DELETE via node 1: %d", resp.StatusCode)
	}
	for i, c := range []*testenv.Client{c2, c3} {
		if st, _ := get(t, c, "docs/a.bin"); st != 404 {
			t.Fatalf("GET via node %d after DELETE via node 1: %d, want 404", i+2, st)
		}
	}
	// Sessions work on every node: a refresh token from node 1 rotates on
	// node 2, and the old one replayed on node 3 is refused.
	var tok struct {
		AccessToken  string `json:"access_token"`
		RefreshToken string `json:"refresh_token"`
	}
	if st := c2.JSON(t, "POST", "/api/v1/auth/refresh", map[string]string{"refresh_token": c1.Refresh}, &tok); st != 200 {
		t.Fatalf("refresh via node 2: %d", st)
	}
	if st := c3.JSON(t, "POST", "/api/v1/auth/refresh", map[string]string{"refresh_token": c1.Refresh}, nil); st != 401 {
		t.Fatalf("replayed refresh token via node 3: %d, want 401", st)
	}
}

// TestConcurrentUploadsOneQuota: 100 uploads spread over three nodes into
// one account with a quota that fits exactly 60 of them: exactly 60
// succeed, the rest get 507, and the usage is exact.
func TestConcurrentUploadsOneQuota(t *testing.T) {
	b := testenv.NewBackends(t)
	nodes := []*testenv.Server{
		testenv.StartNode(t, b, "--default-quota", "6000000"),
		testenv.StartNode(t, b, "--default-quota", "6000000"),
		testenv.StartNode(t, b, "--default-quota", "6000000"),
	}
	c := nodes[0].NewUser(t)
	const n, size = 100, 100_000 // 60 fit
	var wg sync.WaitGroup
	codes := make([]int, n)
	for i := range n {
		wg.Go(func() {
			cc := on(c, nodes[i%3])
			codes[i] = put(t, cc, fmt.Sprintf("q/%03d", i), randBytes(t, size))
		})
	}
	wg.Wait()
	ok, full := 0, 0
	for i, code := range codes {
		switch code {
		case 201:
			ok++
		case 507:
			full++
		default:
			t.Errorf("upload %d: %d", i, code)
		}
	}
	if ok != 60 || full != 40 {
		t.Errorf("%d uploads stored, %d refused; want 60 and 40", ok, full)
	}
	for i, node := range nodes {
		if u := usage(t, on(c, node)); u != int64(ok)*size {
			t.Errorf("usage via node %d = %d, want %d", i+1, u, int64(ok)*size)
		}
	}
}

// TestDirectUploadAcrossNodes: a session created on node 1, its parts sent
// straight to MinIO, completed on node 2 — and a second completion on node
// 3 finds it gone.
func TestDirectUploadAcrossNodes(t *testing.T) {
	b := testenv.NewBackends(t)
	n1, n2, n3 := testenv.StartNode(t, b), testenv.StartNode(t, b), testenv.StartNode(t, b)
	c := n1.NewUser(t)
	data := randBytes(t, 7<<20)
	var s struct {
		UploadID string `json:"upload_id"`
		PartSize int64  `json:"part_size"`
		Parts    []struct {
			PartNumber int    `json:"part_number"`
			URL        string `json:"url"`
		} `json:"parts"`
	}
	if st := c.JSON(t, "POST", "/api/v1/uploads", map[string]any{"bucket": c.Bucket, "key": "v.bin", "size": len(data), "part_size": 5 << 20}, &s); st != 201 {
		t.Fatalf("create on node 1: %d", st)
	}
	var parts []map[string]any
	for _, p := range s.Parts {
		lo := int64(p.PartNumber-1) * s.PartSize
		hi := min(lo+s.PartSize, int64(len(data)))
		req, _ := http.NewRequest("PUT", p.URL, bytes.NewReader(data[lo:hi]))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("part %d to MinIO: %d", p.PartNumber, resp.StatusCode)
		}
		parts = append(parts, map[string]any{"part_number": p.PartNumber, "etag": resp.Header.Get("ETag")})
	}
	var f struct {
		Size   int64  `json:"size"`
		SHA256 string `json:"sha256"`
	}
	if st := on(c, n2).JSON(t, "POST", "/api/v1/uploads/"+s.UploadID+"/complete", map[string]any{"parts": parts}, &f); st != 200 || f.Size != int64(len(data)) {
		t.Fatalf("complete on node 2: %d %+v", st, f)
	}
	if st := on(c, n3).JSON(t, "POST", "/api/v1/uploads/"+s.UploadID+"/complete", map[string]any{"parts": parts}, nil); st != 404 {
		t.Fatalf("second completion on node 3: %d, want 404", st)
	}
	st, got := get(t, on(c, n3), "v.bin")
	if st != 200 || sha256.Sum256(got) != sha256.Sum256(data) {
		t.Fatalf("GET via node 3: %d, same bytes %v", st, bytes.Equal(got, data))
	}
	if u := usage(t, on(c, n3)); u != int64(len(data)) {
		t.Fatalf("usage %d, want %d", u, len(data))
	}
}

// waitStatus polls f until it returns want or the deadline passes.
func waitStatus(t *testing.T, want int, d time.Duration, f func() int) {
	t.Helper()
	deadline := time.Now().Add(d)
	last := 0
	for time.Now().Before(deadline) {
		if last = f(); last == want {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("status %d after %v, want %d", last, d, want)
}

// TestFaults: MinIO stopped mid-run, then PostgreSQL restarted. Uploads
// fail with a clear 503 problem while a store is down, nothing
// acknowledged is lost, and the node recovers without a restart.
func TestFaults(t *testing.T) {
	pg := testbackend.StartPostgres(t)
	m := testbackend.StartMinIO(t)
	b := testenv.NewBackendsOn(t, pg, m)
	node := testenv.StartNode(t, b)
	c := node.NewUser(t)
	acked := map[string][]byte{}
	for i := range 5 {
		key, data := fmt.Sprintf("before/%d", i), randBytes(t, 100_000+i)
		if st := put(t, c, key, data); st != 201 {
			t.Fatalf("PUT %s: %d", key, st)
		}
		acked[key] = data
	}

	// MinIO down: blob uploads fail with 503 + Retry-After and a problem
	// body; metadata-only requests (listing) still work.
	m.Stop()
	resp := c.Do(t, "PUT", testenv.FileURL(c.Bucket, "during/minio-down"), bytes.NewReader(randBytes(t, 100_000)))
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" || !bytes.Contains(body, []byte(`"unavailable"`)) {
		t.Fatalf("PUT with MinIO down: %d Retry-After %q %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	if st := c.JSON(t, "GET", "/api/v1/buckets/"+c.Bucket+"/files", nil, nil); st != 200 {
		t.Errorf("listing with MinIO down: %d", st)
	}
	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, 201, 30*time.Second, func() int { return put(t, c, "after/minio", randBytes(t, 100_000)) })
	if st, _ := get(t, c, "during/minio-down"); st != 404 {
		t.Errorf("the failed upload is visible: %d", st)
	}

	// PostgreSQL restarted: requests during the outage fail with 503, the
	// pool reconnects by itself afterwards.
	pg.Stop()
	resp = c.Do(t, "PUT", testenv.FileURL(c.Bucket, "during/pg-down"), bytes.NewReader(randBytes(t, 100_000)))
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("PUT with PostgreSQL down: %d %s", resp.StatusCode, body)
	}
	if err := pg.Start(); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, 201, 30*time.Second, func() int { return put(t, c, "after/pg", randBytes(t, 100_000)) })

	// Nothing acknowledged was lost.
	for key, data := range acked {
		if st, got := get(t, c, key); st != 200 || !bytes.Equal(got, data) {
			t.Errorf("acknowledged %s: %d, intact %v", key, st, bytes.Equal(got, data))
		}
	}
}
