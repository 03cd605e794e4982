package e2e

import (
	"bytes"
	"encoding/base64"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/s3api/sigv4"
	"github.com/coffer-storage/coffer/test/testenv"
)

// The background jobs of encryption at rest, against the binary, on both
// shapes (docs/encryption.md#background-jobs): the re-wrap after a key
// rotation while uploads run, coffer encrypt over plaintext data, and a
// job that survives kill -9.

// jobJSON is a job as GET /api/v1/admin/kms/jobs/{name} returns it.
type jobJSON struct {
	Name      string    `json:"name"`
	State     string    `json:"state"`
	Pass      int64     `json:"pass"`
	Done      int64     `json:"done"`
	Skipped   int64     `json:"skipped"`
	Failed    int64     `json:"failed"`
	LastError string    `json:"last_error"`
	StartedAt time.Time `json:"started_at"`
}

// waitJob polls the job until it is done.
func waitJob(t *testing.T, admin *testenv.Client, name string, timeout time.Duration) jobJSON {
	t.Helper()
	var j jobJSON
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if st := admin.JSON(t, "GET", "/api/v1/admin/kms/jobs/"+url.PathEscape(name), nil, &j); st != 200 {
			t.Fatalf("GET job %s: %d", name, st)
		}
		if j.State == "done" {
			return j
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("job %s not done after %v: %+v", name, timeout, j)
	return j
}

// kekUsage returns the stored data keys by KEK version.
func kekUsage(t *testing.T, admin *testenv.Client) (map[string]int64, string) {
	t.Helper()
	var out struct {
		Usage   map[string]int64 `json:"kek_usage"`
		Current string           `json:"current_kek"`
	}
	if st := admin.JSON(t, "GET", "/api/v1/admin/kms/jobs", nil, &out); st != 200 {
		t.Fatalf("GET jobs: %d", st)
	}
	return out.Usage, out.Current
}

// newKeyring writes a keyring with version 1 of the default key.
func newKeyring(t *testing.T) string {
	t.Helper()
	keyring := filepath.Join(t.TempDir(), "keyring")
	if err := os.WriteFile(keyring, []byte("default 1 "+base64.StdEncoding.EncodeToString(randBytes(t, 32))+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return keyring
}

// startShape starts a server of the test's shape with args; in scale-out
// it returns the backends too (nil otherwise).
func startJobServer(t *testing.T, args ...string) (*testenv.Server, *testenv.Backends) {
	t.Helper()
	if testenv.ScaleOut() {
		b := testenv.NewBackends(t)
		return testenv.StartNode(t, b, args...), b
	}
	return testenv.Start(t, args...), nil
}

// rawPut is a signed S3 PUT usable from any goroutine.
func (u *s3User) rawPut(bucket, key string, data []byte) error {
	req, err := http.NewRequest("PUT", u.srv.S3URL+"/"+bucket+"/"+key, bytes.NewReader(data))
	if err != nil {
		return err
	}
	if err := sigv4.SignRequest(req, u.id, u.secret, "us-east-1", hexSHA(data), time.Now()); err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("PUT %s: %d", key, resp.StatusCode)
	}
	return nil
}

// multipartPut uploads data in parts of the given sizes through S3.
func multipartPut(t *testing.T, u *s3User, bucket, key string, data []byte, sizes ...int) {
	t.Helper()
	init := u.s3(t, "POST", "/"+bucket+"/"+key+"?uploads", nil, "")
	var ir struct {
		UploadID string `xml:"UploadId"`
	}
	xml.Unmarshal(init.body, &ir)
	if ir.UploadID == "" {
		t.Fatalf("create upload: %d %s", init.status, init.body)
	}
	complete := "<CompleteMultipartUpload>"
	off := 0
	for i, n := range sizes {
		pr := u.s3(t, "PUT", fmt.Sprintf("/%s/%s?partNumber=%d&uploadId=%s", bucket, key, i+1, url.QueryEscape(ir.UploadID)), data[off:off+n], "")
		if pr.status != 200 {
			t.Fatalf("part %d: %d %s", i+1, pr.status, pr.body)
		}
		complete += fmt.Sprintf("<Part><PartNumber>%d</PartNumber><ETag>%s</ETag></Part>", i+1, pr.header.Get("ETag"))
		off += n
	}
	complete += "</CompleteMultipartUpload>"
	if r := u.s3(t, "POST", "/"+bucket+"/"+key+"?uploadId="+url.QueryEscape(ir.UploadID), []byte(complete), ""); r.status != 200 || bytes.Contains(r.body, []byte("<Error>")) {
		t.Fatalf("complete: %d %s", r.status, r.body)
	}
}

// TestRotateWhileUploading: coffer kms rotate while PUTs run; the re-wrap
// job then moves every stored data key to the new version (the old one is
// referenced by no row), on both nodes of a cluster at once in the
// scale-out shape; with the old version deleted from the keyring, every
// object still reads byte-exact.
func TestRotateWhileUploading(t *testing.T) {
	keyring := newKeyring(t)
	args := []string{"--encryption", "on", "--kms", "local://" + keyring}
	srv, backends := startJobServer(t, args...)
	if backends != nil {
		testenv.StartNode(t, backends, args...) // a second node competes for the job
	}
	u := newS3User(t, srv)
	admin := newAdmin(t, srv)
	want := sync.Map{}
	put := func(key string, data []byte) {
		t.Helper()
		if err := u.rawPut(u.Bucket, key, data); err != nil {
			t.Fatal(err)
		}
		want.Store(key, data)
	}
	for i := range 10 {
		put(fmt.Sprintf("before-%02d", i), fill(fmt.Sprintf("BEFORE-%d-", i), []int{100, 200_000}[i%2]))
	}
	multi := fill("MULTI-", 5<<20+1000)
	multipartPut(t, u, u.Bucket, "multi", multi, 5<<20, 1000)
	want.Store("multi", multi)

	// Uploads in flight across the rotation.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var n, errs atomic.Int64
	for w := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				key := fmt.Sprintf("during-%d-%04d", w, i)
				data := fill(key+"-", []int{300, 150_000}[i%2])
				if err := u.rawPut(u.Bucket, key, data); err != nil {
					errs.Add(1)
					t.Errorf("PUT during rotation: %v", err)
					continue
				}
				want.Store(key, data)
				n.Add(1)
			}
		})
	}
	stopWriters := sync.OnceFunc(func() { close(stop); wg.Wait() })
	defer stopWriters() // before the server goes, even on t.Fatal
	time.Sleep(time.Second)
	out, err := cli(t, srv, "kms", "rotate", "--kms", "local://"+keyring)
	if err != nil || !strings.Contains(out, "local:default#2 (was local:default#1)") || !strings.Contains(out, "job rewrap: running") {
		t.Fatalf("coffer kms rotate: %v\n%s", err, out)
	}
	time.Sleep(3 * time.Second)
	stopWriters()
	if n.Load() < 8 {
		t.Fatalf("only %d PUTs during the rotation", n.Load())
	}

	j := waitJob(t, admin, "rewrap", 3*time.Minute)
	if j.Failed != 0 || j.Done == 0 {
		t.Errorf("re-wrap job: %+v; want rows done, none failed", j)
	}
	usage, current := kekUsage(t, admin)
	if current != "local:default#2" || usage["local:default#1"] != 0 || usage["local:default#2"] == 0 {
		t.Errorf("after the re-wrap: current %q, usage %v; want nothing under local:default#1", current, usage)
	}
	if out, err := cli(t, srv, "kms", "status"); err != nil || !strings.Contains(out, "job rewrap: done") || strings.Contains(out, "local:default#1 ") {
		t.Errorf("coffer kms status: %v\n%s", err, out)
	}

	// Retire version 1: delete it from the keyring, restart, read all.
	kr, err := os.ReadFile(keyring)
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, l := range strings.Split(string(kr), "\n") {
		if !strings.HasPrefix(l, "default 1 ") && l != "" {
			kept = append(kept, l)
		}
	}
	if len(kept) != 1 || !strings.HasPrefix(kept[0], "default 2 ") {
		t.Fatalf("keyring: %q", kr)
	}
	if err := os.WriteFile(keyring, []byte(strings.Join(kept, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv.Restart()
	count := 0
	want.Range(func(k, v any) bool {
		wantBody(t, u, u.Bucket, k.(string), v.([]byte))
		count++
		return true
	})
	wantRanges(t, u, u.Bucket, "multi", multi, 64<<10, 5<<20)
	wantRanges(t, u, u.Bucket, "before-01", fill("BEFORE-1-", 200_000), 64<<10)
	t.Logf("%d objects (%d written during the rotation) read back under version 2 alone", count, n.Load())
}

// TestEncryptExistingData: plaintext objects (blob, inline, multipart)
// stay readable after encryption is turned on; coffer encrypt then
// encrypts them in the background without changing what readers see
// (bytes, ranges, ETag, size, type, Last-Modified), and no blob holds
// their plaintext any more.
func TestEncryptExistingData(t *testing.T) {
	keyring := newKeyring(t)
	srv, backends := startJobServer(t, "--kms", "local://"+keyring)
	u := newS3User(t, srv)
	const marker = "PLAIN-BEFORE-ENCRYPT-5e1f-"
	objs := map[string][]byte{
		"blob":   fill(marker, 300_000),
		"inline": fill(marker, 700),
		"multi":  fill(marker, 5<<20+999),
	}
	for _, k := range []string{"blob", "inline"} {
		if err := u.rawPut(u.Bucket, k, objs[k]); err != nil {
			t.Fatal(err)
		}
	}
	if r := u.s3(t, "PUT", "/"+u.Bucket+"/typed.txt", objs["blob"][:1000], "", "Content-Type", "text/x-coffer"); r.status != 200 {
		t.Fatalf("PUT typed: %d", r.status)
	}
	objs["typed.txt"] = objs["blob"][:1000]
	multipartPut(t, u, u.Bucket, "multi", objs["multi"], 5<<20, 999)
	// Embedded: the whole data folder (blobs, and meta.db, where the inline
	// object's plaintext row is deleted with SQLite's secure_delete);
	// scale-out: MinIO's data folder (PostgreSQL keeps dead tuples and WAL
	// until vacuumed and recycled: see operations.md).
	scanDirs := []string{srv.Data}
	if backends != nil {
		scanDirs = []string{filepath.Join(backends.MinIO.Dir, "data")}
	}
	scanner := storageScanner{dirs: scanDirs}
	if found := scanner.contains(t, []byte(marker)); len(found) == 0 {
		t.Fatal("the scanner does not find the plaintext blobs: it cannot prove anything")
	}
	heads := map[string]http.Header{}
	for k := range objs {
		heads[k] = u.s3(t, "HEAD", "/"+u.Bucket+"/"+k, nil, "").header
	}

	// Encryption on: the plaintext objects read as before.
	srv.Args = append(slices.Clone(srv.Args), "--encryption", "on")
	srv.Restart()
	for k, data := range objs {
		wantBody(t, u, u.Bucket, k, data)
	}
	admin := newAdmin(t, srv)
	if st := admin.JSON(t, "POST", "/api/v1/admin/kms/encrypt", map[string]any{"bucket": "no-such-bucket"}, nil); st != 404 {
		t.Errorf("encrypt a missing bucket: %d, want 404", st)
	}
	if st := admin.JSON(t, "POST", "/api/v1/admin/kms/encrypt", map[string]any{}, nil); st != 400 {
		t.Errorf("encrypt without a bucket: %d, want 400", st)
	}
	if st := u.JSON(t, "POST", "/api/v1/admin/kms/encrypt", map[string]any{"bucket": u.Bucket}, nil); st != 403 {
		t.Errorf("encrypt as a user: %d, want 403", st)
	}
	out, err := cli(t, srv, "encrypt", "--bucket", u.Bucket, "--wait")
	if err != nil || !strings.Contains(out, "job encrypt:"+u.Bucket+": done, pass 1, 4 done, 0 skipped, 0 failed") {
		t.Fatalf("coffer encrypt --wait: %v\n%s", err, out)
	}
	for k, data := range objs {
		wantBody(t, u, u.Bucket, k, data)
		h := u.s3(t, "HEAD", "/"+u.Bucket+"/"+k, nil, "").header
		if h.Get("X-Amz-Server-Side-Encryption") != "AES256" {
			t.Errorf("%s after coffer encrypt: encryption %q, want AES256", k, h.Get("X-Amz-Server-Side-Encryption"))
		}
		for _, name := range []string{"ETag", "Content-Length", "Content-Type", "Last-Modified"} {
			if h.Get(name) != heads[k].Get(name) {
				t.Errorf("%s: %s %q after coffer encrypt, %q before", k, name, h.Get(name), heads[k].Get(name))
			}
		}
	}
	wantRanges(t, u, u.Bucket, "multi", objs["multi"], 64<<10, 5<<20)
	wantRanges(t, u, u.Bucket, "blob", objs["blob"], 64<<10, 2*(64<<10))
	wantRanges(t, u, u.Bucket, "inline", objs["inline"])

	// The replaced plaintext blobs are garbage: reclaimed (coffer gc runs
	// with the server stopped; closing meta.db checkpoints its WAL), the
	// marker is nowhere in the stores.
	srv.Kill()
	if out, err := cli(t, srv, "gc"); err != nil {
		t.Fatalf("coffer gc: %v\n%s", err, out)
	}
	// (MinIO moves deleted objects to its own trash, .minio.sys/tmp/.trash,
	// and purges that in the background: not the bucket's contents.)
	found := slices.DeleteFunc(scanner.contains(t, []byte(marker)), func(p string) bool {
		return strings.Contains(filepath.ToSlash(p), "/.minio.sys/tmp/.trash/")
	})
	if len(found) > 0 {
		t.Errorf("plaintext found in the blob store after coffer encrypt: %v", found)
	}
	srv.Restart()
	for k, data := range objs {
		wantBody(t, u, u.Bucket, k, data)
	}
}

// TestEncryptionJobSurvivesKill: kill -9 in the middle of coffer encrypt; the
// restarted server resumes the job from its saved cursor (its counters
// carry on, it is not restarted) and finishes it.
func TestEncryptionJobSurvivesKill(t *testing.T) {
	keyring := newKeyring(t)
	// Plaintext objects (encryption off), then a slow job: pages of 2
	// rows, 300 ms apart.
	srv, _ := startJobServer(t, "--kms", "local://"+keyring, "--kms-job-page", "2", "--kms-job-pause", "300ms")
	u := newS3User(t, srv)
	want := map[string][]byte{}
	for i := range 16 {
		key := fmt.Sprintf("obj-%02d", i)
		data := fill(key+"-", []int{500, 90_000}[i%2])
		if err := u.rawPut(u.Bucket, key, data); err != nil {
			t.Fatal(err)
		}
		want[key] = data
	}
	admin := newAdmin(t, srv)
	var started jobJSON
	if st := admin.JSON(t, "POST", "/api/v1/admin/kms/encrypt", map[string]any{"all": true}, &started); st != 202 || started.Name != "encrypt:" {
		t.Fatalf("start encrypt: %d %+v", st, started)
	}
	var before jobJSON
	for deadline := time.Now().Add(30 * time.Second); before.Done < 4; {
		if time.Now().After(deadline) {
			t.Fatalf("job made no progress: %+v", before)
		}
		admin.JSON(t, "GET", "/api/v1/admin/kms/jobs/encrypt:", nil, &before)
		time.Sleep(50 * time.Millisecond)
	}
	srv.Kill()
	if before.State != "running" || before.Done >= 16 {
		t.Fatalf("killed too late: %+v", before)
	}
	srv.Restart()
	admin.Login(t, "admin password")
	j := waitJob(t, admin, "encrypt:", 2*time.Minute)
	if j.Failed != 0 || j.Done < before.Done || !j.StartedAt.Equal(before.StartedAt) || j.Pass != 1 {
		t.Errorf("after the restart: %+v; before the kill: %+v (want it resumed: same start, counters carried on)", j, before)
	}
	for k, data := range want {
		wantBody(t, u, u.Bucket, k, data)
		if h := u.s3(t, "HEAD", "/"+u.Bucket+"/"+k, nil, "").header; h.Get("X-Amz-Server-Side-Encryption") != "AES256" {
			t.Errorf("%s: not encrypted after the job", k)
		}
	}
	// Progress in the metrics (this node's view: what it did since the
	// restart, and the job as it last saved it).
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, line := range []string{
		`coffer_kms_job_finished{kind="encrypt"} 1`,
		fmt.Sprintf(`coffer_kms_job_done_rows{kind="encrypt"} %d`, j.Done),
		"coffer_kms_job_running 0",
	} {
		if !strings.Contains(string(body), line+"\n") {
			t.Errorf("/metrics lacks %q", line)
		}
	}
	if !regexp.MustCompile(`(?m)^coffer_kms_encrypted_objects_total [1-9]`).Match(body) {
		t.Errorf("/metrics: coffer_kms_encrypted_objects_total not counted")
	}
}
