package sqlite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/meta/metatest"
)

// BenchmarkListVersionPages: ListObjectVersions pages of 1,000 in a bucket
// of COFFER_VERSIONS_BENCH_KEYS keys (default 2,000) × 10 versions, on a
// real SQLite file: COFFER_VERSIONS_BENCH_DB (kept, and reused when it
// holds them already) or a temporary one. docs/PERFORMANCE.md's numbers:
//
//	COFFER_VERSIONS_BENCH_KEYS=100000 COFFER_VERSIONS_BENCH_DB=/tmp/versions.db \
//	  go test -run '^$' -bench BenchmarkListVersionPages -benchtime 300x ./internal/meta/sqlite/
func BenchmarkListVersionPages(b *testing.B) {
	keys := metatest.VersionBenchKeys(b)
	path := os.Getenv("COFFER_VERSIONS_BENCH_DB")
	if path == "" {
		path = filepath.Join(b.TempDir(), "meta.db")
	}
	s := openAt(b, path, Options{})
	ctx := context.Background()
	if _, err := s.GetBucket(ctx, "alice"); err != nil {
		if err := s.CreateUser(ctx, meta.User{ID: "alice", Email: "alice@example.com", PasswordHash: "x"}, meta.Bucket{Name: "alice"}); err != nil {
			b.Fatal(err)
		}
	}
	if err := metatest.FillVersions(ctx, s.Stores(), "alice", keys, 10, b.Logf); err != nil {
		b.Fatal(err)
	}
	metatest.BenchVersionPages(b, s, "alice", keys, 10)
}

// New keys, as coffer bench's s3-put writes them (16 writers, each its own
// run of keys), in a bucket never versioned and in an Enabled one: what a
// version costs a write that adds a key (docs/PERFORMANCE.md, "Versioning
// (issue 20)").
func BenchmarkHotNewKeys(b *testing.B)          { hotNewKeys(b, hotStore(b, nil)) }
func BenchmarkHotVersionedNewKeys(b *testing.B) { hotNewKeys(b, versionedHotStore(b)) }

func hotNewKeys(b *testing.B, s *Store) {
	data := make([]byte, 4096)
	var writers atomic.Int64
	b.SetParallelism(8) // × GOMAXPROCS 2: 16 writers
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		w := writers.Add(1)
		for i := 0; pb.Next(); i++ {
			o := meta.Object{Bucket: "alice", Key: fmt.Sprintf("new/vu%04d/%08d", w, i), Size: 4096, ETag: "etag", Inline: data}
			if _, err := s.PutObjects(context.Background(), []meta.Put{{Object: o}}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
