package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/meta/metasql"
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
	s, _ := benchStore(b, "COFFER_VERSIONS_BENCH_DB")
	ctx := context.Background()
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

// BenchmarkListPages: ListObjects pages of 1,000 under a folder and of
// the folders at the root, in a bucket of COFFER_LIST_BENCH_KEYS objects
// (default 20,000) in 100 folders, on a real SQLite file:
// COFFER_LIST_BENCH_DB (kept, and reused when it holds them already) or
// a temporary one. docs/PERFORMANCE.md's numbers ("Issue 23: listing and
// soak"):
//
//	COFFER_LIST_BENCH_KEYS=1000000 COFFER_LIST_BENCH_DB=/tmp/list.db \
//	  go test -run '^$' -bench BenchmarkListPages -benchmem -benchtime 300x ./internal/meta/sqlite/
func BenchmarkListPages(b *testing.B) {
	keys := metatest.ListBenchKeys(b)
	s, path := benchStore(b, "COFFER_LIST_BENCH_DB")
	ctx := context.Background()
	if err := metatest.FillList(ctx, s.Stores(), "alice", keys, bulkCopy(path), b.Logf); err != nil {
		b.Fatal(err)
	}
	metatest.BenchListPages(b, s, "alice", keys)
}

// benchStore opens the SQLite file the environment variable env names
// (kept for the next run) or a temporary one, with user alice and her
// bucket "alice".
func benchStore(b *testing.B, env string) (*Store, string) {
	path := os.Getenv(env)
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
	return s, path
}

// bulkCopy is metatest.BulkCopy on the SQLite file at path, through a
// connection of its own (the store's writer is idle meanwhile).
func bulkCopy(path string) metatest.BulkCopy {
	return func(ctx context.Context, bucket, template string, keys, every int) error {
		db, err := sql.Open("sqlite", dsn(path, "busy_timeout(60000)", "foreign_keys(ON)"))
		if err != nil {
			return err
		}
		defer db.Close()
		cols, err := queryRows(ctx, db, metasql.ScanString, "SELECT name FROM pragma_table_info('objects') ORDER BY cid")
		if err != nil {
			return err
		}
		q := "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < ?1) " +
			metatest.BulkCopySQL(cols, "n", fmt.Sprintf("printf('d%%03d/k%%07d', i / %d, i)", keys/100), "'bulk/' || i",
				func(i int) string { return fmt.Sprintf("?%d", i) }, every)
		_, err = db.ExecContext(ctx, q, keys, bucket, template)
		return err
	}
}
