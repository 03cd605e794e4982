package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta/metasql"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrate applies the pending migrations on c, each in its own
// transaction. It refuses a database migrated by a newer binary.
func migrate(ctx context.Context, c *sql.Conn, now func() time.Time) error {
	ms, err := metasql.Migrations(migrationFiles)
	if err != nil {
		return errcode.Wrap(errcode.Internal, err, "sqlite: bad embedded migrations")
	}
	if _, err := c.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		applied_at INTEGER NOT NULL
	)`); err != nil {
		return classify(err, "sqlite: create schema_migrations")
	}
	applied, err := queryRows(ctx, c, metasql.ScanInt64, "SELECT version FROM schema_migrations")
	if err != nil {
		return classify(err, "sqlite: read schema versions")
	}
	pending, err := metasql.Pending("sqlite", ms, applied)
	if err != nil {
		return err
	}
	for _, m := range pending {
		if err := apply(ctx, c, m, now()); err != nil {
			return err
		}
	}
	return nil
}

// apply runs one migration in a transaction, unless another process applied
// it meanwhile.
func apply(ctx context.Context, c *sql.Conn, m metasql.Migration, now time.Time) (err error) {
	if _, err := c.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return classify(err, "sqlite: migration %s", m.Name)
	}
	defer func() {
		if err != nil {
			_, _ = c.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		}
	}()
	var n int
	if err := c.QueryRowContext(ctx, "SELECT count(*) FROM schema_migrations WHERE version = ?", m.Version).Scan(&n); err != nil {
		return classify(err, "sqlite: migration %s", m.Name)
	}
	if n == 0 {
		if _, err := c.ExecContext(ctx, m.SQL); err != nil {
			return classify(err, "sqlite: migration %s", m.Name)
		}
		if _, err := c.ExecContext(ctx, "INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)", m.Version, now.UnixNano()); err != nil {
			return classify(err, "sqlite: migration %s", m.Name)
		}
	}
	if _, err := c.ExecContext(ctx, "COMMIT"); err != nil {
		return classify(err, "sqlite: migration %s", m.Name)
	}
	return nil
}
