package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/meta/metasql"
)

// row is an object version as its objects row holds it, and the
// inline_data row of an inline object.
type row struct {
	metasql.ObjectRow
	inlineID int64 // the inline_data row of an inline object, else 0
}

// found is what a lookup read: the bucket's owner and versioning (and, for
// a write, its object lock), and the version looked up, if there is one.
type found struct {
	owner      string
	versioning meta.Versioning
	lock       meta.ObjectLock
	row        row
	exists     bool
}

// live reports whether f found an object: a version that is not a delete
// marker (what a write's Cond sees).
func (f found) live() bool { return f.exists && !f.row.DeleteMarker }

// missing is metasql.Missing of what f found.
func (f found) missing(bucket, key, version string) error {
	return metasql.Missing(bucket, key, version, f.row.Object, f.exists)
}

var (
	upsertObjectSQL    = metasql.UpsertObjectSQL("inline_id", true, ph)
	overwriteObjectSQL = metasql.UpsertObjectSQL("inline_id", false, ph)
)

// GetVersion implements metasql.Driver. A single-blob object takes one
// query; a multipart object a second one for its parts.
func (s driver) GetVersion(ctx context.Context, bucket, key, version string) (meta.Object, error) {
	if err := s.ready(); err != nil {
		return meta.Object{}, err
	}
	f, err := lookup(ctx, s.read(), bucket, key, version, true)
	if err != nil {
		return meta.Object{}, err
	}
	if err := f.missing(bucket, key, version); err != nil {
		return meta.Object{}, err
	}
	o := f.row
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
	return s.getObjectSnapshot(ctx, bucket, key, version)
}

// getObjectSnapshot reads an object version and its parts in one read
// transaction.
func (s *Store) getObjectSnapshot(ctx context.Context, bucket, key, version string) (meta.Object, error) {
	tx, err := s.readers.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return meta.Object{}, classify(err, "get object %q", key)
	}
	defer tx.Rollback()
	f, err := lookupFull(ctx, reader{stmts: s.rstmts, tx: tx}, bucket, key, version)
	if err != nil {
		return meta.Object{}, err
	}
	if err := f.missing(bucket, key, version); err != nil {
		return meta.Object{}, err
	}
	return f.row.Object, nil
}

// lookup returns the owner and versioning of bucket and version ("": the
// latest) of key, if any, in one query, without the parts of a multipart
// object; a read (not a write) reads no seq. NotFound if the bucket is
// missing.
func lookup(ctx context.Context, q querier, bucket, key, version string, read bool) (found, error) {
	// The scan destinations in one struct: one allocation, not one each
	// (every field escapes through Scan's []any).
	var f found
	var v struct {
		versioning                  string
		k, etag, sha, ctype, blob   sql.NullString
		md, tags, acl               *string
		calg, ctyp, cval            sql.NullString
		size, mod, pid, pcount, iid sql.NullInt64
		data, sse, crc              []byte
		kek, vid, seq               sql.NullString
		latest, marker              sql.NullBool
		lockMode, bucketLockMode    sql.NullString
		lockUntil                   sql.NullInt64
		hold                        sql.NullBool
	}
	query, args := lookupQuery, []any{bucket, key}
	if version != "" {
		query, args = lookupVersionQuery, append(args, version)
	}
	dest := []any{&f.owner, &v.k, &v.size, &v.etag, &v.sha, &v.ctype, &v.md, &v.blob, &v.mod, &v.calg, &v.ctyp, &v.cval, &v.pid, &v.pcount, &v.iid, &v.data, &v.sse, &v.kek, &v.tags,
		&v.lockMode, &v.lockUntil, &v.hold, &v.acl, &v.crc, &v.vid}
	if read && version == "" {
		// The hot path of every read: no column more than it needs (each
		// costs), the marker flag folded into the version.
		query = readLatestQuery
	} else {
		dest = append(dest, &v.versioning, &v.seq, &v.latest, &v.marker, &f.lock.Enabled, &v.bucketLockMode, &f.lock.Default.Days, &f.lock.Default.Years)
	}
	err := q.QueryRowContext(ctx, query, args...).Scan(dest...)
	if errors.Is(err, sql.ErrNoRows) {
		return found{}, meta.ErrNoBucket(bucket)
	}
	if err != nil {
		return found{}, classify(err, "get object %q", key)
	}
	f.versioning = meta.Versioning(v.versioning)
	f.lock.Default.Mode = meta.RetentionMode(v.bucketLockMode.String)
	if !v.k.Valid {
		return f, nil
	}
	f.exists = true
	if query == readLatestQuery {
		v.latest.Bool = true
		v.vid.String, v.marker.Bool = strings.CutPrefix(v.vid.String, "!")
	}
	f.row = row{ObjectRow: metasql.ObjectRow{
		Object: meta.Object{
			Bucket:        bucket,
			Key:           v.k.String,
			VersionID:     v.vid.String,
			IsLatest:      v.latest.Bool,
			DeleteMarker:  v.marker.Bool,
			Size:          v.size.Int64,
			ETag:          v.etag.String,
			SHA256:        v.sha.String,
			CRC32C:        v.crc,
			ContentType:   v.ctype.String,
			BlobKey:       v.blob.String,
			Checksum:      meta.Checksum{Algorithm: v.calg.String, Type: v.ctyp.String, Value: v.cval.String},
			ModTime:       metasql.FromNanos(v.mod.Int64),
			Encryption:    v.sse,
			EncryptionKEK: v.kek.String,
			Retention:     meta.Retention{Mode: meta.RetentionMode(v.lockMode.String), Until: metasql.FromNanos(v.lockUntil.Int64)},
			LegalHold:     v.hold.Bool,
		},
		PartsID:   v.pid.Int64,
		PartCount: int(v.pcount.Int64),
		Seq:       v.seq.String,
	}, inlineID: v.iid.Int64}
	if v.iid.Valid {
		f.row.Inline = v.data
		if f.row.Inline == nil {
			f.row.Inline = []byte{}
		}
	}
	if f.row.Metadata, err = metasql.DecodeMetadata(v.md); err != nil {
		return found{}, err
	}
	if f.row.Tags, err = metasql.DecodeTags(v.tags); err != nil {
		return found{}, err
	}
	if err = metasql.DecodeObjectACL(v.acl, &f.row.Object); err != nil {
		return found{}, err
	}
	return f, nil
}

// lookupSQL reads a bucket and the version of a key that cond (on o)
// selects ("": the latest, the key's first row in primary-key order
// (bucket, key, seq): one seek, as meta's versions.go orders versions),
// with its inline bytes, and version (its version_id, and for a write the
// bucket's versioning and the version's seq, is_latest and
// delete_marker): bucket ?1, key ?2.
func lookupSQL(cond, version string) string {
	on, tail := "", " ORDER BY o.seq LIMIT 1"
	if cond != "" {
		on, tail = " AND "+cond, ""
	}
	return `SELECT ` + terse(`b.owner_id, o.key, o.size, o.etag, o.sha256, o.content_type, o.metadata, o.blob_key, o.mod_time,
		o.checksum_algorithm, o.checksum_type, o.checksum_value, o.parts_id, o.part_count, o.inline_id, i.data, o.sse, o.sse_kek, o.tags,
		o.lock_mode, o.lock_until, o.legal_hold, o.acl, o.crc32c, `+version) + `
	FROM buckets b LEFT JOIN objects o ON o.bucket = b.name AND o.key = ?2` + on + `
	LEFT JOIN inline_data i ON i.id = o.inline_id
	WHERE b.name = ?1` + tail
}

// terse rewrites a select list (expressions separated by commas, none
// holding a comma itself) so that every result column is an expression
// named "c": modernc.org/sqlite copies each result column's name and
// declared type into Go strings on every execution of a query (newRows),
// which costs two allocations a column unless the name is one byte
// (a one-byte string is not allocated) and the declared type is NULL (as
// it is for an expression: the unary + is a no-op that makes the column
// one). The lookups below select up to 33 columns (issue 23, fifth pass);
// nothing reads the names or declared types (rows are scanned by
// position, and no column here is declared DATE, DATETIME or TIMESTAMP,
// the types the driver parses by name).
func terse(list string) string {
	cols := strings.Split(list, ",")
	for i, c := range cols {
		cols[i] = "+" + strings.TrimSpace(c) + " AS c"
	}
	return strings.Join(cols, ", ")
}

const versionCols = "o.version_id, b.versioning, o.seq, o.is_latest, o.delete_marker, b.object_lock, b.lock_mode, b.lock_days, b.lock_years"

var (
	lookupQuery        = lookupSQL("", versionCols)                            // the latest version
	lookupVersionQuery = lookupSQL(metasql.VersionIs("o.", "?3"), versionCols) // version ?3
	// readLatestQuery is lookupQuery for a GetObject: its version ID,
	// prefixed with "!" for a delete marker.
	readLatestQuery = lookupSQL("", "CASE WHEN o.delete_marker THEN '!' || o.version_id ELSE o.version_id END")
)

var readPartsQuery = "SELECT " + terse("blob_key, size, etag, checksum, sse, sse_kek") + " FROM object_parts WHERE parts_id = ? ORDER BY idx"

// scanObjectPart reads a row of readPartsQuery.
func scanObjectPart(r metasql.Row) (meta.ObjectPart, error) {
	var p meta.ObjectPart
	err := r.Scan(&p.BlobKey, &p.Size, &p.ETag, &p.Checksum, &p.Encryption, &p.EncryptionKEK)
	return p, err
}

// lookupFull is lookup with the parts of a multipart object. q must read
// one snapshot (the writer, or a read transaction).
func lookupFull(ctx context.Context, q querier, bucket, key, version string) (found, error) {
	f, err := lookup(ctx, q, bucket, key, version, false)
	if err != nil || !f.exists || f.row.PartsID == 0 {
		return f, err
	}
	if f.row.Parts, err = readParts(ctx, q, f.row.PartsID); err != nil {
		return found{}, err
	}
	if err := f.row.CheckParts(); err != nil {
		return found{}, err
	}
	return f, nil
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

// writeObject writes o at its bucket, key and version ID (at seq),
// replacing the row of that version if there is one; in place, that row's
// seq and latest flag are kept (they must be seq and o.IsLatest). Its
// parts, if any, must already be stored under partsID, its inline bytes
// under inlineID.
func writeObject(ctx context.Context, c *conn, o meta.Object, seq string, partsID, inlineID int64, inPlace bool) error {
	var iid any // NULL unless inline
	if inlineID != 0 {
		iid = inlineID
	}
	args, err := metasql.ObjectArgs(o, seq, partsID, iid, key)
	if err != nil {
		return err
	}
	query := upsertObjectSQL
	if inPlace {
		query = overwriteObjectSQL
	}
	_, err = c.ExecContext(ctx, query, args...)
	return classify(err, "put object %q", o.Key)
}

// storeBytes stores o's parts or its inline bytes, if it has any, and
// returns where.
func storeBytes(ctx context.Context, c *conn, o meta.Object) (partsID, inlineID int64, err error) {
	switch {
	case len(o.Parts) > 0:
		partsID, err = insertParts(ctx, c, o.Parts)
	case o.IsInline():
		data := o.Inline
		if data == nil {
			data = []byte{}
		}
		// Exec and the rowid SQLite reports, not RETURNING: a statement
		// that returns rows costs the driver a rows object, its columns'
		// names and a Scan (issue 23, fifth pass). The writer is the only
		// connection that writes, so the last insert rowid is this row's.
		res, err := c.ExecContext(ctx, "INSERT INTO inline_data (data) VALUES (?)", data)
		if err == nil {
			inlineID, err = res.LastInsertId()
		}
		if err != nil {
			return 0, 0, classify(err, "store inline object %q", o.Key)
		}
	}
	return partsID, inlineID, err
}

// place decides where a new version of the key whose latest version f
// holds goes (meta.PlanVersion), and finds the version it replaces: the
// key's null version, unless the bucket is Enabled.
func place(ctx context.Context, c *conn, f found, bucket, key string, now time.Time) (nv meta.NewVersion, old row, hasOld bool, err error) {
	nv = meta.PlanVersion(f.versioning, f.row.VersionID, f.row.SeqIf(f.exists), now)
	switch {
	case !nv.ReplacesNull || !f.exists:
		return nv, row{}, false, nil
	case f.row.VersionID == meta.NullVersion:
		return nv, f.row, true, nil
	}
	g, err := lookupFull(ctx, c, bucket, key, meta.NullVersion)
	return nv, g.row, g.exists, err
}

// putVersion writes o, whose parts or inline bytes are stored under
// partsID or inlineID, as the new latest version nv of the key whose
// latest version f holds, replacing old if hasOld: the latest version,
// unless it is old, stops being the latest first (one latest per key).
func putVersion(ctx context.Context, c *conn, f found, nv meta.NewVersion, old row, hasOld bool, o meta.Object, partsID, inlineID int64, now time.Time) (meta.Object, error) {
	if f.exists && !(hasOld && old.VersionID == f.row.VersionID) {
		if _, err := c.ExecContext(ctx, sq.Demote, o.Bucket, key(o.Key), f.row.VersionID); err != nil {
			return meta.Object{}, classify(err, "put object %q", o.Key)
		}
	}
	o.VersionID, o.IsLatest = nv.VersionID, true
	inPlace := hasOld && old.VersionID == f.row.VersionID && nv.Seq == old.Seq
	if hasOld && nv.Seq != old.Seq {
		// The null version moves to the top: its old row goes (the
		// primary key holds the seq).
		if _, err := c.ExecContext(ctx, sq.DeleteObject, o.Bucket, key(o.Key), old.VersionID); err != nil {
			return meta.Object{}, classify(err, "put object %q", o.Key)
		}
	}
	if err := writeObject(ctx, c, o, nv.Seq, partsID, inlineID, inPlace); err != nil {
		return meta.Object{}, err
	}
	if hasOld {
		if err := release(ctx, c, old, now); err != nil {
			return meta.Object{}, err
		}
	}
	return o, nil
}

// newVersion writes o as the new latest version of its key, whose latest
// version f holds, as the bucket's versioning says, if cond holds for the
// latest version: the owner's usage moves by delta less the size of the
// version it replaces; store, if set, stores o's parts or inline bytes.
func newVersion(ctx context.Context, c *conn, f found, o meta.Object, cond meta.Cond, delta int64,
	store func() (partsID, inlineID int64, err error), now time.Time) (meta.PutResult, error) {
	if err := cond.Check(f.row.Object, f.live()); err != nil {
		return meta.PutResult{}, err
	}
	o, err := meta.LockVersion(o, f.lock, now)
	if err != nil {
		return meta.PutResult{}, err
	}
	nv, old, hasOld, err := place(ctx, c, f, o.Bucket, o.Key, now)
	if err != nil {
		return meta.PutResult{}, err
	}
	if err := addUsage(ctx, c, f.owner, delta-old.Size, now); err != nil {
		return meta.PutResult{}, err
	}
	var pid, iid int64
	if store != nil {
		if pid, iid, err = store(); err != nil {
			return meta.PutResult{}, err
		}
	}
	stored, err := putVersion(ctx, c, f, nv, old, hasOld, o, pid, iid, now)
	if err != nil {
		return meta.PutResult{}, err
	}
	var replaced meta.Object
	if hasOld {
		replaced = old.Object
	}
	return meta.PutResult{Object: stored, Replaced: replaced}, nil
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
func (s driver) PutObjects(ctx context.Context, puts []meta.Put, staged []string) ([]meta.PutResult, error) {
	out := make([]meta.PutResult, len(puts))
	err := s.write(ctx, func(ctx context.Context, c *conn) error {
		now := time.Now()
		clear(out)
		if err := releaseStaged(ctx, c, staged, now); err != nil {
			return err
		}
		for i, p := range puts {
			o := p.Object
			o.ModTime = meta.OrNow(o.ModTime, now)
			if len(o.Parts) == 0 {
				o.Parts = nil
			}
			version := ""
			if p.InPlace {
				version = o.VersionID
			}
			f, err := lookupFull(ctx, c, o.Bucket, o.Key, version)
			if err != nil {
				return err
			}
			if p.BucketOwner != "" && f.owner != p.BucketOwner {
				return meta.ErrNoBucket(o.Bucket)
			}
			store := func() (int64, int64, error) { return storeBytes(ctx, c, o) }
			if p.InPlace {
				out[i], err = rewriteVersion(ctx, c, f, o, p.Cond, store, now)
			} else {
				out[i], err = newVersion(ctx, c, f, o, p.Cond, o.Size, store, now)
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

// rewriteVersion writes o over the version f holds (an InPlace put), if
// cond holds for it, keeping its version ID, seq and latest flag.
func rewriteVersion(ctx context.Context, c *conn, f found, o meta.Object, cond meta.Cond,
	store func() (partsID, inlineID int64, err error), now time.Time) (meta.PutResult, error) {
	if err := cond.Check(f.row.Object, f.live()); err != nil {
		return meta.PutResult{}, err
	}
	if !f.live() {
		return meta.PutResult{}, meta.ErrNoVersion(o.Bucket, o.Key, o.VersionID)
	}
	if err := addUsage(ctx, c, f.owner, o.Size-f.row.Size, now); err != nil {
		return meta.PutResult{}, err
	}
	pid, iid, err := store()
	if err != nil {
		return meta.PutResult{}, err
	}
	o.VersionID, o.IsLatest, o.Tags, o.Owner, o.ACL = f.row.VersionID, f.row.IsLatest, f.row.Tags, f.row.Owner, f.row.ACL
	o.Retention, o.LegalHold = f.row.Retention, f.row.LegalHold
	if err := writeObject(ctx, c, o, f.row.Seq, pid, iid, true); err != nil {
		return meta.PutResult{}, err
	}
	if err := release(ctx, c, f.row, now); err != nil {
		return meta.PutResult{}, err
	}
	return meta.PutResult{Object: o, Replaced: f.row.Object}, nil
}

// DeleteObject implements meta.Objects.
func (s *Store) DeleteObject(ctx context.Context, bucket, key string, cond meta.Cond) (meta.Object, error) {
	var out meta.Object
	err := s.write(ctx, func(ctx context.Context, c *conn) error {
		now := time.Now()
		f, err := lookupFull(ctx, c, bucket, key, "")
		if err != nil {
			return err
		}
		if f.versioning != meta.Unversioned {
			res, err := newVersion(ctx, c, f, meta.Object{Bucket: bucket, Key: key, DeleteMarker: true, ModTime: now}, cond, 0, nil, now)
			out = res.Object
			return err
		}
		if err := metasql.CheckRemoval(bucket, key, "", f.row.Object, f.exists, cond, now); err != nil {
			return err
		}
		out = f.row.Object
		return removeVersion(ctx, c, f, now)
	})
	return metasql.Result(out, err)
}

// removeVersion deletes the version f holds for good, releases it and
// moves its owner's usage; if it was the latest, the key's next newest
// version becomes the latest.
func removeVersion(ctx context.Context, c *conn, f found, now time.Time) error {
	o := f.row
	if _, err := c.ExecContext(ctx, sq.DeleteObject, o.Bucket, key(o.Key), o.VersionID); err != nil {
		return classify(err, "delete object %q", o.Key)
	}
	if err := addUsage(ctx, c, f.owner, -o.Size, now); err != nil {
		return err
	}
	if err := release(ctx, c, o, now); err != nil {
		return err
	}
	if o.IsLatest {
		if _, err := c.ExecContext(ctx, sq.Promote, o.Bucket, key(o.Key)); err != nil {
			return classify(err, "delete object %q", o.Key)
		}
	}
	return nil
}

// DeleteVersion implements metasql.Driver.
func (s driver) DeleteVersion(ctx context.Context, bucket, key, versionID string, cond meta.Cond) (meta.Object, error) {
	var out meta.Object
	err := s.write(ctx, func(ctx context.Context, c *conn) error {
		now := time.Now()
		f, err := lookupFull(ctx, c, bucket, key, versionID)
		if err != nil {
			return err
		}
		if err := metasql.CheckRemoval(bucket, key, versionID, f.row.Object, f.exists, cond, now); err != nil {
			return err
		}
		out = f.row.Object
		return removeVersion(ctx, c, f, now)
	})
	return metasql.Result(out, err)
}

// MoveObject implements meta.Objects. The object keeps every field, ModTime
// included, and its blobs (a multipart object keeps its parts, which are
// not rewritten); only its bucket and key change. Moving a key onto itself
// checks that it exists and that dstCond holds, and changes nothing.
func (s driver) MoveObject(ctx context.Context, srcBucket, srcKey, dstBucket, dstKey string, dstCond meta.Cond) (meta.Object, error) {
	var moved meta.Object
	err := s.write(ctx, func(ctx context.Context, c *conn) error {
		now := time.Now()
		src, err := lookupFull(ctx, c, srcBucket, srcKey, "")
		if err != nil {
			return err
		}
		dst, err := lookupFull(ctx, c, dstBucket, dstKey, "")
		if err != nil {
			return err
		}
		if src.versioning != meta.Unversioned || dst.versioning != meta.Unversioned {
			return meta.ErrMoveVersioned()
		}
		if !src.exists {
			return meta.ErrNoObject(srcBucket, srcKey)
		}
		if err := dstCond.Check(dst.row.Object, dst.exists); err != nil {
			return err
		}
		if _, err := c.ExecContext(ctx, sq.DeleteObject, srcBucket, key(srcKey), src.row.VersionID); err != nil {
			return classify(err, "move object %q", srcKey)
		}
		o := src.row.Object
		o.Bucket, o.Key = dstBucket, dstKey
		seq := src.row.Seq
		if dst.exists {
			seq = dst.row.Seq // in dst's place: the row of that seq is replaced
		}
		if err := writeObject(ctx, c, o, seq, src.row.PartsID, src.row.inlineID, false); err != nil {
			return err
		}
		// Usage: src leaves its owner, it replaces dst at dst's owner.
		for _, d := range meta.MoveUsage(src.owner, src.row.Size, dst.owner, dst.row.Size) {
			if err := addUsage(ctx, c, d.Owner, d.Bytes, now); err != nil {
				return err
			}
		}
		if dst.exists {
			if err := release(ctx, c, dst.row, now); err != nil {
				return err
			}
		}
		moved = o
		return nil
	})
	return metasql.Result(moved, err)
}
