package blob_test

import (
	"context"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/blob"
	"github.com/coffer-storage/coffer/internal/blob/blobtest"
	"github.com/coffer-storage/coffer/internal/blob/diskblob"
	"github.com/coffer-storage/coffer/internal/blob/memblob"
)

// TestObservedConformance: the timing decorator is still a blob store.
func TestObservedConformance(t *testing.T) {
	blobtest.Run(t, func(t *testing.T) blob.Store {
		return blob.Observed(memblob.New(), func(string, time.Duration) {})
	})
}

// TestObserved: every call is handed to obs with its kind, and the
// optional capabilities are those of the store underneath.
func TestObserved(t *testing.T) {
	ctx := context.Background()
	d, err := diskblob.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var mu sync.Mutex
	var ops []string
	s := blob.Observed(d, func(op string, dur time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		if dur < 0 {
			t.Errorf("%s took %v", op, dur)
		}
		ops = append(ops, op)
	})
	_, dcp := any(d).(blob.Copier)
	_, scp := s.(blob.Copier)
	_, dmp := any(d).(blob.MultipartPresigner)
	_, smp := s.(blob.MultipartPresigner)
	if dcp != scp || dmp != smp {
		t.Fatalf("capabilities: copier %v -> %v, multipart %v -> %v", dcp, scp, dmp, smp)
	}
	if _, err := s.Put(ctx, "o/ab/x", strings.NewReader("hello"), 5); err != nil {
		t.Fatal(err)
	}
	rc, err := s.Get(ctx, "o/ab/x", 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	if string(b) != "hello" {
		t.Fatalf("read %q", b)
	}
	if _, err := s.Stat(ctx, "o/ab/x"); err != nil {
		t.Fatal(err)
	}
	if err := s.List(ctx, "o/", func(blob.Info) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if scp {
		if _, err := s.(blob.Copier).Copy(ctx, "o/ab/x", "o/ab/y"); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Delete(ctx, "o/ab/x"); err != nil {
		t.Fatal(err)
	}
	want := []string{"put", "get", "stat", "list"}
	if scp {
		want = append(want, "copy")
	}
	want = append(want, "delete")
	if !slices.Equal(ops, want) {
		t.Errorf("observed %v, want %v", ops, want)
	}
}
