package sqlite

import (
	"context"
	"os"
	"path/filepath"
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
