package bench_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/test/testenv"
)

// cleanupReport is the part of a bench report the cleanup tests read.
type cleanupReport struct {
	RunID       string `json:"run_id"`
	Interrupted bool   `json:"interrupted"`
	Setup       struct {
		Users int `json:"users"`
	} `json:"setup"`
	Audit struct {
		Enabled                                  bool
		Skipped                                  string
		Acknowledged, Verified, Missing, Corrupt int64
	} `json:"audit"`
	Cleanup struct {
		Enabled                                   bool
		Objects, Uploads, Buckets, Keys, Accounts int64
		Warnings                                  []string
		Kept                                      string
	} `json:"cleanup"`
}

func readCleanupReport(t *testing.T, path string) cleanupReport {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r cleanupReport
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("report: %v", err)
	}
	if r.RunID == "" {
		t.Fatal("report without a run_id")
	}
	return r
}

// benchExit runs coffer bench and returns its report, its output and its
// exit error.
func benchExit(t *testing.T, args ...string) (r cleanupReport, output string, err error) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "report.json")
	cmd := exec.Command(testenv.Binary(t), append(append([]string{"bench"}, args...), "--json", out)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	if _, serr := os.Stat(out); serr != nil {
		t.Fatalf("coffer bench %v wrote no report: %v\nstdout:\n%s\nstderr:\n%s", args, err, stdout.String(), stderr.String())
	}
	return readCleanupReport(t, out), stdout.String() + stderr.String(), err
}

// accountDeletion reports whether srv deletes accounts
// (DELETE /api/v1/me): the bench's last cleanup step.
func accountDeletion(t *testing.T, srv *testenv.Server) bool {
	t.Helper()
	c := srv.NewUser(t)
	st := c.JSON(t, "DELETE", "/api/v1/me", map[string]any{"password": "correct horse battery", "purge": true}, nil)
	switch st {
	case 204:
		return true
	case 404, 405:
		return false
	}
	t.Fatalf("DELETE /api/v1/me: status %d, want 204 (or 404/405 where the route does not exist yet)", st)
	return false
}

// benchUser is the i-th account a run created, logged in; nil if the
// account no longer exists.
func benchUser(t *testing.T, srv *testenv.Server, runID string, i int) *testenv.Client {
	t.Helper()
	c := testenv.NewClient(srv.URL)
	c.Email = fmt.Sprintf("bench-%s-%d@example.com", runID, i)
	var sess struct {
		AccessToken string `json:"access_token"`
	}
	switch st := c.JSON(t, "POST", "/api/v1/auth/login", map[string]string{"email": c.Email, "password": "bench password " + runID}, &sess); st {
	case 200:
		c.Token = sess.AccessToken
		return c
	case 401:
		return nil
	default:
		t.Fatalf("login as %s: status %d", c.Email, st)
		return nil
	}
}

// runObjects counts the objects under the run's prefix in c's buckets and
// returns the names of c's buckets and how many keys c holds.
func runObjects(t *testing.T, c *testenv.Client, runID string) (objects int, buckets []string, keys int) {
	t.Helper()
	var bl struct {
		Buckets []struct{ Name string } `json:"buckets"`
	}
	if st := c.JSON(t, "GET", "/api/v1/buckets", nil, &bl); st != 200 {
		t.Fatalf("listing buckets: %d", st)
	}
	for _, b := range bl.Buckets {
		buckets = append(buckets, b.Name)
		var page struct {
			Files []struct{ Key string } `json:"files"`
		}
		q := url.Values{"prefix": {"bench-" + runID + "/"}, "limit": {"1000"}}
		if st := c.JSON(t, "GET", "/api/v1/buckets/"+b.Name+"/files?"+q.Encode(), nil, &page); st != 200 {
			t.Fatalf("listing %s: %d", b.Name, st)
		}
		objects += len(page.Files)
	}
	var kl struct {
		Keys []struct{ ID string } `json:"keys"`
	}
	if st := c.JSON(t, "GET", "/api/v1/keys", nil, &kl); st != 200 {
		t.Fatalf("listing keys: %d", st)
	}
	return objects, buckets, len(kl.Keys)
}

// checkCleanedUp checks that nothing of run r is left on srv: no object
// under its prefix, no key, no bucket it made, and (where the server
// deletes accounts) no account.
func checkCleanedUp(t *testing.T, srv *testenv.Server, r cleanupReport, users int, deletesAccounts bool) {
	t.Helper()
	for _, w := range r.Cleanup.Warnings {
		if deletesAccounts || !strings.Contains(w, "account") {
			t.Errorf("cleanup warning: %s", w)
		}
	}
	if !r.Cleanup.Enabled {
		t.Fatalf("cleanup did not run: %+v", r.Cleanup)
	}
	for i := range users {
		c := benchUser(t, srv, r.RunID, i)
		if c == nil {
			if !deletesAccounts {
				t.Errorf("account %d of run %s is gone although the server has no account deletion", i, r.RunID)
			}
			continue
		}
		if deletesAccounts {
			t.Errorf("account %d of run %s still exists", i, r.RunID)
		}
		objects, buckets, keys := runObjects(t, c, r.RunID)
		if objects != 0 || keys != 0 {
			t.Errorf("account %d of run %s still holds %d objects of the run and %d keys", i, r.RunID, objects, keys)
		}
		for _, b := range buckets {
			if strings.HasPrefix(b, "coffer-bench-") {
				t.Errorf("account %d still owns the run's bucket %s", i, b)
			}
		}
	}
}

// TestCleanupLeavesTheTargetAsItWas runs coffer bench against a real
// server: by default it deletes the objects, unfinished uploads, keys,
// bucket and accounts it created; with --keep they stay.
func TestCleanupLeavesTheTargetAsItWas(t *testing.T) {
	srv := testenv.Start(t)
	deletesAccounts := accountDeletion(t, srv)
	if !deletesAccounts {
		t.Fatal("the server answers DELETE /api/v1/me with 404/405: account deletion is missing")
	}
	common := []string{"--target", srv.URL, "--vus", "2", "--users", "2", "--duration", "2s", "--size", "64KiB", "--metrics-url", "off"}

	t.Run("file API", func(t *testing.T) {
		r, out, err := benchExit(t, append([]string{"upload-direct"}, common...)...)
		if err != nil {
			t.Fatalf("coffer bench: %v\n%s", err, out)
		}
		if r.Cleanup.Objects == 0 || r.Cleanup.Objects < r.Audit.Acknowledged {
			t.Errorf("cleanup deleted %d objects of %d acknowledged", r.Cleanup.Objects, r.Audit.Acknowledged)
		}
		if !strings.Contains(out, "the load uploads 64.0 KiB per iteration") {
			t.Errorf("the run did not say how much it would write before starting:\n%s", out)
		}
		checkCleanedUp(t, srv, r, 2, deletesAccounts)
	})

	t.Run("S3 with an account and key made by the run", func(t *testing.T) {
		r, out, err := benchExit(t, append([]string{"s3-put", "--s3-target", srv.S3URL}, common...)...)
		if err != nil {
			t.Fatalf("coffer bench: %v\n%s", err, out)
		}
		if c := r.Cleanup; c.Objects < r.Audit.Acknowledged || c.Buckets != 1 || c.Keys != 1 {
			t.Errorf("cleanup = %+v, want %d objects, the bucket and the key deleted", c, r.Audit.Acknowledged)
		}
		checkCleanedUp(t, srv, r, 1, deletesAccounts)
		// The run's bucket name is free again.
		if st := srv.NewUser(t).JSON(t, "POST", "/api/v1/buckets", map[string]string{"name": "coffer-bench-" + r.RunID}, nil); st != 201 {
			t.Errorf("creating coffer-bench-%s after the run: status %d, want 201 (the run's bucket deleted)", r.RunID, st)
		}
	})

	t.Run("keep", func(t *testing.T) {
		r, out, err := benchExit(t, append([]string{"upload-proxy", "--keep"}, common...)...)
		if err != nil {
			t.Fatalf("coffer bench: %v\n%s", err, out)
		}
		if r.Cleanup.Enabled || r.Cleanup.Kept == "" {
			t.Errorf("cleanup = %+v, want off with a note of what was kept", r.Cleanup)
		}
		total := 0
		for i := range 2 {
			c := benchUser(t, srv, r.RunID, i)
			if c == nil {
				t.Fatalf("account %d of a --keep run is gone", i)
			}
			n, _, _ := runObjects(t, c, r.RunID)
			total += n
		}
		if int64(total) != r.Audit.Acknowledged || total == 0 {
			t.Errorf("%d objects of the run left, want the %d acknowledged", total, r.Audit.Acknowledged)
		}
	})
}

// TestInterruptAuditsAndCleansUp sends the running coffer bench SIGINT:
// the load stops, the acknowledged uploads are still audited, the run
// cleans up, prints its report and exits non-zero (interrupted).
func TestInterruptAuditsAndCleansUp(t *testing.T) {
	srv := testenv.Start(t)
	deletesAccounts := accountDeletion(t, srv)
	out := filepath.Join(t.TempDir(), "report.json")
	cmd := exec.Command(testenv.Binary(t), "bench", "upload-proxy", "--target", srv.URL, "--vus", "2", "--users", "1",
		"--duration", "1m", "--size", "16KiB", "--metrics-url", "off", "--json", out)
	var stdout bytes.Buffer
	var stderr lockedBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	for deadline := time.Now().Add(15 * time.Second); !strings.Contains(stderr.String(), "bench: running"); {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("the load did not start:\n%s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(1500 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGINT)
	var err error
	select {
	case err = <-exited:
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("coffer bench did not finish within 20s of SIGINT\n%s", stderr.String())
	}
	if err == nil {
		t.Errorf("an interrupted run exited 0")
	}
	r := readCleanupReport(t, out)
	a := r.Audit
	if !r.Interrupted || !a.Enabled || a.Skipped != "" || a.Acknowledged == 0 || a.Verified != a.Acknowledged {
		t.Errorf("interrupted %v, audit %+v: want every acknowledged upload verified\n%s", r.Interrupted, a, stderr.String())
	}
	if !strings.Contains(stdout.String(), "audit") || !strings.Contains(stdout.String(), "cleanup") {
		t.Errorf("no report printed after the interrupt:\n%s", stdout.String())
	}
	checkCleanedUp(t, srv, r, 1, deletesAccounts)
}

// lockedBuffer is a buffer a child process writes to (through os/exec's
// copying goroutine) while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
