package postgres_test

import (
	"context"
	"testing"

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
