package postgres

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/meta/metasql"
)

const objectCols = "key, size, etag, sha256, content_type, metadata, blob_key, mod_time, " +
	"checksum_algorithm, checksum_type, checksum_value, parts_id, part_count"

// scanObject scans the objectCols of a row of bucket.
func scanObject(r pgx.Rows, bucket string) (row, error) {
	var (
		o   row
		k   []byte
		md  pgtype.Text
		mod int64
		pid pgtype.Int8
	)
	if err := r.Scan(&k, &o.Size, &o.ETag, &o.SHA256, &o.ContentType, &md, &o.BlobKey, &mod,
		&o.Checksum.Algorithm, &o.Checksum.Type, &o.Checksum.Value, &pid, &o.partCount); err != nil {
		return row{}, err
	}
	o.Bucket, o.Key = bucket, string(k)
	o.ModTime = metasql.FromNanos(mod)
	o.partsID = pid.Int64
	var err error
	o.Metadata, err = decodeMetadata(md)
	return o, err
}

// scanQuery is the SQL of one range scan variant. Keys are bytea, so the
// bounds compare as raw bytes and the primary key serves the range.
func scanQuery(inclusive, bounded bool) string {
	var b strings.Builder
	b.WriteString("SELECT " + objectCols + " FROM objects WHERE bucket = $1 AND key ")
	if inclusive {
		b.WriteString(">= $2")
	} else {
		b.WriteString("> $2")
	}
	if bounded {
		b.WriteString(" AND key < $4")
	}
	b.WriteString(" ORDER BY key LIMIT $3")
	return b.String()
}

var scanQueries = [2][2]string{
	{scanQuery(false, false), scanQuery(false, true)},
	{scanQuery(true, false), scanQuery(true, true)},
}

// ListObjects implements meta.Store with meta.List over an indexed range
// scan, in one REPEATABLE READ transaction: the page is one snapshot. The
// bucket check goes with the first scan.
func (s *Store) ListObjects(ctx context.Context, bucket string, opts meta.ListOptions) (meta.ListPage, error) {
	var page meta.ListPage
	err := s.tx(ctx, "list "+bucket, beginSnapshot, func(t *txn) error {
		exists, checked := false, false
		t.queryRow(func(r pgx.Row) error {
			err := r.Scan(&exists)
			if errors.Is(err, pgx.ErrNoRows) {
				return nil
			}
			return err
		}, "SELECT true FROM buckets WHERE name = $1", bucket)
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
			out := make([]meta.Object, 0, min(limit, 64))
			var multi []row // the multipart objects of out
			var at []int    // their indexes in out
			args := []any{bucket, key(from), limit}
			if end != "" {
				args = append(args, key(end))
			}
			t.query(func(r pgx.Rows) error {
				o, err := scanObject(r, bucket)
				if err != nil {
					return err
				}
				if o.partsID != 0 {
					multi = append(multi, o)
					at = append(at, len(out))
				}
				out = append(out, o.Object)
				return nil
			}, scanQueries[b2i(inclusive)][b2i(end != "")], args...)
			if err := t.flush(); err != nil {
				return nil, err
			}
			if err := check(); err != nil {
				return nil, err
			}
			if len(multi) > 0 {
				if err := readPartsOf(t, multi); err != nil {
					return nil, err
				}
				for i, o := range multi {
					out[at[i]] = o.Object
				}
			}
			return out, nil
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

// readPartsOf fills the Parts of the multipart objects os in one query, in
// the transaction's snapshot.
func readPartsOf(t *txn, os []row) error {
	ids := make([]int64, len(os))
	byID := make(map[int64]*row, len(os))
	for i := range os {
		ids[i] = os[i].partsID
		os[i].Parts = make([]meta.ObjectPart, 0, os[i].partCount)
		byID[os[i].partsID] = &os[i]
	}
	t.query(func(r pgx.Rows) error {
		var id int64
		var p meta.ObjectPart
		if err := r.Scan(&id, &p.BlobKey, &p.Size, &p.ETag, &p.Checksum); err != nil {
			return err
		}
		if o := byID[id]; o != nil {
			o.Parts = append(o.Parts, p)
		}
		return nil
	}, `SELECT parts_id, blob_key, size, etag, checksum FROM object_parts
		WHERE parts_id = ANY($1) ORDER BY parts_id, idx`, ids)
	if err := t.flush(); err != nil {
		return err
	}
	for _, o := range os {
		if len(o.Parts) != o.partCount {
			return errcode.New(errcode.Internal, "object %q has %d of its %d parts", o.Key, len(o.Parts), o.partCount)
		}
	}
	return nil
}

// ListGarbage implements meta.Store. A limit <= 0 means 1000.
func (s *Store) ListGarbage(ctx context.Context, before time.Time, limit int) ([]meta.Garbage, error) {
	limit = meta.PageLimit(limit, 1000, 0)
	var out []meta.Garbage
	err := s.read(ctx, "list garbage", func(c *pgx.Conn) error {
		out = nil
		rows, err := c.Query(ctx, `SELECT id, blob_key, created_at FROM garbage
			WHERE created_at < $1 ORDER BY created_at, id LIMIT $2`, metasql.ToNanos(before), limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var g meta.Garbage
			var created int64
			if err := rows.Scan(&g.ID, &g.BlobKey, &created); err != nil {
				return err
			}
			g.CreatedAt = metasql.FromNanos(created)
			out = append(out, g)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ClaimGarbage implements meta.Store in one transaction of two round
// trips: the queue entries with their re-check (metasql.ClaimGarbageQuery),
// then the deletion of those whose blob is referenced again. A limit <= 0
// means 1000.
func (s *Store) ClaimGarbage(ctx context.Context, before time.Time, limit int) ([]meta.Garbage, error) {
	limit = meta.PageLimit(limit, 1000, 0)
	var out []meta.Garbage
	err := s.write(ctx, "claim garbage", func(t *txn) error {
		out = nil
		var stale []int64
		t.query(func(r pgx.Rows) error {
			var g meta.Garbage
			var created int64
			var referenced int32
			if err := r.Scan(&g.ID, &g.BlobKey, &created, &referenced); err != nil {
				return err
			}
			if referenced != 0 {
				stale = append(stale, g.ID)
				return nil
			}
			g.CreatedAt = metasql.FromNanos(created)
			out = append(out, g)
			return nil
		}, claimGarbageQuery, metasql.ToNanos(before), limit)
		if err := t.flush(); err != nil {
			return err
		}
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
	out := map[string]bool{}
	if len(keys) == 0 {
		if err := s.ready(); err != nil {
			return nil, err
		}
		return out, nil
	}
	err := s.read(ctx, "referenced blobs", func(c *pgx.Conn) error {
		clear(out)
		rows, err := c.Query(ctx, referencedQuery, keys)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var k string
			if err := rows.Scan(&k); err != nil {
				return err
			}
			out[k] = true
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
