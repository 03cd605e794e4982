package postgres_test

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/meta/metatest"
	"github.com/coffer-storage/coffer/internal/meta/postgres"
	"github.com/coffer-storage/coffer/internal/testbackend"
)

func TestMain(m *testing.M) { testbackend.Main(m) }

// freshSchema creates a schema in the database at dbURL and returns a URL
// whose search_path is that schema: an empty metadata store, much cheaper
// than a database of its own. The schema is dropped at the end of t.
func freshSchema(t testing.TB, dbURL string) string {
	t.Helper()
	name := "s_" + testbackend.RandomHex(8)
	exec(t, dbURL, "CREATE SCHEMA "+name)
	t.Cleanup(func() { _ = execErr(dbURL, "DROP SCHEMA IF EXISTS "+name+" CASCADE") })
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", name)
	u.RawQuery = q.Encode()
	return u.String()
}

func exec(t testing.TB, dbURL, sql string) {
	t.Helper()
	if err := execErr(dbURL, sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func execErr(dbURL, sql string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return err
	}
	defer c.Close(context.Background())
	_, err = c.Exec(ctx, sql)
	return err
}

// open opens a store at u, closed at the end of t.
func open(t testing.TB, u string, opts postgres.Options) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(context.Background(), u, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	db := testbackend.SharedPostgres(t).CreateDatabase(t)
	metatest.Run(t, func(t *testing.T) (meta.Stores, func() error) {
		s, err := postgres.Open(t.Context(), freshSchema(t, db), postgres.Options{})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return s.Stores(), s.Close
	})
}
