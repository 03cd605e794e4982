package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

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

// migrate applies the pending migrations on c, each in its own
// transaction. It refuses a database migrated by a newer binary.
func migrate(ctx context.Context, c *sql.Conn, now func() time.Time) error {
	ms, err := migrations()
	if err != nil {
		return errcode.Wrap(errcode.Internal, err, "sqlite: bad embedded migrations")
	}
	if _, err := c.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		applied_at INTEGER NOT NULL
	)`); err != nil {
		return classify(err, "sqlite: create schema_migrations")
	}
	applied, err := appliedVersions(ctx, c)
	if err != nil {
		return err
	}
	known := map[int64]bool{}
	for _, m := range ms {
		known[m.version] = true
	}
	for v := range applied {
		if !known[v] {
			return errcode.New(errcode.Internal, "sqlite: database has schema version %d, which this binary does not know (a newer coffer migrated it)", v)
		}
	}
	for _, m := range ms {
		if applied[m.version] {
			continue
		}
		if err := apply(ctx, c, m, now()); err != nil {
			return err
		}
	}
	return nil
}

// appliedVersions returns the versions recorded in schema_migrations.
func appliedVersions(ctx context.Context, c *sql.Conn) (map[int64]bool, error) {
	rows, err := c.QueryContext(ctx, "SELECT version FROM schema_migrations")
	if err != nil {
		return nil, classify(err, "sqlite: read schema versions")
	}
	defer rows.Close()
	applied := map[int64]bool{}
	for rows.Next() {
		var v int64
		if err := rows.Scan(&v); err != nil {
			return nil, classify(err, "sqlite: read schema versions")
		}
		applied[v] = true
	}
	if err := rows.Err(); err != nil {
		return nil, classify(err, "sqlite: read schema versions")
	}
	return applied, nil
}

// apply runs one migration in a transaction, unless another process applied
// it meanwhile.
func apply(ctx context.Context, c *sql.Conn, m migration, now time.Time) (err error) {
	if _, err := c.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return classify(err, "sqlite: migration %s", m.name)
	}
	defer func() {
		if err != nil {
			_, _ = c.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		}
	}()
	var n int
	if err := c.QueryRowContext(ctx, "SELECT count(*) FROM schema_migrations WHERE version = ?", m.version).Scan(&n); err != nil {
		return classify(err, "sqlite: migration %s", m.name)
	}
	if n == 0 {
		if _, err := c.ExecContext(ctx, m.sql); err != nil {
			return classify(err, "sqlite: migration %s", m.name)
		}
		if _, err := c.ExecContext(ctx, "INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)", m.version, now.UnixNano()); err != nil {
			return classify(err, "sqlite: migration %s", m.name)
		}
	}
	if _, err := c.ExecContext(ctx, "COMMIT"); err != nil {
		return classify(err, "sqlite: migration %s", m.name)
	}
	return nil
}
