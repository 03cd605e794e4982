// Package replicate runs the real binary with continuous replication
// (coffer serve --replicate-to) while a writer uploads and deletes, kills
// it with SIGKILL, restores the replica to points in time (coffer restore
// --from --at) and serves each restored folder: everything acknowledged
// more than the window before the point reads byte-exact, nothing deleted
// more than the window before it is back, nothing sent after it is there,
// and every object there reads whole (no object without its blob).
package replicate

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/testbackend"
	"github.com/coffer-storage/coffer/test/testenv"
)

// op is one upload or delete the writer made.
type op struct {
	key         string
	data        []byte
	sent, acked time.Time // acked zero: not acknowledged (in flight at the kill, or failed)
	deleted     bool      // a delete was sent
	delSent     time.Time
	delAcked    time.Time
}

// writer uploads (and deletes some of what it uploaded) with n workers
// until stop closes, recording every operation.
type writer struct {
	k      testenv.S3Key
	base   string
	bucket string
	mu     sync.Mutex
	ops    []*op
}

func (w *writer) run(stop <-chan struct{}, id int) {
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		default:
		}
		size := 1 << 10
		if i%3 != 0 {
			size = 66<<10 + i%5*8<<10 // past --inline-max: a blob
		}
		o := &op{key: fmt.Sprintf("w%d/%06d", id, i), data: make([]byte, size)}
		rand.Read(o.data)
		w.mu.Lock()
		w.ops = append(w.ops, o)
		w.mu.Unlock()
		o.sent = time.Now()
		r, err := testenv.S3Do(w.k, w.base, "PUT", "/"+w.bucket+"/"+o.key, o.data)
		if err == nil && r.Status == 200 {
			w.mu.Lock()
			o.acked = time.Now()
			w.mu.Unlock()
		}
		if i%4 == 3 {
			// Delete an earlier object of this worker.
			w.mu.Lock()
			var d *op
			for j := len(w.ops) - 1; j >= 0; j-- {
				if c := w.ops[j]; !c.deleted && !c.acked.IsZero() && c.key[:3] == o.key[:3] && c != o {
					d = c
					break
				}
			}
			if d != nil {
				d.deleted, d.delSent = true, time.Now()
			}
			w.mu.Unlock()
			if d != nil {
				r, err := testenv.S3Do(w.k, w.base, "DELETE", "/"+w.bucket+"/"+d.key, nil)
				if err == nil && r.Status == 204 {
					w.mu.Lock()
					d.delAcked = time.Now()
					w.mu.Unlock()
				}
			}
		}
	}
}

// snapshot copies the records (after the writer stopped).
func (w *writer) snapshot() []op {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]op, len(w.ops))
	for i, o := range w.ops {
		out[i] = *o
	}
	return out
}

// check serves the restored folder dir and checks it against the records
// as of the point at (the restore's --at; for latest, the kill) with the
// window: it returns the observed loss, the kill (or at) minus the latest
// acknowledgement before which every acknowledged upload is there.
func check(t *testing.T, dir string, ops []op, at time.Time, window time.Duration, k testenv.S3Key, bucket string, future bool) time.Duration {
	t.Helper()
	srv := testenv.StartIn(t, dir)
	defer srv.Kill()
	sure := at.Add(-window)
	var missing []time.Time
	present, absent := 0, 0
	for _, o := range ops {
		r, err := testenv.S3Do(k, srv.S3URL, "GET", "/"+bucket+"/"+o.key, nil)
		if err != nil {
			t.Fatalf("GET %s: %v", o.key, err)
		}
		switch r.Status {
		case 200:
			present++
			if !bytes.Equal(r.Body, o.data) {
				t.Errorf("%s: restored %d bytes differ from the %d sent", o.key, len(r.Body), len(o.data))
			}
			if future && o.sent.After(at) {
				t.Errorf("%s: sent at %s, after the point %s, yet restored", o.key, o.sent.Format(time.RFC3339Nano), at.Format(time.RFC3339Nano))
			}
			if o.deleted && !o.delAcked.IsZero() && o.delAcked.Before(sure) {
				t.Errorf("%s: deleted (acknowledged %s) more than the window before the point, yet back", o.key, o.delAcked.Format(time.RFC3339Nano))
			}
		case 404:
			absent++
			deletedBefore := o.deleted && o.delSent.Before(at)
			if !o.acked.IsZero() && !deletedBefore {
				missing = append(missing, o.acked)
				if o.acked.Before(sure) {
					t.Errorf("%s: acknowledged at %s, more than the window (%s) before the point %s, but lost", o.key,
						o.acked.Format(time.RFC3339Nano), window, at.Format(time.RFC3339Nano))
				}
			}
		default:
			// Anything but whole bytes or absent: an object without its
			// blob, or worse.
			t.Errorf("GET %s: %d %s", o.key, r.Status, r.Body)
		}
	}
	loss := time.Duration(0)
	if len(missing) > 0 {
		sort.Slice(missing, func(i, j int) bool { return missing[i].Before(missing[j]) })
		loss = at.Sub(missing[0])
	}
	t.Logf("restored point %s: %d objects there, %d absent; earliest acknowledged upload missing: %s before the point",
		at.Format(time.RFC3339Nano), present, absent, loss)
	return loss
}

var restoredRE = regexp.MustCompile(`the point of (\S+)`)

// restore runs coffer restore and returns the point it restored.
func restore(t *testing.T, srv *testenv.Server, from, dir, at string) time.Time {
	t.Helper()
	args := []string{"restore", "--from", from, "--data", dir, "--keys-from", srv.Data}
	if at != "latest" {
		// Without --at, coffer restore finds the replica (no backups
		// there) and restores its latest point.
		args = append(args, "--at", at)
	}
	out, err := srv.Command(args...).CombinedOutput()
	if err != nil {
		t.Fatalf("coffer restore --at %s: %v\n%s", at, err, out)
	}
	t.Logf("coffer restore --at %s: %s", at, bytes.TrimSpace(out))
	m := restoredRE.FindSubmatch(out)
	if m == nil {
		t.Fatalf("no point in %q", out)
	}
	p, err := time.Parse(time.RFC3339Nano, string(m[1]))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// run writes with workers for d, kills the server with SIGKILL, and
// returns the records and the time of the kill.
func run(t *testing.T, srv *testenv.Server, workers int, d time.Duration, mid func()) (*writer, []op, time.Time, testenv.S3Key, string) {
	t.Helper()
	c := srv.NewUser(t)
	k := testenv.NewS3Key(t, c)
	w := &writer{k: k, base: srv.S3URL, bucket: c.Bucket}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range workers {
		wg.Go(func() { w.run(stop, i) })
	}
	if mid != nil {
		time.Sleep(d * 7 / 10)
		mid()
		time.Sleep(d - d*7/10)
	} else {
		time.Sleep(d)
	}
	srv.Kill() // SIGKILL, writers still writing
	killed := time.Now()
	close(stop)
	wg.Wait()
	return w, w.snapshot(), killed, k, c.Bucket
}

func lag(t *testing.T, srv *testenv.Server) float64 {
	r, err := srv.HTTPClient().Get(srv.URL + "/metrics")
	if err != nil {
		return math.NaN()
	}
	defer r.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(r.Body)
	m := regexp.MustCompile(`(?m)^coffer_replication_lag_seconds (\S+)`).FindSubmatch(b.Bytes())
	if m == nil {
		t.Errorf("no coffer_replication_lag_seconds in /metrics")
		return math.NaN()
	}
	v, _ := strconv.ParseFloat(string(m[1]), 64)
	return v
}

// TestKillRestoreFolder: a folder replica on the loopback machine.
//
// COFFER_TEST_REPLICATE_WINDOW sets the window (default 5s; the
// measurement of docs/PERFORMANCE.md runs it at the server's default, 10s).
func TestKillRestoreFolder(t *testing.T) {
	t.Parallel()
	window := 5 * time.Second
	if v := os.Getenv("COFFER_TEST_REPLICATE_WINDOW"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatal(err)
		}
		window = d
	}
	rep := filepath.Join(t.TempDir(), "replica")
	srv := testenv.Start(t, "--replicate-to", rep, "--replicate-window", window.String())
	var at time.Time
	var lagMid float64
	_, ops, killed, k, bucket := run(t, srv, 4, 10*time.Second, func() {
		at = time.Now()
		lagMid = lag(t, srv)
	})
	acked := 0
	for _, o := range ops {
		if !o.acked.IsZero() {
			acked++
		}
	}
	t.Logf("%d uploads sent, %d acknowledged; lag mid-run %.3fs; killed at %s", len(ops), acked, lagMid, killed.Format(time.RFC3339Nano))
	if acked < 20 {
		t.Fatalf("only %d uploads acknowledged", acked)
	}

	dir := filepath.Join(t.TempDir(), "at")
	point := restore(t, srv, rep, dir, at.UTC().Format(time.RFC3339Nano))
	if point.After(at) {
		t.Errorf("restored point %s is after --at %s", point, at)
	}
	check(t, dir, ops, at, window, k, bucket, true)

	dir = filepath.Join(t.TempDir(), "latest")
	restore(t, srv, rep, dir, "latest")
	loss := check(t, dir, ops, killed, window, k, bucket, false)
	t.Logf("RPO observed after kill -9: %.3fs (window %s)", loss.Seconds(), window)

	// A restore into a folder that holds something is refused.
	if out, err := srv.Command("restore", "--from", rep, "--data", dir).CombinedOutput(); err == nil {
		t.Errorf("restore into a non-empty folder succeeded: %s", out)
	}
}

// TestKillRestoreS3: the replica in a MinIO bucket (shorter).
func TestKillRestoreS3(t *testing.T) {
	t.Parallel()
	m := testbackend.SharedMinIO(t)
	const window = 3 * time.Second
	url := m.BlobURL(m.CreateBucket(t))
	srv := testenv.StartEnv(t, m.Env(), "--replicate-to", url, "--replicate-window", window.String())
	_, ops, killed, k, bucket := run(t, srv, 2, 4*time.Second, nil)
	dir := filepath.Join(t.TempDir(), "latest")
	restore(t, srv, url, dir, "latest")
	loss := check(t, dir, ops, killed, window, k, bucket, false)
	t.Logf("RPO observed after kill -9 (S3 replica): %.3fs", loss.Seconds())
}

// TestScaleOutRefused: --replicate-to with --blob (or --meta) is refused.
func TestScaleOutRefused(t *testing.T) {
	t.Parallel()
	out, err := exec.Command(testenv.Binary(t), "serve", "--data", t.TempDir(), "--blob", "s3://bucket?endpoint=http://127.0.0.1:1", "--replicate-to", t.TempDir()).CombinedOutput()
	if err == nil {
		t.Fatalf("serve with --blob and --replicate-to started: %s", out)
	}
	if !bytes.Contains(out, []byte("replicate-to: continuous replication is for the embedded shape")) {
		t.Errorf("refusal does not say why: %s", out)
	}
}

// TestRestartAndGracefulStop: after kill -9 and a restart on the same
// folder replication goes on, and after SIGTERM (a last pass) the latest
// point holds every acknowledged upload and delete of both lives.
func TestRestartAndGracefulStop(t *testing.T) {
	t.Parallel()
	rep := filepath.Join(t.TempDir(), "replica")
	srv := testenv.Start(t, "--replicate-to", rep)
	c := srv.NewUser(t)
	k := testenv.NewS3Key(t, c)
	var ops []op
	put := func(n int) {
		for range n {
			i := len(ops)
			o := op{key: fmt.Sprintf("r/%03d", i), data: make([]byte, 80<<10+i)}
			rand.Read(o.data)
			o.sent = time.Now()
			testenv.MustS3(t, k, srv.S3URL, "PUT", "/"+c.Bucket+"/"+o.key, o.data, 200)
			o.acked = time.Now()
			if i%5 == 4 {
				o.deleted, o.delSent = true, time.Now()
				testenv.MustS3(t, k, srv.S3URL, "DELETE", "/"+c.Bucket+"/"+o.key, nil, 204)
				o.delAcked = time.Now()
			}
			ops = append(ops, o)
		}
	}
	put(15)
	srv.Restart() // SIGKILL, then the same command again
	put(15)
	if err := srv.Term(30 * time.Second); err != nil {
		t.Fatalf("SIGTERM: %v\n%s", err, srv.Stderr())
	}
	stopped := time.Now()
	dir := filepath.Join(t.TempDir(), "latest")
	restore(t, srv, rep, dir, "latest")
	if loss := check(t, dir, ops, stopped, 0, k, c.Bucket, false); loss != 0 {
		t.Errorf("lost %s of acknowledged writes", loss)
	}
}

// metric reads one unlabelled series of the server's /metrics.
func metric(t *testing.T, srv *testenv.Server, name string) float64 {
	t.Helper()
	r, err := srv.HTTPClient().Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(r.Body)
	m := regexp.MustCompile(`(?m)^` + name + ` (\S+)`).FindSubmatch(b.Bytes())
	if m == nil {
		t.Fatalf("no %s in /metrics", name)
	}
	v, _ := strconv.ParseFloat(string(m[1]), 64)
	return v
}

// TestReplicaOutage: while the replica's store is down, uploads are
// acknowledged as before, the errors count and the lag grows; once it is
// back replication catches up, and after kill -9 the latest point holds
// every upload acknowledged before the catch-up.
func TestReplicaOutage(t *testing.T) {
	t.Parallel()
	m := testbackend.StartMinIO(t) // its own: it is stopped mid-test
	url := m.BlobURL(m.CreateBucket(t))
	srv := testenv.StartEnv(t, m.Env(), "--replicate-to", url, "--replicate-window", "2s")
	c := srv.NewUser(t)
	k := testenv.NewS3Key(t, c)
	var ops []op
	put := func(n int) {
		for range n {
			o := op{key: fmt.Sprintf("o/%03d", len(ops)), data: make([]byte, 70<<10+len(ops))}
			rand.Read(o.data)
			o.sent = time.Now()
			testenv.MustS3(t, k, srv.S3URL, "PUT", "/"+c.Bucket+"/"+o.key, o.data, 200)
			o.acked = time.Now()
			ops = append(ops, o)
		}
	}
	put(5)
	m.Stop()
	put(10) // acknowledged while the replica is down
	deadline := time.Now().Add(60 * time.Second)
	for metric(t, srv, "coffer_replication_errors_total") == 0 || metric(t, srv, "coffer_replication_lag_seconds") < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("after 60 s down: errors %v, lag %v", metric(t, srv, "coffer_replication_errors_total"), metric(t, srv, "coffer_replication_lag_seconds"))
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
	put(5)
	caughtUp := time.Now()
	for metric(t, srv, "coffer_replication_lag_seconds") > time.Since(caughtUp).Seconds() {
		// The lag counts from the start of the last whole pass: once it is
		// below the time since the last upload, that upload is replicated.
		if time.Now().After(caughtUp.Add(90 * time.Second)) {
			t.Fatalf("no catch-up 90 s after the replica came back: lag %v\n%s", metric(t, srv, "coffer_replication_lag_seconds"), srv.Stderr())
		}
		time.Sleep(200 * time.Millisecond)
	}
	srv.Kill()
	dir := filepath.Join(t.TempDir(), "latest")
	restore(t, srv, url, dir, "latest")
	if loss := check(t, dir, ops, caughtUp, 0, k, c.Bucket, false); loss != 0 {
		t.Errorf("lost %s of writes acknowledged before the catch-up", loss)
	}
}
