package postgres_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/coffer-storage/coffer/internal/meta/metatest"
	"github.com/coffer-storage/coffer/internal/meta/postgres"
	"github.com/coffer-storage/coffer/internal/testbackend"
)

// BenchmarkListVersionPages is the SQLite benchmark of the same name on
// PostgreSQL (the test process's server, a fresh database): pages of
// 1,000 in a bucket of COFFER_VERSIONS_BENCH_KEYS keys (default 2,000) × 10
// versions.
//
//	COFFER_VERSIONS_BENCH_KEYS=100000 go test -run '^$' -bench BenchmarkListVersionPages -benchtime 300x ./internal/meta/postgres/
func BenchmarkListVersionPages(b *testing.B) {
	keys := metatest.VersionBenchKeys(b)
	s := open(b, testbackend.SharedPostgres(b).CreateDatabase(b), postgres.Options{})
	addAlice(b, s, 0)
	if err := metatest.FillVersions(context.Background(), s.Stores(), "alice", keys, 10, b.Logf); err != nil {
		b.Fatal(err)
	}
	metatest.BenchVersionPages(b, s, "alice", keys, 10)
}

// BenchmarkListPages is the SQLite benchmark of the same name on
// PostgreSQL: ListObjects pages of 1,000 in a bucket of
// COFFER_LIST_BENCH_KEYS objects (default 100,000) in 100 folders, in
// COFFER_LIST_BENCH_PG (a database URL, kept and reused when it holds
// them already) or a fresh database of the test process's server.
//
//	COFFER_LIST_BENCH_KEYS=1000000 COFFER_LIST_BENCH_PG=postgres://postgres@127.0.0.1:15499/list?sslmode=disable \
//	  go test -run '^$' -bench BenchmarkListPages -benchmem -benchtime 300x ./internal/meta/postgres/
func BenchmarkListPages(b *testing.B) {
	keys := metatest.ListBenchKeys(b)
	u := os.Getenv("COFFER_LIST_BENCH_PG")
	if u == "" {
		u = testbackend.SharedPostgres(b).CreateDatabase(b)
	}
	s := open(b, u, postgres.Options{})
	ctx := context.Background()
	if _, err := s.GetBucket(ctx, "alice"); err != nil {
		addAlice(b, s, 0)
	}
	bulk := func(ctx context.Context, bucket, template string, keys, every int) error {
		c, err := pgx.Connect(ctx, u)
		if err != nil {
			return err
		}
		defer c.Close(ctx)
		rows, err := c.Query(ctx, "SELECT column_name FROM information_schema.columns WHERE table_name = 'objects' AND table_schema = current_schema() ORDER BY ordinal_position")
		if err != nil {
			return err
		}
		cols, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		per := keys / 100
		q := metatest.BulkCopySQL(cols, "generate_series(0, $1::int - 1) AS g(i)",
			fmt.Sprintf("convert_to('d' || lpad((i / %d)::text, 3, '0') || '/k' || lpad(i::text, 7, '0'), 'UTF8')", per),
			"'bulk/' || i", func(i int) string { return fmt.Sprintf("$%d", i) }, every)
		// The per-row count trigger updates one buckets row a million
		// times in one transaction (each update a tuple version of it):
		// off for the copy, the counts set once after it.
		err = pgx.BeginFunc(ctx, c, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "ALTER TABLE objects DISABLE TRIGGER objects_count_insert"); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, q, keys, bucket, []byte(template)); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, "ALTER TABLE objects ENABLE TRIGGER objects_count_insert"); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, "UPDATE buckets SET object_count = (SELECT count(*) FROM objects WHERE bucket = $1), "+
				"byte_count = (SELECT sum(size) FROM objects WHERE bucket = $1) WHERE name = $1", bucket)
			return err
		})
		if err != nil {
			return err
		}
		_, err = c.Exec(ctx, "VACUUM ANALYZE objects")
		return err
	}
	if err := metatest.FillList(ctx, s.Stores(), "alice", keys, bulk, b.Logf); err != nil {
		b.Fatal(err)
	}
	metatest.BenchListPages(b, s, "alice", keys)
}
