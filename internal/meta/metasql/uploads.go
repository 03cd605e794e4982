package metasql

import (
	"context"
	"strings"
	"time"

	"github.com/coffer-storage/coffer/internal/meta"
)

// UploadCols are the columns of an upload, in ScanUpload's order.
const UploadCols = "id, bucket, key, initiator_id, content_type, metadata, checksum_algorithm, checksum_type, size, part_size, created_at, expires_at, blob_key, backend_upload_id, sse_mode, sse_kms_key, sse_c_check, tags, " +
	"lock_mode, lock_until, legal_hold, acl"

// ScanUpload reads an upload selected with UploadCols.
func ScanUpload(r Row) (meta.Upload, error) {
	var (
		u                meta.Upload
		key              []byte
		md, tags, acl    *string
		created, expires int64
		lockMode         string
		lockUntil        int64
	)
	if err := r.Scan(&u.ID, &u.Bucket, &key, &u.InitiatorID, &u.ContentType, &md, &u.ChecksumAlgorithm, &u.ChecksumType,
		&u.Size, &u.PartSize, &created, &expires, &u.BlobKey, &u.BackendUploadID, &u.EncryptionMode, &u.EncryptionKMSKey, &u.CustomerKeyCheck, &tags,
		&lockMode, &lockUntil, &u.LegalHold, &acl); err != nil {
		return meta.Upload{}, err
	}
	u.Retention = meta.Retention{Mode: meta.RetentionMode(lockMode), Until: FromNanos(lockUntil)}
	u.Key = string(key)
	u.CreatedAt, u.ExpiresAt = FromNanos(created), FromNanos(expires)
	var err error
	if u.Metadata, err = DecodeMetadata(md); err != nil {
		return meta.Upload{}, err
	}
	if u.Tags, err = DecodeTags(tags); err != nil {
		return meta.Upload{}, err
	}
	u.Owner, u.ACL, err = DecodeACL(acl)
	return u, err
}

// insertUploadSQL inserts an upload: arguments uploadArgs.
func insertUploadSQL(ph PH) string {
	return "INSERT INTO uploads (" + UploadCols + ") VALUES (" + values(ph, 1, 22) + ")"
}

// uploadArgs are insertUploadSQL's arguments for u (as meta.CheckUpload
// returned it); key binds its key in the dialect.
func uploadArgs(u meta.Upload, key func(string) any) ([]any, error) {
	md, err := metadataArg(u.Metadata)
	if err != nil {
		return nil, err
	}
	tags, err := TagsArg(u.Tags)
	if err != nil {
		return nil, err
	}
	acl, err := ACLArg(u.Owner, u.ACL)
	if err != nil {
		return nil, err
	}
	return []any{u.ID, u.Bucket, key(u.Key), u.InitiatorID, u.ContentType, md, u.ChecksumAlgorithm, u.ChecksumType,
		u.Size, u.PartSize, ToNanos(u.CreatedAt), ToNanos(u.ExpiresAt), u.BlobKey, u.BackendUploadID,
		u.EncryptionMode, u.EncryptionKMSKey, u.CustomerKeyCheck, tags, string(u.Retention.Mode), ToNanos(u.Retention.Until), u.LegalHold, acl}, nil
}

// uploadPlaceSQL reads where upload ph(1) goes, for a write on it
// (ScanUploadPlace): its bucket, key and BlobKey, and the bucket's owner.
func uploadPlaceSQL(ph PH) string {
	return "SELECT u.id, u.bucket, u.key, u.blob_key, b.owner_id FROM uploads u JOIN buckets b ON b.name = u.bucket WHERE u.id = " + ph(1)
}

// UploadPlace is where an upload goes: the upload (its ID, Bucket, Key
// and BlobKey) and its bucket's owner, whose usage its parts count in.
type UploadPlace struct {
	meta.Upload
	Owner string
}

// ScanUploadPlace reads a row of uploadPlaceSQL.
func ScanUploadPlace(r Row) (UploadPlace, error) {
	var u UploadPlace
	var key []byte
	err := r.Scan(&u.ID, &u.Bucket, &key, &u.BlobKey, &u.Owner)
	u.Key = string(key)
	return u, err
}

// ListUploadsQuery is the query of a ListUploads page of limit uploads of
// bucket (ScanUpload, one more than the page to tell whether more exist)
// and its arguments. markerCreated is the CreatedAt (ToNanos) of the
// upload opts.UploadIDMarker under opts.KeyMarker, nil if there is none:
// the page starts after that upload, or at the first upload of KeyMarker
// (with an UploadIDMarker) or after it (without), as meta.ListUploadsOptions
// says. key binds a key in the dialect.
func ListUploadsQuery(bucket string, opts meta.ListUploadsOptions, markerCreated *int64, limit int, ph PH, key func(string) any) (string, []any) {
	var b strings.Builder
	args := []any{bucket, key(opts.Prefix)}
	arg := func(v any) string {
		args = append(args, v)
		return ph(len(args))
	}
	b.WriteString("SELECT " + UploadCols + " FROM uploads WHERE bucket = " + ph(1) + " AND key >= " + ph(2))
	if end := meta.PrefixEnd(opts.Prefix); opts.Prefix != "" && end != "" {
		b.WriteString(" AND key < " + arg(key(end)))
	}
	switch km := opts.KeyMarker; {
	case km == "":
	case markerCreated != nil:
		b.WriteString(" AND (key, created_at, id) > (" + arg(key(km)) + ", " + arg(*markerCreated) + ", " + arg(opts.UploadIDMarker) + ")")
	case opts.UploadIDMarker != "":
		b.WriteString(" AND key >= " + arg(key(km)))
	default:
		b.WriteString(" AND key > " + arg(key(km)))
	}
	b.WriteString(" ORDER BY key, created_at, id LIMIT " + arg(limit+1))
	return b.String(), args
}

// uploadMarkerSQL reads the created_at of upload ph(1) if it is in bucket
// ph(2) under key ph(3).
func uploadMarkerSQL(ph PH) string {
	return "SELECT created_at FROM uploads WHERE id = " + ph(1) + " AND bucket = " + ph(2) + " AND key = " + ph(3)
}

// partCols are the columns of a part, in ScanPart's order.
const partCols = "upload_id, number, size, etag, checksum, blob_key, mod_time, sse, sse_kek"

// ScanPart reads a part selected with partCols.
func ScanPart(r Row) (meta.Part, error) {
	var p meta.Part
	var mod int64
	err := r.Scan(&p.UploadID, &p.Number, &p.Size, &p.ETag, &p.Checksum, &p.BlobKey, &mod, &p.Encryption, &p.EncryptionKEK)
	p.ModTime = FromNanos(mod)
	return p, err
}

// partsSQL reads the parts of upload ph(1) (ScanPart), by number.
func partsSQL(ph PH) string {
	return "SELECT " + partCols + " FROM upload_parts WHERE upload_id = " + ph(1) + " ORDER BY number"
}

// partSQL reads part ph(2) of upload ph(1) (ScanPart).
func partSQL(ph PH) string {
	return "SELECT " + partCols + " FROM upload_parts WHERE upload_id = " + ph(1) + " AND number = " + ph(2)
}

// upsertPartSQL records a part, replacing the upload's part of that
// number: arguments PartArgs.
func upsertPartSQL(ph PH) string {
	return "INSERT INTO upload_parts (" + partCols + ") VALUES (" + values(ph, 1, 9) + ")" +
		" ON CONFLICT (upload_id, number) DO UPDATE SET size = excluded.size, etag = excluded.etag, checksum = excluded.checksum," +
		" blob_key = excluded.blob_key, mod_time = excluded.mod_time, sse = excluded.sse, sse_kek = excluded.sse_kek"
}

// PartArgs are upsertPartSQL's arguments for p (as meta.CheckPart
// returned it).
func PartArgs(p meta.Part) []any {
	return []any{p.UploadID, p.Number, p.Size, p.ETag, p.Checksum, p.BlobKey, ToNanos(p.ModTime), p.Encryption, p.EncryptionKEK}
}

// listPartsSQL reads, in one statement (one snapshot), up to ph(3) parts
// of upload ph(1) numbered above ph(2), ascending, and whether the upload
// exists: one row with no part when it has none (scanListedPart), none
// when it does not exist.
func listPartsSQL(ph PH) string {
	return "SELECT p.upload_id, p.number, p.size, p.etag, p.checksum, p.blob_key, p.mod_time, p.sse, p.sse_kek" +
		" FROM uploads u LEFT JOIN upload_parts p ON p.upload_id = u.id AND p.number > " + ph(2) +
		" WHERE u.id = " + ph(1) + " ORDER BY p.number LIMIT " + ph(3)
}

// scanListedPart reads a row of listPartsSQL: a zero Part (Number 0)
// for the row of an upload without such parts.
func scanListedPart(r Row) (meta.Part, error) {
	var (
		p                             meta.Part
		id, etag, checksum, blob, kek *string
		number, size, mod             *int64
	)
	if err := r.Scan(&id, &number, &size, &etag, &checksum, &blob, &mod, &p.Encryption, &kek); err != nil || number == nil {
		return meta.Part{}, err
	}
	p.UploadID, p.Number, p.Size, p.ETag, p.Checksum = Deref(id), int(*number), Deref(size), Deref(etag), Deref(checksum)
	p.BlobKey, p.ModTime, p.EncryptionKEK = Deref(blob), FromNanos(Deref(mod)), Deref(kek)
	return p, nil
}

// listedParts returns the parts of the rows of listPartsSQL, and whether
// the upload exists (there is a row).
func listedParts(rows []meta.Part) ([]meta.Part, bool) {
	var out []meta.Part
	for _, p := range rows {
		if p.Number != 0 {
			out = append(out, p)
		}
	}
	return out, len(rows) > 0
}

// deleteUploadSQL are the statements deleting upload ph(1), its parts
// first.
func deleteUploadSQL(ph PH) [2]string {
	return [2]string{"DELETE FROM upload_parts WHERE upload_id = " + ph(1), "DELETE FROM uploads WHERE id = " + ph(1)}
}

// copyPartsSQL copies the parts of upload ph(2) that listed (a condition
// on their number) selects into the parts set ph(1) of an object (their
// numbers serve as positions).
func copyPartsSQL(listed string, ph PH) string {
	return "INSERT INTO object_parts (parts_id, idx, blob_key, size, etag, checksum, sse, sse_kek)" +
		" SELECT " + ph(1) + ", number, blob_key, size, etag, checksum, sse, sse_kek FROM upload_parts" +
		" WHERE upload_id = " + ph(2) + " AND " + listed
}

// GetUpload implements meta.Uploads.
func (o uploadOps) GetUpload(ctx context.Context, id string) (meta.Upload, error) {
	return Get(ctx, o.run, "get upload", ScanUpload, func() error { return meta.ErrNoUpload(id) }, o.sql.uploads.get, id)
}

// ListParts implements meta.Uploads, in one statement (so one snapshot). A
// limit <= 0 means 1000; a limit above 10000 is 10000.
func (o uploadOps) ListParts(ctx context.Context, uploadID string, after, limit int) ([]meta.Part, bool, error) {
	limit = meta.PageLimit(limit, 1000, meta.MaxPartNumber)
	rows, err := List(ctx, o.run, "list parts", scanListedPart, o.sql.uploads.listParts, uploadID, after, limit+1)
	if err != nil {
		return nil, false, err
	}
	out, found := listedParts(rows)
	if !found {
		return nil, false, meta.ErrNoUpload(uploadID)
	}
	out, more := meta.Page(out, limit)
	return out, more, nil
}

// ListExpiredUploads implements meta.Uploads, oldest expiry first. A limit
// <= 0 means 1000.
func (o uploadOps) ListExpiredUploads(ctx context.Context, before time.Time, limit int) ([]meta.Upload, error) {
	return List(ctx, o.run, "list expired uploads", ScanUpload, o.sql.uploads.listExpired, ToNanos(before), meta.PageLimit(limit, 1000, 0))
}

// uploadSQL are the uploads and upload_parts statements of Ops.
type uploadSQL struct {
	get, listParts, listExpired string
}

func newUploadSQL(ph PH) uploadSQL {
	return uploadSQL{
		get:         "SELECT " + UploadCols + " FROM uploads WHERE id = " + ph(1),
		listParts:   listPartsSQL(ph),
		listExpired: "SELECT " + UploadCols + " FROM uploads WHERE expires_at < " + ph(1) + " ORDER BY expires_at, id LIMIT " + ph(2),
	}
}

// CreateUpload implements meta.Uploads: the upload is checked
// (meta.CheckUpload), then created by the driver. A zero CreatedAt is set
// to now.
func (o uploadOps) CreateUpload(ctx context.Context, u meta.Upload) error {
	u, err := meta.CheckUpload(u, time.Now())
	if err != nil {
		return err
	}
	args, err := uploadArgs(u, o.key)
	if err != nil {
		return err
	}
	return o.drv.CreateUpload(ctx, u, args)
}

// PutPart implements meta.Uploads: the part is checked (meta.CheckPart),
// then recorded by the driver. A zero ModTime is set to now.
func (o uploadOps) PutPart(ctx context.Context, p meta.Part) (meta.Part, error) {
	p, err := meta.CheckPart(p, time.Now())
	if err != nil {
		return meta.Part{}, err
	}
	var staged []string
	if p.Staged {
		staged = []string{p.BlobKey}
	}
	return o.drv.PutPart(ctx, p, staged)
}

// CompleteBackendUpload implements meta.Uploads: the object is checked
// (meta.CheckBackendCompletion), then the driver completes the upload.
func (o uploadOps) CompleteBackendUpload(ctx context.Context, id string, obj meta.Object, cond meta.Cond) (meta.Object, error) {
	if err := meta.CheckBackendCompletion(obj); err != nil {
		return meta.Object{}, err
	}
	return o.drv.CompleteBackendUpload(ctx, id, obj, cond)
}
