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
	// The rotation started the re-wrap job, which kms status shows.
	out.Reset()
	if code := Run(context.Background(), []string{"kms", "status", "--data", dir}, env); code != 0 {
		t.Fatalf("kms status: exit %d: %s", code, errb.String())
	}
	if got := out.String(); !strings.Contains(got, "job rewrap: running, pass 1") {
		t.Errorf("kms status after rotate: %q, want the re-wrap job running", got)
	}
}

// TestEncryptCommand: coffer encrypt needs a bucket or --all, and an
// existing bucket; it starts the job.
func TestEncryptCommand(t *testing.T) {
	dir := t.TempDir()
	var out, errb bytes.Buffer
	env := Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
	for _, args := range [][]string{{"encrypt"}, {"encrypt", "--bucket", "b", "--all"}, {"encrypt", "--all", "extra"}} {
		if code := Run(context.Background(), append(args, "--data", dir), env); code != 2 {
			t.Errorf("%v: exit %d, want 2 (usage)", args, code)
		}
	}
	if code := Run(context.Background(), []string{"encrypt", "--bucket", "nope", "--data", dir}, env); code != 1 {
		t.Errorf("encrypt of a missing bucket: exit %d, want 1", code)
	}
	out.Reset()
	if code := Run(context.Background(), []string{"encrypt", "--all", "--data", dir}, env); code != 0 {
		t.Fatalf("encrypt --all: exit %d: %s", code, errb.String())
	}
	if got := out.String(); !strings.Contains(got, "job encrypt:: running") {
		t.Errorf("encrypt --all: %q", got)
	}
}
