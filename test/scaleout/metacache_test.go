package scaleout

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/coffer-storage/coffer/test/testenv"
)

// nodeMetric sums the /metrics samples of node whose line starts with
// prefix (a name, or a name and its labels).
func nodeMetric(t *testing.T, n *testenv.Server, prefix string) float64 {
	t.Helper()
	resp, err := http.Get(n.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var sum float64
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), prefix); ok && (strings.HasPrefix(rest, " ") || strings.HasPrefix(rest, "{")) {
			f := strings.Fields(rest)
			v, err := strconv.ParseFloat(f[len(f)-1], 64)
			if err == nil {
				sum += v
			}
		}
	}
	return sum
}

// cutListeners terminates every node's listening connection (as a network
// cut or a database restart would).
func cutListeners(t *testing.T, b *testenv.Backends) {
	t.Helper()
	var url string
	for _, e := range b.Env {
		if v, ok := strings.CutPrefix(e, "COFFER_META="); ok {
			url = v
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'coffer-listen' AND datname = current_database()"); err != nil {
		t.Fatal(err)
	}
}

// metaCacheIterations is how many overwrite (and delete) rounds
// TestMetaCacheAcrossNodes runs.
const metaCacheIterations = 1000

// TestMetaCacheAcrossNodes: node 2 caches object and bucket records (its
// hit counter grows), yet a write acknowledged by node 1 is never served
// stale by node 2 on the very next request: an overwrite (node 2 read the
// old version just before), a delete, a bucket made private, each in a
// loop; and every node's listening connection is cut every 100 rounds
// (the caches flush, and nothing stale is served meanwhile either).
func TestMetaCacheAcrossNodes(t *testing.T) {
	b := testenv.NewBackends(t)
	n1, n2 := testenv.StartNode(t, b), testenv.StartNode(t, b)
	c1 := n1.NewUser(t)
	c2 := on(c1, n2)
	anon2 := testenv.NewClient(n2.URL)
	anon2.Bucket = c1.Bucket

	hits0 := nodeMetric(t, n2, `coffer_meta_cache_hits_total{cache="object"}`)
	flushes0 := nodeMetric(t, n2, `coffer_meta_cache_flushes_total{cache="object"}`)
	stale := map[string]int{}
	cuts := 0
	t.Run("overwrite", func(t *testing.T) {
		prev := ""
		for i := range metaCacheIterations {
			if i > 0 && i%100 == 0 {
				cutListeners(t, b)
				cuts++
			}
			if prev != "" {
				// Node 2 reads (and caches) the current version.
				if st, got := get(t, c2, "o"); st != 200 || string(got) != prev {
					stale["overwrite, warm read"]++
				}
			}
			v := fmt.Sprintf("version %d", i)
			if st := put(t, c1, "o", []byte(v)); st != 201 && st != 200 {
				t.Fatalf("round %d: PUT via node 1: %d", i, st)
			}
			if st, got := get(t, c2, "o"); st != 200 || string(got) != v {
				stale["overwrite"]++
				t.Logf("round %d: node 2 answered %d %q after node 1 wrote %q", i, st, got, v)
			}
			prev = v
		}
	})
	t.Run("delete", func(t *testing.T) {
		for i := range metaCacheIterations {
			if i > 0 && i%100 == 0 {
				cutListeners(t, b)
				cuts++
			}
			v := fmt.Sprintf("to delete %d", i)
			if st := put(t, c1, "d", []byte(v)); st != 201 && st != 200 {
				t.Fatalf("round %d: PUT via node 1: %d", i, st)
			}
			if st, got := get(t, c2, "d"); st != 200 || string(got) != v {
				stale["delete, read after put"]++
			}
			resp := c1.Do(t, "DELETE", testenv.FileURL(c1.Bucket, "d"), nil)
			resp.Body.Close()
			if resp.StatusCode != 204 {
				t.Fatalf("round %d: DELETE via node 1: %d", i, resp.StatusCode)
			}
			if st, _ := get(t, c2, "d"); st != 404 {
				stale["delete"]++
				t.Logf("round %d: node 2 answered %d after node 1 deleted", i, st)
			}
		}
	})
	t.Run("visibility", func(t *testing.T) {
		if st := put(t, c1, "pub", []byte("public bytes")); st != 201 && st != 200 {
			t.Fatalf("PUT: %d", st)
		}
		set := func(v string) {
			t.Helper()
			if st := c1.JSON(t, "PATCH", "/api/v1/buckets/"+c1.Bucket, map[string]string{"visibility": v}, nil); st != 200 {
				t.Fatalf("PATCH visibility %s via node 1: %d", v, st)
			}
		}
		for i := range metaCacheIterations / 5 {
			set("public-read")
			if st, _ := get(t, anon2, "pub"); st != 200 {
				stale["made public"]++
				t.Logf("round %d: anonymous GET on node 2 after public-read: %d", i, st)
			}
			set("private")
			if st, _ := get(t, anon2, "pub"); st != 401 && st != 403 {
				stale["made private"]++
				t.Logf("round %d: anonymous GET on node 2 after private: %d", i, st)
			}
		}
	})
	for what, n := range stale {
		t.Errorf("%s: %d stale answers from node 2", what, n)
	}
	if got := nodeMetric(t, n2, `coffer_meta_cache_hits_total{cache="object"}`) - hits0; got < metaCacheIterations/2 {
		t.Errorf("node 2's object cache answered %v reads, want ≥ %d (is the cache on?)", got, metaCacheIterations/2)
	}
	if got := nodeMetric(t, n2, `coffer_meta_cache_flushes_total{cache="object"}`) - flushes0; got < float64(cuts) {
		t.Errorf("node 2 flushed its object cache %v times for %d cuts of its listening connection", got, cuts)
	}
	t.Logf("node 2: %v object cache hits, %v misses, %v invalidations, %v flushes; %d cuts",
		nodeMetric(t, n2, `coffer_meta_cache_hits_total{cache="object"}`), nodeMetric(t, n2, `coffer_meta_cache_misses_total{cache="object"}`),
		nodeMetric(t, n2, `coffer_meta_cache_invalidations_total{cache="object"}`), nodeMetric(t, n2, `coffer_meta_cache_flushes_total{cache="object"}`), cuts)
}

// TestKeyRevokeReachesEveryNode: an S3 access key revoked through node 1
// is refused by node 2 on the very next request, although node 2 had just
// verified (and cached) it, round after round.
func TestKeyRevokeReachesEveryNode(t *testing.T) {
	b := testenv.NewBackends(t)
	n1, n2 := testenv.StartNode(t, b), testenv.StartNode(t, b)
	u := n1.NewUser(t)
	obj := "/" + u.Bucket + "/obj"
	stale := 0
	for i := range 100 {
		var k struct {
			ID     string `json:"access_key_id"`
			Secret string `json:"secret_access_key"`
		}
		if st := u.JSON(t, "POST", "/api/v1/keys", nil, &k); st != 201 {
			t.Fatalf("round %d: create key: %d", i, st)
		}
		if st := s3Status(t, n2.S3URL, "PUT", obj, k.ID, k.Secret, []byte("hello")); st != 200 {
			t.Fatalf("round %d: S3 PUT on node 2 with a new key: %d", i, st)
		}
		if st := u.JSON(t, "DELETE", "/api/v1/keys/"+k.ID, nil, nil); st != 204 && st != 200 {
			t.Fatalf("round %d: revoke via node 1: %d", i, st)
		}
		if st := s3Status(t, n2.S3URL, "GET", obj, k.ID, k.Secret, nil); st != 403 {
			stale++
			t.Logf("round %d: node 2 answered %d with a revoked key", i, st)
		}
	}
	if stale > 0 {
		t.Errorf("%d of 100 requests with a just-revoked key were accepted by node 2", stale)
	}
}
