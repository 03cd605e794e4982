package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/testbackend"
)

// TestDiskFull: meta.db on a real file system with no room left. Writes
// are refused with errcode.StorageFull (not Unavailable, not a crash), the
// writer goroutine is not wedged by a failed batch, reads are served, and
// once room is made the same store writes again without a restart; after
// a reopen the database passes PRAGMA integrity_check and holds exactly
// the acknowledged rows.
func TestDiskFull(t *testing.T) {
	sfs := testbackend.NewSmallFS(t, 16<<20)
	ctx := context.Background()
	path := filepath.Join(sfs.Dir, "meta.db")
	s, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if s != nil {
			s.Close()
		}
	}()
	if err := s.CreateUser(ctx, meta.User{ID: "alice", Email: "alice@example.com", PasswordHash: "x"}, meta.Bucket{Name: "alice"}); err != nil {
		t.Fatal(err)
	}
	acked := map[string]bool{}
	put := func(key string) error {
		o := object(key, 16<<10)
		o.BlobKey, o.Inline = "", make([]byte, 16<<10) // grows the WAL fast
		err := putOne(ctx, s, o, meta.Cond{})
		if err == nil {
			acked[key] = true
		}
		return err
	}
	for i := range 20 {
		if err := put(fmt.Sprintf("before-%d", i)); err != nil {
			t.Fatal(err)
		}
	}

	sfs.Fill(t, "filler")
	var full error
	for i := range 2000 {
		// Pages freed by checkpoints are reused, so the first writes may
		// still fit.
		if err := put(fmt.Sprintf("full-%d", i)); err != nil {
			full = err
			break
		}
	}
	if full == nil {
		t.Fatal("2000 writes of 16 KiB succeeded on a full file system")
	}
	if !errcode.Is(full, errcode.StorageFull) {
		t.Fatalf("write on a full disk: %v (code %v), want storage_full", full, errcode.Of(full))
	}
	// Still full: refused again, and promptly (the writer is not stuck).
	for i := range 3 {
		if err := put(fmt.Sprintf("again-%d", i)); !errcode.Is(err, errcode.StorageFull) {
			t.Fatalf("write %d after the first refusal: %v, want storage_full", i, err)
		}
	}
	// Reads are served.
	for key := range acked {
		if _, err := s.GetObject(ctx, "alice", key); err != nil {
			t.Fatalf("GetObject(%s) on a full disk: %v", key, err)
		}
	}

	if err := os.Remove(filepath.Join(sfs.Dir, "filler")); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if err := put(fmt.Sprintf("after-%d", i)); err != nil {
			t.Fatalf("write %d once room was made: %v", i, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	s = nil

	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	var ok string
	if err := db.QueryRow("PRAGMA integrity_check").Scan(&ok); err != nil || ok != "ok" {
		t.Fatalf("integrity_check: %q, %v", ok, err)
	}
	db.Close()
	s = openAt(t, path, Options{})
	defer func() { s = nil }()
	for key := range acked {
		if _, err := s.GetObject(ctx, "alice", key); err != nil {
			t.Errorf("acknowledged %s after reopen: %v", key, err)
		}
	}
	t.Logf("%d writes acknowledged, refused on the full disk with: %v", len(acked), full)
}
