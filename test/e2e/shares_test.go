package e2e

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/coffer-storage/coffer/test/testenv"
)

// TestShareLimitWithCurl: a limit-1 share link with a real client (issue
// 18, N2). A download cut off after 700,000 bytes is finished by
// "curl -C -" (Range: bytes=700000-), although the link is used up; ten
// "curl -r 1-" requests (ranges past the first byte) get the body once,
// on a fresh link, and are refused after.
func TestShareLimitWithCurl(t *testing.T) {
	t.Parallel()
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("curl is not installed")
	}
	srv := testenv.Start(t)
	c := srv.NewUser(t)
	data := randBytes(t, 2<<20)
	if st, _, p := put(t, c, c.Bucket, "movie.bin", data); st != 201 {
		t.Fatalf("put: %d %+v", st, p)
	}
	share := func() string {
		var sh struct {
			URL string `json:"url"`
		}
		if st := c.JSON(t, "POST", "/api/v1/shares", map[string]any{"bucket": c.Bucket, "key": "movie.bin", "max_downloads": 1}, &sh); st != 201 {
			t.Fatalf("create share: %d", st)
		}
		return srv.URL + sh.URL
	}
	dir := t.TempDir()
	// run runs curl -sS -f with args; it reports curl's exit status.
	run := func(args ...string) int {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), curl, append([]string{"-sS", "-f"}, args...)...)
		var ee *exec.ExitError
		switch err := cmd.Run(); {
		case err == nil:
			return 0
		case errors.As(err, &ee):
			return ee.ExitCode()
		default:
			t.Fatal(err)
			return -1
		}
	}

	t.Run("resume", func(t *testing.T) {
		url := share()
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		part := make([]byte, 700_000)
		_, err = io.ReadFull(resp.Body, part)
		resp.Body.Close() // cut off: the rest is never read
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("first GET: %d %v", resp.StatusCode, err)
		}
		file := filepath.Join(dir, "movie.bin")
		if err := os.WriteFile(file, part, 0o600); err != nil {
			t.Fatal(err)
		}
		if st := run("-C", "-", "-o", file, url); st != 0 {
			t.Fatalf("curl -C -: exit status %d", st)
		}
		if got, _ := os.ReadFile(file); !bytes.Equal(got, data) {
			t.Errorf("resumed file: %d bytes, not the object", len(got))
		}
		if st := run("-o", filepath.Join(dir, "again.bin"), url); st != 22 {
			t.Errorf("a second download of the used-up link: curl exit status %d, want 22 (HTTP 404)", st)
		}
	})

	t.Run("ten ranges", func(t *testing.T) {
		url := share()
		served := 0
		for i := range 10 {
			out := filepath.Join(dir, "range.bin")
			os.Remove(out)
			switch st := run("-r", "1-", "-o", out, url); st {
			case 0:
				if got, _ := os.ReadFile(out); !bytes.Equal(got, data[1:]) {
					t.Fatalf("range %d: %d bytes, not the object from byte 1", i+1, len(got))
				}
				served++
			case 22:
			default:
				t.Fatalf("range %d: curl exit status %d", i+1, st)
			}
		}
		if served != 1 {
			t.Errorf("%d of 10 ranged downloads of a limit-1 link were served, want 1", served)
		}
	})
}
