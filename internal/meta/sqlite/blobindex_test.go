package sqlite

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/meta/metasql"
)

// TestBlobKeyIndexPartial: objects_blob_key holds only the rows that name a
// blob (migration 0032: an inline object, the most common small PUT, costs
// no entry in it), and every "is this blob referenced?" query still finds
// a referenced blob through it instead of scanning objects.
func TestBlobKeyIndexPartial(t *testing.T) {
	s, _ := setup(t, Options{})
	ctx := context.Background()
	if err := putOne(ctx, s, object("big", 10), meta.Cond{}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		o := object(fmt.Sprintf("small%d", i), 3)
		o.BlobKey, o.Inline = "", []byte("abc")
		if err := putOne(ctx, s, o, meta.Cond{}); err != nil {
			t.Fatal(err)
		}
	}

	var def string
	if err := s.readers.QueryRowContext(ctx, "SELECT sql FROM sqlite_master WHERE name = 'objects_blob_key'").Scan(&def); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(def, "WHERE blob_key <> ''") {
		t.Errorf("objects_blob_key is %q, want a partial index WHERE blob_key <> ''", def)
	}

	for name, q := range map[string]string{
		"Referenced":         "SELECT 1 WHERE " + metasql.Referenced("?1"),
		"ReferencedOrQueued": "SELECT 1 WHERE " + metasql.ReferencedOrQueued("?1"),
		"ReferencedBlobs":    referencedQuery,
		"enqueue":            "EXPLAIN QUERY PLAN " + enqueueQuery,
	} {
		if !strings.HasPrefix(q, "EXPLAIN") {
			q = "EXPLAIN QUERY PLAN " + q
		}
		args := make([]any, strings.Count(q, "?"))
		for i := range args {
			args[i] = "blob-big"
		}
		rows, err := s.readers.QueryContext(ctx, q, args...)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		all := strings.Join(plan, "; ")
		if !strings.Contains(all, "objects_blob_key") || strings.Contains(all, "SCAN objects") {
			t.Errorf("%s does not search objects through objects_blob_key: %s", name, all)
		}
	}

	// The index still answers: a blob object is referenced, an unknown
	// blob is not.
	got, err := s.ReferencedBlobs(ctx, []string{"blob-big", "blob-none", ""})
	if err != nil {
		t.Fatal(err)
	}
	if !got["blob-big"] || got["blob-none"] || got[""] {
		t.Errorf("ReferencedBlobs: %v, want only blob-big", got)
	}
}

// BenchmarkPutInlineParallel writes new 1 KiB inline objects from many
// goroutines (the writer groups them), as small S3 PUTs do. cpu-µs/op is
// the process's user+system CPU per put (getrusage), which survives a
// loaded machine better than ns/op. Migration 0032 spares each put the
// objects_blob_key entry for an empty blob key (compare with the
// migration file removed).
func BenchmarkPutInlineParallel(b *testing.B) {
	s, _ := setup(b, Options{})
	ctx := context.Background()
	data := make([]byte, 1024)
	var n atomic.Int64
	b0, o0 := s.batches.Load(), s.ops.Load()
	cpu0 := cpuTime(b)
	b.SetParallelism(8) // 8 × GOMAXPROCS concurrent writers
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			o := object(fmt.Sprintf("k%09d", n.Add(1)), int64(len(data)))
			o.BlobKey, o.Inline = "", data
			if err := putOne(ctx, s, o, meta.Cond{}); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(cpuTime(b)-cpu0)/1e3/float64(b.N), "cpu-µs/op")
	if batches := s.batches.Load() - b0; batches > 0 {
		b.ReportMetric(float64(s.ops.Load()-o0)/float64(batches), "puts/commit")
	}
}

// cpuTime is the process's user+system CPU time so far, in nanoseconds.
func cpuTime(tb testing.TB) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
