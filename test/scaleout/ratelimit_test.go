package scaleout

import (
	"io"
	"testing"

	"github.com/coffer-storage/coffer/test/testenv"
)

// TestRateLimitAcrossNodes: one user's requests quota (40 per hour) is
// cluster-wide: alternating between two nodes, the user gets about 40
// requests in all (each node reserves blocks of 2 from PostgreSQL), not 40
// per node.
func TestRateLimitAcrossNodes(t *testing.T) {
	b := testenv.NewBackends(t)
	nodeA := testenv.StartNode(t, b, "--rate-user", "40/h")
	nodeB := testenv.StartNode(t, b, "--rate-user", "40/h")
	cA := nodeA.NewUser(t)
	cB := on(cA, nodeB)
	ok := 0
	for i := range 100 {
		c := cA
		if i%2 == 1 {
			c = cB
		}
		resp := c.Do(t, "GET", "/api/v1/me", nil)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		switch resp.StatusCode {
		case 200:
			ok++
		case 429:
			if resp.Header.Get("Retry-After") == "" {
				t.Errorf("429 without Retry-After")
			}
		default:
			t.Fatalf("request %d: %d", i, resp.StatusCode)
		}
	}
	t.Logf("%d of 100 requests admitted", ok)
	// Up to one block per node may lapse unspent; never more than 40.
	if ok > 40 || ok < 36 {
		t.Errorf("%d requests admitted across two nodes, want 36..40 (the cluster-wide quota)", ok)
	}
}
