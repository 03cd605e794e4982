package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/test/testenv"
)

// refusedStart runs `coffer args...`, which must exit by itself with a
// non-zero status within 30 s, and returns its stderr.
func refusedStart(t *testing.T, env []string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, testenv.Binary(t), args...)
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("coffer %s did not exit within 30 s (it started?)\n%s", strings.Join(args, " "), stderr.String())
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() == 0 {
		t.Fatalf("coffer %s: %v, want a non-zero exit\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stderr.String()
}

// wantKeyRefusal fails unless stderr is the refusal of keyFile.
func wantKeyRefusal(t *testing.T, stderr, keyFile string) {
	t.Helper()
	for _, want := range []string{keyFile, "initialised with a different server key", "every node sharing a metadata store must use the same --server-key-file"} {
		if !strings.Contains(strings.ToLower(stderr), strings.ToLower(want)) {
			t.Errorf("stderr does not say %q:\n%s", want, stderr)
		}
	}
}

func newKeyFile(t *testing.T, path string) {
	t.Helper()
	k := make([]byte, 32)
	rand.Read(k)
	if err := os.WriteFile(path, []byte(hex.EncodeToString(k)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestReplacedServerKeyRefused: a data folder whose server.key is replaced
// does not start (nor do admin commands that use the key), rather than
// serving with a key that fails every token and S3 key made before. With
// the original key back, everything works again.
func TestReplacedServerKeyRefused(t *testing.T) {
	if testenv.ScaleOut() {
		t.Skip("the embedded shape's data folder; test/scaleout covers nodes on PostgreSQL")
	}
	srv := testenv.Start(t)
	c := srv.NewUser(t)
	srv.Kill()

	keyFile := filepath.Join(srv.Data, "server.key")
	original, err := os.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	newKeyFile(t, keyFile)

	stderr := refusedStart(t, nil, "serve", "--data", srv.Data, "--listen", "127.0.0.1:0", "--s3-listen", "127.0.0.1:0")
	wantKeyRefusal(t, stderr, keyFile)
	stderr = refusedStart(t, nil, "key", "create", "--data", srv.Data, "--email", c.Email)
	wantKeyRefusal(t, stderr, keyFile)

	// A missing key file is not silently replaced either.
	if err := os.Remove(keyFile); err != nil {
		t.Fatal(err)
	}
	stderr = refusedStart(t, nil, "serve", "--data", srv.Data, "--listen", "127.0.0.1:0", "--s3-listen", "127.0.0.1:0")
	wantKeyRefusal(t, stderr, keyFile)
	if _, err := os.Stat(keyFile); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the refused start left a generated key file: %v", err)
	}

	if err := os.WriteFile(keyFile, original, 0o600); err != nil {
		t.Fatal(err)
	}
	srv.Restart()
	if st := c.JSON(t, "GET", "/api/v1/me", nil, nil); st != 200 {
		t.Errorf("GET /me with a token from before, original key back: %d, want 200", st)
	}
}

// TestDataFolderModes: with a data folder and a blobs folder that already
// exist with mode 0755 and a umask of 022, after inline and blob uploads
// and a restart every file in the data folder is 0600 and every folder
// 0700, and the tightening was logged.
func TestDataFolderModes(t *testing.T) {
	if testenv.ScaleOut() {
		t.Skip("the embedded shape's data folder")
	}
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)

	data := filepath.Join(t.TempDir(), "data")
	for _, d := range []string{data, filepath.Join(data, "blobs")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	srv := testenv.Start(t, "--data", data)
	if !strings.Contains(srv.Stderr(), "tightened it to owner-only") {
		t.Errorf("no warning about the data folder's mode was logged:\n%s", srv.Stderr())
	}
	c := srv.NewUser(t)
	for key, size := range map[string]int{"inline.txt": 100, "dir/sub/blob.bin": 300 << 10, "big.bin": 2 << 20} {
		resp := c.Do(t, "PUT", testenv.FileURL(c.Bucket, key), bytes.NewReader(content(uint64(size), size)))
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 201 {
			t.Fatalf("PUT %s: %d", key, resp.StatusCode)
		}
	}
	srv.Restart()
	resp := c.Do(t, "PUT", testenv.FileURL(c.Bucket, "after-restart.bin"), bytes.NewReader(content(7, 200<<10)))
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 201 {
		t.Fatalf("PUT after restart: %d", resp.StatusCode)
	}

	seen := map[string]bool{}
	err := filepath.WalkDir(data, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		want := fs.FileMode(0o600)
		if d.IsDir() {
			want = 0o700
		}
		rel, _ := filepath.Rel(data, p)
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s: mode %v, want %v", rel, got, want)
		}
		seen[rel] = true
		if strings.HasSuffix(p, ".blob") {
			seen["a blob"] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{".", "server.key", "meta.db", "meta.db-wal", "meta.db-shm", "blobs", "a blob"} {
		if !seen[want] {
			t.Errorf("%s not found in the data folder (walked %d entries)", want, len(seen))
		}
	}
}
