// Package backup_test runs coffer backup and coffer restore (the real
// binary) against a running coffer serve of the embedded shape
// (docs/backup.md).
package backup_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/testbackend"
	"github.com/coffer-storage/coffer/test/testenv"
)

func TestMain(m *testing.M) { testbackend.Main(m) }

// run runs the coffer binary with args and returns its stdout, stderr and
// error.
func run(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	return runEnv(t, nil, args...)
}

// runEnv is run with extra environment.
func runEnv(t *testing.T, env []string, args ...string) (string, string, error) {
	t.Helper()
	cmd := exec.Command(testenv.Binary(t), args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), err
}

// mustRun is run failing the test on an error.
func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	out, errs, err := run(t, args...)
	if err != nil {
		t.Fatalf("coffer %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, out, errs)
	}
	return out
}

var summaryRE = regexp.MustCompile(`^backup (\S+): snapshot at (\S+); (\d+) objects, (\d+) blobs: (\d+) copied \([^)]*\), (\d+) already there`)

// summary is the summary line of coffer backup.
type summary struct {
	id                     string
	snapshot               time.Time
	objects, blobs, copied int
	skipped                int
}

func parseSummary(t *testing.T, out string) summary {
	t.Helper()
	m := summaryRE.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no summary line in %q", out)
	}
	at, err := time.Parse(time.RFC3339Nano, m[2])
	if err != nil {
		t.Fatal(err)
	}
	n := func(s string) int { v, _ := strconv.Atoi(s); return v }
	return summary{id: m[1], snapshot: at, objects: n(m[3]), blobs: n(m[4]), copied: n(m[5]), skipped: n(m[6])}
}

// body is the deterministic content of object i.
func body(i, size int) []byte {
	r := rand.New(rand.NewPCG(uint64(i), 7))
	b := make([]byte, size)
	for j := range b {
		b[j] = byte(r.Uint32())
	}
	return b
}

// put uploads data as key and reports whether it was acknowledged.
func put(c *testenv.Client, key string, data []byte) bool {
	resp, err := c.DoErr(context.Background(), "PUT", testenv.FileURL(c.Bucket, key), bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return false
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode == 201 || resp.StatusCode == 200
}

// del deletes key and reports whether it was acknowledged.
func del(c *testenv.Client, key string) bool {
	resp, err := c.DoErr(context.Background(), "DELETE", testenv.FileURL(c.Bucket, key), nil, 0)
	if err != nil {
		return false
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode == 204 || resp.StatusCode == 200
}

// get reads key: its status and bytes.
func get(t *testing.T, c *testenv.Client, key string) (int, []byte) {
	t.Helper()
	resp := c.Do(t, "GET", testenv.FileURL(c.Bucket, key), nil)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", key, err)
	}
	return resp.StatusCode, b
}

// op is one acknowledged upload or delete of the load, with when it was
// sent and when it was acknowledged.
type op struct {
	key         string
	data        []byte
	sent, acked time.Time
	delSent     time.Time // zero: not deleted
	delAcked    time.Time // zero: the delete was not acknowledged
}

// TestBackupUnderLoad: 50 clients upload and delete while coffer backup
// runs; the backup restored into a new folder serves every object
// acknowledged before the snapshot point byte-exact, and nothing deleted
// (acknowledged) before it.
func TestBackupUnderLoad(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	srv := testenv.StartIn(t, filepath.Join(dir, "data"), "--inline-max", "4KiB")
	c := srv.NewUser(t)
	dest, keys := filepath.Join(dir, "dest"), filepath.Join(dir, "keys")

	var (
		mu   sync.Mutex
		ops  []*op
		stop = make(chan struct{})
		wg   sync.WaitGroup
	)
	const workers = 50
	for w := range workers {
		wg.Go(func() {
			var mine []*op
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				// Every third step deletes one of this worker's objects.
				if i%3 == 2 && len(mine) > 0 {
					o := mine[0]
					mine = mine[1:]
					sent := time.Now()
					mu.Lock()
					o.delSent = sent
					mu.Unlock()
					if del(c, o.key) {
						acked := time.Now()
						mu.Lock()
						o.delAcked = acked
						mu.Unlock()
					}
					continue
				}
				n := w*100000 + i
				o := &op{key: fmt.Sprintf("w%02d/%06d", w, i), data: body(n, 1+n%(48<<10))}
				o.sent = time.Now()
				if !put(c, o.key, o.data) {
					continue
				}
				o.acked = time.Now()
				mine = append(mine, o)
				mu.Lock()
				ops = append(ops, o)
				mu.Unlock()
			}
		})
	}
	// The load under way: wait for enough acknowledged uploads and
	// deletes (not for a time: the machine may be slow).
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
		mu.Lock()
		puts, dels := len(ops), 0
		for _, o := range ops {
			if !o.delAcked.IsZero() {
				dels++
			}
		}
		mu.Unlock()
		if puts >= 4*workers && dels >= workers {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the load acknowledged only %d uploads and %d deletes in 2 minutes", puts, dels)
		}
	}
	out := mustRun(t, "backup", "--data", srv.Data, "--to", dest, "--keys-to", keys, "--parallel", "2")
	time.Sleep(500 * time.Millisecond)
	close(stop)
	wg.Wait()
	s := parseSummary(t, out)
	t.Logf("%s (%d operations acknowledged in all)", strings.TrimSpace(out), len(ops))

	restored := filepath.Join(dir, "restored")
	rout := mustRun(t, "restore", "--from", dest, "--keys-from", keys, "--data", restored)
	t.Log(strings.TrimSpace(rout))
	srv.Kill()
	srv2 := testenv.StartIn(t, restored, "--inline-max", "4KiB")
	c2 := testenv.NewClient(srv2.URL)
	c2.HTTP, c2.Email, c2.Bucket = srv2.HTTPClient(), c.Email, c.Bucket
	c2.Login(t, "correct horse battery")

	var present, gone, skipped int
	for _, o := range ops {
		switch {
		case !o.acked.Before(s.snapshot):
			skipped++ // acknowledged after the snapshot point: either way
		case !o.delAcked.IsZero() && o.delAcked.Before(s.snapshot):
			if st, _ := get(t, c2, o.key); st != 404 {
				t.Errorf("%s was deleted (acknowledged %s) before the snapshot point %s, but the restore serves it (status %d)",
					o.key, o.delAcked.Format(time.RFC3339Nano), s.snapshot.Format(time.RFC3339Nano), st)
			}
			gone++
		case !o.delSent.IsZero() && o.delSent.Before(s.snapshot):
			skipped++ // its delete was in flight at the snapshot point
		default:
			st, b := get(t, c2, o.key)
			if st != 200 || !bytes.Equal(b, o.data) {
				t.Errorf("%s (acknowledged %s, before the snapshot point %s): restored status %d, %d bytes, want %d bytes byte-exact",
					o.key, o.acked.Format(time.RFC3339Nano), s.snapshot.Format(time.RFC3339Nano), st, len(b), len(o.data))
			}
			present++
		}
	}
	t.Logf("checked: %d present byte-exact, %d deleted before the snapshot point and gone, %d on either side of it", present, gone, skipped)
	if present < workers || gone == 0 {
		t.Errorf("the load did too little before the snapshot point to prove anything (%d present, %d gone)", present, gone)
	}
}

// TestIncrementalAndVerify: a second backup copies only the blobs the
// first did not (counted), verify passes, and then finds a flipped byte
// in a blob of the destination, naming it; prune keeps the newest.
func TestIncrementalAndVerify(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	srv := testenv.StartIn(t, filepath.Join(dir, "data"), "--inline-max", "4KiB")
	c := srv.NewUser(t)
	dest := filepath.Join(dir, "dest")
	for i := range 20 {
		if !put(c, fmt.Sprintf("a/%d", i), body(i, 8<<10+i)) { // past the inline size: each a blob
			t.Fatal("upload failed")
		}
	}
	out, errs, err := run(t, "backup", "--data", srv.Data, "--to", dest)
	if err != nil {
		t.Fatalf("backup: %v\n%s%s", err, out, errs)
	}
	if !strings.Contains(errs, "key material") || !strings.Contains(errs, "NOT in this backup") {
		t.Errorf("a backup without --keys-to does not warn that the key material is left out: stderr %q", errs)
	}
	first := parseSummary(t, out)
	// The server exports when the last backup of its data folder ended.
	if v := lastBackupMetric(t, srv.URL); v < float64(first.snapshot.Unix()) {
		t.Errorf("coffer_backup_last_success_timestamp_seconds = %v after a backup at %s", v, first.snapshot)
	}
	if first.copied != first.blobs || first.skipped != 0 || first.blobs < 20 {
		t.Fatalf("first backup: %+v, want every blob (>= 20) copied", first)
	}
	for i := range 5 {
		if !put(c, fmt.Sprintf("b/%d", i), body(100+i, 9<<10)) {
			t.Fatal("upload failed")
		}
	}
	second := parseSummary(t, mustRun(t, "backup", "--data", srv.Data, "--to", dest))
	if second.copied != 5 || second.skipped != first.blobs {
		t.Errorf("second backup copied %d and skipped %d blobs, want 5 new ones copied and the first's %d skipped", second.copied, second.skipped, first.blobs)
	}
	if list := mustRun(t, "backup", "list", "--to", dest); !strings.Contains(list, first.id) || !strings.Contains(list, second.id) {
		t.Errorf("backup list does not list both backups:\n%s", list)
	}
	mustRun(t, "backup", "verify", "--to", dest)

	// Flip a byte of one blob in the destination.
	var victim string
	filepath.WalkDir(filepath.Join(dest, "blobs", "blobs"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && victim == "" && strings.HasSuffix(p, ".blob") {
			victim = p
		}
		return nil
	})
	if victim == "" {
		t.Fatal("no blob file in the destination")
	}
	b, err := os.ReadFile(victim)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0x40
	if err := os.WriteFile(victim, b, 0o600); err != nil {
		t.Fatal(err)
	}
	out, _, err = run(t, "backup", "verify", "--to", dest)
	if err == nil {
		t.Fatalf("verify passed a destination with a flipped byte in %s:\n%s", victim, out)
	}
	rel, _ := filepath.Rel(filepath.Join(dest, "blobs", "blobs"), victim)
	key, _ := url.PathUnescape(strings.TrimSuffix(rel, ".blob"))
	if !strings.Contains(out, "BAD "+key) {
		t.Errorf("verify does not name the damaged blob %s:\n%s", key, out)
	}

	// prune --keep 1 keeps the second backup, whole.
	mustRun(t, "backup", "prune", "--to", dest, "--keep", "1")
	list := mustRun(t, "backup", "list", "--to", dest)
	if strings.Contains(list, first.id) || !strings.Contains(list, second.id) {
		t.Errorf("after prune --keep 1:\n%s", list)
	}
}

// TestRefusals: restore refuses a non-empty folder; backup refuses the
// scale-out shape, saying what to use.
func TestRefusals(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	full := filepath.Join(dir, "full")
	os.MkdirAll(full, 0o700)
	os.WriteFile(filepath.Join(full, "x"), []byte("x"), 0o600)
	out, errs, err := run(t, "restore", "--from", filepath.Join(dir, "none"), "--data", full)
	if err == nil || !strings.Contains(errs, "not empty") {
		t.Errorf("restore into a non-empty folder: err %v, stdout %q, stderr %q; want a refusal", err, out, errs)
	}
	if _, err := os.Stat(filepath.Join(full, "meta.db")); err == nil {
		t.Error("restore wrote into the non-empty folder")
	}
	out, errs, err = run(t, "backup", "--to", filepath.Join(dir, "dest"),
		"--meta", "postgres://coffer@127.0.0.1:1/coffer", "--blob", "s3://bucket?endpoint=http://127.0.0.1:1")
	if err == nil || !strings.Contains(errs, "PostgreSQL") || !strings.Contains(errs, "docs/operations.md") {
		t.Errorf("backup of the scale-out shape: err %v, stdout %q, stderr %q; want a refusal pointing to PostgreSQL's tools", err, out, errs)
	}
	if _, err := os.Stat(filepath.Join(dir, "dest")); err == nil {
		t.Error("the refused backup made its destination")
	}
}

// lastBackupMetric reads coffer_backup_last_success_timestamp_seconds
// from the server's /metrics.
func lastBackupMetric(t *testing.T, base string) float64 {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "coffer_backup_last_success_timestamp_seconds "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("metric line %q: %v", line, err)
			}
			return f
		}
	}
	t.Fatalf("/metrics lacks coffer_backup_last_success_timestamp_seconds")
	return 0
}

// TestS3Destination: a backup to an S3 URL (MinIO, under a prefix) is
// verified and restored from there, and the restored server serves it.
func TestS3Destination(t *testing.T) {
	t.Parallel()
	m := testbackend.SharedMinIO(t)
	dest := m.BlobURL(m.CreateBucket(t) + "/nightly")
	dir := t.TempDir()
	srv := testenv.StartIn(t, filepath.Join(dir, "data"), "--inline-max", "4KiB")
	c := srv.NewUser(t)
	for i := range 10 {
		if !put(c, fmt.Sprintf("s/%d", i), body(500+i, 20<<10)) {
			t.Fatal("upload failed")
		}
	}
	keys := filepath.Join(dir, "keys")
	out, errs, err := runEnv(t, m.Env(), "backup", "--data", srv.Data, "--to", dest, "--keys-to", keys)
	if err != nil {
		t.Fatalf("backup to %s: %v\n%s%s", dest, err, out, errs)
	}
	if s := parseSummary(t, out); s.copied != 10 {
		t.Errorf("backup to S3 copied %d blobs, want 10", s.copied)
	}
	if out, errs, err := runEnv(t, m.Env(), "backup", "verify", "--to", dest); err != nil {
		t.Fatalf("verify: %v\n%s%s", err, out, errs)
	}
	restored := filepath.Join(dir, "restored")
	if out, errs, err := runEnv(t, m.Env(), "restore", "--from", dest, "--keys-from", keys, "--data", restored); err != nil {
		t.Fatalf("restore: %v\n%s%s", err, out, errs)
	}
	srv.Kill()
	srv2 := testenv.StartIn(t, restored, "--inline-max", "4KiB")
	c2 := testenv.NewClient(srv2.URL)
	c2.HTTP, c2.Email, c2.Bucket = srv2.HTTPClient(), c.Email, c.Bucket
	c2.Login(t, "correct horse battery")
	for i := range 10 {
		if st, b := get(t, c2, fmt.Sprintf("s/%d", i)); st != 200 || !bytes.Equal(b, body(500+i, 20<<10)) {
			t.Errorf("s/%d restored from S3: status %d, %d bytes", i, st, len(b))
		}
	}
}
