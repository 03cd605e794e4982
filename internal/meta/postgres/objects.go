package postgres

import (
	"context"
	"errors"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/meta/metasql"
)

// owner is a users row locked by the transaction, with the bytes its live
// stagings reserve (read by readReserved; 0 if not read, or if the owner
// has no quota).
type owner struct {
	id                     string
	quota, usage, reserved int64
}

// scanOwner reads a row of a lock query: id, quota_bytes, usage_bytes.
func scanOwner(r metasql.Row) (owner, error) {
	var o owner
	err := r.Scan(&o.id, &o.quota, &o.usage)
	return o, err
}

const lockOwnersQuery = `SELECT id, quota_bytes, usage_bytes FROM users
	WHERE id IN (SELECT owner_id FROM buckets WHERE name = ANY($1)) ORDER BY id FOR UPDATE`

const lockUploadOwnerQuery = `SELECT id, quota_bytes, usage_bytes FROM users
	WHERE id = (SELECT b.owner_id FROM uploads u JOIN buckets b ON b.name = u.bucket WHERE u.id = $1) FOR UPDATE`

// lockOwners queues the locking of the users rows that own buckets, in id
// order. Later statements of the transaction see everything committed
// before the locks were granted.
func (t *txn) lockOwners(buckets []string) {
	t.lockOwnersWith(lockOwnersQuery, slices.Compact(slices.Sorted(slices.Values(buckets))))
}

// lockUploadOwner queues the locking of the users row that owns the bucket
// of upload id.
func (t *txn) lockUploadOwner(id string) { t.lockOwnersWith(lockUploadOwnerQuery, id) }

func (t *txn) lockOwnersWith(query string, arg any) {
	if t.owners == nil {
		t.owners = map[string]*owner{}
	}
	queueEach(t, scanOwner, func(o owner) { t.owners[o.id] = &o }, query, arg)
}

// checkLocked fails with errRetry unless the transaction locked id (a
// bucket deleted and re-created by another user between the lock and the
// read).
func (t *txn) checkLocked(id string) error {
	if t.owners[id] == nil {
		return errRetry
	}
	return nil
}

// addUsage queues moving the locked owner's usage by delta. Growth must
// leave usage and reservations within the quota (QuotaExceeded otherwise);
// shrinking always passes. The quota, usage and reservations were read
// under the lock, so the check is exact; a method that may grow usage
// reads the reservations (readReserved) after releasing its own stagings.
func (t *txn) addUsage(id string, delta int64) error {
	if delta == 0 {
		return nil
	}
	r, err := t.room(id)
	if err != nil {
		return err
	}
	if err := r.CheckGrowth(delta); err != nil {
		return err
	}
	o := t.owners[id]
	o.usage += delta
	t.exec("UPDATE users SET usage_bytes = usage_bytes + $1 WHERE id = $2", delta, id)
	return nil
}

// enqueue queues blobs for reclamation, each unless a row still points at
// it (metasql.Referenced), so a blob shared by two rows (or kept by a
// metadata-only replace) is never reclaimed while in use. Queue it after
// the row changes.
func (t *txn) enqueue(blobs ...string) {
	blobs = slices.DeleteFunc(slices.Clone(blobs), func(b string) bool { return b == "" })
	if len(blobs) == 0 {
		return
	}
	t.exec(enqueueQuery, blobs, metasql.ToNanos(t.now))
}

var enqueueQuery = `INSERT INTO garbage (blob_key, created_at)
	SELECT b.k, $2 FROM unnest($1::text[]) WITH ORDINALITY AS b(k, n)
	WHERE NOT ` + metasql.Referenced("b.k") + ` ORDER BY b.n`

// found is the result of lookupQuery.
type found struct {
	bucket bool   // the bucket exists
	owner  string // its owner
	exists bool   // an object is at the key
	row    metasql.ObjectRow
}

// lookupQuery reads a bucket's owner and the object at a key, with its
// parts or inline bytes, in one statement (one snapshot): one row per part,
// or one row.
const lookupQuery = `SELECT b.owner_id, o.size, o.etag, o.sha256, o.content_type, o.metadata, o.blob_key, o.mod_time,
		o.checksum_algorithm, o.checksum_type, o.checksum_value, o.parts_id, o.part_count, o.inline_data,
		p.blob_key, p.size, p.etag, p.checksum, o.sse, o.sse_kek, p.sse, p.sse_kek
	FROM buckets b
	LEFT JOIN objects o ON o.bucket = b.name AND o.key = $2
	LEFT JOIN object_parts p ON p.parts_id = o.parts_id
	WHERE b.name = $1
	ORDER BY p.idx`

// lookupRow is a row of lookupQuery: the bucket's owner, the object at
// the key, if has, and one of its parts, if pHas.
type lookupRow struct {
	owner string
	obj   metasql.ObjectRow
	has   bool // an object is at the key
	part  meta.ObjectPart
	pHas  bool // the row holds a part
}

// scanLookup returns the scanner of lookupQuery's rows for bucket/key.
// Nullable columns scan into pgtype values (no allocation per column).
func scanLookup(bucket, k string) func(metasql.Row) (lookupRow, error) {
	return func(r metasql.Row) (lookupRow, error) {
		var (
			l                                          lookupRow
			size, mod, pid, psize                      pgtype.Int8
			pcount                                     pgtype.Int4
			etag, sha, ctype, md, blob, calg, ctyp, cv pgtype.Text
			pblob, petag, pcheck, kek, pkek            pgtype.Text
			inline, sse, psse                          []byte
		)
		if err := r.Scan(&l.owner, &size, &etag, &sha, &ctype, &md, &blob, &mod, &calg, &ctyp, &cv, &pid, &pcount, &inline,
			&pblob, &psize, &petag, &pcheck, &sse, &kek, &psse, &pkek); err != nil {
			return lookupRow{}, err
		}
		if l.pHas = pblob.Valid; l.pHas {
			l.part = meta.ObjectPart{BlobKey: pblob.String, Size: psize.Int64, ETag: petag.String, Checksum: pcheck.String,
				Encryption: psse, EncryptionKEK: pkek.String}
		}
		if l.has = size.Valid; !l.has {
			return l, nil
		}
		o := &l.obj
		o.Object = meta.Object{
			Bucket:        bucket,
			Key:           k,
			Size:          size.Int64,
			ETag:          etag.String,
			SHA256:        sha.String,
			ContentType:   ctype.String,
			BlobKey:       blob.String,
			Checksum:      meta.Checksum{Algorithm: calg.String, Type: ctyp.String, Value: cv.String},
			ModTime:       metasql.FromNanos(mod.Int64),
			Encryption:    sse,
			EncryptionKEK: kek.String,
		}
		o.PartsID, o.PartCount = pid.Int64, int(pcount.Int32)
		if md.Valid {
			var err error
			if o.Metadata, err = metasql.DecodeMetadata(&md.String); err != nil {
				return lookupRow{}, err
			}
		}
		if o.PartsID == 0 && o.BlobKey == "" {
			o.Inline = inline
			if o.Inline == nil {
				o.Inline = []byte{}
			}
		}
		return l, nil
	}
}

// foundOf folds the rows of lookupQuery: Internal if a multipart object
// lacks some of its parts.
func foundOf(rows []lookupRow) (found, error) {
	var f found
	for i, l := range rows {
		if i == 0 {
			f.bucket, f.owner, f.exists = true, l.owner, l.has
			if f.exists {
				f.row = l.obj
				if f.row.PartsID != 0 {
					f.row.Parts = make([]meta.ObjectPart, 0, f.row.PartCount)
				}
			}
		}
		if l.pHas {
			f.row.Parts = append(f.row.Parts, l.part)
		}
	}
	return f, f.row.CheckParts()
}

// lookup queues lookupQuery for bucket/key into f; f is complete once the
// transaction is flushed.
func (t *txn) lookup(f *found, bucket, k string) {
	*f = found{}
	t.batch.Queue(lookupQuery, bucket, key(k)).Query(func(rows pgx.Rows) error {
		ls, err := pgx.CollectRows(rows, rowTo(scanLookup(bucket, k)))
		if err != nil {
			return err
		}
		*f, err = foundOf(ls)
		return err
	})
}

// GetObject implements meta.Objects in one statement.
func (s *Store) GetObject(ctx context.Context, bucket, k string) (meta.Object, error) {
	var f found
	err := s.read(ctx, "get object", func(c *pgx.Conn) error {
		rows, err := c.Query(ctx, lookupQuery, bucket, key(k))
		if err != nil {
			return err
		}
		ls, err := pgx.CollectRows(rows, rowTo(scanLookup(bucket, k)))
		if err != nil {
			return err
		}
		f, err = foundOf(ls)
		return err
	})
	switch {
	case err != nil:
		return meta.Object{}, err
	case !f.bucket:
		return meta.Object{}, meta.ErrNoBucket(bucket)
	case !f.exists:
		return meta.Object{}, meta.ErrNoObject(bucket, k)
	}
	return f.row.Object, nil
}

var (
	upsertObjectSQL = metasql.UpsertObjectSQL("inline_data", ph)
)

// writeObject queues writing o at its bucket and key, replacing any row
// there. Its parts, if any, must be stored under partsID.
func writeObject(t *txn, o meta.Object, partsID int64) error {
	var inline []byte // NULL unless inline
	if o.IsInline() {
		inline = o.Inline
		if inline == nil {
			inline = []byte{}
		}
	}
	args, err := metasql.ObjectArgs(o, partsID, inline, key)
	if err != nil {
		return err
	}
	t.exec(upsertObjectSQL, args...)
	return nil
}

// insertParts queues storing parts under partsID.
func insertParts(t *txn, partsID int64, parts []meta.ObjectPart) {
	blobs := make([]string, len(parts))
	sizes := make([]int64, len(parts))
	etags := make([]string, len(parts))
	sums := make([]string, len(parts))
	sses := make([][]byte, len(parts))
	keks := make([]string, len(parts))
	for i, p := range parts {
		blobs[i], sizes[i], etags[i], sums[i] = p.BlobKey, p.Size, p.ETag, p.Checksum
		sses[i], keks[i] = p.Encryption, p.EncryptionKEK
	}
	t.exec(`INSERT INTO object_parts (parts_id, idx, blob_key, size, etag, checksum, sse, sse_kek)
		SELECT $1, p.n - 1, p.b, p.s, p.e, p.c, p.x, p.k
		FROM unnest($2::text[], $3::bigint[], $4::text[], $5::text[], $6::bytea[], $7::text[]) WITH ORDINALITY AS p(b, s, e, c, x, k, n)`,
		partsID, blobs, sizes, etags, sums, sses, keks)
}

// newPartsID queues allocating a parts_id into id (never reused).
func (t *txn) newPartsID(id *int64) {
	queueGet(t, id, metasql.ScanInt64, nil, "SELECT nextval('parts_id_seq')")
}

// release queues forgetting an object whose row was deleted or replaced:
// deleting its parts and enqueueing its blobs. Queue it after the row
// change. (Inline bytes go with the row.)
func release(t *txn, o metasql.ObjectRow) {
	if o.PartsID != 0 {
		t.exec("DELETE FROM object_parts WHERE parts_id = $1", o.PartsID)
	}
	t.enqueue(o.BlobKeys()...)
}

// PutObjects implements meta.Objects. A zero ModTime is set to now. An object
// with Parts is stored as given (see checkObject); an empty Parts is a
// single-blob object. n puts take n+1 round trips: the lookup of each put
// goes with the writes of the one before.
func (s driver) PutObjects(ctx context.Context, puts []meta.Put, staged []string) ([]meta.Object, error) {
	buckets := make([]string, len(puts))
	for i, p := range puts {
		buckets[i] = p.Object.Bucket
	}
	olds := make([]meta.Object, len(puts))
	err := s.write(ctx, "put objects", func(t *txn) error {
		clear(olds)
		t.lockOwners(buckets)
		t.releaseStaged(staged)
		t.readReserved(reservedOfBucketsQuery, buckets)
		for i, p := range puts {
			o := p.Object
			o.ModTime = meta.OrNow(o.ModTime, t.now)
			if len(o.Parts) == 0 {
				o.Parts = nil
			}
			var cur found
			t.lookup(&cur, o.Bucket, o.Key)
			var pid int64
			if o.Parts != nil {
				t.newPartsID(&pid)
			}
			if err := t.flush(); err != nil {
				return err
			}
			if i == 0 {
				if err := t.checkReleased(staged); err != nil {
					return err
				}
			}
			if !cur.bucket {
				return meta.ErrNoBucket(o.Bucket)
			}
			if err := t.checkLocked(cur.owner); err != nil {
				return err
			}
			if p.BucketOwner != "" && cur.owner != p.BucketOwner {
				return meta.ErrNoBucket(o.Bucket)
			}
			if err := p.Cond.Check(cur.row.Object, cur.exists); err != nil {
				return err
			}
			if err := t.addUsage(cur.owner, o.Size-cur.row.Size); err != nil {
				return err
			}
			if o.Parts != nil {
				insertParts(t, pid, o.Parts)
			}
			if err := writeObject(t, o, pid); err != nil {
				return err
			}
			if cur.exists {
				release(t, cur.row)
				olds[i] = cur.row.Object
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
func (s *Store) DeleteObject(ctx context.Context, bucket, k string, cond meta.Cond) (meta.Object, error) {
	var old meta.Object
	err := s.write(ctx, "delete object", func(t *txn) error {
		t.lockOwners([]string{bucket})
		var cur found
		t.lookup(&cur, bucket, k)
		if err := t.flush(); err != nil {
			return err
		}
		switch {
		case !cur.bucket:
			return meta.ErrNoBucket(bucket)
		case !cur.exists:
			return meta.ErrNoObject(bucket, k)
		}
		if err := t.checkLocked(cur.owner); err != nil {
			return err
		}
		if err := cond.Check(cur.row.Object, true); err != nil {
			return err
		}
		t.exec(sq.DeleteObject, bucket, key(k))
		if err := t.addUsage(cur.owner, -cur.row.Size); err != nil {
			return err
		}
		release(t, cur.row)
		old = cur.row.Object
		return nil
	})
	return metasql.Result(old, err)
}

// MoveObject implements meta.Objects. The object keeps every field, ModTime
// included, and its blobs, parts and inline bytes: its row is only renamed.
// Moving a key onto itself checks that it exists and that dstCond holds,
// and changes nothing.
func (s driver) MoveObject(ctx context.Context, srcBucket, srcKey, dstBucket, dstKey string, dstCond meta.Cond) (meta.Object, error) {
	var moved meta.Object
	err := s.write(ctx, "move object", func(t *txn) error {
		t.lockOwners([]string{srcBucket, dstBucket})
		t.readReserved(reservedOfBucketsQuery, []string{srcBucket, dstBucket})
		var src, dst found
		t.lookup(&src, srcBucket, srcKey)
		t.lookup(&dst, dstBucket, dstKey)
		if err := t.flush(); err != nil {
			return err
		}
		switch {
		case !src.bucket:
			return meta.ErrNoBucket(srcBucket)
		case !src.exists:
			return meta.ErrNoObject(srcBucket, srcKey)
		case !dst.bucket:
			return meta.ErrNoBucket(dstBucket)
		}
		if err := errors.Join(t.checkLocked(src.owner), t.checkLocked(dst.owner)); err != nil {
			return errRetry
		}
		if err := dstCond.Check(dst.row.Object, dst.exists); err != nil {
			return err
		}
		if dst.exists {
			t.exec(sq.DeleteObject, dstBucket, key(dstKey))
		}
		t.exec("UPDATE objects SET bucket = $3, key = $4 WHERE bucket = $1 AND key = $2",
			srcBucket, key(srcKey), dstBucket, key(dstKey))
		// Usage: src leaves its owner, it replaces dst at dst's owner.
		for _, d := range meta.MoveUsage(src.owner, src.row.Size, dst.owner, dst.row.Size) {
			if err := t.addUsage(d.Owner, d.Bytes); err != nil {
				return err
			}
		}
		if dst.exists {
			release(t, dst.row)
		}
		o := src.row.Object
		o.Bucket, o.Key = dstBucket, dstKey
		moved = o
		return nil
	})
	return metasql.Result(moved, err)
}
