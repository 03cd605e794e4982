package postgres

import (
	"context"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/meta/metasql"
)

// Keys are bytea, so the range scans (metasql.Statements.RangeScans)
// compare bounds as raw bytes, and the primary key serves the range.

// ListObjects implements meta.Objects with meta.List over an indexed range
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
			l := listed{objects: make([]meta.Object, 0, limit)}
			query, _ := sq.ListScan(bucket, opts.DeleteMarkers, inclusive, end != "")
			queueListRows(t, &l, bucket, opts.DeleteMarkers, query, metasql.RangeScanArgs(bucket, from, end, limit, key)...)
			if err := t.flush(); err != nil {
				return nil, err
			}
			if err := check(); err != nil {
				return nil, err
			}
			if len(l.multipart) > 0 && !opts.NoParts {
				// In the transaction's snapshot.
				var parts []metasql.PartOf
				queueRows(t, &parts, metasql.ScanPartOf, sq.PartsOf, l.partsIDs())
				if err := t.flush(); err != nil {
					return nil, err
				}
				if err := l.attachParts(parts); err != nil {
					return nil, err
				}
			}
			return l.objects, nil
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
	return metasql.Result(page, err)
}

// ListObjectVersions implements meta.Objects with meta.ListVersions over
// an indexed range scan, in one REPEATABLE READ transaction (one
// snapshot). The bucket check goes with the first scan.
func (s *Store) ListObjectVersions(ctx context.Context, bucket string, opts meta.VersionListOptions) (meta.VersionPage, error) {
	if err := meta.CheckVersionListOptions(opts); err != nil {
		return meta.VersionPage{}, err
	}
	var page meta.VersionPage
	err := s.tx(ctx, "list versions of "+bucket, beginSnapshot, func(t *txn) error {
		var name string
		exists := false
		queueRow(t, &name, &exists, metasql.ScanString, "SELECT name FROM buckets WHERE name = $1", bucket)
		if err := t.flush(); err != nil {
			return err
		}
		if !exists {
			return meta.ErrNoBucket(bucket)
		}
		scan := func(ctx context.Context, fromKey, fromSeq string, inclusive bool, end string, limit int) ([]meta.Versioned, error) {
			os := make([]metasql.ObjectRow, 0, limit)
			queueObjectRows(t, &os, bucket, sq.VersionScans[b2i(inclusive)][b2i(end != "")],
				metasql.VersionScanArgs(bucket, fromKey, fromSeq, end, limit, key)...)
			if err := t.flush(); err != nil {
				return nil, err
			}
			return metasql.Versioned(os), nil
		}
		nullSeq := func(ctx context.Context, k string) (string, bool, error) {
			var seq string
			found := false
			queueRow(t, &seq, &found, metasql.ScanString, sq.NullSeq, bucket, key(k))
			return seq, found, t.flush()
		}
		p, err := meta.ListVersions(ctx, scan, nullSeq, opts)
		page = p
		return err
	})
	return metasql.Result(page, err)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

var (
	referencedQuery = `SELECT b.k FROM unnest($1::text[]) AS b(k) WHERE ` + metasql.ReferencedOrQueued("b.k")
)

// ReferencedBlobs implements meta.Reclamation, in one statement. The map holds
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
	referenced, err := metasql.List(ctx, driver{s}, "referenced blobs", metasql.ScanString, referencedQuery, keys)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, k := range referenced {
		out[k] = true
	}
	return out, nil
}
