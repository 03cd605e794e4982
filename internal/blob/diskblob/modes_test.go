//go:build unix

package diskblob_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestModes: with a umask that takes nothing away and folders that already
// exist with wide modes, every file the store makes is 0600 and every
// folder 0700. (Not parallel: the umask is the process's.)
func TestModes(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)

	dir := filepath.Join(t.TempDir(), "blobs")
	for _, d := range []string{dir, filepath.Join(dir, "tmp"), filepath.Join(dir, "blobs")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "LOCK"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	s := open(t, dir)
	for _, key := range []string{"a", "x/y/z", "x/y/w", "deep/er/still/k"} {
		if _, err := s.Put(t.Context(), key, strings.NewReader("data of "+key), -1); err != nil {
			t.Fatalf("Put %q: %v", key, err)
		}
	}
	var n int
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
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
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s: mode %v, want %v", p, got, want)
		}
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 12 {
		t.Errorf("walked %d entries, want at least 12 (folders, LOCK and 4 blobs)", n)
	}
}
