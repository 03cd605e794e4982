package scaleout

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/coffer-storage/coffer/test/testenv"
)

// s3Counter is a reverse proxy in front of MinIO counting object GETs.
type s3Counter struct {
	*httptest.Server
	gets atomic.Int64
}

func newS3Counter(t *testing.T, target string) *s3Counter {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &s3Counter{}
	rp := httputil.NewSingleHostReverseProxy(u)
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Path style: /BUCKET/KEY; bucket-level GETs (listings) are not counted.
		if r.Method == http.MethodGet && strings.Contains(strings.Trim(r.URL.Path, "/"), "/") {
			p.gets.Add(1)
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(p.Close)
	return p
}

// throughProxy returns the backends' environment with the blob store
// reached through p.
func throughProxy(b *testenv.Backends, p *s3Counter) []string {
	var env []string
	for _, e := range b.Env {
		if v, ok := strings.CutPrefix(e, "COFFER_BLOB="); ok {
			e = "COFFER_BLOB=" + strings.Replace(v, b.MinIO.Endpoint(), p.URL, 1)
		}
		env = append(env, e)
	}
	return env
}

func metric(t *testing.T, node *testenv.Server, name string) float64 {
	t.Helper()
	resp, err := http.Get(node.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	t.Fatalf("metric %s not found", name)
	return 0
}

// TestBlobCacheHotReads: with --cache on, hot GETs make no request of the
// S3 store (counted by a proxy in front of MinIO); with --cache off each
// GET makes one. An overwrite on one node and a delete are seen at once by
// another node's cache (blob keys are never reused).
func TestBlobCacheHotReads(t *testing.T) {
	b := testenv.NewBackends(t)
	proxy := newS3Counter(t, b.MinIO.Endpoint())
	viaProxy := *b
	viaProxy.Env = throughProxy(b, proxy)
	start := func(args ...string) *testenv.Server { return testenv.StartNode(t, &viaProxy, args...) }
	on1 := start("--cache", "on", "--inline-max", "0")
	on2 := start("--cache", "on", "--inline-max", "0")
	off := start("--cache", "off", "--inline-max", "0")
	c1 := on1.NewUser(t)
	c2, c3 := on(c1, on2), on(c1, off)

	for _, size := range []int{1 << 10, 300_000, 3<<20 + 5} {
		key := "hot/" + strconv.Itoa(size)
		data := randBytes(t, size)
		if st := put(t, c1, key, data); st != 201 {
			t.Fatalf("PUT: %d", st)
		}
		before := proxy.gets.Load()
		for i := range 30 {
			st, got := get(t, c2, key)
			if st != 200 || !bytes.Equal(got, data) {
				t.Fatalf("GET %d via the cached node: %d, %d bytes (want %d, same bytes)", i, st, len(got), size)
			}
		}
		cold := (size + 1<<20 - 1) >> 20 // one GET per 1 MiB chunk, once
		if got := proxy.gets.Load() - before; got > int64(cold) {
			t.Errorf("%d bytes: 30 GETs via the cached node made %d S3 GETs, want at most %d (the first read)", size, got, cold)
		}
		before = proxy.gets.Load()
		for range 10 {
			if st, got := get(t, c3, key); st != 200 || !bytes.Equal(got, data) {
				t.Fatalf("GET via the uncached node: %d", st)
			}
		}
		if got := proxy.gets.Load() - before; got < 10 {
			t.Errorf("%d bytes: 10 GETs with --cache off made %d S3 GETs, want ≥ 10", size, got)
		}
		// A Range from the cached whole object or its chunks.
		resp := c2.Do(t, "GET", testenv.FileURL(c2.Bucket, key), nil, "Range", "bytes=-7")
		tail, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 206 || !bytes.Equal(tail, data[size-7:]) {
			t.Errorf("suffix range via the cached node: %d %x, want 206 %x", resp.StatusCode, tail, data[size-7:])
		}
	}
	if h := metric(t, on2, "coffer_blob_cache_hits_total"); h < 30 {
		t.Errorf("coffer_blob_cache_hits_total = %v, want ≥ 30", h)
	}

	// Overwrite via node 1 after node 2 cached the object; delete.
	key := "hot/over"
	put(t, c1, key, []byte(strings.Repeat("old", 1000)))
	get(t, c2, key)
	newer := []byte(strings.Repeat("new", 1000))
	put(t, c1, key, newer)
	if st, got := get(t, c2, key); st != 200 || !bytes.Equal(got, newer) {
		t.Fatalf("after an overwrite on node 1, node 2 served %d %q…", st, got[:min(9, len(got))])
	}
	if resp := c1.Do(t, "DELETE", testenv.FileURL(c1.Bucket, key), nil); resp.StatusCode/100 != 2 {
		t.Fatalf("DELETE: %d", resp.StatusCode)
	}
	if st, _ := get(t, c2, key); st != 404 {
		t.Fatalf("after a delete on node 1, node 2 answered %d, want 404", st)
	}
}

// TestBlobCacheHoldsCiphertext: the cache sits below the encryption layer,
// so an encrypted object is cached encrypted.
func TestBlobCacheHoldsCiphertext(t *testing.T) {
	b := testenv.NewBackends(t)
	keyring := filepath.Join(t.TempDir(), "kms.keyring")
	if err := os.WriteFile(keyring, []byte("default 1 "+base64.StdEncoding.EncodeToString(randBytes(t, 32))+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	node := testenv.StartNode(t, b, "--cache", "on", "--inline-max", "0", "--encryption", "on", "--kms", "local://"+keyring)
	c := node.NewUser(t)
	plain := bytes.Repeat([]byte("PLAINTEXT-MARKER-0123456789 "), 20_000)
	if st := put(t, c, "secret.txt", plain); st != 201 {
		t.Fatalf("PUT: %d", st)
	}
	for range 2 {
		if st, got := get(t, c, "secret.txt"); st != 200 || !bytes.Equal(got, plain) {
			t.Fatalf("GET: %d", st)
		}
	}
	var files, bytesSeen int
	filepath.Walk(filepath.Join(node.Data, "cache"), func(p string, info os.FileInfo, err error) error {
		if err != nil || !info.Mode().IsRegular() {
			return nil
		}
		b, _ := os.ReadFile(p)
		files++
		bytesSeen += len(b)
		if bytes.Contains(b, []byte("PLAINTEXT-MARKER")) {
			t.Errorf("cache file %s holds plaintext", p)
		}
		return nil
	})
	if files == 0 || bytesSeen < len(plain) {
		t.Fatalf("cache holds %d files, %d bytes; want the object's %d bytes (ciphertext) cached", files, bytesSeen, len(plain))
	}
	if h := metric(t, node, "coffer_blob_cache_hits_total"); h < 1 {
		t.Errorf("coffer_blob_cache_hits_total = %v, want ≥ 1", h)
	}
}
