package bench

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestSoakRetriesShedDeletes: a delete the server sheds (503 with
// Retry-After) is asked again by the VU's next write, so the soak's data
// stays bounded under load: up to two deletes a write, the VU catches up
// and holds at most a couple more than soakKeep.
func TestSoakRetriesShedDeletes(t *testing.T) {
	var mu sync.Mutex
	stored := map[string]bool{}
	shed := map[string]bool{} // keys whose first delete was shed
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		key := r.URL.Path[strings.Index(r.URL.Path, "/files/")+len("/files/"):]
		switch r.Method {
		case http.MethodPut:
			stored[key] = true
			w.WriteHeader(http.StatusCreated)
			sum := r.Header.Get("X-Checksum-Sha256")
			w.Write([]byte(`{"key":"` + key + `","size":1024,"sha256":"` + sum + `"}`))
		case http.MethodDelete:
			if !shed[key] {
				shed[key] = true
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			delete(stored, key)
			w.WriteHeader(http.StatusNoContent)
		}
	}))
	defer srv.Close()
	tg := &target{opts: Options{Target: srv.URL, Size: 1024, Timeout: 10 * time.Second}, runID: "t", col: newCollector(time.Now())}
	sess := &session{base: srv.URL, u: &user{bucket: "b"}, access: "tok", expires: time.Now().Add(time.Hour)}
	s := &fileScenario{t: tg, kind: "soak", sessions: []*session{sess}, soakOwn: make([][]ledgerEntry, 1)}
	v := &vu{id: 0, t: tg, call: &caller{client: srv.Client(), timeout: 10 * time.Second, col: tg.col}, sess: sess}
	for range 40 {
		s.soakWrite(context.Background(), v) // every other one answers a shed delete
	}
	mu.Lock()
	defer mu.Unlock()
	if len(stored) > soakKeep+2 || len(s.soakOwn[0]) != len(stored) {
		t.Errorf("after 40 writes, half their deletes shed once: %d objects stored, the VU holds %d; want them the same and bounded",
			len(stored), len(s.soakOwn[0]))
	}
}
