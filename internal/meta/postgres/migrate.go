package postgres

import (
	"context"
	"embed"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta/metasql"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrationLock is the pg_advisory_xact_lock key that serialises the
// migrations of nodes starting together ("coffer" in ASCII).
const migrationLock int64 = 0x636f66666572

// migrate applies the pending migrations, each in its own transaction that
// first takes migrationLock and then reads which versions are applied, so
// concurrent Opens apply each migration once. It refuses a database
// migrated by a newer binary.
func (s *Store) migrate(ctx context.Context, now func() time.Time) error {
	ms, err := metasql.Migrations(migrationFiles)
	if err != nil {
		return errcode.Wrap(errcode.Internal, err, "postgres: bad embedded migrations")
	}
	for {
		done := false
		err := s.tx(ctx, "postgres: migrate", beginReadWrite, func(t *txn) error {
			// A migration (an index over a large table) and the wait for
			// another node's migration may take longer than the statement
			// timeout meant for requests (--meta-statement-timeout): they are
			// bounded by ctx instead.
			t.exec("SET LOCAL statement_timeout = 0")
			t.exec("SELECT pg_advisory_xact_lock($1)", migrationLock)
			t.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
				version    bigint NOT NULL PRIMARY KEY,
				applied_at bigint NOT NULL
			)`)
			// Flushed apart: a batch's statements are all prepared before
			// the first runs, and schema_migrations may not exist yet.
			if err := t.flush(); err != nil {
				return err
			}
			var versions []int64
			queueRows(t, &versions, metasql.ScanInt64, "SELECT version FROM schema_migrations")
			if err := t.flush(); err != nil {
				return err
			}
			pending, err := metasql.Pending("postgres", ms, versions)
			if err != nil || len(pending) == 0 {
				done = err == nil
				return err
			}
			// One at a time. Several statements: the simple protocol,
			// outside a batch.
			m := pending[0]
			if _, err := t.conn.Exec(t.ctx, m.SQL, pgx.QueryExecModeSimpleProtocol); err != nil {
				return fmt.Errorf("migration %s: %w", m.Name, err)
			}
			t.exec("INSERT INTO schema_migrations (version, applied_at) VALUES ($1, $2)", m.Version, now().UnixNano())
			return nil
		})
		if err != nil {
			return err
		}
		if done {
			return nil
		}
	}
}
