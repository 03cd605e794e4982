package cli

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/meta/sqlite"
)

// runCLI runs the coffer command line in process with env as its
// environment and returns the exit status and what it wrote.
func runCLI(t *testing.T, env map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Run(context.Background(), args, Env{Stdout: &out, Stderr: &errb, Getenv: func(k string) string { return env[k] }})
	return code, out.String(), errb.String()
}

// TestAdminRelativeData: the admin commands resolve a relative --data or
// COFFER_DATA as coffer serve does (config.ResolvePaths), so that both
// name one folder; kms rotate refused any relative folder (the local
// keyring wants an absolute path). Only key create reads the server key.
func TestAdminRelativeData(t *testing.T) {
	t.Chdir(t.TempDir())
	const email = "admin@example.com"
	for _, c := range []struct {
		env  map[string]string
		args []string
	}{
		{nil, []string{"user", "create", "--data", "rel/data", "--email", email, "--password", "correct horse battery", "--admin"}},
		{map[string]string{"COFFER_DATA": "rel/data"}, []string{"user", "quota", "--email", email, "--bytes", "1GiB"}},
		{map[string]string{"COFFER_DATA": "rel/data"}, []string{"invite", "create"}},
		{nil, []string{"gc", "--data", "./rel/../rel/data"}},
	} {
		if code, _, stderr := runCLI(t, c.env, c.args...); code != 0 {
			t.Fatalf("%v (env %v): exit %d\n%s", c.args, c.env, code, stderr)
		}
	}
	if _, err := os.Stat("rel/data/server.key"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("commands that use no server key made one: %v", err)
	}
	serveOneRequest(t, "--data", "rel/data") // makes the keyring and the key
	if code, stdout, stderr := runCLI(t, map[string]string{"COFFER_DATA": "rel/data"}, "kms", "rotate"); code != 0 || !strings.Contains(stdout, "local:default#2") {
		t.Errorf("kms rotate with a relative COFFER_DATA: exit %d\n%s%s", code, stdout, stderr)
	}
	if code, stdout, stderr := runCLI(t, nil, "key", "create", "--data", "rel/data", "--email", email); code != 0 || !strings.Contains(stdout, "secret_access_key") {
		t.Errorf("key create: exit %d\n%s%s", code, stdout, stderr)
	}
}

// TestAdminMissingDataFolder: a command that changes or reads what a data
// folder holds refuses one that does not exist (a mistyped --data)
// instead of making an empty one.
func TestAdminMissingDataFolder(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, args := range [][]string{
		{"user", "quota", "--email", "a@example.com", "--bytes", "1"},
		{"user", "admin", "--email", "a@example.com", "--on"},
		{"user", "delete", "--email", "a@example.com"},
		{"key", "list", "--email", "a@example.com"},
		{"key", "create", "--email", "a@example.com"},
		{"invite", "list"},
		{"gc"},
		{"kms", "status"},
		{"kms", "rotate"},
		{"encrypt", "--all"},
	} {
		code, _, stderr := runCLI(t, nil, append(args, "--data", "missing")...)
		if code != 1 || !strings.Contains(stderr, "there is no data folder") {
			t.Errorf("%v: exit %d, want 1 saying there is no data folder:\n%s", args, code, stderr)
		}
		if _, err := os.Stat("missing"); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("%v made the data folder: %v", args, err)
		}
	}
}

// TestUserDeletePurgeLocked: user delete --purge refuses an account that
// owns locked object versions, and says why; nothing is deleted.
func TestUserDeletePurgeLocked(t *testing.T) {
	t.Chdir(t.TempDir())
	const email = "locked@example.com"
	if code, _, stderr := runCLI(t, nil, "user", "create", "--data", "data", "--email", email, "--password", "correct horse battery"); code != 0 {
		t.Fatalf("user create: exit %d\n%s", code, stderr)
	}
	func() {
		m, err := sqlite.Open(t.Context(), filepath.Join("data", "meta.db"), sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		u, err := m.GetUserByEmail(t.Context(), email)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.CreateBucket(t.Context(), meta.Bucket{Name: "vault", OwnerID: u.ID, ObjectLock: meta.ObjectLock{Enabled: true}}); err != nil {
			t.Fatal(err)
		}
		o := meta.Object{Bucket: "vault", Key: "k", ETag: "e", ContentType: "x", Inline: []byte{}, LegalHold: true}
		if _, err := m.PutObjects(t.Context(), []meta.Put{{Object: o}}); err != nil {
			t.Fatal(err)
		}
	}()
	code, _, stderr := runCLI(t, nil, "user", "delete", "--data", "data", "--email", email, "--purge")
	if code != 1 || !strings.Contains(stderr, "1 locked object version") || !strings.Contains(stderr, "vault") {
		t.Errorf("user delete --purge of an account with a locked version: exit %d, want 1 saying why:\n%s", code, stderr)
	}
	if code, _, stderr := runCLI(t, nil, "key", "list", "--data", "data", "--email", email); code != 0 {
		t.Errorf("the account is gone after a refused delete: exit %d\n%s", code, stderr)
	}
}
