package postgres

import (
	"context"
	"fmt"
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
		// finishScan flushes the scan queued into l, with the bucket
		// check if not done yet, and reads the parts of its multipart
		// objects in the same snapshot.
		finishScan := func(l *listed) error {
			if err := t.flush(); err != nil {
				return err
			}
			if err := check(); err != nil {
				return err
			}
			if len(l.multipart) > 0 && !opts.NoParts {
				var parts []metasql.PartOf
				queueRows(t, &parts, metasql.ScanPartOf, sq.PartsOf, l.partsIDs())
				if err := t.flush(); err != nil {
					return err
				}
				return l.attachParts(parts)
			}
			return nil
		}
		scan := func(ctx context.Context, from string, inclusive bool, end string, limit int) ([]meta.Object, error) {
			l := listed{objects: make([]meta.Object, 0, limit)}
			query, _ := sq.ListScan(bucket, opts.DeleteMarkers, inclusive, end != "")
			queueListRows(t, &l, bucket, opts.DeleteMarkers, query, metasql.RangeScanArgs(bucket, from, end, limit, key)...)
			if err := finishScan(&l); err != nil {
				return nil, err
			}
			return l.objects, nil
		}
		var skip meta.SkipScanFunc
		if !opts.DeleteMarkers {
			skip = func(ctx context.Context, from string, inclusive bool, end string, limit int, prefix, delim string) ([]meta.Object, error) {
				l := listed{objects: make([]meta.Object, 0, limit)}
				args := metasql.RangeScanArgs(bucket, from, end, limit, key)
				args = append(args, len(prefix), key(delim), key(meta.PrefixEnd(delim)))
				queueListRows(t, &l, bucket, false, skipScans[b2i(inclusive)][b2i(end != "")], args...)
				return l.objects, finishScan(&l)
			}
		}
		p, err := meta.ListSkipping(ctx, scan, skip, opts)
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

// skipScans are the skip scans of meta.SkipScanFunc, [inclusive][bounded]:
// a loose index scan, each row found by one seek of the primary key
// from the row before it, past its common prefix if it has one, then the
// rows' listCols (metasql.ScanObject): bucket $1, from $2, limit $3, and
// end $4 if bounded, then the prefix's length in bytes, the delimiter
// and its PrefixEnd (not ""). A key's common prefix ends at the first
// delimiter after the prefix; everything that starts with it sorts
// before the key's bytes up to that delimiter followed by the
// delimiter's PrefixEnd, for any bytes (keys are bytea). The LIMIT 1 of
// the row's read (a key has one latest version) keeps the planner from
// flattening it into a join, which it may make a hash join over the
// bucket's rows (TestSkipScanPlan).
var skipScans = [2][2]string{{skipScanSQL(false, false), skipScanSQL(false, true)}, {skipScanSQL(true, false), skipScanSQL(true, true)}}

func skipScanSQL(inclusive, bounded bool) string {
	bound, n := "", 4
	if bounded {
		bound, n = " AND key < $4", 5
	}
	plen, delim, delimEnd := fmt.Sprintf("$%d::int", n), fmt.Sprintf("$%d::bytea", n+1), fmt.Sprintf("$%d::bytea", n+2)
	op := ">"
	if inclusive {
		op = ">="
	}
	at := "position(" + delim + " IN substring(s.k FROM " + plen + " + 1))"
	next := "CASE WHEN " + at + " > 0 THEN substring(s.k FROM 1 FOR " + plen + " + " + at + " - 1) || " + delimEnd + " ELSE s.k END"
	latest := " AND is_latest AND NOT delete_marker ORDER BY key LIMIT 1)"
	return "WITH RECURSIVE s(k, n) AS (" +
		"SELECT (SELECT key FROM objects WHERE bucket = $1 AND key " + op + " $2" + bound + latest + ", 1 " +
		"UNION ALL SELECT (SELECT key FROM objects WHERE bucket = $1 AND key > s.k AND key >= " + next + bound + latest + ", s.n + 1 " +
		"FROM s WHERE s.k IS NOT NULL AND s.n < $3) " +
		"SELECT o.* FROM s CROSS JOIN LATERAL (SELECT " + metasql.ListCols + " FROM objects WHERE bucket = $1 AND key = s.k AND is_latest AND NOT delete_marker LIMIT 1) o ORDER BY s.n"
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
