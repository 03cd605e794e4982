package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/meta/metasql"
)

// ListObjects implements meta.Store with meta.List over an indexed range
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
	return meta.List(ctx, rangeScan(q, bucket), opts)
}

// scanQuery is the SQL of one range scan variant.
func scanQuery(inclusive, bounded bool) string {
	var b strings.Builder
	b.WriteString("SELECT " + objectCols + " FROM objects WHERE bucket = ? AND key ")
	if inclusive {
		b.WriteString(">= ?")
	} else {
		b.WriteString("> ?")
	}
	if bounded {
		b.WriteString(" AND key < ?")
	}
	b.WriteString(" ORDER BY key LIMIT ?")
	return b.String()
}

// txReadQueries are the statements readers run inside read transactions.
// They are prepared at Open, since a transaction never prepares on the
// pool (see readStmts).
func txReadQueries() []string {
	qs := []string{"SELECT 1 FROM buckets WHERE name = ?", readPartsQuery, lookupQuery}
	for _, inclusive := range []bool{false, true} {
		for _, bounded := range []bool{false, true} {
			qs = append(qs, scanQuery(inclusive, bounded))
		}
	}
	return qs
}

// rangeScan returns the range scan of bucket's objects. Bounds are bound as
// Go strings, that is as TEXT with their bytes unchanged, and keys use the
// BINARY collation: SQLite compares them with memcmp even when a bound
// (a PrefixEnd) is not valid UTF-8.
func rangeScan(q querier, bucket string) meta.ScanFunc {
	return func(ctx context.Context, from string, inclusive bool, end string, limit int) ([]meta.Object, error) {
		args := []any{bucket, from}
		if end != "" {
			args = append(args, end)
		}
		args = append(args, limit)
		rows, err := q.QueryContext(ctx, scanQuery(inclusive, end != ""), args...)
		if err != nil {
			return nil, classify(err, "list %q", bucket)
		}
		defer rows.Close()
		out := make([]meta.Object, 0, min(limit, 64))
		var multi []row // the multipart objects of out
		var at []int    // their indexes in out
		for rows.Next() {
			o, err := scanObject(rows)
			if err != nil {
				return nil, classify(err, "list %q", bucket)
			}
			if o.partsID != 0 {
				multi = append(multi, o)
				at = append(at, len(out))
			}
			out = append(out, o.Object)
		}
		if err := rows.Err(); err != nil {
			return nil, classify(err, "list %q", bucket)
		}
		if err := rows.Close(); err != nil {
			return nil, classify(err, "list %q", bucket)
		}
		if len(multi) > 0 {
			if err := readPartsOf(ctx, q, multi); err != nil {
				return nil, err
			}
			for i, o := range multi {
				out[at[i]] = o.Object
			}
		}
		return out, nil
	}
}

// readPartsOf fills the Parts of the multipart objects os in one query. q
// must read the snapshot os were read in.
func readPartsOf(ctx context.Context, q querier, os []row) error {
	ids := make([]int64, len(os))
	byID := make(map[int64]*row, len(os))
	for i := range os {
		ids[i] = os[i].partsID
		os[i].Parts = make([]meta.ObjectPart, 0, os[i].partCount)
		byID[os[i].partsID] = &os[i]
	}
	list, err := json.Marshal(ids)
	if err != nil {
		return errcode.Wrap(errcode.Internal, err, "encode parts ids")
	}
	rows, err := q.QueryContext(ctx, `SELECT parts_id, blob_key, size, etag, checksum FROM object_parts
		WHERE parts_id IN (SELECT value FROM json_each(?)) ORDER BY parts_id, idx`, string(list))
	if err != nil {
		return classify(err, "read object parts")
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var p meta.ObjectPart
		if err := rows.Scan(&id, &p.BlobKey, &p.Size, &p.ETag, &p.Checksum); err != nil {
			return classify(err, "read object parts")
		}
		if o := byID[id]; o != nil {
			o.Parts = append(o.Parts, p)
		}
	}
	if err := rows.Err(); err != nil {
		return classify(err, "read object parts")
	}
	for _, o := range os {
		if len(o.Parts) != o.partCount {
			return errcode.New(errcode.Internal, "object %q has %d of its %d parts", o.Key, len(o.Parts), o.partCount)
		}
	}
	return nil
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

// ListGarbage implements meta.Store. A limit <= 0 means 1000.
func (s *Store) ListGarbage(ctx context.Context, before time.Time, limit int) ([]meta.Garbage, error) {
	if err := s.ready(); err != nil {
		return nil, err
	}
	limit = meta.PageLimit(limit, 1000, 0)
	rows, err := s.read().QueryContext(ctx, `SELECT id, blob_key, created_at FROM garbage
		WHERE created_at < ? ORDER BY created_at, id LIMIT ?`, metasql.ToNanos(before), limit)
	if err != nil {
		return nil, classify(err, "list garbage")
	}
	defer rows.Close()
	var out []meta.Garbage
	for rows.Next() {
		var g meta.Garbage
		var created int64
		if err := rows.Scan(&g.ID, &g.BlobKey, &created); err != nil {
			return nil, classify(err, "list garbage")
		}
		g.CreatedAt = metasql.FromNanos(created)
		out = append(out, g)
	}
	if err := rows.Err(); err != nil {
		return nil, classify(err, "list garbage")
	}
	return out, nil
}

// DeleteGarbage implements meta.Store. Unknown ids are ignored.
func (s *Store) DeleteGarbage(ctx context.Context, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	return s.write(ctx, func(ctx context.Context, c *conn) error { return deleteGarbage(ctx, c, ids) })
}

// deleteGarbage deletes the queue entries ids.
func deleteGarbage(ctx context.Context, c *conn, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	list, err := json.Marshal(ids)
	if err != nil {
		return errcode.Wrap(errcode.Internal, err, "encode garbage ids")
	}
	_, err = c.ExecContext(ctx, "DELETE FROM garbage WHERE id IN (SELECT value FROM json_each(?))", string(list))
	return classify(err, "delete garbage")
}

// ClaimGarbage implements meta.Store in one write: the queue entries are
// read with their re-check (metasql.ClaimGarbageQuery), and those whose
// blob is referenced again are deleted. A limit <= 0 means 1000.
func (s *Store) ClaimGarbage(ctx context.Context, before time.Time, limit int) ([]meta.Garbage, error) {
	limit = meta.PageLimit(limit, 1000, 0)
	var out []meta.Garbage
	err := s.write(ctx, func(ctx context.Context, c *conn) error {
		out = nil
		rows, err := c.QueryContext(ctx, claimGarbageQuery, metasql.ToNanos(before), limit)
		if err != nil {
			return classify(err, "claim garbage")
		}
		var stale []int64
		for rows.Next() {
			var g meta.Garbage
			var created int64
			var referenced int
			if err := rows.Scan(&g.ID, &g.BlobKey, &created, &referenced); err != nil {
				rows.Close()
				return classify(err, "claim garbage")
			}
			if referenced != 0 {
				stale = append(stale, g.ID)
				continue
			}
			g.CreatedAt = metasql.FromNanos(created)
			out = append(out, g)
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return classify(err, "claim garbage")
		}
		return deleteGarbage(ctx, c, stale)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

var claimGarbageQuery = metasql.ClaimGarbageQuery("?1", "?2")

// ReferencedBlobs implements meta.Store. The map holds only referenced
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
	rows, err := s.read().QueryContext(ctx, referencedQuery, args...)
	if err != nil {
		return classify(err, "referenced blobs")
	}
	defer rows.Close()
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			return classify(err, "referenced blobs")
		}
		out[k] = true
	}
	return classify(rows.Err(), "referenced blobs")
}
