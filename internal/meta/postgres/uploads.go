package postgres

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/meta/metasql"
)

const uploadCols = "id, bucket, key, initiator_id, content_type, metadata, checksum_algorithm, checksum_type, size, part_size, created_at, expires_at, blob_key, backend_upload_id, sse_mode, sse_kms_key, sse_c_check"

func scanUpload(r pgx.Row) (meta.Upload, error) {
	var (
		u                meta.Upload
		k                []byte
		md               pgtype.Text
		created, expires int64
	)
	if err := r.Scan(&u.ID, &u.Bucket, &k, &u.InitiatorID, &u.ContentType, &md, &u.ChecksumAlgorithm, &u.ChecksumType,
		&u.Size, &u.PartSize, &created, &expires, &u.BlobKey, &u.BackendUploadID, &u.EncryptionMode, &u.EncryptionKMSKey, &u.CustomerKeyCheck); err != nil {
		return meta.Upload{}, err
	}
	u.Key = string(k)
	u.CreatedAt, u.ExpiresAt = metasql.FromNanos(created), metasql.FromNanos(expires)
	var err error
	u.Metadata, err = decodeMetadata(md)
	return u, err
}

const partCols = "upload_id, number, size, etag, checksum, blob_key, mod_time, sse, sse_kek"

func scanPart(r scanner) (meta.Part, error) {
	var p meta.Part
	var mod int64
	err := r.Scan(&p.UploadID, &p.Number, &p.Size, &p.ETag, &p.Checksum, &p.BlobKey, &mod, &p.Encryption, &p.EncryptionKEK)
	p.ModTime = metasql.FromNanos(mod)
	return p, err
}

// CreateUpload implements meta.Store. A zero CreatedAt is set to now.
func (s *Store) CreateUpload(ctx context.Context, u meta.Upload) error {
	u, err := meta.CheckUpload(u, time.Now())
	if err != nil {
		return err
	}
	md, err := encodeMetadata(u.Metadata)
	if err != nil {
		return err
	}
	return s.write(ctx, "create upload", func(t *txn) error {
		var owner string
		if u.Size > 0 {
			// The declared size is reserved until the upload goes: lock
			// the bucket's owner and check the quota first.
			t.lockOwners([]string{u.Bucket})
			t.readReserved(reservedOfBucketsQuery, []string{u.Bucket})
			t.queryRow(func(r pgx.Row) error {
				err := r.Scan(&owner)
				if errors.Is(err, pgx.ErrNoRows) {
					return meta.ErrNoBucket(u.Bucket)
				}
				return err
			}, "SELECT owner_id FROM buckets WHERE name = $1", u.Bucket)
			if err := t.flush(); err != nil {
				return err
			}
			r, err := t.room(owner)
			if err != nil {
				return err
			}
			if err := r.CheckGrowth(u.Size); err != nil {
				return err
			}
		}
		// A missing bucket is a foreign key violation: NotFound.
		t.exec("INSERT INTO uploads ("+uploadCols+") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)",
			u.ID, u.Bucket, key(u.Key), u.InitiatorID, u.ContentType, md, u.ChecksumAlgorithm, u.ChecksumType,
			u.Size, u.PartSize, metasql.ToNanos(u.CreatedAt), metasql.ToNanos(u.ExpiresAt), u.BlobKey, u.BackendUploadID,
			u.EncryptionMode, u.EncryptionKMSKey, u.CustomerKeyCheck)
		if u.Size > 0 {
			insertStaging(t, meta.DeclaredStaging(u, owner))
		}
		return nil
	})
}

// GetUpload implements meta.Store.
func (s *Store) GetUpload(ctx context.Context, id string) (meta.Upload, error) {
	var u meta.Upload
	err := s.queryRow(ctx, "get upload", func(r pgx.Row) (err error) {
		u, err = scanUpload(r)
		if errors.Is(err, pgx.ErrNoRows) {
			return meta.ErrNoUpload(id)
		}
		return err
	}, "SELECT "+uploadCols+" FROM uploads WHERE id = $1", id)
	if err != nil {
		return meta.Upload{}, err
	}
	return u, nil
}

// upload is what writes need to know of an upload.
type upload struct {
	found                       bool
	bucket, key, owner, blobKey string
}

// getUpload queues reading the upload's bucket, key, blob key and bucket
// owner into u. Queue it after lockUploadOwner.
func (t *txn) getUpload(u *upload, id string) {
	*u = upload{}
	t.queryRow(func(r pgx.Row) error {
		var k []byte
		err := r.Scan(&u.bucket, &k, &u.owner, &u.blobKey)
		u.key = string(k)
		u.found = err == nil
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		return err
	}, `SELECT u.bucket, u.key, b.owner_id, u.blob_key FROM uploads u JOIN buckets b ON b.name = u.bucket
		WHERE u.id = $1`, id)
}

// check fails if the upload is gone or its owner is not locked.
func (u *upload) check(t *txn, id string) error {
	if !u.found {
		return meta.ErrNoUpload(id)
	}
	return t.checkLocked(u.owner)
}

// readParts queues reading every part of an upload into have.
func (t *txn) readParts(have *[]meta.Part, id string) {
	queueRows(t, have, scanPart, "SELECT "+partCols+" FROM upload_parts WHERE upload_id = $1", id)
}

// PutPart implements meta.Store. A zero ModTime is set to now.
// InvalidArgument unless 1 <= Number <= 10000, Size >= 0 and BlobKey is
// set.
func (s *Store) PutPart(ctx context.Context, p meta.Part) (meta.Part, error) {
	p, err := meta.CheckPart(p, time.Now())
	if err != nil {
		return meta.Part{}, err
	}
	var old meta.Part
	var staged []string
	if p.Staged {
		staged = []string{p.BlobKey}
	}
	err = s.write(ctx, "put part", func(t *txn) error {
		old = meta.Part{}
		var u upload
		t.lockUploadOwner(p.UploadID)
		t.releaseStaged(staged)
		t.exec(declaredLeftUpdate, p.UploadID, p.Number, p.Size)
		t.readReserved(reservedOfUploadQuery, p.UploadID)
		t.getUpload(&u, p.UploadID)
		var cur meta.Part
		exists := false
		t.queryRow(func(r pgx.Row) (err error) {
			cur, err = scanPart(r)
			exists = err == nil
			if errors.Is(err, pgx.ErrNoRows) {
				return nil
			}
			return err
		}, "SELECT "+partCols+" FROM upload_parts WHERE upload_id = $1 AND number = $2", p.UploadID, p.Number)
		if err := t.flush(); err != nil {
			return err
		}
		if err := u.check(t, p.UploadID); err != nil {
			return err
		}
		if err := t.checkReleased(staged); err != nil {
			return err
		}
		if err := t.addUsage(u.owner, p.Size-cur.Size); err != nil {
			return err
		}
		t.exec("INSERT INTO upload_parts ("+partCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
			ON CONFLICT (upload_id, number) DO UPDATE SET
				size = excluded.size, etag = excluded.etag, checksum = excluded.checksum,
				blob_key = excluded.blob_key, mod_time = excluded.mod_time, sse = excluded.sse, sse_kek = excluded.sse_kek`,
			p.UploadID, p.Number, p.Size, p.ETag, p.Checksum, p.BlobKey, metasql.ToNanos(p.ModTime), p.Encryption, p.EncryptionKEK)
		if exists {
			t.enqueue(cur.BlobKey)
			old = cur
		}
		return nil
	})
	if err != nil {
		return meta.Part{}, err
	}
	return old, nil
}

// ListParts implements meta.Store, in one query (so one snapshot). A limit
// <= 0 means 1000; a limit above 10000 is 10000.
func (s *Store) ListParts(ctx context.Context, uploadID string, after, limit int) ([]meta.Part, bool, error) {
	limit = meta.PageLimit(limit, 1000, meta.MaxPartNumber)
	var out []meta.Part
	found := false
	err := s.read(ctx, "list parts", func(c *pgx.Conn) error {
		out, found = nil, false
		rows, err := c.Query(ctx, `SELECT p.number, p.size, p.etag, p.checksum, p.blob_key, p.mod_time, p.sse, p.sse_kek
			FROM uploads u LEFT JOIN upload_parts p ON p.upload_id = u.id AND p.number > $2
			WHERE u.id = $1 ORDER BY p.number LIMIT $3`, uploadID, after, limit+1)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			found = true
			var (
				number                    pgtype.Int4
				size, mod                 pgtype.Int8
				etag, checksum, blob, kek pgtype.Text
				sse                       []byte
			)
			if err := rows.Scan(&number, &size, &etag, &checksum, &blob, &mod, &sse, &kek); err != nil {
				return err
			}
			if !number.Valid {
				continue // the upload has no such parts
			}
			out = append(out, meta.Part{
				UploadID: uploadID, Number: int(number.Int32), Size: size.Int64, ETag: etag.String,
				Checksum: checksum.String, BlobKey: blob.String, ModTime: metasql.FromNanos(mod.Int64),
				Encryption: sse, EncryptionKEK: kek.String,
			})
		}
		return rows.Err()
	})
	if err != nil {
		return nil, false, err
	}
	if !found {
		return nil, false, meta.ErrNoUpload(uploadID)
	}
	if len(out) > limit {
		return out[:limit], true, nil
	}
	return out, false, nil
}

// ListUploads implements meta.Store in one REPEATABLE READ transaction of
// two round trips. A limit <= 0 means 1000; a limit above 10000 is 10000.
//
// The page starts after the marker in the order (key, created_at, id):
// with a KeyMarker alone, after every upload of that key (as in S3); with
// an UploadIDMarker too, after that upload, or, if it no longer exists
// there, at the first upload of KeyMarker (so a vanished marker repeats
// rather than skips). An UploadIDMarker without KeyMarker is ignored.
func (s *Store) ListUploads(ctx context.Context, bucket string, opts meta.ListUploadsOptions) ([]meta.Upload, bool, error) {
	limit := opts.Limit
	limit = meta.PageLimit(limit, 1000, meta.MaxPartNumber)
	var out []meta.Upload
	err := s.tx(ctx, "list uploads of "+bucket, beginSnapshot, func(t *txn) error {
		out = nil
		exists := false
		t.queryRow(func(r pgx.Row) error {
			err := r.Scan(&exists)
			if errors.Is(err, pgx.ErrNoRows) {
				return nil
			}
			return err
		}, "SELECT true FROM buckets WHERE name = $1", bucket)
		var created int64
		markerFound := false
		km := opts.KeyMarker
		if km != "" && opts.UploadIDMarker != "" {
			t.queryRow(func(r pgx.Row) error {
				err := r.Scan(&created)
				markerFound = err == nil
				if errors.Is(err, pgx.ErrNoRows) {
					return nil
				}
				return err
			}, "SELECT created_at FROM uploads WHERE id = $1 AND bucket = $2 AND key = $3", opts.UploadIDMarker, bucket, key(km))
		}
		if err := t.flush(); err != nil {
			return err
		}
		if !exists {
			return meta.ErrNoBucket(bucket)
		}

		var b strings.Builder
		b.WriteString("SELECT " + uploadCols + " FROM uploads WHERE bucket = $1 AND key >= $2")
		args := []any{bucket, key(opts.Prefix)}
		arg := func(v any) string {
			args = append(args, v)
			return "$" + strconv.Itoa(len(args))
		}
		if end := meta.PrefixEnd(opts.Prefix); opts.Prefix != "" && end != "" {
			b.WriteString(" AND key < " + arg(key(end)))
		}
		switch {
		case km == "":
		case markerFound:
			b.WriteString(" AND (key, created_at, id) > (" + arg(key(km)) + ", " + arg(created) + ", " + arg(opts.UploadIDMarker) + ")")
		case opts.UploadIDMarker != "":
			b.WriteString(" AND key >= " + arg(key(km)))
		default:
			b.WriteString(" AND key > " + arg(key(km)))
		}
		b.WriteString(" ORDER BY key, created_at, id LIMIT " + arg(limit+1))
		t.query(func(r pgx.Rows) error {
			u, err := scanUpload(r)
			if err != nil {
				return err
			}
			out = append(out, u)
			return nil
		}, b.String(), args...)
		return t.flush()
	})
	if err != nil {
		return nil, false, err
	}
	if len(out) > limit {
		return out[:limit], true, nil
	}
	return out, false, nil
}

// ListExpiredUploads implements meta.Store, oldest expiry first. A limit
// <= 0 means 1000.
func (s *Store) ListExpiredUploads(ctx context.Context, before time.Time, limit int) ([]meta.Upload, error) {
	limit = meta.PageLimit(limit, 1000, 0)
	var out []meta.Upload
	err := s.read(ctx, "list expired uploads", func(c *pgx.Conn) error {
		out = nil
		rows, err := c.Query(ctx, "SELECT "+uploadCols+" FROM uploads WHERE expires_at < $1 ORDER BY expires_at, id LIMIT $2",
			metasql.ToNanos(before), limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			u, err := scanUpload(rows)
			if err != nil {
				return err
			}
			out = append(out, u)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// deleteUpload queues deleting the rows of an upload and its parts.
func deleteUpload(t *txn, id string) {
	t.exec("DELETE FROM upload_parts WHERE upload_id = $1", id)
	t.exec("DELETE FROM uploads WHERE id = $1", id)
}

// AbortUpload implements meta.Store.
func (s *Store) AbortUpload(ctx context.Context, id string) error {
	return s.write(ctx, "abort upload", func(t *txn) error {
		var u upload
		var have []meta.Part
		t.lockUploadOwner(id)
		t.getUpload(&u, id)
		t.readParts(&have, id)
		if err := t.flush(); err != nil {
			return err
		}
		if err := u.check(t, id); err != nil {
			return err
		}
		freed, blobs := meta.PartsFreed(have)
		deleteUpload(t, id)
		t.deleteDeclared(id)
		if err := t.addUsage(u.owner, -freed); err != nil {
			return err
		}
		t.enqueue(append(blobs, u.blobKey)...)
		return nil
	})
}

// CompleteUpload implements meta.Store in three round trips (the upload
// and its parts; the object at the key; the writes and COMMIT). The checks
// run in the order the contract lists them, each over all listed parts
// before the next. A zero obj.ModTime is set to now.
func (s *Store) CompleteUpload(ctx context.Context, id string, obj meta.Object, parts []meta.CompletePart, minPartSize int64, cond meta.Cond) (meta.Object, error) {
	var out meta.Object
	err := s.write(ctx, "complete upload", func(t *txn) error {
		var u upload
		var have []meta.Part
		var partsID int64
		t.lockUploadOwner(id)
		t.getUpload(&u, id)
		t.readParts(&have, id)
		t.newPartsID(&partsID)
		if err := t.flush(); err != nil {
			return err
		}
		if err := u.check(t, id); err != nil {
			return err
		}
		a, err := meta.AssembleUpload(obj, u.bucket, u.key, have, parts, minPartSize, t.now)
		if err != nil {
			return err
		}
		var cur found
		t.lookup(&cur, u.bucket, u.key)
		if err := t.flush(); err != nil {
			return err
		}
		if err := cond.Check(cur.row.Object, cur.exists); err != nil {
			return err
		}
		freed, discarded := a.Freed()
		// The listed parts, in ascending order, become the object's; their
		// numbers serve as positions.
		// (They were read under the owner's lock: all are there.)
		numbers := make([]int32, len(a.Numbers))
		for i, n := range a.Numbers {
			numbers[i] = int32(n)
		}
		t.exec(`INSERT INTO object_parts (parts_id, idx, blob_key, size, etag, checksum, sse, sse_kek)
			SELECT $1, number, blob_key, size, etag, checksum, sse, sse_kek FROM upload_parts
			WHERE upload_id = $2 AND number = ANY($3)`, partsID, id, numbers)
		if err := writeObject(t, a.Object, partsID); err != nil {
			return err
		}
		deleteUpload(t, id)
		t.deleteDeclared(id)
		if err := t.addUsage(u.owner, -freed-cur.row.Size); err != nil {
			return err
		}
		if cur.exists {
			release(t, cur.row)
		}
		t.enqueue(discarded...)
		out = a.Object
		return nil
	})
	if err != nil {
		return meta.Object{}, err
	}
	return out, nil
}

// CompleteBackendUpload implements meta.Store in three round trips, as
// CompleteUpload.
func (s *Store) CompleteBackendUpload(ctx context.Context, id string, obj meta.Object, cond meta.Cond) (meta.Object, error) {
	if err := meta.CheckBackendCompletion(obj); err != nil {
		return meta.Object{}, err
	}
	var out meta.Object
	err := s.write(ctx, "complete upload", func(t *txn) error {
		var u upload
		var have []meta.Part
		t.lockUploadOwner(id)
		t.deleteDeclared(id)
		t.readReserved(reservedOfUploadQuery, id)
		t.getUpload(&u, id)
		t.readParts(&have, id)
		if err := t.flush(); err != nil {
			return err
		}
		if err := u.check(t, id); err != nil {
			return err
		}
		o, err := meta.AssembleBackendUpload(obj, meta.Upload{ID: id, Bucket: u.bucket, Key: u.key, BlobKey: u.blobKey}, t.now)
		if err != nil {
			return err
		}
		var cur found
		t.lookup(&cur, u.bucket, u.key)
		if err := t.flush(); err != nil {
			return err
		}
		if err := cond.Check(cur.row.Object, cur.exists); err != nil {
			return err
		}
		freed, discarded := meta.PartsFreed(have)
		deleteUpload(t, id)
		if err := t.addUsage(u.owner, o.Size-freed-cur.row.Size); err != nil {
			return err
		}
		if err := writeObject(t, o, 0); err != nil {
			return err
		}
		if cur.exists {
			release(t, cur.row)
		}
		t.enqueue(discarded...)
		out = o
		return nil
	})
	if err != nil {
		return meta.Object{}, err
	}
	return out, nil
}
