package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// leftovers lists what is in dir besides the names in keep.
func leftovers(t *testing.T, dir string, keep ...string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		found := false
		for _, k := range keep {
			found = found || e.Name() == k
		}
		if !found {
			out = append(out, e.Name())
		}
	}
	return out
}

func TestCreate(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "server.key")
	if err := Create(p, []byte("one\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fi.Mode().Perm(), fs.FileMode(0o600); got != want {
		t.Errorf("mode %v, want %v", got, want)
	}
	// A second Create leaves the first file alone.
	err = Create(p, []byte("two\n"), 0o600)
	if !errors.Is(err, fs.ErrExist) {
		t.Errorf("Create over an existing file: %v, want ErrExist", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "one\n" {
		t.Errorf("content %q, want the first", b)
	}
	if l := leftovers(t, dir, "server.key"); len(l) != 0 {
		t.Errorf("temporary files left: %v", l)
	}
}

// TestCreateRace: of concurrent creators exactly one wins, and the file
// holds its bytes whole.
func TestCreateRace(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "kms.keyring")
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { errs[i] = Create(p, []byte{byte('a' + i), '\n'}, 0o600) })
	}
	wg.Wait()
	won := -1
	for i, err := range errs {
		switch {
		case err == nil && won >= 0:
			t.Errorf("creators %d and %d both succeeded", won, i)
		case err == nil:
			won = i
		case !errors.Is(err, fs.ErrExist):
			t.Errorf("creator %d: %v", i, err)
		}
	}
	if won < 0 {
		t.Fatal("no creator succeeded")
	}
	if b, _ := os.ReadFile(p); string(b) != string([]byte{byte('a' + won), '\n'}) {
		t.Errorf("content %q is not the winner's", b)
	}
	if l := leftovers(t, dir, "kms.keyring"); len(l) != 0 {
		t.Errorf("temporary files left: %v", l)
	}
}

func TestReplace(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "kms.keyring")
	for _, s := range []string{"one\n", "two\n"} {
		if err := Replace(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(p); string(b) != s {
			t.Errorf("content %q, want %q", b, s)
		}
	}
	if l := leftovers(t, dir, "kms.keyring"); len(l) != 0 {
		t.Errorf("temporary files left: %v", l)
	}
	// A folder that does not exist: an error, nothing made.
	if err := Create(filepath.Join(dir, "missing", "f"), []byte("x"), 0o600); err == nil {
		t.Error("Create in a missing folder succeeded")
	}
}
