package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/meta/metasql"
)

// row is an object as its objects row holds it, and the inline_data row
// of an inline object.
type row struct {
	metasql.ObjectRow
	inlineID int64 // the inline_data row of an inline object, else 0
}

var (
	upsertObjectSQL = metasql.UpsertObjectSQL("inline_id", ph)
)

// GetObject implements meta.Objects. A single-blob object takes one query; a
// multipart object a second one for its parts.
func (s *Store) GetObject(ctx context.Context, bucket, key string) (meta.Object, error) {
	if err := s.ready(); err != nil {
		return meta.Object{}, err
	}
	_, o, ok, err := lookup(ctx, s.read(), bucket, key)
	if err != nil {
		return meta.Object{}, err
	}
	if !ok {
		return meta.Object{}, meta.ErrNoObject(bucket, key)
	}
	if o.PartsID == 0 {
		return o.Object, nil
	}
	parts, err := readParts(ctx, s.read(), o.PartsID)
	if err != nil {
		return meta.Object{}, err
	}
	if len(parts) == o.PartCount {
		// parts_id values are never reused: these are the row's parts.
		o.Parts = parts
		return o.Object, nil
	}
	// The object was replaced or deleted between the two reads: read it
	// again in one snapshot.
	return s.getObjectSnapshot(ctx, bucket, key)
}

// getObjectSnapshot reads an object and its parts in one read transaction.
func (s *Store) getObjectSnapshot(ctx context.Context, bucket, key string) (meta.Object, error) {
	tx, err := s.readers.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return meta.Object{}, classify(err, "get object %q", key)
	}
	defer tx.Rollback()
	_, o, ok, err := lookupFull(ctx, reader{stmts: s.rstmts, tx: tx}, bucket, key)
	if err != nil {
		return meta.Object{}, err
	}
	if !ok {
		return meta.Object{}, meta.ErrNoObject(bucket, key)
	}
	return o.Object, nil
}

// lookup returns the owner of bucket and the row at key, if any, in one
// query, without the parts of a multipart object. NotFound if the bucket is
// missing.
func lookup(ctx context.Context, q querier, bucket, key string) (owner string, o row, ok bool, err error) {
	var (
		k, etag, sha, ctype, blob   sql.NullString
		md                          *string
		calg, ctyp, cval            sql.NullString
		size, mod, pid, pcount, iid sql.NullInt64
		data, sse                   []byte
		kek                         sql.NullString
	)
	err = q.QueryRowContext(ctx, lookupQuery, bucket, key).
		Scan(&owner, &k, &size, &etag, &sha, &ctype, &md, &blob, &mod, &calg, &ctyp, &cval, &pid, &pcount, &iid, &data, &sse, &kek)
	if errors.Is(err, sql.ErrNoRows) {
		return "", row{}, false, meta.ErrNoBucket(bucket)
	}
	if err != nil {
		return "", row{}, false, classify(err, "get object %q", key)
	}
	if !k.Valid {
		return owner, row{}, false, nil
	}
	o = row{ObjectRow: metasql.ObjectRow{
		Object: meta.Object{
			Bucket:        bucket,
			Key:           k.String,
			Size:          size.Int64,
			ETag:          etag.String,
			SHA256:        sha.String,
			ContentType:   ctype.String,
			BlobKey:       blob.String,
			Checksum:      meta.Checksum{Algorithm: calg.String, Type: ctyp.String, Value: cval.String},
			ModTime:       metasql.FromNanos(mod.Int64),
			Encryption:    sse,
			EncryptionKEK: kek.String,
		},
		PartsID:   pid.Int64,
		PartCount: int(pcount.Int64),
	}, inlineID: iid.Int64}
	if iid.Valid {
		o.Inline = data
		if o.Inline == nil {
			o.Inline = []byte{}
		}
	}
	if o.Metadata, err = metasql.DecodeMetadata(md); err != nil {
		return "", row{}, false, err
	}
	return owner, o, true, nil
}

const lookupQuery = `SELECT b.owner_id, o.key, o.size, o.etag, o.sha256, o.content_type, o.metadata, o.blob_key, o.mod_time,
		o.checksum_algorithm, o.checksum_type, o.checksum_value, o.parts_id, o.part_count, o.inline_id, i.data, o.sse, o.sse_kek
	FROM buckets b LEFT JOIN objects o ON o.bucket = b.name AND o.key = ?2
	LEFT JOIN inline_data i ON i.id = o.inline_id
	WHERE b.name = ?1`

const readPartsQuery = "SELECT blob_key, size, etag, checksum, sse, sse_kek FROM object_parts WHERE parts_id = ? ORDER BY idx"

// scanObjectPart reads a row of readPartsQuery.
func scanObjectPart(r metasql.Row) (meta.ObjectPart, error) {
	var p meta.ObjectPart
	err := r.Scan(&p.BlobKey, &p.Size, &p.ETag, &p.Checksum, &p.Encryption, &p.EncryptionKEK)
	return p, err
}

// lookupFull is lookup with the parts of a multipart object. q must read
// one snapshot (the writer, or a read transaction).
func lookupFull(ctx context.Context, q querier, bucket, key string) (owner string, o row, ok bool, err error) {
	owner, o, ok, err = lookup(ctx, q, bucket, key)
	if err != nil || !ok || o.PartsID == 0 {
		return owner, o, ok, err
	}
	if o.Parts, err = readParts(ctx, q, o.PartsID); err != nil {
		return "", row{}, false, err
	}
	if err := o.CheckParts(); err != nil {
		return "", row{}, false, err
	}
	return owner, o, true, nil
}

// readParts returns the parts stored under id, in order.
func readParts(ctx context.Context, q querier, id int64) ([]meta.ObjectPart, error) {
	parts, err := queryRows(ctx, q, scanObjectPart, readPartsQuery, id)
	return parts, classify(err, "read object parts")
}

// newPartsID allocates a parts_id; it is never reused.
func newPartsID(ctx context.Context, c *conn) (int64, error) {
	var id int64
	err := c.QueryRowContext(ctx, "UPDATE counters SET value = value + 1 WHERE name = 'parts_id' RETURNING value").Scan(&id)
	return id, classify(err, "allocate parts id")
}

// insertParts stores parts under a new parts_id and returns it.
func insertParts(ctx context.Context, c *conn, parts []meta.ObjectPart) (int64, error) {
	id, err := newPartsID(ctx, c)
	if err != nil {
		return 0, err
	}
	for i, p := range parts {
		if _, err := c.ExecContext(ctx, "INSERT INTO object_parts (parts_id, idx, blob_key, size, etag, checksum, sse, sse_kek) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
			id, i, p.BlobKey, p.Size, p.ETag, p.Checksum, p.Encryption, p.EncryptionKEK); err != nil {
			return 0, classify(err, "insert object part")
		}
	}
	return id, nil
}

// writeObject writes o at its bucket and key, replacing any row there. Its
// parts, if any, must already be stored under partsID.
func writeObject(ctx context.Context, c *conn, o meta.Object, partsID, inlineID int64) error {
	var iid any // NULL unless inline
	if inlineID != 0 {
		iid = inlineID
	}
	args, err := metasql.ObjectArgs(o, partsID, iid, key)
	if err != nil {
		return err
	}
	_, err = c.ExecContext(ctx, upsertObjectSQL, args...)
	return classify(err, "put object %q", o.Key)
}

// putObject writes o, storing its parts or its inline bytes if it has any.
func putObject(ctx context.Context, c *conn, o meta.Object) error {
	var pid, iid int64
	switch {
	case len(o.Parts) > 0:
		var err error
		if pid, err = insertParts(ctx, c, o.Parts); err != nil {
			return err
		}
	case o.IsInline():
		data := o.Inline
		if data == nil {
			data = []byte{}
		}
		if err := c.QueryRowContext(ctx, "INSERT INTO inline_data (data) VALUES (?) RETURNING id", data).Scan(&iid); err != nil {
			return classify(err, "store inline object %q", o.Key)
		}
	}
	return writeObject(ctx, c, o, pid, iid)
}

// release forgets an object whose row was deleted or replaced: it deletes
// its parts or inline bytes and enqueues its blobs. Call it after the row
// change.
func release(ctx context.Context, c *conn, o row, now time.Time) error {
	if o.inlineID != 0 {
		if _, err := c.ExecContext(ctx, "DELETE FROM inline_data WHERE id = ?", o.inlineID); err != nil {
			return classify(err, "delete inline object")
		}
	}
	if o.PartsID != 0 {
		if _, err := c.ExecContext(ctx, "DELETE FROM object_parts WHERE parts_id = ?", o.PartsID); err != nil {
			return classify(err, "delete object parts")
		}
	}
	return enqueue(ctx, c, now, o.BlobKeys()...)
}

// enqueue queues blobs for reclamation, each unless a row still points at
// it (metasql.Referenced), so a blob shared by two rows (or kept by a
// metadata-only replace) is never reclaimed while in use. Call it after
// the row changes. Many blobs (the parts of an upload or object) go in one
// statement.
func enqueue(ctx context.Context, c *conn, now time.Time, blobs ...string) error {
	blobs = slices.DeleteFunc(slices.Clone(blobs), func(b string) bool { return b == "" })
	if len(blobs) > 4 && allValidUTF8(blobs) { // JSON would alter invalid UTF-8
		list, err := json.Marshal(blobs)
		if err != nil {
			return errcode.Wrap(errcode.Internal, err, "encode blob keys")
		}
		_, err = c.ExecContext(ctx, enqueueManyQuery, string(list), metasql.ToNanos(now))
		return classify(err, "enqueue blobs")
	}
	for _, blob := range blobs {
		if _, err := c.ExecContext(ctx, enqueueQuery, blob, metasql.ToNanos(now)); err != nil {
			return classify(err, "enqueue blob")
		}
	}
	return nil
}

var (
	enqueueManyQuery = `INSERT INTO garbage (blob_key, created_at) SELECT j.value, ?2 FROM json_each(?1) j
		WHERE NOT ` + metasql.Referenced("j.value") + ` ORDER BY j.key`
	enqueueQuery = `INSERT INTO garbage (blob_key, created_at) SELECT ?1, ?2 WHERE NOT ` + metasql.Referenced("?1")
)

func allValidUTF8(ss []string) bool {
	for _, s := range ss {
		if !utf8.ValidString(s) {
			return false
		}
	}
	return true
}

// PutObjects implements meta.Objects. A zero ModTime is set to now. An object
// with Parts is stored as given (see checkObject); an empty Parts is a
// single-blob object.
func (s driver) PutObjects(ctx context.Context, puts []meta.Put, staged []string) ([]meta.Object, error) {
	olds := make([]meta.Object, len(puts))
	err := s.write(ctx, func(ctx context.Context, c *conn) error {
		now := time.Now()
		clear(olds)
		if err := releaseStaged(ctx, c, staged, now); err != nil {
			return err
		}
		for i, p := range puts {
			o := p.Object
			o.ModTime = meta.OrNow(o.ModTime, now)
			if len(o.Parts) == 0 {
				o.Parts = nil
			}
			owner, cur, exists, err := lookupFull(ctx, c, o.Bucket, o.Key)
			if err != nil {
				return err
			}
			if p.BucketOwner != "" && owner != p.BucketOwner {
				return meta.ErrNoBucket(o.Bucket)
			}
			if err := p.Cond.Check(cur.Object, exists); err != nil {
				return err
			}
			if err := addUsage(ctx, c, owner, o.Size-cur.Size, now); err != nil {
				return err
			}
			if err := putObject(ctx, c, o); err != nil {
				return err
			}
			if exists {
				if err := release(ctx, c, cur, now); err != nil {
					return err
				}
				olds[i] = cur.Object
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return olds, nil
}

// DeleteObject implements meta.Objects.
func (s *Store) DeleteObject(ctx context.Context, bucket, key string, cond meta.Cond) (meta.Object, error) {
	var old meta.Object
	err := s.write(ctx, func(ctx context.Context, c *conn) error {
		now := time.Now()
		owner, cur, exists, err := lookupFull(ctx, c, bucket, key)
		if err != nil {
			return err
		}
		if !exists {
			return meta.ErrNoObject(bucket, key)
		}
		if err := cond.Check(cur.Object, exists); err != nil {
			return err
		}
		if _, err := c.ExecContext(ctx, sq.DeleteObject, bucket, key); err != nil {
			return classify(err, "delete object %q", key)
		}
		if err := addUsage(ctx, c, owner, -cur.Size, now); err != nil {
			return err
		}
		if err := release(ctx, c, cur, now); err != nil {
			return err
		}
		old = cur.Object
		return nil
	})
	return metasql.Result(old, err)
}

// MoveObject implements meta.Objects. The object keeps every field, ModTime
// included, and its blobs (a multipart object keeps its parts, which are
// not rewritten); only its bucket and key change. Moving a key onto itself
// checks that it exists and that dstCond holds, and changes nothing.
func (s driver) MoveObject(ctx context.Context, srcBucket, srcKey, dstBucket, dstKey string, dstCond meta.Cond) (meta.Object, error) {
	var moved meta.Object
	err := s.write(ctx, func(ctx context.Context, c *conn) error {
		now := time.Now()
		srcOwner, src, ok, err := lookupFull(ctx, c, srcBucket, srcKey)
		if err != nil {
			return err
		}
		if !ok {
			return meta.ErrNoObject(srcBucket, srcKey)
		}
		dstOwner, dst, exists, err := lookupFull(ctx, c, dstBucket, dstKey)
		if err != nil {
			return err
		}
		if err := dstCond.Check(dst.Object, exists); err != nil {
			return err
		}
		if _, err := c.ExecContext(ctx, sq.DeleteObject, srcBucket, srcKey); err != nil {
			return classify(err, "move object %q", srcKey)
		}
		o := src.Object
		o.Bucket, o.Key = dstBucket, dstKey
		if err := writeObject(ctx, c, o, src.PartsID, src.inlineID); err != nil {
			return err
		}
		// Usage: src leaves its owner, it replaces dst at dst's owner.
		for _, d := range meta.MoveUsage(srcOwner, src.Size, dstOwner, dst.Size) {
			if err := addUsage(ctx, c, d.Owner, d.Bytes, now); err != nil {
				return err
			}
		}
		if exists {
			if err := release(ctx, c, dst, now); err != nil {
				return err
			}
		}
		moved = o
		return nil
	})
	return metasql.Result(moved, err)
}
