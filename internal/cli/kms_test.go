package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coffer-storage/coffer/internal/kms"
)

// TestKMSRotate: coffer kms rotate adds a version to the data folder's
// keyring and makes it current; the old version stays.
func TestKMSRotate(t *testing.T) {
	dir := t.TempDir()
	k, err := kms.Open(context.Background(), "", kms.Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	k.Close()
	var out, errb bytes.Buffer
	env := Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
	if code := Run(context.Background(), []string{"kms", "rotate", "--data", dir}, env); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if got := out.String(); !strings.Contains(got, "local:default#2 (was local:default#1)") {
		t.Errorf("output %q does not name the new and old versions", got)
	}
	b, err := os.ReadFile(filepath.Join(dir, kms.DefaultKeyringName))
	if err != nil {
		t.Fatal(err)
	}
	if s := string(b); !strings.Contains(s, "default 1 ") || !strings.Contains(s, "default 2 ") {
		t.Errorf("keyring after rotate:\n%s", s)
	}
	k, err = kms.Open(context.Background(), "", kms.Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	if got := k.Default().String(); got != "local:default#2" {
		t.Errorf("default KEK after rotate: %s, want local:default#2", got)
	}
	if code := Run(context.Background(), []string{"kms"}, env); code == 0 {
		t.Error("kms without a subcommand succeeded")
	}
}
