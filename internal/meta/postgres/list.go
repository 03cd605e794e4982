package postgres

import (
	"context"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/meta/metasql"
)

// scanQueries are the range scans of RangeScanSQL, by inclusive and
// bounded. Keys are bytea, so the bounds compare as raw bytes and the
// primary key serves the range.
var scanQueries = [2][2]string{
	{metasql.RangeScanSQL(false, false, ph), metasql.RangeScanSQL(false, true, ph)},
	{metasql.RangeScanSQL(true, false, ph), metasql.RangeScanSQL(true, true, ph)},
}

var partsOfQuery = metasql.PartsOfSQL("parts_id = ANY($1)")

// ListObjects implements meta.Store with meta.List over an indexed range
// scan, in one REPEATABLE READ transaction: the page is one snapshot. The
// bucket check goes with the first scan.
func (s *Store) ListObjects(ctx context.Context, bucket string, opts meta.ListOptions) (meta.ListPage, error) {
	var page meta.ListPage
	err := s.tx(ctx, "list "+bucket, beginSnapshot, func(t *txn) error {
		var name string
		exists, checked := false, false
		queueRow(t, &name, &exists, metasql.ScanString, "SELECT name FROM buckets WHERE name = $1", bucket)
		check := func() error {
			if checked {
				return nil
			}
			if err := t.flush(); err != nil {
				return err
			}
			checked = true
			if !exists {
				return meta.ErrNoBucket(bucket)
			}
			return nil
		}
		scan := func(ctx context.Context, from string, inclusive bool, end string, limit int) ([]meta.Object, error) {
			var os []metasql.ObjectRow
			queueRows(t, &os, metasql.ScanObject(bucket), scanQueries[b2i(inclusive)][b2i(end != "")],
				metasql.RangeScanArgs(bucket, from, end, limit, key)...)
			if err := t.flush(); err != nil {
				return nil, err
			}
			if err := check(); err != nil {
				return nil, err
			}
			if ids := metasql.MultipartIDs(os); len(ids) > 0 {
				// In the transaction's snapshot.
				var parts []metasql.PartOf
				queueRows(t, &parts, metasql.ScanPartOf, partsOfQuery, ids)
				if err := t.flush(); err != nil {
					return nil, err
				}
				if err := metasql.AttachParts(os, parts); err != nil {
					return nil, err
				}
			}
			return metasql.Objects(os), nil
		}
		p, err := meta.List(ctx, scan, opts)
		if err != nil {
			return err
		}
		if err := check(); err != nil { // List may return without scanning
			return err
		}
		page = p
		return nil
	})
	if err != nil {
		return meta.ListPage{}, err
	}
	return page, nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

var listGarbageSQL = metasql.ListGarbageSQL(ph)

// ListGarbage implements meta.Store. A limit <= 0 means 1000.
func (s *Store) ListGarbage(ctx context.Context, before time.Time, limit int) ([]meta.Garbage, error) {
	return list(ctx, s, "list garbage", metasql.ScanGarbage, listGarbageSQL, metasql.ToNanos(before), meta.PageLimit(limit, 1000, 0))
}

// ClaimGarbage implements meta.Store in one transaction of two round
// trips: the queue entries with their re-check (metasql.ClaimGarbageQuery),
// then the deletion of those whose blob is referenced again. A limit <= 0
// means 1000.
func (s *Store) ClaimGarbage(ctx context.Context, before time.Time, limit int) ([]meta.Garbage, error) {
	limit = meta.PageLimit(limit, 1000, 0)
	var out []meta.Garbage
	err := s.write(ctx, "claim garbage", func(t *txn) error {
		var claims []metasql.Claim
		queueRows(t, &claims, metasql.ScanClaim, claimGarbageQuery, metasql.ToNanos(before), limit)
		if err := t.flush(); err != nil {
			return err
		}
		var stale []int64
		out, stale = metasql.SplitClaims(claims)
		if len(stale) > 0 {
			t.exec("DELETE FROM garbage WHERE id = ANY($1)", stale)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

var (
	claimGarbageQuery = metasql.ClaimGarbageQuery("$1", "$2")
	referencedQuery   = `SELECT b.k FROM unnest($1::text[]) AS b(k) WHERE ` + metasql.ReferencedOrQueued("b.k")
)

// DeleteGarbage implements meta.Store. Unknown ids are ignored.
func (s *Store) DeleteGarbage(ctx context.Context, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	return s.write(ctx, "delete garbage", func(t *txn) error {
		t.exec("DELETE FROM garbage WHERE id = ANY($1)", ids)
		return nil
	})
}

// ReferencedBlobs implements meta.Store, in one statement. The map holds
// only referenced keys; "" is never referenced, nor is a key that no text
// column could hold (invalid UTF-8, NUL).
func (s *Store) ReferencedBlobs(ctx context.Context, keys []string) (map[string]bool, error) {
	keys = slices.DeleteFunc(slices.Clone(keys), func(k string) bool {
		return k == "" || !utf8.ValidString(k) || strings.IndexByte(k, 0) >= 0
	})
	if len(keys) == 0 {
		if err := s.ready(); err != nil {
			return nil, err
		}
		return map[string]bool{}, nil
	}
	referenced, err := list(ctx, s, "referenced blobs", metasql.ScanString, referencedQuery, keys)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, k := range referenced {
		out[k] = true
	}
	return out, nil
}
