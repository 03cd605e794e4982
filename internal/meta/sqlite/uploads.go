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
	"github.com/coffer-storage/coffer/internal/meta/metasql"
)

const uploadCols = "id, bucket, key, initiator_id, content_type, metadata, checksum_algorithm, checksum_type, size, part_size, created_at, expires_at, blob_key, backend_upload_id, sse_mode, sse_kms_key, sse_c_check"

func scanUpload(r scanner) (meta.Upload, error) {
	var (
		u                meta.Upload
		md               sql.NullString
		created, expires int64
	)
	if err := r.Scan(&u.ID, &u.Bucket, &u.Key, &u.InitiatorID, &u.ContentType, &md, &u.ChecksumAlgorithm, &u.ChecksumType,
		&u.Size, &u.PartSize, &created, &expires, &u.BlobKey, &u.BackendUploadID, &u.EncryptionMode, &u.EncryptionKMSKey, &u.CustomerKeyCheck); err != nil {
		return meta.Upload{}, err
	}
	u.CreatedAt, u.ExpiresAt = metasql.FromNanos(created), metasql.FromNanos(expires)
	var err error
	u.Metadata, err = decodeMetadata(md)
	return u, err
}

// scanUploads scans every row of rows.
func scanUploads(rows *sql.Rows, what string) ([]meta.Upload, error) {
	defer rows.Close()
	var out []meta.Upload
	for rows.Next() {
		u, err := scanUpload(rows)
		if err != nil {
			return nil, classify(err, "%s", what)
		}
		out = append(out, u)
	}
	if err := rows.Err(); err != nil {
		return nil, classify(err, "%s", what)
	}
	return out, nil
}

const partCols = "upload_id, number, size, etag, checksum, blob_key, mod_time, sse, sse_kek"

func scanPart(r scanner) (meta.Part, error) {
	var p meta.Part
	var mod int64
	err := r.Scan(&p.UploadID, &p.Number, &p.Size, &p.ETag, &p.Checksum, &p.BlobKey, &mod, &p.Encryption, &p.EncryptionKEK)
	p.ModTime = metasql.FromNanos(mod)
	return p, err
}

var declaredLeftUpdate = metasql.DeclaredLeftUpdate("?1", "?2", "?3")

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
	return s.write(ctx, func(ctx context.Context, c *conn) error {
		now := time.Now()
		var owner string
		err := c.QueryRowContext(ctx, "SELECT owner_id FROM buckets WHERE name = ?", u.Bucket).Scan(&owner)
		if errors.Is(err, sql.ErrNoRows) {
			return meta.ErrNoBucket(u.Bucket)
		}
		if err != nil {
			return classify(err, "create upload")
		}
		_, err = c.ExecContext(ctx, "INSERT INTO uploads ("+uploadCols+") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
			u.ID, u.Bucket, u.Key, u.InitiatorID, u.ContentType, md, u.ChecksumAlgorithm, u.ChecksumType,
			u.Size, u.PartSize, metasql.ToNanos(u.CreatedAt), metasql.ToNanos(u.ExpiresAt), u.BlobKey, u.BackendUploadID,
			u.EncryptionMode, u.EncryptionKMSKey, u.CustomerKeyCheck)
		if err != nil || u.Size == 0 {
			return classify(err, "upload %q", u.ID)
		}
		// The declared size is reserved until the upload goes.
		r, err := room(ctx, c, owner, now)
		if err != nil {
			return err
		}
		if err := r.CheckGrowth(u.Size); err != nil {
			return err
		}
		return insertStaging(ctx, c, meta.DeclaredStaging(u, owner))
	})
}

// GetUpload implements meta.Store.
func (s *Store) GetUpload(ctx context.Context, id string) (meta.Upload, error) {
	if err := s.ready(); err != nil {
		return meta.Upload{}, err
	}
	u, err := scanUpload(s.read().QueryRowContext(ctx, "SELECT "+uploadCols+" FROM uploads WHERE id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return meta.Upload{}, meta.ErrNoUpload(id)
	}
	if err != nil {
		return meta.Upload{}, classify(err, "get upload %q", id)
	}
	return u, nil
}

// upload is what the writer needs to know of an upload.
type upload struct {
	bucket, key, owner, blobKey string
}

// getUpload returns the upload's bucket and key and the bucket's owner.
func getUpload(ctx context.Context, c *conn, id string) (upload, error) {
	var u upload
	err := c.QueryRowContext(ctx, `SELECT u.bucket, u.key, b.owner_id, u.blob_key FROM uploads u JOIN buckets b ON b.name = u.bucket
		WHERE u.id = ?`, id).Scan(&u.bucket, &u.key, &u.owner, &u.blobKey)
	if errors.Is(err, sql.ErrNoRows) {
		return upload{}, meta.ErrNoUpload(id)
	}
	return u, classify(err, "get upload %q", id)
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
	err = s.write(ctx, func(ctx context.Context, c *conn) error {
		now := time.Now()
		old = meta.Part{}
		u, err := getUpload(ctx, c, p.UploadID)
		if err != nil {
			return err
		}
		if err := releaseStaged(ctx, c, staged, now); err != nil {
			return err
		}
		if _, err := c.ExecContext(ctx, declaredLeftUpdate, p.UploadID, p.Number, p.Size); err != nil {
			return classify(err, "update the declared size of upload %q", p.UploadID)
		}
		cur, err := scanPart(c.QueryRowContext(ctx, "SELECT "+partCols+" FROM upload_parts WHERE upload_id = ? AND number = ?", p.UploadID, p.Number))
		exists := err == nil
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return classify(err, "get part %d", p.Number)
		}
		if err := addUsage(ctx, c, u.owner, p.Size-cur.Size, now); err != nil {
			return err
		}
		if _, err := c.ExecContext(ctx, "INSERT INTO upload_parts ("+partCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (upload_id, number) DO UPDATE SET
				size = excluded.size, etag = excluded.etag, checksum = excluded.checksum,
				blob_key = excluded.blob_key, mod_time = excluded.mod_time, sse = excluded.sse, sse_kek = excluded.sse_kek`,
			p.UploadID, p.Number, p.Size, p.ETag, p.Checksum, p.BlobKey, metasql.ToNanos(p.ModTime), p.Encryption, p.EncryptionKEK); err != nil {
			return classify(err, "put part %d", p.Number)
		}
		if exists {
			if err := enqueue(ctx, c, now, cur.BlobKey); err != nil {
				return err
			}
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
	if err := s.ready(); err != nil {
		return nil, false, err
	}
	limit = meta.PageLimit(limit, 1000, meta.MaxPartNumber)
	rows, err := s.read().QueryContext(ctx, `SELECT p.number, p.size, p.etag, p.checksum, p.blob_key, p.mod_time, p.sse, p.sse_kek
		FROM uploads u LEFT JOIN upload_parts p ON p.upload_id = u.id AND p.number > ?2
		WHERE u.id = ?1 ORDER BY p.number LIMIT ?3`, uploadID, after, limit+1)
	if err != nil {
		return nil, false, classify(err, "list parts")
	}
	defer rows.Close()
	found := false
	var out []meta.Part
	for rows.Next() {
		found = true
		var (
			number, size, mod         sql.NullInt64
			etag, checksum, blob, kek sql.NullString
			sse                       []byte
		)
		if err := rows.Scan(&number, &size, &etag, &checksum, &blob, &mod, &sse, &kek); err != nil {
			return nil, false, classify(err, "list parts")
		}
		if !number.Valid {
			continue // the upload has no such parts
		}
		out = append(out, meta.Part{
			UploadID: uploadID, Number: int(number.Int64), Size: size.Int64, ETag: etag.String,
			Checksum: checksum.String, BlobKey: blob.String, ModTime: metasql.FromNanos(mod.Int64),
			Encryption: sse, EncryptionKEK: kek.String,
		})
	}
	if err := rows.Err(); err != nil {
		return nil, false, classify(err, "list parts")
	}
	if !found {
		return nil, false, meta.ErrNoUpload(uploadID)
	}
	if len(out) > limit {
		return out[:limit], true, nil
	}
	return out, false, nil
}

// ListUploads implements meta.Store in one read transaction. A limit <= 0
// means 1000; a limit above 10000 is 10000.
//
// The page starts after the marker in the order (key, created_at, id):
// with a KeyMarker alone, after every upload of that key (as in S3); with
// an UploadIDMarker too, after that upload, or, if it no longer exists
// there, at the first upload of KeyMarker (so a vanished marker repeats
// rather than skips). An UploadIDMarker without KeyMarker is ignored.
func (s *Store) ListUploads(ctx context.Context, bucket string, opts meta.ListUploadsOptions) ([]meta.Upload, bool, error) {
	if err := s.ready(); err != nil {
		return nil, false, err
	}
	limit := opts.Limit
	limit = meta.PageLimit(limit, 1000, meta.MaxPartNumber)
	tx, err := s.readers.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, false, classify(err, "list uploads of %q", bucket)
	}
	defer tx.Rollback()
	q := reader{stmts: s.rstmts, tx: tx}

	var one int
	err = q.QueryRowContext(ctx, "SELECT 1 FROM buckets WHERE name = ?", bucket).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, meta.ErrNoBucket(bucket)
	}
	if err != nil {
		return nil, false, classify(err, "list uploads of %q", bucket)
	}

	var b strings.Builder
	b.WriteString("SELECT " + uploadCols + " FROM uploads WHERE bucket = ? AND key >= ?")
	args := []any{bucket, opts.Prefix}
	if end := meta.PrefixEnd(opts.Prefix); opts.Prefix != "" && end != "" {
		b.WriteString(" AND key < ?")
		args = append(args, end)
	}
	if km := opts.KeyMarker; km != "" {
		var created int64
		err := sql.ErrNoRows
		if opts.UploadIDMarker != "" {
			err = q.QueryRowContext(ctx, "SELECT created_at FROM uploads WHERE id = ? AND bucket = ? AND key = ?",
				opts.UploadIDMarker, bucket, km).Scan(&created)
		}
		switch {
		case err == nil:
			b.WriteString(" AND (key, created_at, id) > (?, ?, ?)")
			args = append(args, km, created, opts.UploadIDMarker)
		case !errors.Is(err, sql.ErrNoRows):
			return nil, false, classify(err, "list uploads of %q", bucket)
		case opts.UploadIDMarker != "":
			b.WriteString(" AND key >= ?")
			args = append(args, km)
		default:
			b.WriteString(" AND key > ?")
			args = append(args, km)
		}
	}
	b.WriteString(" ORDER BY key, created_at, id LIMIT ?")
	args = append(args, limit+1)
	rows, err := q.QueryContext(ctx, b.String(), args...)
	if err != nil {
		return nil, false, classify(err, "list uploads of %q", bucket)
	}
	out, err := scanUploads(rows, "list uploads")
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
	if err := s.ready(); err != nil {
		return nil, err
	}
	limit = meta.PageLimit(limit, 1000, 0)
	rows, err := s.read().QueryContext(ctx, "SELECT "+uploadCols+" FROM uploads WHERE expires_at < ? ORDER BY expires_at, id LIMIT ?",
		metasql.ToNanos(before), limit)
	if err != nil {
		return nil, classify(err, "list expired uploads")
	}
	return scanUploads(rows, "list expired uploads")
}

// uploadsOf returns the ids of a bucket's uploads.
func uploadsOf(ctx context.Context, c *conn, bucket string) ([]string, error) {
	rows, err := c.QueryContext(ctx, "SELECT id FROM uploads WHERE bucket = ?", bucket)
	if err != nil {
		return nil, classify(err, "uploads of %q", bucket)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, classify(err, "uploads of %q", bucket)
		}
		ids = append(ids, id)
	}
	return ids, classify(rows.Err(), "uploads of %q", bucket)
}

// dropUpload deletes an upload and its parts, returning the bytes they
// held and their blobs, which the caller must release (addUsage) and
// enqueue.
func dropUpload(ctx context.Context, c *conn, id string) (int64, []string, error) {
	rows, err := c.QueryContext(ctx, "SELECT size, blob_key FROM upload_parts WHERE upload_id = ? ORDER BY number", id)
	if err != nil {
		return 0, nil, classify(err, "parts of upload %q", id)
	}
	var freed int64
	var blobs []string
	for rows.Next() {
		var size int64
		var blob string
		if err := rows.Scan(&size, &blob); err != nil {
			rows.Close()
			return 0, nil, classify(err, "parts of upload %q", id)
		}
		freed += size
		blobs = append(blobs, blob)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return 0, nil, classify(err, "parts of upload %q", id)
	}
	if err := deleteUpload(ctx, c, id); err != nil {
		return 0, nil, err
	}
	return freed, blobs, nil
}

// deleteUpload deletes the rows of an upload and its parts.
func deleteUpload(ctx context.Context, c *conn, id string) error {
	if _, err := c.ExecContext(ctx, "DELETE FROM upload_parts WHERE upload_id = ?", id); err != nil {
		return classify(err, "delete parts of upload %q", id)
	}
	res, err := c.ExecContext(ctx, "DELETE FROM uploads WHERE id = ?", id)
	if err != nil {
		return classify(err, "delete upload %q", id)
	}
	return mustAffect(res, meta.ErrNoUpload(id))
}

// AbortUpload implements meta.Store.
func (s *Store) AbortUpload(ctx context.Context, id string) error {
	return s.write(ctx, func(ctx context.Context, c *conn) error {
		u, err := getUpload(ctx, c, id)
		if err != nil {
			return err
		}
		freed, blobs, err := dropUpload(ctx, c, id)
		if err != nil {
			return err
		}
		now := time.Now()
		if err := deleteDeclared(ctx, c, id); err != nil {
			return err
		}
		if err := addUsage(ctx, c, u.owner, -freed, now); err != nil {
			return err
		}
		if u.blobKey != "" {
			blobs = append(blobs, u.blobKey)
		}
		return enqueue(ctx, c, now, blobs...)
	})
}

// CompleteUpload implements meta.Store. The checks run in the order the
// contract lists them, each over all listed parts before the next. A zero
// obj.ModTime is set to now.
func (s *Store) CompleteUpload(ctx context.Context, id string, obj meta.Object, parts []meta.CompletePart, minPartSize int64, cond meta.Cond) (meta.Object, error) {
	var out meta.Object
	err := s.write(ctx, func(ctx context.Context, c *conn) error {
		now := time.Now()
		u, err := getUpload(ctx, c, id)
		if err != nil {
			return err
		}
		have, err := queryRows(ctx, c, scanPart, "SELECT "+partCols+" FROM upload_parts WHERE upload_id = ?", id)
		if err != nil {
			return classify(err, "parts of upload %q", id)
		}
		a, err := meta.AssembleUpload(obj, u.bucket, u.key, have, parts, minPartSize, now)
		if err != nil {
			return err
		}
		owner, cur, exists, err := lookupFull(ctx, c, u.bucket, u.key)
		if err != nil {
			return err
		}
		if err := cond.Check(cur.Object, exists); err != nil {
			return err
		}
		freed, discarded := a.Freed()
		partsID, err := moveParts(ctx, c, id, a.Numbers)
		if err != nil {
			return err
		}
		if err := writeObject(ctx, c, a.Object, partsID, 0); err != nil {
			return err
		}
		if err := deleteUpload(ctx, c, id); err != nil {
			return err
		}
		if err := deleteDeclared(ctx, c, id); err != nil {
			return err
		}
		if err := addUsage(ctx, c, owner, -freed-cur.Size, now); err != nil {
			return err
		}
		if exists {
			if err := release(ctx, c, cur, now); err != nil {
				return err
			}
		}
		if err := enqueue(ctx, c, now, discarded...); err != nil {
			return err
		}
		out = a.Object
		return nil
	})
	if err != nil {
		return meta.Object{}, err
	}
	return out, nil
}

// moveParts copies the listed parts of an upload, which are in ascending
// order, to a new parts set of a multipart object (their numbers serve as
// positions) in one statement, and returns its id.
func moveParts(ctx context.Context, c *conn, uploadID string, numbers []int) (int64, error) {
	list, err := json.Marshal(numbers)
	if err != nil {
		return 0, errcode.Wrap(errcode.Internal, err, "encode part numbers")
	}
	id, err := newPartsID(ctx, c)
	if err != nil {
		return 0, err
	}
	res, err := c.ExecContext(ctx, `INSERT INTO object_parts (parts_id, idx, blob_key, size, etag, checksum, sse, sse_kek)
		SELECT ?1, number, blob_key, size, etag, checksum, sse, sse_kek FROM upload_parts
		WHERE upload_id = ?2 AND number IN (SELECT value FROM json_each(?3))`, id, uploadID, string(list))
	if err != nil {
		return 0, classify(err, "copy parts of upload %q", uploadID)
	}
	if n, err := res.RowsAffected(); err != nil || n != int64(len(numbers)) {
		return 0, errcode.Wrap(errcode.Internal, err, "copied %d of the %d listed parts of upload %q", n, len(numbers), uploadID)
	}
	return id, nil
}

// CompleteBackendUpload implements meta.Store.
func (s *Store) CompleteBackendUpload(ctx context.Context, id string, obj meta.Object, cond meta.Cond) (meta.Object, error) {
	if err := meta.CheckBackendCompletion(obj); err != nil {
		return meta.Object{}, err
	}
	var out meta.Object
	err := s.write(ctx, func(ctx context.Context, c *conn) error {
		now := time.Now()
		u, err := getUpload(ctx, c, id)
		if err != nil {
			return err
		}
		o, err := meta.AssembleBackendUpload(obj, meta.Upload{ID: id, Bucket: u.bucket, Key: u.key, BlobKey: u.blobKey}, now)
		if err != nil {
			return err
		}
		owner, cur, exists, err := lookupFull(ctx, c, u.bucket, u.key)
		if err != nil {
			return err
		}
		if err := cond.Check(cur.Object, exists); err != nil {
			return err
		}
		freed, discarded, err := dropUpload(ctx, c, id)
		if err != nil {
			return err
		}
		if err := deleteDeclared(ctx, c, id); err != nil {
			return err
		}
		if err := addUsage(ctx, c, owner, o.Size-freed-cur.Size, now); err != nil {
			return err
		}
		if err := writeObject(ctx, c, o, 0, 0); err != nil {
			return err
		}
		if exists {
			if err := release(ctx, c, cur, now); err != nil {
				return err
			}
		}
		if err := enqueue(ctx, c, now, discarded...); err != nil {
			return err
		}
		out = o
		return nil
	})
	if err != nil {
		return meta.Object{}, err
	}
	return out, nil
}
