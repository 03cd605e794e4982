package scaleout

import (
	"crypto/md5"
	"encoding/base64"
	"fmt"
	"net/http"
	"testing"

	"github.com/coffer-storage/coffer/test/testenv"
)

// TestCORSReachesEveryNode: a bucket's CORS configuration is part of its
// record, which every node caches; a change made through node 1 is what
// nodes 2 and 3 answer with right after (their preflights and the headers
// of their answers), removal included.
func TestCORSReachesEveryNode(t *testing.T) {
	nodes, _, k, name := bucketOnThreeNodes(t, "cors", false)
	bucket := "/" + name
	testenv.MustS3(t, k, nodes[0].S3URL, "PUT", bucket+"/k", []byte("data"), 200)
	preflight := func(n *testenv.Server, origin string) int {
		t.Helper()
		req, err := http.NewRequest("OPTIONS", n.S3URL+bucket+"/k", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "PUT")
		resp, err := n.HTTPClient().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	// Nodes 2 and 3 cache the bucket without a configuration.
	for _, n := range nodes[1:] {
		if r := testenv.MustS3(t, k, n.S3URL, "GET", bucket+"/k", nil, 200, "Origin", "http://app-0.example"); r.Header.Get("Vary") != "" {
			t.Fatalf("a bucket without CORS answered Vary %q", r.Header.Get("Vary"))
		}
	}
	stale := 0
	for i := range 10 {
		origin := fmt.Sprintf("http://app-%d.example", i)
		if i%3 == 2 {
			testenv.MustS3(t, k, nodes[0].S3URL, "DELETE", bucket+"?cors", nil, 204)
		} else {
			body := []byte(`<CORSConfiguration><CORSRule><AllowedOrigin>` + origin + `</AllowedOrigin><AllowedMethod>GET</AllowedMethod>` +
				`<AllowedMethod>PUT</AllowedMethod></CORSRule></CORSConfiguration>`)
			sum := md5.Sum(body)
			testenv.MustS3(t, k, nodes[0].S3URL, "PUT", bucket+"?cors", body, 200, "Content-MD5", base64.StdEncoding.EncodeToString(sum[:]))
		}
		want, wantStatus := origin, 200
		if i%3 == 2 {
			want, wantStatus = "", 403
		}
		for j, n := range nodes[1:] {
			r := testenv.MustS3(t, k, n.S3URL, "GET", bucket+"/k", nil, 200, "Origin", origin)
			if got := r.Header.Get("Access-Control-Allow-Origin"); got != want {
				stale++
				t.Errorf("round %d: GET on node %d: Allow-Origin %q, want %q", i, j+2, got, want)
			}
			if st := preflight(n, origin); st != wantStatus {
				stale++
				t.Errorf("round %d: preflight on node %d: %d, want %d", i, j+2, st, wantStatus)
			}
		}
	}
	if stale > 0 {
		t.Errorf("%d stale answers", stale)
	}
}
