package server

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coffer-storage/coffer/internal/config"
	"github.com/coffer-storage/coffer/internal/meta/sqlite"
)

func TestKeyFingerprint(t *testing.T) {
	a, b := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32)
	if got, want := KeyFingerprint(a), KeyFingerprint(bytes.Clone(a)); got != want {
		t.Errorf("fingerprint of one key differs: %s, %s", got, want)
	}
	if KeyFingerprint(a) == KeyFingerprint(b) {
		t.Error("two keys share a fingerprint")
	}
	if got, want := len(KeyFingerprint(a)), 64; got != want {
		t.Errorf("fingerprint is %d hex digits, want %d", got, want)
	}
	if strings.Contains(KeyFingerprint(a), "0101010101") {
		t.Error("the fingerprint shows the key")
	}
}

func TestOpenKey(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	m, err := sqlite.Open(ctx, filepath.Join(dir, "meta.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()

	// First start: the default key file is created and its fingerprint
	// recorded; the same key opens again.
	key, err := OpenKey(ctx, m, KeyFile{Data: dir, Create: true})
	if err != nil {
		t.Fatalf("first OpenKey: %v", err)
	}
	again, err := OpenKey(ctx, m, KeyFile{Data: dir, Create: true})
	if err != nil || !bytes.Equal(again, key) {
		t.Fatalf("second OpenKey = %x, %v; want the same key", again, err)
	}
	// The same key in another file is the same key.
	copied := filepath.Join(t.TempDir(), "copy.key")
	b, _ := os.ReadFile(filepath.Join(dir, "server.key"))
	if err := os.WriteFile(copied, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenKey(ctx, m, KeyFile{Data: dir, File: copied, Create: true}); err != nil {
		t.Errorf("OpenKey with a copy of the key: %v", err)
	}

	t.Run("OtherKeyFile", func(t *testing.T) {
		other := filepath.Join(t.TempDir(), "other.key")
		if _, _, err := LoadOrCreateKey(other); err != nil {
			t.Fatal(err)
		}
		_, err := OpenKey(ctx, m, KeyFile{Data: dir, File: other, Create: true})
		if !errors.Is(err, ErrKeyMismatch) {
			t.Fatalf("OpenKey with another key: %v, want ErrKeyMismatch", err)
		}
		for _, want := range []string{other, "initialised with a different server key", "same --server-key-file"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("message %q does not say %q", err, want)
			}
		}
		if _, err := os.Stat(other); err != nil {
			t.Errorf("an existing key file was removed: %v", err)
		}
	})
	t.Run("ReplacedDefaultKey", func(t *testing.T) {
		if err := os.Remove(filepath.Join(dir, "server.key")); err != nil {
			t.Fatal(err)
		}
		_, err := OpenKey(ctx, m, KeyFile{Data: dir, Create: true})
		if !errors.Is(err, ErrKeyMismatch) {
			t.Fatalf("OpenKey with a regenerated key: %v, want ErrKeyMismatch", err)
		}
		for _, want := range []string{filepath.Join(dir, "server.key"), "no --server-key-file was given", "removed again"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("message %q does not say %q", err, want)
			}
		}
		if _, err := os.Stat(filepath.Join(dir, "server.key")); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("the refused generated key file is still there: %v", err)
		}
	})
}

// TestNewRefusesAnotherKey: a data folder whose server.key was replaced
// does not start.
func TestNewRefusesAnotherKey(t *testing.T) {
	cfg := config.Defaults()
	cfg.Data = t.TempDir()
	s, err := New(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	keyFile := filepath.Join(cfg.Data, "server.key")
	original, err := os.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(keyFile); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadOrCreateKey(keyFile); err != nil {
		t.Fatal(err)
	}
	s, err = New(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err == nil {
		s.Close()
		t.Fatal("New with a replaced server.key succeeded")
	}
	if !errors.Is(err, ErrKeyMismatch) {
		t.Errorf("New: %v, want ErrKeyMismatch", err)
	}
	// The refused start released the stores: the original key starts.
	if err := os.WriteFile(keyFile, original, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err = New(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("New with the original key back: %v", err)
	}
	s.Close()
}

func TestPrepareDataDir(t *testing.T) {
	for _, tc := range []struct {
		name     string
		mode     fs.FileMode // 0: the folder does not exist
		wantWarn bool
	}{
		{"Missing", 0, false},
		{"Private", 0o700, false},
		{"GroupReadable", 0o750, true},
		{"WorldReadable", 0o755, true},
		{"WorldWritable", 0o777, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "data")
			if tc.mode != 0 {
				if err := os.Mkdir(dir, 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(dir, tc.mode); err != nil {
					t.Fatal(err)
				}
			}
			var logs bytes.Buffer
			if err := PrepareDataDir(dir, slog.New(slog.NewTextHandler(&logs, nil))); err != nil {
				t.Fatal(err)
			}
			fi, err := os.Stat(dir)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := fi.Mode().Perm(), fs.FileMode(0o700); got != want {
				t.Errorf("mode %v, want %v", got, want)
			}
			if got := strings.Contains(logs.String(), "level=WARN"); got != tc.wantWarn {
				t.Errorf("warning logged: %v, want %v (log: %q)", got, tc.wantWarn, logs.String())
			}
		})
	}
}

// TestStoresLine: the start-up line says where a node keeps its data:
// the data folder in the embedded shape; in the scale-out shape the
// database and the bucket (it said "data in DIR" there too), never a
// credential of their URLs.
func TestStoresLine(t *testing.T) {
	for _, c := range []struct {
		name       string
		cfg        func(*config.Config)
		want, hide []string
	}{
		{"embedded", func(*config.Config) {}, []string{"data in /srv/coffer"}, []string{"metadata", "blobs"}},
		{"scale-out", func(c *config.Config) {
			c.Meta = "postgres://coffer:S3cret@db.internal:5432/coffer?sslmode=verify-full&password=Other"
			c.Blob = "s3://coffer-blobs/prod?endpoint=https://user:Pw@minio.internal:9000/x?y&region=eu-1"
		}, []string{"metadata in postgres://db.internal:5432/coffer", "blobs in s3://coffer-blobs/prod at https://minio.internal:9000", "blob cache in /srv/coffer/cache"},
			[]string{"S3cret", "Other", "Pw", "user", "sslmode", "region", "/x"}},
		{"scale-out, cache off", func(c *config.Config) {
			c.Meta, c.Blob, c.Cache = "postgres://db/coffer", "s3://b", "off"
		}, []string{"metadata in postgres://db/coffer, blobs in s3://b"}, []string{"cache", " at "}},
		{"SQLite with S3 blobs", func(c *config.Config) { c.Blob = "s3://b"; c.CacheDir = "/var/cache/coffer" },
			[]string{"metadata in /srv/coffer/meta.db", "blobs in s3://b", "blob cache in /var/cache/coffer"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := config.Defaults()
			cfg.Data = "/srv/coffer"
			c.cfg(&cfg)
			got := storesLine(cfg)
			if scaleOut := cfg.Meta != "" || cfg.Blob != ""; scaleOut == strings.HasPrefix(got, "data in ") {
				t.Errorf("%q for --meta %q --blob %q", got, cfg.Meta, cfg.Blob)
			}
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Errorf("%q does not say %q", got, w)
				}
			}
			for _, h := range c.hide {
				if strings.Contains(got, h) {
					t.Errorf("%q shows %q", got, h)
				}
			}
		})
	}
}

// TestReadKeyModes: a key readable by others is refused; group-readable
// only when root owns the file (a Kubernetes Secret mounted with an
// fsGroup is root:fsGroup, mode 0440), never group-writable.
func TestReadKeyModes(t *testing.T) {
	dir := t.TempDir()
	key := strings.Repeat("ab", 32) + "\n"
	root := os.Getuid() == 0 // the files below belong to whoever runs the test
	for _, c := range []struct {
		mode os.FileMode
		ok   bool
	}{
		{0o600, true}, {0o400, true},
		{0o640, root}, {0o440, root},
		{0o660, false}, {0o644, false}, {0o604, false}, {0o666, false},
	} {
		p := filepath.Join(dir, c.mode.String())
		if err := os.WriteFile(p, []byte(key), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, c.mode); err != nil {
			t.Fatal(err)
		}
		_, err := ReadKey(p)
		if (err == nil) != c.ok {
			t.Errorf("mode %v (root-owned: %v): err %v, want ok=%v", c.mode, root, err, c.ok)
		}
	}
}
