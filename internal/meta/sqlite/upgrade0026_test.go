package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/coffer-storage/coffer/internal/meta"
)

// TestUpgradeTo0026 opens a database that the migrations before 0026
// made, with an access key in it, and checks that the key reads back
// unscoped, never expiring and not an app token, and that a scoped key
// can then be stored beside it.
func TestUpgradeTo0026(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "meta.db")
	db, err := sql.Open("sqlite", dsn(path, "foreign_keys(ON)", "journal_mode(WAL)"))
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	qs := []string{"CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)"}
	for _, m := range mustMigrations(t) {
		if m.Version < 26 {
			qs = append(qs, m.SQL, fmt.Sprintf("INSERT INTO schema_migrations (version, applied_at) VALUES (%d, 0)", m.Version))
		}
	}
	qs = append(qs,
		"INSERT INTO users (id, email, password_hash, created_at) VALUES ('alice', 'alice@example.com', 'x', 1)",
		"INSERT INTO access_keys (id, user_id, secret_enc, name, internal, created_at, last_used) VALUES ('CFOLD', 'alice', x'0102', 'old', 0, 5, 7)")
	for _, q := range qs {
		if _, err := db.Exec(q); err != nil {
			db.Close()
			t.Fatalf("%.200s: %v", q, err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	s := openAt(t, path, Options{})
	k, err := s.GetAccessKey(ctx, "CFOLD")
	if err != nil || k.Name != "old" || k.Scope.Scoped() || !k.ExpiresAt.IsZero() || k.Token || k.LastUsed.UnixNano() != 7 {
		t.Fatalf("the old key after 0026: %+v, %v", k, err)
	}
	scoped := meta.AccessKey{ID: "CFNEW", UserID: "alice", SecretEnc: []byte{3}, Scope: meta.KeyScope{Bucket: "b", Access: meta.AccessRead}}
	if err := s.CreateAccessKey(ctx, scoped); err != nil {
		t.Fatal(err)
	}
	if keys, err := s.ListAccessKeys(ctx, "alice"); err != nil || len(keys) != 2 || keys[1].Scope != scoped.Scope {
		t.Fatalf("keys after 0026: %+v, %v", keys, err)
	}
}
