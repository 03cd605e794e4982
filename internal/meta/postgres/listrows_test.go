package postgres_test

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/meta/metatest"
	"github.com/coffer-storage/coffer/internal/meta/postgres"
	"github.com/coffer-storage/coffer/internal/testbackend"
)

// withQueryMode is u with pgx's default_query_exec_mode set to mode.
func withQueryMode(t testing.TB, u, mode string) string {
	t.Helper()
	p, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	q := p.Query()
	q.Set("default_query_exec_mode", mode)
	p.RawQuery = q.Encode()
	return p.String()
}

// TestListRowsRawDecodable: a listing's range scan comes back in the
// formats the raw decoder reads (listrows.go) in the store's query mode,
// and not in the simple protocol's text formats, which
// TestConformanceTextFormats then covers through the generic scanner.
func TestListRowsRawDecodable(t *testing.T) {
	u := testbackend.SharedPostgres(t).CreateDatabase(t)
	open(t, u, postgres.Options{})
	for _, c := range []struct {
		mode string
		want bool
	}{{"cache_statement", true}, {"simple_protocol", false}} {
		ctx := t.Context()
		conn, err := pgx.Connect(ctx, withQueryMode(t, u, c.mode))
		if err != nil {
			t.Fatal(err)
		}
		b := &pgx.Batch{}
		b.Queue(postgres.ListScanSQL, "alice", []byte("a"), 10, []byte("b")).Query(func(rows pgx.Rows) error {
			defer rows.Close()
			if got := postgres.RawDecodable(rows.FieldDescriptions(), false); got != c.want {
				t.Errorf("%s: RawDecodable = %v, want %v (%+v)", c.mode, got, c.want, rows.FieldDescriptions())
			}
			return rows.Err()
		})
		if err := conn.SendBatch(ctx, b).Close(); err != nil {
			t.Fatal(err)
		}
		_ = conn.Close(ctx)
	}
}

// TestConformanceTextFormats: the listing tests of the conformance suite
// on a store whose results come in text formats (the simple protocol),
// which the raw decoder leaves to the generic scanner: both read a
// listing alike.
func TestConformanceTextFormats(t *testing.T) {
	// Formats, not concurrency: the test command runs it once, without the
	// race detector (~90 s under it, three conformance groups again).
	if testing.Short() {
		t.Skip("the simple protocol's conformance groups run without -short")
	}
	db := withQueryMode(t, testbackend.SharedPostgres(t).CreateDatabase(t), "simple_protocol")
	metatest.RunGroups(t, func(t *testing.T) (meta.Stores, func() error) {
		s, err := postgres.Open(t.Context(), freshSchema(t, db), postgres.Options{})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return s.Stores(), s.Close
	}, "List", "Versions", "Multipart")
}

// TestListPageAllocs bounds the allocations of a page of 1,000 objects
// with user metadata: 19,119 when pgx scanned each column (about 19 a
// row), about 3 a row since listrows.go.
func TestListPageAllocs(t *testing.T) {
	if testing.Short() {
		t.Skip("allocation counts: run without -short (scripts/test.sh: without the race detector, which changes them)")
	}
	s := open(t, testbackend.SharedPostgres(t).CreateDatabase(t), postgres.Options{})
	addAlice(t, s, 0)
	ctx := context.Background()
	var puts []meta.Put
	for i := range 1000 {
		o := object(fmt.Sprintf("d/k%04d", i), 10)
		o.ContentType, o.SHA256, o.Metadata = "text/plain", "0123", map[string]string{"owner": "bench", "n": fmt.Sprint(i)}
		o.ModTime = time.Unix(0, int64(i)+1)
		puts = append(puts, meta.Put{Object: o})
	}
	if _, err := s.PutObjects(ctx, puts); err != nil {
		t.Fatal(err)
	}
	opts := meta.ListOptions{Prefix: "d/", Limit: 1000}
	allocs := testing.AllocsPerRun(5, func() {
		p, err := s.ListObjects(ctx, "alice", opts)
		if err != nil || len(p.Objects) != 1000 || p.Objects[999].Metadata["n"] != "999" || p.Objects[5].ModTime.UnixNano() != 6 {
			t.Fatalf("ListObjects: %d objects, %v", len(p.Objects), err)
		}
	})
	if allocs > 5000 {
		t.Errorf("a page of 1,000 objects made %.0f allocations, want at most 5,000", allocs)
	}
	t.Logf("%.0f allocations a page of 1,000", allocs)
}

// TestSkipScanPlan: the skip scan of a listing with a delimiter
// (list.go) seeks objects_pkey for each row, in a generic plan too (as
// the prepared statement gets after a few runs): with sequential scans
// off, a statement that cannot use the index plans a Seq Scan; and the
// read of each row it found is a seek too, not a join over the bucket's
// rows.
func TestSkipScanPlan(t *testing.T) {
	u := testbackend.SharedPostgres(t).CreateDatabase(t)
	s := open(t, u, postgres.Options{})
	addAlice(t, s, 0)
	ctx := t.Context()
	var puts []meta.Put
	for _, k := range []string{"d000/a", "d000/b", "d001/a", "d050/k1", "d050/k1/a", "d050/k2", "e"} {
		puts = append(puts, meta.Put{Object: object(k, 1)})
	}
	if _, err := s.PutObjects(ctx, puts); err != nil {
		t.Fatal(err)
	}
	c, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	for _, set := range []string{"SET enable_seqscan = off", "SET plan_cache_mode = force_generic_plan"} {
		if _, err := c.Exec(ctx, set); err != nil {
			t.Fatal(err)
		}
	}
	for i, q := range []string{postgres.SkipScanSQL[1][0], postgres.SkipScanSQL[0][1]} {
		types := "text, bytea, int, int, bytea, bytea"
		args := "'alice', 'd0000', 256, 0, '/', '0'"
		if i == 1 {
			types = "text, bytea, int, bytea, int, bytea, bytea"
			args = "'alice', 'd050/k1', 256, 'd0500', 5, '/', '0'"
		}
		if _, err := c.Exec(ctx, fmt.Sprintf("PREPARE skip%d(%s) AS %s", i, types, q)); err != nil {
			t.Fatal(err)
		}
		// ANALYZE: the seek of each next row is a SubPlan of the
		// recursion's target list, which EXPLAIN alone does not show.
		rows, err := c.Query(ctx, fmt.Sprintf("EXPLAIN (ANALYZE, COSTS off) EXECUTE skip%d(%s)", i, args))
		if err != nil {
			t.Fatal(err)
		}
		plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		all := strings.Join(plan, "\n")
		if strings.Count(all, "Index Scan using objects_pkey") != 3 || strings.Contains(all, "Seq Scan") || strings.Contains(all, "Hash") {
			t.Errorf("the skip scan does not seek objects_pkey for each row:\n%s", all)
		}
	}
}
