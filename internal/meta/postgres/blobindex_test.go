package postgres_test

import (
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/coffer-storage/coffer/internal/meta/metasql"
	"github.com/coffer-storage/coffer/internal/meta/postgres"
	"github.com/coffer-storage/coffer/internal/testbackend"
)

// TestBlobKeyIndexPartial: objects_blob_key holds only the rows that name a
// blob (migration 0032), and metasql.Referenced can still use it in a
// generic plan (with sequential scans off, a query that cannot use the
// partial index plans a Seq Scan on objects).
func TestBlobKeyIndexPartial(t *testing.T) {
	u := testbackend.SharedPostgres(t).CreateDatabase(t)
	open(t, u, postgres.Options{})
	ctx := t.Context()
	c, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var def string
	if err := c.QueryRow(ctx, "SELECT indexdef FROM pg_indexes WHERE indexname = 'objects_blob_key' ").Scan(&def); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(def, "WHERE (blob_key <> ''::text)") {
		t.Errorf("objects_blob_key is %q, want a partial index WHERE blob_key <> ''", def)
	}
	// A generic plan, as a prepared statement gets after a few runs: the
	// planner cannot prove that an unknown $1 is not '' (a custom plan with
	// the value can, which hides a query that cannot use the index).
	for _, set := range []string{"SET enable_seqscan = off", "SET plan_cache_mode = force_generic_plan"} {
		if _, err := c.Exec(ctx, set); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Exec(ctx, "PREPARE referenced(text) AS SELECT 1 WHERE "+metasql.ReferencedOrQueued("$1")); err != nil {
		t.Fatal(err)
	}
	rows, err := c.Query(ctx, "EXPLAIN EXECUTE referenced('blob-x')")
	if err != nil {
		t.Fatal(err)
	}
	var plan []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, line)
	}
	rows.Close()
	all := strings.Join(plan, "\n")
	if !strings.Contains(all, "objects_blob_key") || strings.Contains(all, "Seq Scan on objects") {
		t.Errorf("Referenced does not search objects through objects_blob_key:\n%s", all)
	}
}
