package cli

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// serveFails runs `coffer serve` in process with args and fails the test
// unless it exits non-zero; it returns what it wrote to stderr.
func serveFails(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out, errb syncBuffer
	args = append([]string{"serve", "--listen", "127.0.0.1:0", "--s3-listen", "127.0.0.1:0"}, args...)
	if code := Run(ctx, args, Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}); code == 0 {
		t.Fatalf("coffer serve %v did not fail\nstdout:\n%s\nstderr:\n%s", args, out.String(), errb.String())
	}
	return errb.String()
}

// entries lists what dir holds, but SQLite's -wal and -shm files (nil:
// dir does not exist).
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	names := []string{}
	for _, e := range es {
		if !strings.HasSuffix(e.Name(), "-wal") && !strings.HasSuffix(e.Name(), "-shm") {
			names = append(names, e.Name())
		}
	}
	return names
}

// TestFailedStartsLeaveNothingHalfMade induces a failure at each step of
// coffer serve's start (server.New, "Starting, and failing to"): a start
// that fails before it needs the data folder leaves none; one that fails
// later leaves only what the next start takes as its own, and never the
// server key's record in the metadata store before everything else has
// opened. After each, a start without the fault serves on the same data
// folder. (A failed start left keyring, meta.db and server.key behind,
// issue 17.)
func TestFailedStartsLeaveNothingHalfMade(t *testing.T) {
	t.Chdir(t.TempDir())
	hexKey := strings.Repeat("ab", 32) + "\n"
	for name, f := range map[string]struct {
		content string
		mode    fs.FileMode
	}{
		"loose.key": {hexKey, 0o644},
		"bad.key":   {"not a key\n", 0o600},
		"bad.pem":   {"not a certificate\n", 0o600},
	} {
		if err := os.WriteFile(name, []byte(f.content), f.mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(name, f.mode); err != nil { // past the umask
			t.Fatal(err)
		}
	}
	occupied, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer occupied.Close()

	for i, c := range []struct {
		name string
		args []string
		want string   // in the error
		left []string // what the data folder holds after; nil: no folder
	}{
		{"unknown KMS scheme", []string{"--kms", "nope://key"}, "unknown scheme", nil},
		{"missing keyring file", []string{"--kms", "local:///nonexistent/coffer/keyring"}, "does not exist", nil},
		{"key file readable by others", []string{"--server-key-file", "loose.key"}, "chmod 600", nil},
		{"malformed key file", []string{"--server-key-file", "bad.key"}, "malformed", nil},
		{"bad TLS pair", []string{"--tls-cert", "bad.pem", "--tls-key", "bad.pem"}, "--tls-cert", nil},
		{"malformed gateway", []string{"--gateway", "gateway1=s3://Bad_Bucket"}, "--gateway", nil},
		{"PostgreSQL unreachable", []string{"--meta", "postgres://coffer@127.0.0.1:1/coffer"}, "PostgreSQL", nil},
		{"S3 store unreachable", []string{"--blob", "s3://coffer?endpoint=http://127.0.0.1:1"}, "blob store", nil},
		// Fails after the data folder: everything made is whole, and
		// the server key is neither made nor recorded yet.
		{"gateway owner without an account", []string{"--gateway", "gateway1=s3://coffer?endpoint=http://127.0.0.1:1&mode=ro&owner=nobody@example.com"},
			"has no account", []string{"blobs", "cache", "kms.keyring", "meta.db"}},
		// Fails last, when everything is made.
		{"port in use", []string{"--listen", occupied.Addr().String()},
			"listening on", []string{"blobs", "cache", "kms.keyring", "meta.db", "server.key"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			data := filepath.Join("data", string(rune('a'+i)))
			stderr := serveFails(t, append([]string{"--data", data}, c.args...)...)
			if !strings.Contains(stderr, c.want) {
				t.Errorf("error does not say %q:\n%s", c.want, stderr)
			}
			if got := entries(t, data); !slices.Equal(got, c.left) || (got == nil) != (c.left == nil) {
				t.Errorf("the failed start left %q, want %q", got, c.left)
			}
			// The next start, without the fault, serves and takes what
			// the failed one made as its own.
			serveOneRequest(t, "--data", data)
			for _, f := range []string{"meta.db", "server.key", "kms.keyring"} {
				if _, err := os.Stat(filepath.Join(data, f)); err != nil {
					t.Errorf("after the second start: %v", err)
				}
			}
		})
	}
}
