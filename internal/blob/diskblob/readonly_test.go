package diskblob

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/coffer-storage/coffer/internal/blob"
	"github.com/coffer-storage/coffer/internal/errcode"
)

// TestReadOnlyBesideTheHolder: while one process holds the store (its
// lock), OpenReadOnly reads its blobs (Get, Stat, List) and refuses
// writes; a second Open is still refused.
func TestReadOnlyBesideTheHolder(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Put(ctx, "a/b", strings.NewReader("hello"), 5); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir); err == nil {
		t.Fatal("a second Open succeeded")
	}
	r, err := OpenReadOnly(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rc, err := r.Get(ctx, "a/b", 1, -1)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(rc)
	rc.Close()
	if string(got) != "ello" {
		t.Errorf("Get: %q", got)
	}
	if info, err := r.Stat(ctx, "a/b"); err != nil || info.Size != 5 {
		t.Errorf("Stat: %+v, %v", info, err)
	}
	n := 0
	if err := r.List(ctx, "", func(blob.Info) error { n++; return nil }); err != nil || n != 1 {
		t.Errorf("List: %d, %v", n, err)
	}
	if _, err := r.Put(ctx, "c", strings.NewReader("x"), 1); errcode.Of(err) != errcode.Unavailable {
		t.Errorf("Put on a read-only store: %v", err)
	}
	if err := r.Delete(ctx, "a/b"); errcode.Of(err) != errcode.Unavailable {
		t.Errorf("Delete on a read-only store: %v", err)
	}
}
