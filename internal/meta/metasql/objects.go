package metasql

import (
	"context"
	"strings"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

// ObjectRow is an object version as its objects row holds it. A
// multipart object's parts live in object_parts under PartsID (never
// reused); Parts is filled only once they are read.
type ObjectRow struct {
	meta.Object
	PartsID   int64 // 0 for an object that is not multipart
	PartCount int
	Seq       string // the version's place among its key's (meta.Versioned)
}

// listCols are the columns of an objects row ListObjects reads, in
// ScanObject's order (no inline bytes, no envelope: listings leave them
// out; nor the version's place: every row listed is a latest version
// that is not a delete marker).
const listCols = "key, size, etag, sha256, content_type, metadata, blob_key, mod_time, " +
	"checksum_algorithm, checksum_type, checksum_value, parts_id, part_count"

// ListCols are listCols, for a backend's statements of its own (a skip
// scan), in ScanObject's order.
const ListCols = listCols

// objectCols are listCols and the columns that place a row among its
// key's versions, in ScanVersion's order.
const objectCols = listCols + ", version_id, seq, is_latest, delete_marker"

// Missing is the error of a read of version ("": the latest) of
// bucket/key that found o (exists false: none): ErrNoVersion, ErrNoObject,
// or ErrDeleteMarker when the latest version is a delete marker; nil if
// o is what was asked for.
func Missing(bucket, key, version string, o meta.Object, exists bool) error {
	switch {
	case !exists && version != "":
		return meta.ErrNoVersion(bucket, key, version)
	case !exists:
		return meta.ErrNoObject(bucket, key)
	case version == "" && o.DeleteMarker:
		return meta.ErrDeleteMarker(bucket, key, o.VersionID)
	}
	return nil
}

// SeqIf is the seq of o if it exists, else "": what a new version of its
// key must sort before (meta.PlanVersion).
func (o ObjectRow) SeqIf(exists bool) string {
	if !exists {
		return ""
	}
	return o.Seq
}

// ScanObject returns the scanner of the listCols of bucket's rows (the
// latest versions, IsLatest set; VersionID left empty).
func ScanObject(bucket string) func(Row) (ObjectRow, error) {
	return scanRow(bucket, false)
}

// ScanVersion returns the scanner of the objectCols of bucket's rows.
func ScanVersion(bucket string) func(Row) (ObjectRow, error) {
	return scanRow(bucket, true)
}

func scanRow(bucket string, versions bool) func(Row) (ObjectRow, error) {
	return func(r Row) (ObjectRow, error) {
		var (
			o   ObjectRow
			key []byte
			md  *string
			mod int64
			pid *int64
		)
		var err error
		if versions {
			err = r.Scan(&key, &o.Size, &o.ETag, &o.SHA256, &o.ContentType, &md, &o.BlobKey, &mod,
				&o.Checksum.Algorithm, &o.Checksum.Type, &o.Checksum.Value, &pid, &o.PartCount,
				&o.VersionID, &o.Seq, &o.IsLatest, &o.DeleteMarker)
		} else {
			o.IsLatest = true
			err = r.Scan(&key, &o.Size, &o.ETag, &o.SHA256, &o.ContentType, &md, &o.BlobKey, &mod,
				&o.Checksum.Algorithm, &o.Checksum.Type, &o.Checksum.Value, &pid, &o.PartCount)
		}
		if err != nil {
			return ObjectRow{}, err
		}
		o.Bucket, o.Key = bucket, string(key)
		o.ModTime = FromNanos(mod)
		o.PartsID = Deref(pid)
		o.Metadata, err = DecodeMetadata(md)
		return o, err
	}
}

// rangeScanSQL is a page of a bucket's latest versions that are not
// delete markers, in key order (ScanObject): bucket ph(1), keys after
// ph(2) (from ph(2) if inclusive), up to ph(3) objects, and, if bounded,
// keys before ph(4).
func rangeScanSQL(inclusive, bounded bool, ph PH) string {
	return keyRangeSQL(listCols, "objects", "is_latest AND NOT delete_marker", inclusive, bounded, ph)
}

// deletedScanSQL is rangeScanSQL of the latest versions that are delete
// markers, with the columns of a version (ScanVersion), through the
// partial index objects_deleted (migration 0021), whose condition it
// repeats: a page reads the markers only.
func deletedScanSQL(inclusive, bounded bool, d Dialect) string {
	from := "objects"
	if d.IndexedBy {
		from += " INDEXED BY objects_deleted"
	}
	return keyRangeSQL(objectCols, from, "is_latest AND delete_marker", inclusive, bounded, d.PH)
}

// keyRangeSQL is the range scan of rangeScanSQL: cols of the rows of
// from that match cond.
func keyRangeSQL(cols, from, cond string, inclusive, bounded bool, ph PH) string {
	var b strings.Builder
	b.WriteString("SELECT " + cols + " FROM " + from + " WHERE bucket = " + ph(1) + " AND key ")
	if inclusive {
		b.WriteString(">= " + ph(2))
	} else {
		b.WriteString("> " + ph(2))
	}
	if bounded {
		b.WriteString(" AND key < " + ph(4))
	}
	b.WriteString(" AND " + cond + " ORDER BY key LIMIT " + ph(3))
	return b.String()
}

// ListScan returns the range scan of a listing (RangeScans, or
// DeletedScans if markers) and the scanner of its rows.
func (s Statements) ListScan(bucket string, markers, inclusive, bounded bool) (string, func(Row) (ObjectRow, error)) {
	if markers {
		return s.DeletedScans[b2i(inclusive)][b2i(bounded)], ScanVersion(bucket)
	}
	return s.RangeScans[b2i(inclusive)][b2i(bounded)], ScanObject(bucket)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// versionScanSQL is a page of a bucket's versions in (key, seq) order
// (ScanVersion): bucket ph(1), from (key ph(2), seq ph(3)) on (after it
// unless inclusive), up to ph(4) versions, and, if bounded, keys before
// ph(5). The key's range is what an index serves; the seq only filters
// the versions of the first key.
func versionScanSQL(inclusive, bounded bool, ph PH) string {
	op := ">"
	if inclusive {
		op = ">="
	}
	q := "SELECT " + objectCols + " FROM objects WHERE bucket = " + ph(1) + " AND key >= " + ph(2) +
		" AND (key > " + ph(2) + " OR seq " + op + " " + ph(3) + ")"
	if bounded {
		q += " AND key < " + ph(5)
	}
	return q + " ORDER BY key, seq LIMIT " + ph(4)
}

// latestIDCond is Statements.LatestID.
func latestIDCond(ph PH) string {
	return "o.seq = " + LatestSeqOf(ph)
}

// LatestSeqOf is the seq of the latest version of bucket ph(1), key
// ph(2): the key's first row in primary-key order (bucket, key, seq), one
// seek (meta's versions.go: a new version's seq sorts before the latest's).
func LatestSeqOf(ph PH) string {
	return "(SELECT l.seq FROM objects l WHERE l.bucket = " + ph(1) + " AND l.key = " + ph(2) + " ORDER BY l.seq LIMIT 1)"
}

// VersionIs is the condition "the row (columns prefixed by p, "o." or "")
// is the version v of its key", given the row's bucket and key: a seq
// range the primary key (bucket, key, seq) serves. A non-null version's
// seq is its version ID, a seek; the null version's seq is any, a scan
// of the key's versions (one row in a bucket never versioned). Seqs are
// hexadecimal digits, all between "" and "g".
func VersionIs(p, v string) string {
	return p + "seq >= CASE WHEN " + v + " = 'null' THEN '' ELSE " + v + " END AND " +
		p + "seq <= CASE WHEN " + v + " = 'null' THEN 'g' ELSE " + v + " END AND " + p + "version_id = " + v
}

// VersionScanArgs are versionScanSQL's arguments (bounded when end !=
// ""); key binds a key in the dialect.
func VersionScanArgs(bucket, fromKey, fromSeq, end string, limit int, key func(string) any) []any {
	args := []any{bucket, key(fromKey), fromSeq, limit}
	if end != "" {
		args = append(args, key(end))
	}
	return args
}

// Versioned returns the versions of os with their sequences.
func Versioned(os []ObjectRow) []meta.Versioned {
	out := make([]meta.Versioned, len(os))
	for i, o := range os {
		out[i] = meta.Versioned{Object: o.Object, Seq: o.Seq}
	}
	return out
}

// RangeScanArgs are rangeScanSQL's arguments (bounded when end != "");
// key binds a key in the dialect.
func RangeScanArgs(bucket, from, end string, limit int, key func(string) any) []any {
	args := []any{bucket, key(from), limit}
	if end != "" {
		args = append(args, key(end))
	}
	return args
}

// partsOfSQL reads the parts of the parts sets that in (a condition on
// parts_id) selects, in order (ScanPartOf).
func partsOfSQL(in string) string {
	return "SELECT parts_id, blob_key, size, etag, checksum FROM object_parts WHERE " + in + " ORDER BY parts_id, idx"
}

// PartOf is a part of a parts set, as partsOfSQL reads it.
type PartOf struct {
	PartsID int64
	meta.ObjectPart
}

// ScanPartOf reads a row of partsOfSQL.
func ScanPartOf(r Row) (PartOf, error) {
	var p PartOf
	err := r.Scan(&p.PartsID, &p.BlobKey, &p.Size, &p.ETag, &p.Checksum)
	return p, err
}

// AttachParts gives the multipart objects of os (PartsID set) their parts,
// read in the snapshot os were read in: Internal if one lacks some.
func AttachParts(os []ObjectRow, parts []PartOf) error {
	byID := make(map[int64]*ObjectRow, len(os))
	for i := range os {
		if os[i].PartsID != 0 {
			os[i].Parts = make([]meta.ObjectPart, 0, os[i].PartCount)
			byID[os[i].PartsID] = &os[i]
		}
	}
	for _, p := range parts {
		if o := byID[p.PartsID]; o != nil {
			o.Parts = append(o.Parts, p.ObjectPart)
		}
	}
	for _, o := range byID {
		if err := o.CheckParts(); err != nil {
			return err
		}
	}
	return nil
}

// CheckParts fails with Internal if the multipart object o lacks some of
// its parts.
func (o ObjectRow) CheckParts() error {
	if o.PartsID != 0 && len(o.Parts) != o.PartCount {
		return errcode.New(errcode.Internal, "object %q has %d of its %d parts", o.Key, len(o.Parts), o.PartCount)
	}
	return nil
}

// MultipartIDs returns the PartsID of the multipart objects of os.
func MultipartIDs(os []ObjectRow) []int64 {
	var ids []int64
	for _, o := range os {
		if o.PartsID != 0 {
			ids = append(ids, o.PartsID)
		}
	}
	return ids
}

// Objects returns the objects of os.
func Objects(os []ObjectRow) []meta.Object {
	out := make([]meta.Object, len(os))
	for i, o := range os {
		out[i] = o.Object
	}
	return out
}

// UpsertObjectSQL writes an object version at its bucket, key and seq,
// replacing the row of that seq if there is one (an overwrite of the null
// version in its place; a write that moves the null version deletes the
// old row first): arguments ObjectArgs. inlineCol is the column that holds
// (or names) its inline bytes. Unless place, a replaced row keeps its
// latest flag (an overwrite in place: SQLite then rewrites no partial
// index that names it, which it would for any column named in the SET
// list).
func UpsertObjectSQL(inlineCol string, place bool, ph PH) string {
	set := ""
	if place {
		set = " is_latest = excluded.is_latest,"
	}
	return "INSERT INTO objects (bucket, " + objectCols + ", " + inlineCol + ", sse, sse_kek, tags, lock_mode, lock_until, legal_hold, acl, crc32c) VALUES (" +
		values(ph, 1, 27) + ")" +
		" ON CONFLICT (bucket, key, seq) DO UPDATE SET size = excluded.size, etag = excluded.etag, sha256 = excluded.sha256," +
		" content_type = excluded.content_type, metadata = excluded.metadata, blob_key = excluded.blob_key, mod_time = excluded.mod_time," +
		" checksum_algorithm = excluded.checksum_algorithm, checksum_type = excluded.checksum_type, checksum_value = excluded.checksum_value," +
		" parts_id = excluded.parts_id, part_count = excluded.part_count," + set +
		" delete_marker = excluded.delete_marker, " + inlineCol + " = excluded." + inlineCol +
		", sse = excluded.sse, sse_kek = excluded.sse_kek, tags = excluded.tags, lock_mode = excluded.lock_mode," +
		" lock_until = excluded.lock_until, legal_hold = excluded.legal_hold, acl = excluded.acl, crc32c = excluded.crc32c"
}

// ObjectArgs are UpsertObjectSQL's arguments for o (its VersionID,
// IsLatest and DeleteMarker as set) at sequence seq, whose parts, if any,
// are stored under partsID, and whose inline column holds inline (nil:
// NULL); key binds its key in the dialect.
func ObjectArgs(o meta.Object, seq string, partsID int64, inline any, key func(string) any) ([]any, error) {
	md, err := metadataArg(o.Metadata)
	if err != nil {
		return nil, err
	}
	var pid any // NULL unless multipart
	if partsID != 0 {
		pid = partsID
	}
	tags, err := TagsArg(o.Tags)
	if err != nil {
		return nil, err
	}
	acl, err := ObjectACLArg(o)
	if err != nil {
		return nil, err
	}
	if o.VersionID == "" || seq == "" {
		return nil, errcode.New(errcode.Internal, "object %q written without a version", o.Key)
	}
	return []any{o.Bucket, key(o.Key), o.Size, o.ETag, o.SHA256, o.ContentType, md, o.BlobKey, ToNanos(o.ModTime),
		o.Checksum.Algorithm, o.Checksum.Type, o.Checksum.Value, pid, len(o.Parts), o.VersionID, seq, o.IsLatest, o.DeleteMarker,
		inline, o.Encryption, o.EncryptionKEK, tags, string(o.Retention.Mode), ToNanos(o.Retention.Until), o.LegalHold, acl, crcArg(o.CRC32C)}, nil
}

// crcArg binds a CRC32C column: NULL when none was recorded.
func crcArg(crc []byte) any {
	if crc == nil {
		return nil
	}
	return crc
}

// PutObjects implements meta.Objects: the puts are checked
// (meta.CheckPuts), then written by the driver.
func (o objectOps) PutObjects(ctx context.Context, puts []meta.Put) ([]meta.PutResult, error) {
	if len(puts) == 0 {
		return nil, nil
	}
	staged, err := meta.CheckPuts(puts)
	if err != nil {
		return nil, err
	}
	return o.drv.PutObjects(ctx, puts, staged)
}

// MoveObject implements meta.Objects: the decisions before the move
// (meta.PrecheckMove), then the driver's move.
func (o objectOps) MoveObject(ctx context.Context, srcBucket, srcKey, dstBucket, dstKey string, dstCond meta.Cond) (meta.Object, error) {
	if obj, done, err := meta.PrecheckMove(ctx, o.GetObject, srcBucket, srcKey, dstBucket, dstKey, dstCond); done {
		return obj, err
	}
	return o.drv.MoveObject(ctx, srcBucket, srcKey, dstBucket, dstKey, dstCond)
}
