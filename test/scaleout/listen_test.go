package scaleout

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/testbackend"
	"github.com/coffer-storage/coffer/test/testenv"
)

// TestListenerOutageLogged: PostgreSQL stopped for several of the
// listener's retries, then started again. The node logs the failure once
// (not once per retry: it logged ten "listening … failed" warnings), and
// once that it listens again (it never said so).
func TestListenerOutageLogged(t *testing.T) {
	pg := testbackend.StartPostgres(t)
	b := testenv.NewBackendsOn(t, pg, testbackend.SharedMinIO(t))
	node := testenv.StartNode(t, b)
	ready := func() int {
		resp, err := node.HTTPClient().Get(node.URL + "/readyz")
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	pg.Stop()
	waitStatus(t, http.StatusServiceUnavailable, 30*time.Second, ready)
	// The listener retries with a back-off of 50 ms to 2 s: stay down
	// for several retries.
	time.Sleep(6 * time.Second)
	if err := pg.Start(); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, http.StatusOK, 30*time.Second, ready)
	const again = "listening for other nodes' changes again"
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(node.Stderr(), again); {
		if time.Now().After(deadline) {
			t.Fatalf("the node never logged that it listens again:\n%s", node.Stderr())
		}
		time.Sleep(100 * time.Millisecond)
	}
	logs := node.Stderr()
	if n := strings.Count(logs, "listening for other nodes' changes failed"); n != 1 {
		t.Errorf("%d failure warnings for one outage, want 1:\n%s", n, logs)
	}
	if n := strings.Count(logs, again); n != 1 {
		t.Errorf("%d recovery lines, want 1:\n%s", n, logs)
	}
}
