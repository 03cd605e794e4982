package postgres

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/coffer-storage/coffer/internal/errcode"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migration is one numbered schema change.
type migration struct {
	version int64
	name    string
	sql     string
}

// migrations returns the embedded migrations in version order. File names
// are NNNN_description.sql with a unique positive NNNN.
func migrations() ([]migration, error) {
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var ms []migration
	seen := map[int64]string{}
	for _, name := range names {
		base := path.Base(name)
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.ParseInt(num, 10, 64)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: name must be NNNN_description.sql", base)
		}
		if prev, dup := seen[v]; dup {
			return nil, fmt.Errorf("migrations %s and %s share version %d", prev, base, v)
		}
		seen[v] = base
		b, err := migrationFiles.ReadFile(name)
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: base, sql: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	return ms, nil
}

// migrationLock is the pg_advisory_xact_lock key that serialises the
// migrations of nodes starting together ("coffer" in ASCII).
const migrationLock int64 = 0x636f66666572

// migrate applies the pending migrations, each in its own transaction that
// first takes migrationLock and then reads which versions are applied, so
// concurrent Opens apply each migration once. It refuses a database
// migrated by a newer binary.
func (s *Store) migrate(ctx context.Context, now func() time.Time) error {
	ms, err := migrations()
	if err != nil {
		return errcode.Wrap(errcode.Internal, err, "postgres: bad embedded migrations")
	}
	known := map[int64]bool{}
	for _, m := range ms {
		known[m.version] = true
	}
	for {
		done := false
		err := s.tx(ctx, "postgres: migrate", beginReadWrite, func(t *txn) error {
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
			applied := map[int64]bool{}
			t.query(func(r pgx.Rows) error {
				var v int64
				if err := r.Scan(&v); err != nil {
					return err
				}
				applied[v] = true
				return nil
			}, "SELECT version FROM schema_migrations")
			if err := t.flush(); err != nil {
				return err
			}
			for v := range applied {
				if !known[v] {
					return errcode.New(errcode.Internal, "postgres: database has schema version %d, which this binary does not know (a newer coffer migrated it)", v)
				}
			}
			for _, m := range ms {
				if applied[m.version] {
					continue
				}
				// Several statements: the simple protocol, outside a batch.
				if _, err := t.conn.Exec(t.ctx, m.sql, pgx.QueryExecModeSimpleProtocol); err != nil {
					return fmt.Errorf("migration %s: %w", m.name, err)
				}
				t.exec("INSERT INTO schema_migrations (version, applied_at) VALUES ($1, $2)", m.version, now().UnixNano())
				return nil
			}
			done = true
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
