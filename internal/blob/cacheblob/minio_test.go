package cacheblob

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/coffer-storage/coffer/internal/blob"
	"github.com/coffer-storage/coffer/internal/blob/s3blob"
	"github.com/coffer-storage/coffer/internal/testbackend"
)

func TestMain(m *testing.M) { testbackend.Main(m) }

// countingProxy forwards to target and counts the GET requests of objects.
type countingProxy struct {
	*httptest.Server
	gets atomic.Int64
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
		if r.Method == http.MethodGet && strings.Count(strings.Trim(r.URL.Path, "/"), "/") >= 1 {
			p.gets.Add(1)
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(p.Close)
	return p
}

// TestSingleflightMinIO: 100 concurrent GETs of one cold object through
// the cache make one GET of MinIO, counted by a proxy in front of it.
func TestSingleflightMinIO(t *testing.T) {
	m := testbackend.SharedMinIO(t)
	bucket := m.CreateBucket(t)
	proxy := newCountingProxy(t, m.Endpoint())
	back, err := s3blob.Open(t.Context(), s3blob.Options{
		Bucket: bucket, Endpoint: proxy.URL, PathStyle: true, AccessKey: m.AccessKey, SecretKey: m.SecretKey,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		size int
		opts Options
	}{
		{"small-memory", 4 << 10, Options{MemoryBytes: 1 << 20}},
		{"chunk-disk", 700 << 10, Options{ChunkSize: 1 << 20}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := newCache(t, t.TempDir(), tt.opts, nil)
			s := New(back, c, nil)
			data := pattern(tt.size, 77)
			key := "o/" + tt.name
			put(t, s, key, data)
			before := proxy.gets.Load()

			const n = 100
			var wg sync.WaitGroup
			start := make(chan struct{})
			errs := make(chan string, n)
			for range n {
				wg.Go(func() {
					<-start
					rc, err := s.Get(t.Context(), key, 0, -1)
					if err != nil {
						errs <- err.Error()
						return
					}
					b, err := io.ReadAll(rc)
					rc.Close()
					if err != nil || !bytes.Equal(b, data) {
						errs <- "read other bytes or failed: " + errString(err)
					}
				})
			}
			close(start)
			wg.Wait()
			close(errs)
			for e := range errs {
				t.Fatal(e)
			}
			if got, want := proxy.gets.Load()-before, int64(1); got != want {
				t.Errorf("100 concurrent cold GETs made %d GETs of MinIO, want %d", got, want)
			}
			// And the hot ones make none.
			for range 10 {
				get(t, s, key, 0, -1)
				get(t, s, key, int64(tt.size)-1, 1)
			}
			if got, want := proxy.gets.Load()-before, int64(1); got != want {
				t.Errorf("after 20 hot GETs MinIO saw %d GETs in all, want %d", got, want)
			}
			st := c.Stats()
			t.Logf("stats %+v", st)
		})
	}
	var _ blob.Store = back
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}
