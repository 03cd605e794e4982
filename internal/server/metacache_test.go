package server

import (
	"context"
	"fmt"
	"log/slog"
	"testing"

	"github.com/coffer-storage/coffer/internal/config"
)

// TestMetaCacheEmbedded: the embedded shape (SQLite, one process) caches
// object and bucket records (hits counted), and an acknowledged
// overwrite, delete or visibility change is seen by the very next
// request, 1,000 rounds each (the readers cached the old record just
// before).
func TestMetaCacheEmbedded(t *testing.T) {
	e := newShareEnv(t)
	cs := e.s.stores.MetaCache
	if cs == nil || e.s.meta.Objects != cs.Stores().Objects {
		t.Fatalf("the server's object records are not the cache's (--meta-cache on is the default)")
	}
	path := "/api/v1/buckets/" + e.a.bucket + "/files/"
	get := func(key, token string) (int, string) {
		resp, b := e.do(e.url, "GET", path+key, token, nil)
		return resp.StatusCode, string(b)
	}
	stale := map[string]int{}
	prev := ""
	for i := range 1000 {
		if prev != "" {
			if st, got := get("o", e.a.token); st != 200 || got != prev {
				stale["warm read"]++
			}
		}
		v := fmt.Sprintf("version %d", i)
		e.put(e.a, "o", []byte(v))
		if st, got := get("o", e.a.token); st != 200 || got != v {
			stale["overwrite"]++
		}
		prev = v
	}
	for i := range 1000 {
		e.put(e.a, "d", []byte(fmt.Sprint("doomed ", i)))
		if st, _ := get("d", e.a.token); st != 200 {
			stale["read after put"]++
		}
		if resp, _ := e.do(e.url, "DELETE", path+"d", e.a.token, nil); resp.StatusCode != 204 {
			t.Fatalf("round %d: DELETE: %d", i, resp.StatusCode)
		}
		if st, _ := get("d", e.a.token); st != 404 {
			stale["delete"]++
		}
	}
	e.put(e.a, "pub", []byte("public bytes"))
	for i := range 1000 {
		for _, v := range []string{"public-read", "private"} {
			if resp, b := e.do(e.url, "PATCH", "/api/v1/buckets/"+e.a.bucket, e.a.token, []byte(`{"visibility":"`+v+`"}`)); resp.StatusCode != 200 {
				t.Fatalf("round %d: PATCH %s: %d %s", i, v, resp.StatusCode, b)
			}
			st, _ := get("pub", "")
			if (v == "public-read") != (st == 200) {
				stale[v]++
			}
		}
	}
	for what, n := range stale {
		t.Errorf("%s: %d stale answers", what, n)
	}
	if st := cs.Objects().Stats(); st.Hits < 1000 {
		t.Errorf("object cache: %+v, want ≥ 1000 hits", st)
	}
	if st := cs.Buckets().Stats(); st.Hits < 1000 {
		t.Errorf("bucket cache: %+v, want ≥ 1000 hits", st)
	}
}

// TestMetaCacheOff: --meta-cache off leaves the metadata store unwrapped
// (every read asks it), so off and on can be measured side by side.
func TestMetaCacheOff(t *testing.T) {
	cfg := config.Defaults()
	cfg.Data = t.TempDir()
	cfg.MetaCache = "off"
	s, err := New(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.stores.MetaCache != nil {
		t.Error("--meta-cache off: the metadata store is still the cache's")
	}
}
