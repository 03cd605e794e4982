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

// found is the result of a lookup.
type found struct {
	bucket     bool   // the bucket exists
	owner      string // its owner
	versioning meta.Versioning
	lock       meta.ObjectLock
	exists     bool // the version looked up is there
	row        metasql.ObjectRow
}

// live reports whether f found an object: a version that is not a delete
// marker (what a write's Cond sees).
func (f found) live() bool { return f.exists && !f.row.DeleteMarker }

// missing is metasql.Missing of what f found, or the bucket's absence.
func (f found) missing(bucket, key, version string) error {
	if !f.bucket {
		return meta.ErrNoBucket(bucket)
	}
	return metasql.Missing(bucket, key, version, f.row.Object, f.exists)
}

// lookupSQL reads a bucket's owner and versioning and the version of a
// key that cond (on o) selects, with its parts or inline bytes, in one
// statement (one snapshot): one row per part, or one row. Bucket $1, key
// $2.
func lookupSQL(cond string) string {
	return `SELECT b.owner_id, b.versioning, o.size, o.etag, o.sha256, o.content_type, o.metadata, o.blob_key, o.mod_time,
		o.checksum_algorithm, o.checksum_type, o.checksum_value, o.parts_id, o.part_count, o.inline_data,
		p.blob_key, p.size, p.etag, p.checksum, o.sse, o.sse_kek, p.sse, p.sse_kek,
		o.version_id, o.seq, o.is_latest, o.delete_marker, o.tags,
		o.lock_mode, o.lock_until, o.legal_hold, b.object_lock, b.lock_mode, b.lock_days, b.lock_years, o.acl, o.crc32c
	FROM buckets b
	LEFT JOIN objects o ON o.bucket = b.name AND o.key = $2 AND ` + cond + `
	LEFT JOIN object_parts p ON p.parts_id = o.parts_id
	WHERE b.name = $1
	ORDER BY p.idx`
}

var (
	lookupQuery        = lookupSQL(sq.LatestID)                   // the latest version
	lookupVersionQuery = lookupSQL(metasql.VersionIs("o.", "$3")) // version $3
)

// lookupRow is a row of a lookup: the bucket's owner and versioning, the
// version, if has, and one of its parts, if pHas.
type lookupRow struct {
	owner      string
	versioning string
	lock       meta.ObjectLock
	obj        metasql.ObjectRow
	has        bool // a version is there
	part       meta.ObjectPart
	pHas       bool        // the row holds a part
	tags       pgtype.Text // the version's tags (every row repeats them: foundOf decodes the first)
	acl        pgtype.Text // the version's objects.acl (as tags)
}

// scanLookup returns the scanner of a lookup's rows for bucket/key.
// Nullable columns scan into pgtype values (no allocation per column).
func scanLookup(bucket, k string) func(metasql.Row) (lookupRow, error) {
	return func(r metasql.Row) (lookupRow, error) {
		var (
			l                                          lookupRow
			size, mod, pid, psize                      pgtype.Int8
			pcount                                     pgtype.Int4
			etag, sha, ctype, md, blob, calg, ctyp, cv pgtype.Text
			pblob, petag, pcheck, kek, pkek            pgtype.Text
			vid, seq                                   pgtype.Text
			latest, marker, hold                       pgtype.Bool
			inline, sse, psse, crc                     []byte
			lockMode                                   pgtype.Text
			lockUntil                                  pgtype.Int8
			bucketMode                                 string
		)
		if err := r.Scan(&l.owner, &l.versioning, &size, &etag, &sha, &ctype, &md, &blob, &mod, &calg, &ctyp, &cv, &pid, &pcount, &inline,
			&pblob, &psize, &petag, &pcheck, &sse, &kek, &psse, &pkek, &vid, &seq, &latest, &marker, &l.tags,
			&lockMode, &lockUntil, &hold, &l.lock.Enabled, &bucketMode, &l.lock.Default.Days, &l.lock.Default.Years, &l.acl, &crc); err != nil {
			return lookupRow{}, err
		}
		l.lock.Default.Mode = meta.RetentionMode(bucketMode)
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
			VersionID:     vid.String,
			IsLatest:      latest.Bool,
			DeleteMarker:  marker.Bool,
			Size:          size.Int64,
			ETag:          etag.String,
			SHA256:        sha.String,
			CRC32C:        crc,
			ContentType:   ctype.String,
			BlobKey:       blob.String,
			Checksum:      meta.Checksum{Algorithm: calg.String, Type: ctyp.String, Value: cv.String},
			ModTime:       metasql.FromNanos(mod.Int64),
			Encryption:    sse,
			EncryptionKEK: kek.String,
			Retention:     meta.Retention{Mode: meta.RetentionMode(lockMode.String), Until: metasql.FromNanos(lockUntil.Int64)},
			LegalHold:     hold.Bool,
		}
		o.PartsID, o.PartCount, o.Seq = pid.Int64, int(pcount.Int32), seq.String
		if md.Valid {
			var err error
			if o.Metadata, err = metasql.DecodeMetadata(&md.String); err != nil {
				return lookupRow{}, err
			}
		}
		if o.PartsID == 0 && o.BlobKey == "" && !o.DeleteMarker {
			o.Inline = inline
			if o.Inline == nil {
				o.Inline = []byte{}
			}
		}
		return l, nil
	}
}

// foundOf folds the rows of a lookup: Internal if a multipart object
// lacks some of its parts.
func foundOf(rows []lookupRow) (found, error) {
	var f found
	for i, l := range rows {
		if i == 0 {
			f.bucket, f.owner, f.versioning, f.lock, f.exists = true, l.owner, meta.Versioning(l.versioning), l.lock, l.has
			if f.exists {
				f.row = l.obj
				if l.tags.Valid {
					var err error
					if f.row.Tags, err = metasql.DecodeTags(&l.tags.String); err != nil {
						return found{}, err
					}
				}
				if l.acl.Valid {
					if err := metasql.DecodeObjectACL(&l.acl.String, &f.row.Object); err != nil {
						return found{}, err
					}
				}
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

// lookupArgs are the query and arguments of a lookup of version ("": the
// latest) of bucket/k.
func lookupArgs(bucket, k, version string) (string, []any) {
	if version == "" {
		return lookupQuery, []any{bucket, key(k)}
	}
	return lookupVersionQuery, []any{bucket, key(k), version}
}

// lookup queues the lookup of version ("": the latest) of bucket/k into
// f; f is complete once the transaction is flushed.
func (t *txn) lookup(f *found, bucket, k, version string) {
	*f = found{}
	query, args := lookupArgs(bucket, k, version)
	t.batch.Queue(query, args...).Query(func(rows pgx.Rows) error {
		ls, err := pgx.CollectRows(rows, rowTo(scanLookup(bucket, k)))
		if err != nil {
			return err
		}
		*f, err = foundOf(ls)
		return err
	})
}

// GetVersion implements metasql.Driver in one statement.
func (s driver) GetVersion(ctx context.Context, bucket, k, version string) (meta.Object, error) {
	var f found
	query, args := lookupArgs(bucket, k, version)
	err := s.read(ctx, "get object", func(c *pgx.Conn) error {
		rows, err := c.Query(ctx, query, args...)
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
	if err != nil {
		return meta.Object{}, err
	}
	if err := f.missing(bucket, k, version); err != nil {
		return meta.Object{}, err
	}
	return f.row.Object, nil
}

var (
	// (PostgreSQL updates an index only for a value that changed.)
	upsertObjectSQL = metasql.UpsertObjectSQL("inline_data", true, ph)
)

// writeObject queues writing o at its bucket, key and version ID (at
// seq), replacing the row of that version if there is one. Its parts, if
// any, must be stored under partsID.
func writeObject(t *txn, o meta.Object, seq string, partsID int64) error {
	var inline []byte // NULL unless inline
	if o.IsInline() {
		inline = o.Inline
		if inline == nil {
			inline = []byte{}
		}
	}
	args, err := metasql.ObjectArgs(o, seq, partsID, inline, key)
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

// place decides where a new version of the key whose latest version f
// holds goes (meta.PlanVersion), and finds the version it replaces: the
// key's null version, unless the bucket is Enabled (a round trip when it
// is not the latest).
func (t *txn) place(f found, bucket, k string) (nv meta.NewVersion, old metasql.ObjectRow, hasOld bool, err error) {
	nv = meta.PlanVersion(f.versioning, f.row.VersionID, f.row.SeqIf(f.exists), t.now)
	switch {
	case !nv.ReplacesNull || !f.exists:
		return nv, metasql.ObjectRow{}, false, nil
	case f.row.VersionID == meta.NullVersion:
		return nv, f.row, true, nil
	}
	var g found
	t.lookup(&g, bucket, k, meta.NullVersion)
	if err := t.flush(); err != nil {
		return nv, metasql.ObjectRow{}, false, err
	}
	return nv, g.row, g.exists, nil
}

// newVersion queues writing o (its parts under partsID, which store
// queues storing, if set) as the new latest version of its key, whose
// latest version f holds, as the bucket's versioning says, if cond holds
// for the latest version: the owner's usage moves by delta less the size
// of the version it replaces. The latest version, unless it is the one
// replaced, stops being the latest first (one latest per key).
func (t *txn) newVersion(f found, o meta.Object, cond meta.Cond, delta int64, store func(), partsID int64) (meta.PutResult, error) {
	if err := cond.Check(f.row.Object, f.live()); err != nil {
		return meta.PutResult{}, err
	}
	o, err := meta.LockVersion(o, f.lock, t.now)
	if err != nil {
		return meta.PutResult{}, err
	}
	nv, old, hasOld, err := t.place(f, o.Bucket, o.Key)
	if err != nil {
		return meta.PutResult{}, err
	}
	if err := t.addUsage(f.owner, delta-old.Size); err != nil {
		return meta.PutResult{}, err
	}
	if store != nil {
		store()
	}
	if f.exists && !(hasOld && old.VersionID == f.row.VersionID) {
		t.exec(sq.Demote, o.Bucket, key(o.Key), f.row.VersionID)
	}
	if hasOld && nv.Seq != old.Seq {
		// The null version moves to the top: its old row goes (the
		// primary key holds the seq).
		t.exec(sq.DeleteObject, o.Bucket, key(o.Key), old.VersionID)
	}
	o.VersionID, o.IsLatest = nv.VersionID, true
	if err := writeObject(t, o, nv.Seq, partsID); err != nil {
		return meta.PutResult{}, err
	}
	var replaced meta.Object
	if hasOld {
		release(t, old)
		replaced = old.Object
	}
	return meta.PutResult{Object: o, Replaced: replaced}, nil
}

// rewriteVersion queues writing o over the version f holds (an InPlace
// put), if cond holds for it, keeping its version ID, seq and latest flag.
func (t *txn) rewriteVersion(f found, o meta.Object, cond meta.Cond, store func(), partsID int64) (meta.PutResult, error) {
	if err := cond.Check(f.row.Object, f.live()); err != nil {
		return meta.PutResult{}, err
	}
	if !f.live() {
		return meta.PutResult{}, meta.ErrNoVersion(o.Bucket, o.Key, o.VersionID)
	}
	if err := t.addUsage(f.owner, o.Size-f.row.Size); err != nil {
		return meta.PutResult{}, err
	}
	store()
	o.VersionID, o.IsLatest, o.Tags, o.Owner, o.ACL = f.row.VersionID, f.row.IsLatest, f.row.Tags, f.row.Owner, f.row.ACL
	o.Retention, o.LegalHold = f.row.Retention, f.row.LegalHold
	if err := writeObject(t, o, f.row.Seq, partsID); err != nil {
		return meta.PutResult{}, err
	}
	release(t, f.row)
	return meta.PutResult{Object: o, Replaced: f.row.Object}, nil
}

// PutObjects implements meta.Objects. A zero ModTime is set to now. An object
// with Parts is stored as given (see checkObject); an empty Parts is a
// single-blob object. n puts take n+1 round trips: the lookup of each put
// goes with the writes of the one before (and one more where a suspended
// bucket's null version is not the latest).
func (s driver) PutObjects(ctx context.Context, puts []meta.Put, staged []string) ([]meta.PutResult, error) {
	buckets := make([]string, len(puts))
	for i, p := range puts {
		buckets[i] = p.Object.Bucket
	}
	out := make([]meta.PutResult, len(puts))
	err := s.write(ctx, "put objects", func(t *txn) error {
		clear(out)
		t.lockOwners(buckets)
		t.releaseStaged(staged)
		t.readReserved(reservedOfBucketsQuery, buckets)
		for i, p := range puts {
			o := p.Object
			o.ModTime = meta.OrNow(o.ModTime, t.now)
			if len(o.Parts) == 0 {
				o.Parts = nil
			}
			version := ""
			if p.InPlace {
				version = o.VersionID
			}
			var cur found
			t.lookup(&cur, o.Bucket, o.Key, version)
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
			store := func() {
				if o.Parts != nil {
					insertParts(t, pid, o.Parts)
				}
			}
			var err error
			if p.InPlace {
				out[i], err = t.rewriteVersion(cur, o, p.Cond, store, pid)
			} else {
				out[i], err = t.newVersion(cur, o, p.Cond, o.Size, store, pid)
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DeleteObject implements meta.Objects.
func (s *Store) DeleteObject(ctx context.Context, bucket, k string, cond meta.Cond) (meta.Object, error) {
	var out meta.Object
	err := s.write(ctx, "delete object", func(t *txn) error {
		t.lockOwners([]string{bucket})
		var cur found
		t.lookup(&cur, bucket, k, "")
		if err := t.flush(); err != nil {
			return err
		}
		if !cur.bucket {
			return meta.ErrNoBucket(bucket)
		}
		if err := t.checkLocked(cur.owner); err != nil {
			return err
		}
		if cur.versioning != meta.Unversioned {
			res, err := t.newVersion(cur, meta.Object{Bucket: bucket, Key: k, DeleteMarker: true, ModTime: t.now}, cond, 0, nil, 0)
			out = res.Object
			return err
		}
		if err := metasql.CheckRemoval(bucket, k, "", cur.row.Object, cur.exists, cond, t.now); err != nil {
			return err
		}
		out = cur.row.Object
		return t.removeVersion(cur)
	})
	return metasql.Result(out, err)
}

// removeVersion queues deleting the version f holds for good, releasing
// it and moving its owner's usage; if it was the latest, the key's next
// newest version becomes the latest.
func (t *txn) removeVersion(f found) error {
	o := f.row
	t.exec(sq.DeleteObject, o.Bucket, key(o.Key), o.VersionID)
	if err := t.addUsage(f.owner, -o.Size); err != nil {
		return err
	}
	release(t, o)
	if o.IsLatest {
		t.exec(sq.Promote, o.Bucket, key(o.Key))
	}
	return nil
}

// DeleteVersion implements metasql.Driver.
func (s driver) DeleteVersion(ctx context.Context, bucket, k, versionID string, cond meta.Cond) (meta.Object, error) {
	var out meta.Object
	err := s.write(ctx, "delete version", func(t *txn) error {
		t.lockOwners([]string{bucket})
		var cur found
		t.lookup(&cur, bucket, k, versionID)
		if err := t.flush(); err != nil {
			return err
		}
		if !cur.bucket {
			return meta.ErrNoBucket(bucket)
		}
		if err := t.checkLocked(cur.owner); err != nil {
			return err
		}
		if err := metasql.CheckRemoval(bucket, k, versionID, cur.row.Object, cur.exists, cond, t.now); err != nil {
			return err
		}
		out = cur.row.Object
		return t.removeVersion(cur)
	})
	return metasql.Result(out, err)
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
		t.lookup(&src, srcBucket, srcKey, "")
		t.lookup(&dst, dstBucket, dstKey, "")
		if err := t.flush(); err != nil {
			return err
		}
		switch {
		case !src.bucket:
			return meta.ErrNoBucket(srcBucket)
		case !dst.bucket:
			return meta.ErrNoBucket(dstBucket)
		case src.versioning != meta.Unversioned || dst.versioning != meta.Unversioned:
			return meta.ErrMoveVersioned()
		case !src.exists:
			return meta.ErrNoObject(srcBucket, srcKey)
		}
		if err := errors.Join(t.checkLocked(src.owner), t.checkLocked(dst.owner)); err != nil {
			return errRetry
		}
		if err := dstCond.Check(dst.row.Object, dst.exists); err != nil {
			return err
		}
		if dst.exists {
			t.exec(sq.DeleteObject, dstBucket, key(dstKey), dst.row.VersionID)
		}
		t.exec("UPDATE objects SET bucket = $3, key = $4 WHERE bucket = $1 AND key = $2 AND "+metasql.VersionIs("", "$5"),
			srcBucket, key(srcKey), dstBucket, key(dstKey), src.row.VersionID)
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
