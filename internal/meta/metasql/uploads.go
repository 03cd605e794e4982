package metasql

import (
	"strings"

	"github.com/coffer-storage/coffer/internal/meta"
)

// UploadCols are the columns of an upload, in ScanUpload's order.
const UploadCols = "id, bucket, key, initiator_id, content_type, metadata, checksum_algorithm, checksum_type, size, part_size, created_at, expires_at, blob_key, backend_upload_id, sse_mode, sse_kms_key, sse_c_check"

// ScanUpload reads an upload selected with UploadCols.
func ScanUpload(r Row) (meta.Upload, error) {
	var (
		u                meta.Upload
		key              []byte
		md               *string
		created, expires int64
	)
	if err := r.Scan(&u.ID, &u.Bucket, &key, &u.InitiatorID, &u.ContentType, &md, &u.ChecksumAlgorithm, &u.ChecksumType,
		&u.Size, &u.PartSize, &created, &expires, &u.BlobKey, &u.BackendUploadID, &u.EncryptionMode, &u.EncryptionKMSKey, &u.CustomerKeyCheck); err != nil {
		return meta.Upload{}, err
	}
	u.Key = string(key)
	u.CreatedAt, u.ExpiresAt = FromNanos(created), FromNanos(expires)
	var err error
	u.Metadata, err = DecodeMetadata(md)
	return u, err
}

// InsertUploadSQL inserts an upload: arguments UploadArgs.
func InsertUploadSQL(ph PH) string {
	return "INSERT INTO uploads (" + UploadCols + ") VALUES (" + Values(ph, 1, 17) + ")"
}

// UploadArgs are InsertUploadSQL's arguments for u (as meta.CheckUpload
// returned it); key binds its key in the dialect.
func UploadArgs(u meta.Upload, key func(string) any) ([]any, error) {
	md, err := MetadataArg(u.Metadata)
	if err != nil {
		return nil, err
	}
	return []any{u.ID, u.Bucket, key(u.Key), u.InitiatorID, u.ContentType, md, u.ChecksumAlgorithm, u.ChecksumType,
		u.Size, u.PartSize, ToNanos(u.CreatedAt), ToNanos(u.ExpiresAt), u.BlobKey, u.BackendUploadID,
		u.EncryptionMode, u.EncryptionKMSKey, u.CustomerKeyCheck}, nil
}

// GetUploadSQL reads upload ph(1) (ScanUpload).
func GetUploadSQL(ph PH) string { return "SELECT " + UploadCols + " FROM uploads WHERE id = " + ph(1) }

// UploadPlaceSQL reads where upload ph(1) goes, for a write on it
// (ScanUploadPlace): its bucket, key and BlobKey, and the bucket's owner.
func UploadPlaceSQL(ph PH) string {
	return "SELECT u.id, u.bucket, u.key, u.blob_key, b.owner_id FROM uploads u JOIN buckets b ON b.name = u.bucket WHERE u.id = " + ph(1)
}

// UploadPlace is where an upload goes: the upload (its ID, Bucket, Key
// and BlobKey) and its bucket's owner, whose usage its parts count in.
type UploadPlace struct {
	meta.Upload
	Owner string
}

// ScanUploadPlace reads a row of UploadPlaceSQL.
func ScanUploadPlace(r Row) (UploadPlace, error) {
	var u UploadPlace
	var key []byte
	err := r.Scan(&u.ID, &u.Bucket, &key, &u.BlobKey, &u.Owner)
	u.Key = string(key)
	return u, err
}

// ListExpiredUploadsSQL lists up to ph(2) uploads expired before ph(1),
// soonest first (ScanUpload).
func ListExpiredUploadsSQL(ph PH) string {
	return "SELECT " + UploadCols + " FROM uploads WHERE expires_at < " + ph(1) + " ORDER BY expires_at, id LIMIT " + ph(2)
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

// UploadMarkerSQL reads the created_at of upload ph(1) if it is in bucket
// ph(2) under key ph(3).
func UploadMarkerSQL(ph PH) string {
	return "SELECT created_at FROM uploads WHERE id = " + ph(1) + " AND bucket = " + ph(2) + " AND key = " + ph(3)
}

// PartCols are the columns of a part, in ScanPart's order.
const PartCols = "upload_id, number, size, etag, checksum, blob_key, mod_time, sse, sse_kek"

// ScanPart reads a part selected with PartCols.
func ScanPart(r Row) (meta.Part, error) {
	var p meta.Part
	var mod int64
	err := r.Scan(&p.UploadID, &p.Number, &p.Size, &p.ETag, &p.Checksum, &p.BlobKey, &mod, &p.Encryption, &p.EncryptionKEK)
	p.ModTime = FromNanos(mod)
	return p, err
}

// PartsSQL reads the parts of upload ph(1) (ScanPart), by number.
func PartsSQL(ph PH) string {
	return "SELECT " + PartCols + " FROM upload_parts WHERE upload_id = " + ph(1) + " ORDER BY number"
}

// PartSQL reads part ph(2) of upload ph(1) (ScanPart).
func PartSQL(ph PH) string {
	return "SELECT " + PartCols + " FROM upload_parts WHERE upload_id = " + ph(1) + " AND number = " + ph(2)
}

// UpsertPartSQL records a part, replacing the upload's part of that
// number: arguments PartArgs.
func UpsertPartSQL(ph PH) string {
	return "INSERT INTO upload_parts (" + PartCols + ") VALUES (" + Values(ph, 1, 9) + ")" +
		" ON CONFLICT (upload_id, number) DO UPDATE SET size = excluded.size, etag = excluded.etag, checksum = excluded.checksum," +
		" blob_key = excluded.blob_key, mod_time = excluded.mod_time, sse = excluded.sse, sse_kek = excluded.sse_kek"
}

// PartArgs are UpsertPartSQL's arguments for p (as meta.CheckPart
// returned it).
func PartArgs(p meta.Part) []any {
	return []any{p.UploadID, p.Number, p.Size, p.ETag, p.Checksum, p.BlobKey, ToNanos(p.ModTime), p.Encryption, p.EncryptionKEK}
}

// ListPartsSQL reads, in one statement (one snapshot), up to ph(3) parts
// of upload ph(1) numbered above ph(2), ascending, and whether the upload
// exists: one row with no part when it has none (ScanListedPart), none
// when it does not exist.
func ListPartsSQL(ph PH) string {
	return "SELECT p.upload_id, p.number, p.size, p.etag, p.checksum, p.blob_key, p.mod_time, p.sse, p.sse_kek" +
		" FROM uploads u LEFT JOIN upload_parts p ON p.upload_id = u.id AND p.number > " + ph(2) +
		" WHERE u.id = " + ph(1) + " ORDER BY p.number LIMIT " + ph(3)
}

// ScanListedPart reads a row of ListPartsSQL: a zero Part (Number 0)
// for the row of an upload without such parts.
func ScanListedPart(r Row) (meta.Part, error) {
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

// ListedParts returns the parts of the rows of ListPartsSQL, and whether
// the upload exists (there is a row).
func ListedParts(rows []meta.Part) ([]meta.Part, bool) {
	var out []meta.Part
	for _, p := range rows {
		if p.Number != 0 {
			out = append(out, p)
		}
	}
	return out, len(rows) > 0
}

// DeleteUploadSQL are the statements deleting upload ph(1), its parts
// first.
func DeleteUploadSQL(ph PH) [2]string {
	return [2]string{"DELETE FROM upload_parts WHERE upload_id = " + ph(1), "DELETE FROM uploads WHERE id = " + ph(1)}
}

// CopyPartsSQL copies the parts of upload ph(2) that listed (a condition
// on their number) selects into the parts set ph(1) of an object (their
// numbers serve as positions).
func CopyPartsSQL(listed string, ph PH) string {
	return "INSERT INTO object_parts (parts_id, idx, blob_key, size, etag, checksum, sse, sse_kek)" +
		" SELECT " + ph(1) + ", number, blob_key, size, etag, checksum, sse, sse_kek FROM upload_parts" +
		" WHERE upload_id = " + ph(2) + " AND " + listed
}
