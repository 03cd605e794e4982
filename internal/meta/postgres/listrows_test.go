package postgres_test

import (
	"context"
	"fmt"
	"net/url"
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
