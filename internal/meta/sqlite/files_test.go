//go:build unix

package sqlite

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestFileModes: under a umask that takes nothing away, a new database and
// its -wal and -shm are 0600, and an existing database that others could
// read is tightened. (Not parallel: the umask is the process's.)
func TestFileModes(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)

	check := func(t *testing.T, path string) {
		t.Helper()
		for _, p := range []string{path, path + "-wal", path + "-shm"} {
			fi, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := fi.Mode().Perm(), fs.FileMode(0o600); got != want {
				t.Errorf("%s: mode %v, want %v", filepath.Base(p), got, want)
			}
		}
	}
	t.Run("New", func(t *testing.T) {
		_, path := setup(t, Options{}) // a write, so -wal and -shm exist
		check(t, path)
	})
	t.Run("ExistingIsTightened", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "meta.db")
		s, err := Open(context.Background(), path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{path, path + "-wal", path + "-shm"} {
			if err := os.WriteFile(p, nil, 0o644); err != nil && !os.IsExist(err) {
				t.Fatal(err)
			}
			if err := os.Chmod(p, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		openAt(t, path, Options{})
		check(t, path)
	})
}

// TestClaimKeyFingerprintAcrossStores: two stores on one file (two
// processes) agree on one recorded fingerprint.
func TestClaimKeyFingerprintAcrossStores(t *testing.T) {
	path := filepath.Join(t.TempDir(), "meta.db")
	a, b := openAt(t, path, Options{}), openAt(t, path, Options{})
	var gotA, gotB string
	var errA, errB error
	done := make(chan struct{})
	go func() {
		defer close(done)
		gotA, errA = a.ClaimKeyFingerprint(context.Background(), "fp-a")
	}()
	gotB, errB = b.ClaimKeyFingerprint(context.Background(), "fp-b")
	<-done
	if errA != nil || errB != nil {
		t.Fatalf("ClaimKeyFingerprint: %v, %v", errA, errB)
	}
	if gotA != gotB || gotA != "fp-a" && gotA != "fp-b" {
		t.Errorf("claims returned %q and %q, want the same one of fp-a, fp-b", gotA, gotB)
	}
}

// TestDatabaseBeforeFingerprintsAdoptsTheKey: a database migrated before
// the server_key table existed gets it, empty, and records the first
// fingerprint claimed.
func TestDatabaseBeforeFingerprintsAdoptsTheKey(t *testing.T) {
	s, path := setup(t, Options{})
	if err := s.write(context.Background(), func(ctx context.Context, c *conn) error {
		if _, err := c.ExecContext(ctx, "DROP TABLE server_key"); err != nil {
			return err
		}
		_, err := c.ExecContext(ctx, "DELETE FROM schema_migrations WHERE version = 6")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openAt(t, path, Options{})
	got, err := s.ClaimKeyFingerprint(context.Background(), "fp-now")
	if err != nil {
		t.Fatal(err)
	}
	if want := "fp-now"; got != want {
		t.Errorf("ClaimKeyFingerprint on an upgraded database = %q, want %q", got, want)
	}
	if _, err := s.GetUser(context.Background(), "alice"); err != nil {
		t.Errorf("the upgraded database lost its data: %v", err)
	}
}
