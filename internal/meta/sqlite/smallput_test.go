package sqlite

import (
	"context"
	"fmt"
	"testing"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

// The writer's side of a small S3 PUT (issue 23): one inline object of
// 1 KiB whose owner has no quota. modernc.org/sqlite allocates for every
// statement (its rows, its column names), so the allocation count follows
// the statements a put runs; a statement added to the path shows here.

// putInlineAllocCeiling: 113 allocations measured with the lookups'
// columns terse and the inline insert without RETURNING (fifth pass; 194
// before); 194 with the usage grown in one UPDATE for an owner without
// quota (addUsage's fast path); 219 with the quota read first (SELECT
// quota_bytes, usage_bytes, then UPDATE).
const putInlineAllocCeiling = 120

func TestPutInlineAllocs(t *testing.T) {
	if testing.Short() {
		t.Skip("allocation counts: run without -short (scripts/test.sh: without the race detector, which changes them)")
	}
	s, _ := setup(t, Options{})
	ctx := context.Background()
	data := make([]byte, 1024)
	i := 0
	put := func() {
		i++
		o := object(fmt.Sprintf("k%06d", i), int64(len(data)))
		o.BlobKey, o.Inline = "", data
		if err := putOne(ctx, s, o, meta.Cond{}); err != nil {
			t.Fatal(err)
		}
	}
	put()
	n := testing.AllocsPerRun(50, put)
	t.Logf("inline PUT of 1 KiB: %.0f allocations", n)
	if n > putInlineAllocCeiling {
		t.Errorf("inline PUT of 1 KiB: %.0f allocations, ceiling %d", n, putInlineAllocCeiling)
	}
}

// TestGrowUsageWithQuota: the one-statement growth is only for owners
// without a quota; an owner with one is still checked exactly, and a
// growth refused leaves the usage as it was.
func TestGrowUsageWithQuota(t *testing.T) {
	s, _ := setup(t, Options{})
	ctx := context.Background()
	q := int64(3000)
	if _, err := s.UpdateUser(ctx, "alice", meta.UserUpdate{QuotaBytes: &q}); err != nil {
		t.Fatal(err)
	}
	put := func(key string, size int64) error {
		o := object(key, size)
		o.BlobKey, o.Inline = "", make([]byte, size)
		return putOne(ctx, s, o, meta.Cond{})
	}
	if err := put("a", 2000); err != nil {
		t.Fatal(err)
	}
	if err := put("b", 1001); !errcode.Is(err, errcode.QuotaExceeded) {
		t.Fatalf("put over the quota: %v, want QuotaExceeded", err)
	}
	if err := put("c", 1000); err != nil {
		t.Fatalf("put up to the quota: %v", err)
	}
	u, err := s.GetUser(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if u.UsageBytes != 3000 {
		t.Errorf("usage %d, want 3000", u.UsageBytes)
	}
	// Without a quota again: growth is not checked (and not refused).
	q = 0
	if _, err := s.UpdateUser(ctx, "alice", meta.UserUpdate{QuotaBytes: &q}); err != nil {
		t.Fatal(err)
	}
	if err := put("d", 5000); err != nil {
		t.Fatal(err)
	}
	if u, err = s.GetUser(ctx, "alice"); err != nil || u.UsageBytes != 8000 {
		t.Errorf("usage %d (%v), want 8000", u.UsageBytes, err)
	}
}

// TestLookupColumnsTerse: the lookups' result columns are named with one
// byte and have no declared type, so that modernc.org/sqlite allocates
// neither for each column on every execution (terse). Before: the
// columns' own names ("owner_id", …) and types ("TEXT", …), 33 columns
// for a write's lookup.
func TestLookupColumnsTerse(t *testing.T) {
	s, _ := setup(t, Options{})
	ctx := context.Background()
	for _, q := range []string{lookupQuery, lookupVersionQuery, readLatestQuery, readPartsQuery} {
		args := []any{"alice", "k", "v"}
		if q == readPartsQuery {
			args = []any{int64(1)}
		} else if q != lookupVersionQuery {
			args = args[:2]
		}
		rows, err := s.readers.QueryContext(ctx, q, args...)
		if err != nil {
			t.Fatal(err)
		}
		cts, err := rows.ColumnTypes()
		rows.Close()
		if err != nil {
			t.Fatal(err)
		}
		for i, ct := range cts {
			if len(ct.Name()) != 1 || ct.DatabaseTypeName() != "" {
				t.Errorf("%.40s…: column %d is %q of type %q, want a one-byte name and no declared type", q, i, ct.Name(), ct.DatabaseTypeName())
				break
			}
		}
	}
}
