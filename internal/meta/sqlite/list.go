package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/meta/metasql"
)

// ListObjects implements meta.Objects with meta.List over an indexed range
// scan. The whole page is read in one read transaction, so it is a
// consistent snapshot.
func (s *Store) ListObjects(ctx context.Context, bucket string, opts meta.ListOptions) (meta.ListPage, error) {
	if err := s.ready(); err != nil {
		return meta.ListPage{}, err
	}
	tx, err := s.readers.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return meta.ListPage{}, classify(err, "list %q", bucket)
	}
	defer tx.Rollback()
	q := reader{stmts: s.rstmts, tx: tx}

	var one int
	err = q.QueryRowContext(ctx, "SELECT 1 FROM buckets WHERE name = ?", bucket).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return meta.ListPage{}, meta.ErrNoBucket(bucket)
	}
	if err != nil {
		return meta.ListPage{}, classify(err, "list %q", bucket)
	}
	return meta.List(ctx, rangeScan(q, bucket, opts.DeleteMarkers, opts.NoParts), opts)
}

// ListObjectVersions implements meta.Objects with meta.ListVersions over
// an indexed range scan, in one read transaction (one snapshot).
func (s *Store) ListObjectVersions(ctx context.Context, bucket string, opts meta.VersionListOptions) (meta.VersionPage, error) {
	if err := meta.CheckVersionListOptions(opts); err != nil {
		return meta.VersionPage{}, err
	}
	if err := s.ready(); err != nil {
		return meta.VersionPage{}, err
	}
	tx, err := s.readers.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return meta.VersionPage{}, classify(err, "list versions of %q", bucket)
	}
	defer tx.Rollback()
	q := reader{stmts: s.rstmts, tx: tx}
	var one int
	err = q.QueryRowContext(ctx, "SELECT 1 FROM buckets WHERE name = ?", bucket).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return meta.VersionPage{}, meta.ErrNoBucket(bucket)
	}
	if err != nil {
		return meta.VersionPage{}, classify(err, "list versions of %q", bucket)
	}
	scan := func(ctx context.Context, fromKey, fromSeq string, inclusive bool, end string, limit int) ([]meta.Versioned, error) {
		os, err := queryRows(ctx, q, metasql.ScanVersion(bucket), sq.VersionScans[b2i(inclusive)][b2i(end != "")],
			metasql.VersionScanArgs(bucket, fromKey, fromSeq, end, limit, key)...)
		if err != nil {
			return nil, classify(err, "list versions of %q", bucket)
		}
		return metasql.Versioned(os), nil
	}
	nullSeq := func(ctx context.Context, k string) (string, bool, error) {
		seqs, err := queryRows(ctx, q, metasql.ScanString, sq.NullSeq, bucket, key(k))
		if err != nil || len(seqs) == 0 {
			return "", false, classify(err, "list versions of %q", bucket)
		}
		return seqs[0], true, nil
	}
	return meta.ListVersions(ctx, scan, nullSeq, opts)
}

// txReadQueries are the statements readers run inside read transactions.
// They are prepared at Open, since a transaction never prepares on the
// pool (see readStmts).
func txReadQueries() []string {
	qs := []string{"SELECT 1 FROM buckets WHERE name = ?", readPartsQuery, lookupQuery, lookupVersionQuery, readLatestQuery, sq.NullSeq}
	for _, byBound := range sq.RangeScans {
		qs = append(qs, byBound[:]...)
	}
	for _, byBound := range sq.DeletedScans {
		qs = append(qs, byBound[:]...)
	}
	for _, byBound := range sq.VersionScans {
		qs = append(qs, byBound[:]...)
	}
	return qs
}

// rangeScan returns the range scan of bucket's objects (of its latest
// delete markers if markers: metasql.ListScan), without their parts if
// noParts (ListOptions.NoParts). Bounds are bound as
// Go strings, that is as TEXT with their bytes unchanged, and keys use the
// BINARY collation: SQLite compares them with memcmp even when a bound
// (a PrefixEnd) is not valid UTF-8.
func rangeScan(q querier, bucket string, markers, noParts bool) meta.ScanFunc {
	return func(ctx context.Context, from string, inclusive bool, end string, limit int) ([]meta.Object, error) {
		query, scan := sq.ListScan(bucket, markers, inclusive, end != "")
		os, err := appendRows(ctx, make([]metasql.ObjectRow, 0, limit), q, scan, query, metasql.RangeScanArgs(bucket, from, end, limit, key)...)
		if err != nil {
			return nil, classify(err, "list %q", bucket)
		}
		if ids := metasql.MultipartIDs(os); len(ids) > 0 && !noParts {
			list, err := dialect.List(ids)
			if err != nil {
				return nil, errcode.Wrap(errcode.Internal, err, "encode parts ids")
			}
			parts, err := queryRows(ctx, q, metasql.ScanPartOf, sq.PartsOf, list)
			if err != nil {
				return nil, classify(err, "read object parts")
			}
			if err := metasql.AttachParts(os, parts); err != nil {
				return nil, err
			}
		}
		return metasql.Objects(os), nil
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// chunk is how many keys go into one IN (...) list. Shorter lists are
// padded, so that there is one statement text to prepare.
const chunk = 128

// referencedQuery returns those of the keys ?1..?chunk that a row points
// at or that wait in the garbage queue (metasql.ReferencedOrQueued), each
// looked up through the blob_key indexes.
var referencedQuery = func() string {
	var values strings.Builder
	for i := range chunk {
		if i > 0 {
			values.WriteString(", ")
		}
		fmt.Fprintf(&values, "(?%d)", i+1)
	}
	return "SELECT column1 FROM (VALUES " + values.String() + ") WHERE " +
		metasql.ReferencedOrQueued("column1")
}()

// ReferencedBlobs implements meta.Reclamation. The map holds only referenced
// keys; "" is never referenced.
func (s *Store) ReferencedBlobs(ctx context.Context, keys []string) (map[string]bool, error) {
	if err := s.ready(); err != nil {
		return nil, err
	}
	keys = slices.DeleteFunc(slices.Clone(keys), func(k string) bool { return k == "" })
	out := map[string]bool{}
	args := make([]any, chunk)
	for start := 0; start < len(keys); start += chunk {
		part := keys[start:min(start+chunk, len(keys))]
		for i := range chunk {
			args[i] = part[min(i, len(part)-1)] // pad with a repeat
		}
		if err := s.referenced(ctx, args, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// referenced adds to out the keys of args that a row points at.
func (s *Store) referenced(ctx context.Context, args []any, out map[string]bool) error {
	keys, err := queryRows(ctx, s.read(), metasql.ScanString, referencedQuery, args...)
	for _, k := range keys {
		out[k] = true
	}
	return classify(err, "referenced blobs")
}
