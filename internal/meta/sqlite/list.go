package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
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
		return meta.ListPage{}, errNoBucket(bucket)
	}
	if err != nil {
		return meta.ListPage{}, classify(err, "list %q", bucket)
	}
	return meta.List(ctx, rangeScan(q, bucket), opts)
}

// rangeScan returns the range scan of bucket's objects. Bounds are bound as
// Go strings, that is as TEXT with their bytes unchanged, and keys use the
// BINARY collation: SQLite compares them with memcmp even when a bound
// (a PrefixEnd) is not valid UTF-8.
func rangeScan(q querier, bucket string) meta.ScanFunc {
	return func(ctx context.Context, from string, inclusive bool, end string, limit int) ([]meta.Object, error) {
		var b strings.Builder
		b.WriteString("SELECT " + objectCols + " FROM objects WHERE bucket = ? AND key ")
		if inclusive {
			b.WriteString(">= ?")
		} else {
			b.WriteString("> ?")
		}
		args := []any{bucket, from}
		if end != "" {
			b.WriteString(" AND key < ?")
			args = append(args, end)
		}
		b.WriteString(" ORDER BY key LIMIT ?")
		args = append(args, limit)

		rows, err := q.QueryContext(ctx, b.String(), args...)
		if err != nil {
			return nil, classify(err, "list %q", bucket)
		}
		defer rows.Close()
		out := make([]meta.Object, 0, min(limit, 64))
		for rows.Next() {
			o, err := scanObject(rows)
			if err != nil {
				return nil, classify(err, "list %q", bucket)
			}
			out = append(out, o)
		}
		if err := rows.Err(); err != nil {
			return nil, classify(err, "list %q", bucket)
		}
		return out, nil
	}
}

// chunk is how many keys go into one IN (...) list. Shorter lists are
// padded, so that there is one statement text to prepare.
const chunk = 128

var referencedQuery = func() string {
	in := strings.TrimSuffix(strings.Repeat("?, ", chunk), ", ")
	return "SELECT blob_key FROM objects WHERE blob_key IN (" + in + ")" +
		" UNION SELECT blob_key FROM garbage WHERE blob_key IN (" + in + ")"
}()

// ListGarbage implements meta.Store. A limit <= 0 means 1000.
func (s *Store) ListGarbage(ctx context.Context, before time.Time, limit int) ([]meta.Garbage, error) {
	if err := s.ready(); err != nil {
		return nil, err
	}
	if limit <= 0 {
		limit = 1000
	}
	rows, err := s.read().QueryContext(ctx, `SELECT id, blob_key, created_at FROM garbage
		WHERE created_at < ? ORDER BY created_at, id LIMIT ?`, toNanos(before), limit)
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
		g.CreatedAt = fromNanos(created)
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
	list, err := json.Marshal(ids)
	if err != nil {
		return errcode.Wrap(errcode.Internal, err, "encode garbage ids")
	}
	return s.write(ctx, func(ctx context.Context, c *conn) error {
		_, err := c.ExecContext(ctx, "DELETE FROM garbage WHERE id IN (SELECT value FROM json_each(?))", string(list))
		return classify(err, "delete garbage")
	})
}

// ReferencedBlobs implements meta.Store. The map holds only referenced keys.
func (s *Store) ReferencedBlobs(ctx context.Context, keys []string) (map[string]bool, error) {
	if err := s.ready(); err != nil {
		return nil, err
	}
	out := map[string]bool{}
	args := make([]any, 2*chunk)
	for start := 0; start < len(keys); start += chunk {
		part := keys[start:min(start+chunk, len(keys))]
		for i := range chunk {
			k := part[min(i, len(part)-1)] // pad with a repeat
			args[i], args[chunk+i] = k, k
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
