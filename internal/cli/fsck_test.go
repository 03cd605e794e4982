package cli

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/blob/diskblob"
	"github.com/coffer-storage/coffer/internal/config"
	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/meta/sqlite"
	"github.com/coffer-storage/coffer/internal/object"
)

// TestFsck: coffer fsck runs beside a process holding the data folder
// (the local disk's lock, as coffer serve holds it), checks every object,
// exits 0 when all are good, and names a damaged blob and exits 1 once
// one is corrupted.
func TestFsck(t *testing.T) {
	ctx := context.Background()
	data := t.TempDir()
	m, err := sqlite.Open(ctx, filepath.Join(data, "meta.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	blobs, err := diskblob.Open(filepath.Join(data, "blobs")) // held, as by coffer serve
	if err != nil {
		t.Fatal(err)
	}
	defer blobs.Close()
	now := time.Now().UTC()
	if err := m.CreateUser(ctx, meta.User{ID: "u", Email: "u@x.io", CreatedAt: now},
		meta.Bucket{Name: "photos", OwnerID: "u", Visibility: meta.Private, CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	svc := object.New(object.StoresOf(m.Stores()), blobs, object.ConfigFrom(config.Defaults()), nil)
	body := bytes.Repeat([]byte("fsck "), 40_000)
	var bad meta.Object
	for _, k := range []string{"a", "b", "c"} {
		o, err := svc.Put(ctx, object.Actor{UserID: "u"}, object.PutInput{Bucket: "photos", Key: k, Body: bytes.NewReader(body), Size: int64(len(body))})
		if err != nil {
			t.Fatal(err)
		}
		bad = o
	}
	code, stdout, stderr := runCLI(t, nil, "fsck", "--data", data)
	if code != 0 || !strings.Contains(stdout, "checked 3 objects") {
		t.Fatalf("fsck of good blobs: exit %d\n%s%s", code, stdout, stderr)
	}
	flipped := bytes.Clone(body)
	flipped[12345] ^= 0x20
	if _, err := blobs.Put(ctx, bad.BlobKey, bytes.NewReader(flipped), int64(len(flipped))); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = runCLI(t, nil, "fsck", "--data", data, "--rate", "100MiB")
	if code != 1 || !strings.Contains(stdout, "corrupt: photos/c") || !strings.Contains(stdout, "1 corrupt") {
		t.Fatalf("fsck of a corrupt blob: exit %d\n%s%s", code, stdout, stderr)
	}
}
