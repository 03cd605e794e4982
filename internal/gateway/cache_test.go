package gateway_test

import (
	"bytes"
	"io"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/coffer-storage/coffer/internal/blob/cacheblob"
	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/gateway"
	"github.com/coffer-storage/coffer/internal/kms"
	"github.com/coffer-storage/coffer/internal/object"
	"github.com/coffer-storage/coffer/internal/testbackend"
)

// countingProxy forwards to MinIO and counts the GETs and HEADs of
// objects (paths /BUCKET/KEY), separately.
type countingProxy struct {
	*httptest.Server
	gets, heads atomic.Int64
}

func newCountingProxy(t *testing.T, target string) *countingProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &countingProxy{}
	rp := httputil.NewSingleHostReverseProxy(u)
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(strings.Trim(r.URL.Path, "/"), "/") {
			switch r.Method {
			case http.MethodGet:
				p.gets.Add(1)
			case http.MethodHead:
				p.heads.Add(1)
			}
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(p.Close)
	return p
}

// cachedEnv is a gateway bucket over MinIO behind a counting proxy, read
// through a blob cache of 64 KiB chunks.
func cachedEnv(t *testing.T, mode, prefix string, cfg object.Config) (*env, *countingProxy, *cacheblob.Cache, string) {
	t.Helper()
	m := testbackend.SharedMinIO(t)
	proxy := newCountingProxy(t, m.Endpoint())
	dir := t.TempDir()
	c, err := cacheblob.Open(cacheblob.Options{Dir: dir, DiskBytes: 64 << 20, MemoryBytes: 4 << 20, ChunkSize: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return newEnvAt(t, m, proxy.URL, mode, prefix, cfg, gateway.Opener{Cache: c}.Open), proxy, c, dir
}

func randomString(n int, seed uint64) string {
	r := rand.New(rand.NewPCG(seed, seed))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return string(b)
}

// TestCachedRepeatedReads: repeated reads of one gateway object make one
// backend GET (and still one HEAD each: the freshness check), for a
// small object (memory tier) and one of several chunks (disk tier).
func TestCachedRepeatedReads(t *testing.T) {
	e, proxy, _, _ := cachedEnv(t, "ro", "", testConfig(nil))
	for _, tc := range []struct {
		name     string
		size     int
		wantGets int64 // the chunks of the object
	}{
		{"small", 1 << 10, 1},
		{"chunks", 150 << 10, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := randomString(tc.size, uint64(tc.size))
			e.putDirect(t, tc.name, data)
			gets, heads := proxy.gets.Load(), proxy.heads.Load()
			const n = 10
			for i := range n {
				if got, _ := read(t, e.svc, e.alice, tc.name, 0, -1); got != data {
					t.Fatalf("read %d: %d bytes, not the object's %d", i, len(got), len(data))
				}
			}
			if got, want := proxy.gets.Load()-gets, tc.wantGets; got != want {
				t.Errorf("%d reads made %d backend GETs, want %d", n, got, want)
			}
			if got, want := proxy.heads.Load()-heads, int64(n); got != want {
				t.Errorf("%d reads made %d backend HEADs, want %d (one per read)", n, got, want)
			}
		})
	}
}

// TestCachedReplacedBehindCoffersBack: an object replaced directly in
// MinIO is read anew at the next read (its ETag changed), never from the
// old bytes; a replacement between a read's HEAD and its fetch is a
// retry, and caches nothing.
func TestCachedReplacedBehindCoffersBack(t *testing.T) {
	e, proxy, _, _ := cachedEnv(t, "ro", "", testConfig(nil))
	ctx := t.Context()
	for i, v := range []string{"version one", "version two!", "version 3"} {
		etag := e.putDirect(t, "k", v)
		for range 3 {
			if got, o := read(t, e.svc, e.alice, "k", 0, -1); got != v || o.ETag != etag {
				t.Fatalf("after write %d: %q (ETag %s), want %q (ETag %s)", i, got, o.ETag, v, etag)
			}
		}
	}
	if got, want := proxy.gets.Load(), int64(3); got != want {
		t.Errorf("backend GETs: %d, want %d (one per version)", got, want)
	}
	// Cold: the HEAD sees version four, the fetch finds five.
	e.putDirect(t, "k", "version four")
	r, err := e.svc.Get(ctx, e.alice, "gate", "k")
	if err != nil {
		t.Fatal(err)
	}
	e.putDirect(t, "k", "version five")
	if _, err := r.Open(ctx, 0, -1); !errcode.Is(err, errcode.Unavailable) {
		t.Errorf("Open of a version replaced since Get: %v; want Unavailable (retry)", err)
	}
	if got, _ := read(t, e.svc, e.alice, "k", 0, -1); got != "version five" {
		t.Errorf("after the failed read: %q, want version five", got)
	}
}

// TestCachedRanges: ranges are served byte-exact from the cache (within a
// chunk, across chunks, the tail), and once the object's chunks are
// cached, make no backend GET.
func TestCachedRanges(t *testing.T) {
	e, proxy, _, _ := cachedEnv(t, "ro", "/pre", testConfig(nil))
	const size = 200<<10 + 123
	data := randomString(size, 9)
	e.putDirect(t, "pre/big", data)
	ranges := []struct{ off, n int64 }{
		{0, 1}, {size - 1, 1}, {65535, 2}, {1000, 130 << 10}, {64 << 10, 64 << 10}, {150 << 10, -1}, {size, -1}, {0, -1},
	}
	check := func(pass string) {
		for _, rg := range ranges {
			want := data[rg.off:]
			if rg.n >= 0 {
				want = want[:rg.n]
			}
			if got, _ := read(t, e.svc, e.alice, "big", rg.off, rg.n); got != want {
				t.Errorf("%s: range %d+%d: %d bytes, not the object's %d there", pass, rg.off, rg.n, len(got), len(want))
			}
		}
	}
	check("cold")
	gets := proxy.gets.Load()
	if gets > 4 {
		t.Errorf("cold ranges made %d backend GETs, want at most 4 (one per chunk)", gets)
	}
	check("hot")
	if got := proxy.gets.Load() - gets; got != 0 {
		t.Errorf("hot ranges made %d backend GETs, want 0", got)
	}
}

// TestCachedConcurrentColdReads: 20 concurrent reads of one cold object
// make one backend GET (singleflight), and 20 HEADs.
func TestCachedConcurrentColdReads(t *testing.T) {
	e, proxy, _, _ := cachedEnv(t, "ro", "", testConfig(nil))
	data := randomString(40<<10, 20)
	e.putDirect(t, "cold", data)
	const n = 20
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make(chan string, n)
	for range n {
		wg.Go(func() {
			<-start
			r, err := e.svc.Get(t.Context(), e.alice, "gate", "cold")
			if err != nil {
				errs <- err.Error()
				return
			}
			rc, err := r.Open(t.Context(), 0, -1)
			if err != nil {
				errs <- err.Error()
				return
			}
			b, err := io.ReadAll(rc)
			rc.Close()
			if err != nil || string(b) != data {
				errs <- "read other bytes or failed"
			}
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for msg := range errs {
		t.Fatal(msg)
	}
	if got, want := proxy.gets.Load(), int64(1); got != want {
		t.Errorf("%d concurrent cold reads made %d backend GETs, want %d", n, got, want)
	}
	if got, want := proxy.heads.Load(), int64(n); got != want {
		t.Errorf("%d concurrent cold reads made %d backend HEADs, want %d", n, got, want)
	}
}

// TestCachedEncrypted: an object Coffer encrypted is cached as the
// backend holds it, ciphertext: no cache file holds the plaintext, and
// hot reads decrypt from the cache.
func TestCachedEncrypted(t *testing.T) {
	keys, err := kms.Open(t.Context(), "", kms.Options{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	e, proxy, _, dir := cachedEnv(t, "rw", "", testConfig(func(c *object.Config) { c.Encrypt, c.Keys = true, keys }))
	data := strings.Repeat("secret bytes ", 10000)
	if _, err := e.svc.Put(t.Context(), e.alice, object.PutInput{Bucket: "gate", Key: "s", Body: strings.NewReader(data), Size: int64(len(data))}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if got, _ := read(t, e.svc, e.alice, "s", 0, -1); got != data {
			t.Fatalf("read back %d bytes, want %d", len(got), len(data))
		}
	}
	if got, _ := read(t, e.svc, e.alice, "s", 65530, 20); got != data[65530:65550] {
		t.Errorf("range across a segment: %q", got)
	}
	if got, want := proxy.gets.Load(), int64(3); got > want {
		t.Errorf("backend GETs: %d, want at most %d (the ciphertext's chunks)", got, want)
	}
	files := 0
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files++
		if bytes.Contains(b, []byte("secret bytes")) {
			t.Errorf("cache file %s holds plaintext", p)
		}
		return nil
	})
	if files == 0 {
		t.Error("nothing was cached on disk")
	}
}
