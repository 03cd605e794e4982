package e2e

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/test/testenv"
)

// The real tus clients: tuspy (Python, in scripts/test.sh's venv) and
// tus-js-client under Node (npm, in ~/.cache/coffer-tools/node). Missing clients skip
// the test, or fail it under COFFER_REQUIRE_CLIENTS.

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

func missingClient(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("COFFER_REQUIRE_CLIENTS") != "" {
		t.Fatalf("COFFER_REQUIRE_CLIENTS is set but "+format+" (scripts/test.sh installs the clients)", args...)
	}
	t.Skipf(format+"; run scripts/test.sh to install the tus clients", args...)
}

// tuspy returns a Python interpreter that imports tusclient.
func tuspy(t *testing.T) string {
	t.Helper()
	p := os.Getenv("COFFER_PYTHON")
	if p == "" {
		p = filepath.Join(repoRoot(), ".tools", "venv", "bin", "python")
	}
	if out, err := exec.Command(p, "-c", "import tusclient").CombinedOutput(); err != nil {
		missingClient(t, "%s cannot import tusclient (tuspy): %v %s", p, err, out)
	}
	return p
}

// tusNode returns node and a folder holding client.mjs next to a
// node_modules with tus-js-client.
func tusNode(t *testing.T) (string, string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		missingClient(t, "no node")
	}
	mods := os.Getenv("COFFER_NODE_MODULES")
	if mods == "" {
		mods = filepath.Join(repoRoot(), ".tools", "node", "node_modules")
	}
	if _, err := os.Stat(filepath.Join(mods, "tus-js-client")); err != nil {
		missingClient(t, "no tus-js-client in %s", mods)
	}
	dir := t.TempDir()
	abs, _ := filepath.Abs(mods)
	if err := os.Symlink(abs, filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(repoRoot(), "test", "e2e", "testdata", "tus", "client.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "client.mjs"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	return node, dir
}

func runClient(t *testing.T, name string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil {
		t.Logf("%s %s: %v\nstderr: %s", filepath.Base(name), strings.Join(args[:1], " "), err, errb.String())
	}
	return out.String(), err
}

func writeTemp(t *testing.T, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "upload.bin")
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func wantObject(t *testing.T, c *testenv.Client, key string, data []byte, ctype string) {
	t.Helper()
	r, got := get(t, c, c.Bucket, key)
	if r.StatusCode != 200 || !bytes.Equal(got, data) {
		t.Fatalf("object %s: %d, %d bytes, want %d", key, r.StatusCode, len(got), len(data))
	}
	if ctype != "" && r.Header.Get("Content-Type") != ctype {
		t.Errorf("Content-Type %q, want %q", r.Header.Get("Content-Type"), ctype)
	}
}

// tusOffset HEADs an upload.
func tusOffset(t *testing.T, c *testenv.Client, path string) int {
	t.Helper()
	resp, _ := tusDo(t, c, "HEAD", path, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("HEAD %s: %d", path, resp.StatusCode)
	}
	n, _ := strconv.Atoi(resp.Header.Get("Upload-Offset"))
	return n
}

func TestTusClients(t *testing.T) {
	srv := testenv.Start(t)
	c := srv.NewUser(t)
	endpoint := srv.URL + "/api/v1/tus/"
	data := randBytes(t, 6<<20+12345)
	file := writeTemp(t, data)

	t.Run("tuspy in chunks with checksums", func(t *testing.T) {
		py := tuspy(t)
		script := filepath.Join(repoRoot(), "test", "e2e", "testdata", "tus", "client.py")
		if _, err := runClient(t, py, script, endpoint, c.Token, file, c.Bucket, "py/whole.bin", strconv.Itoa(1<<20)); err != nil {
			t.Fatal(err)
		}
		wantObject(t, c, "py/whole.bin", data, "application/x-tuspy")
	})

	t.Run("tuspy resumes an upload whose connection was cut mid-PATCH", func(t *testing.T) {
		py := tuspy(t)
		script := filepath.Join(repoRoot(), "test", "e2e", "testdata", "tus", "client.py")
		path := tusCreate(t, c, "Upload-Length", strconv.Itoa(len(data)), "Upload-Metadata", tusMeta("bucket", c.Bucket, "key", "py/resumed.bin", "content-type", "application/x-tuspy"))
		ctx, cancel := context.WithCancel(t.Context())
		body := testenv.NewStallingBody(ctx, data[:2<<20+77])
		done := make(chan struct{})
		go func() {
			defer close(done)
			resp, err := c.DoErr(ctx, "PATCH", path, body, int64(len(data)), "Tus-Resumable", "1.0.0", "Upload-Offset", "0", "Content-Type", "application/offset+octet-stream")
			if err == nil {
				resp.Body.Close()
			}
		}()
		<-body.Sent()
		time.Sleep(200 * time.Millisecond)
		cancel() // the connection is cut
		<-done
		var off int
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			if off = tusOffset(t, c, path); off > 0 {
				break
			}
		}
		if off != 2<<20+77 {
			t.Fatalf("offset after the cut: %d, want %d (what arrived)", off, 2<<20+77)
		}
		if r, _ := get(t, c, c.Bucket, "py/resumed.bin"); r.StatusCode != 404 {
			t.Fatalf("half-written object visible: %d", r.StatusCode)
		}
		out, err := runClient(t, py, script, endpoint, c.Token, file, c.Bucket, "ignored", strconv.Itoa(1<<20), srv.URL+path)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out, "resumed at "+strconv.Itoa(off)) {
			t.Errorf("tuspy did not resume at %d: %q", off, out)
		}
		wantObject(t, c, "py/resumed.bin", data, "application/x-tuspy")
	})

	t.Run("tus-js-client killed mid-upload, resumed by another process", func(t *testing.T) {
		node, dir := tusNode(t)
		script := filepath.Join(dir, "client.mjs")
		cmd := exec.CommandContext(t.Context(), node, script, endpoint, c.Token, file, c.Bucket, "js/resumed.bin", strconv.Itoa(2<<20), "-", strconv.Itoa(3<<20))
		stdout, _ := cmd.StdoutPipe()
		var errb bytes.Buffer
		cmd.Stderr = &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var url string
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "KILLED "); ok {
				url = u
			}
		}
		io.Copy(io.Discard, stdout)
		err := cmd.Wait()
		if url == "" || err == nil {
			t.Fatalf("the first process was not killed mid-upload: %v, url %q\n%s", err, url, errb.String())
		}
		path := url[strings.Index(url, "/api/v1/tus/"):]
		var off int
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			if off = tusOffset(t, c, path); off > 2<<20 {
				break
			}
		}
		if off < 2<<20 || off >= len(data) {
			t.Fatalf("offset after the kill: %d, want between one chunk and the end", off)
		}
		if r, _ := get(t, c, c.Bucket, "js/resumed.bin"); r.StatusCode != 404 {
			t.Fatalf("half-written object visible: %d", r.StatusCode)
		}
		out, err := runClient(t, node, script, endpoint, c.Token, file, c.Bucket, "ignored", strconv.Itoa(2<<20), url)
		if err != nil {
			t.Fatal(err)
		}
		if strings.TrimSpace(out) != url {
			t.Errorf("resumed upload URL %q, want %q", strings.TrimSpace(out), url)
		}
		wantObject(t, c, "js/resumed.bin", data, "application/x-tus-js")
	})
}
