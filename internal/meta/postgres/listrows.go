package postgres

import (
	"encoding/binary"
	"errors"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/meta/metasql"
)

// A listing decodes a page of up to 1,001 rows of 13 (or 17) columns.
// Through pgx's Scan that is a scan plan looked up and run per column
// and an allocation per string column: 19 allocations and about 5 µs of
// CPU a row, most of a page's cost (docs/PERFORMANCE.md, "Issue 23,
// fourth pass"). queueObjectRows reads the raw column values of the
// rows instead, in the formats pgx asked the server for, and makes each
// row's strings (key, ETag, SHA-256, content type, metadata, blob key,
// checksum; version ID and seq) slices of one string allocated for the
// row. A result whose columns are not the expected types and formats
// (another query mode) is read through the generic scanner.

// listColumnTypes are the types of metasql's listCols, in order; the
// versionColumnTypes follow them in objectCols.
var (
	listColumnTypes = []uint32{
		pgtype.ByteaOID, // key
		pgtype.Int8OID,  // size
		pgtype.TextOID,  // etag
		pgtype.TextOID,  // sha256
		pgtype.TextOID,  // content_type
		pgtype.TextOID,  // metadata (NULL: none)
		pgtype.TextOID,  // blob_key
		pgtype.Int8OID,  // mod_time
		pgtype.TextOID,  // checksum_algorithm
		pgtype.TextOID,  // checksum_type
		pgtype.TextOID,  // checksum_value
		pgtype.Int8OID,  // parts_id (NULL: not multipart)
		pgtype.Int4OID,  // part_count
	}
	versionColumnTypes = []uint32{
		pgtype.TextOID, // version_id
		pgtype.TextOID, // seq
		pgtype.BoolOID, // is_latest
		pgtype.BoolOID, // delete_marker
	}
)

// rawDecodable reports whether fields are the columns of listCols (with
// versions, objectCols) in formats decodeObjectRow reads: bytea, integers
// and booleans in binary, text in either format (the same bytes).
func rawDecodable(fields []pgconn.FieldDescription, versions bool) bool {
	want := listColumnTypes
	if versions {
		want = append(want[:len(want):len(want)], versionColumnTypes...)
	}
	if len(fields) != len(want) {
		return false
	}
	for i, f := range fields {
		if f.DataTypeOID != want[i] || (f.Format != pgtype.BinaryFormatCode && f.DataTypeOID != pgtype.TextOID) {
			return false
		}
	}
	return true
}

// queueObjectRows queues query, a range scan of objectCols of bucket's
// rows (metasql.ScanVersion), in t; once flushed, dst holds its rows,
// appended to (*dst)[:0].
func queueObjectRows(t *txn, dst *[]metasql.ObjectRow, bucket string, query string, args ...any) {
	t.batch.Queue(query, args...).Query(func(rows pgx.Rows) error {
		defer rows.Close()
		*dst = (*dst)[:0]
		if !rawDecodable(rows.FieldDescriptions(), true) {
			var err error
			*dst, err = pgx.AppendRows(*dst, rows, rowTo(metasql.ScanVersion(bucket)))
			return err
		}
		for rows.Next() {
			*dst = append(*dst, metasql.ObjectRow{})
			o := &(*dst)[len(*dst)-1]
			var err error
			if o.PartsID, o.PartCount, o.Seq, err = decodeObjectRow(&o.Object, rows.RawValues(), bucket, true); err != nil {
				return err
			}
		}
		return rows.Err()
	})
}

// listed is a page of a range scan of a listing: its objects, and the
// places of the multipart ones among them (their parts not yet read).
type listed struct {
	objects   []meta.Object
	multipart []multipartAt
}

type multipartAt struct {
	i         int // in objects
	partsID   int64
	partCount int
}

// queueListRows queues query, a range scan of listCols of bucket's rows
// (with markers, objectCols: metasql.ListScan), in t; once flushed, dst
// holds its rows, appended to dst.objects[:0], each decoded in place (a
// page of 1,000 objects is 400 kB: not copied from ObjectRows).
func queueListRows(t *txn, dst *listed, bucket string, markers bool, query string, args ...any) {
	t.batch.Queue(query, args...).Query(func(rows pgx.Rows) error {
		defer rows.Close()
		dst.objects, dst.multipart = dst.objects[:0], dst.multipart[:0]
		if !rawDecodable(rows.FieldDescriptions(), markers) {
			scan := metasql.ScanObject(bucket)
			if markers {
				scan = metasql.ScanVersion(bucket)
			}
			os, err := pgx.CollectRows(rows, rowTo(scan))
			for _, o := range os {
				dst.add(o.Object, o.PartsID, o.PartCount)
			}
			return err
		}
		for rows.Next() {
			dst.objects = append(dst.objects, meta.Object{})
			i := len(dst.objects) - 1
			id, n, _, err := decodeObjectRow(&dst.objects[i], rows.RawValues(), bucket, markers)
			if err != nil {
				return err
			}
			if id != 0 {
				dst.multipart = append(dst.multipart, multipartAt{i, id, n})
			}
		}
		return rows.Err()
	})
}

func (l *listed) add(o meta.Object, partsID int64, partCount int) {
	if partsID != 0 {
		l.multipart = append(l.multipart, multipartAt{len(l.objects), partsID, partCount})
	}
	l.objects = append(l.objects, o)
}

// partsIDs are the PartsIDs of the multipart objects of l.
func (l *listed) partsIDs() []int64 {
	ids := make([]int64, len(l.multipart))
	for j, m := range l.multipart {
		ids[j] = m.partsID
	}
	return ids
}

// attachParts gives the multipart objects of l their parts
// (metasql.AttachParts).
func (l *listed) attachParts(parts []metasql.PartOf) error {
	os := make([]metasql.ObjectRow, len(l.multipart))
	for j, m := range l.multipart {
		os[j] = metasql.ObjectRow{Object: meta.Object{Key: l.objects[m.i].Key}, PartsID: m.partsID, PartCount: m.partCount}
	}
	if err := metasql.AttachParts(os, parts); err != nil {
		return err
	}
	for j, m := range l.multipart {
		l.objects[m.i].Parts = os[j].Parts
	}
	return nil
}

var errRawColumn = errors.New("postgres: a listed row's column has an unexpected size")

// decodeObjectRow decodes the raw values v of one row (rawDecodable)
// into o, as metasql.ScanObject (with versions, ScanVersion) does, and
// returns the row's parts_id, part_count and (with versions) seq.
func decodeObjectRow(o *meta.Object, v [][]byte, bucket string, versions bool) (partsID int64, partCount int, seq string, err error) {
	// The row's string columns, in one allocation.
	n := 0
	for _, i := range rowStrings {
		n += len(v[i])
	}
	if versions {
		n += len(v[13]) + len(v[14])
	}
	var b strings.Builder
	b.Grow(n)
	for _, i := range rowStrings {
		b.Write(v[i])
	}
	if versions {
		b.Write(v[13])
		b.Write(v[14])
	}
	all := b.String()
	next := func(i int) string {
		s := all[:len(v[i])]
		all = all[len(v[i]):]
		return s
	}
	o.Bucket = bucket
	o.Key = next(0)
	o.ETag = next(2)
	o.SHA256 = next(3)
	o.ContentType = next(4)
	md := next(5)
	o.BlobKey = next(6)
	o.Checksum.Algorithm = next(8)
	o.Checksum.Type = next(9)
	o.Checksum.Value = next(10)
	if len(v[1]) != 8 || len(v[7]) != 8 || (v[11] != nil && len(v[11]) != 8) || len(v[12]) != 4 {
		return 0, 0, "", errRawColumn
	}
	o.Size = int64(binary.BigEndian.Uint64(v[1]))
	o.ModTime = metasql.FromNanos(int64(binary.BigEndian.Uint64(v[7])))
	if v[11] != nil {
		partsID = int64(binary.BigEndian.Uint64(v[11]))
	}
	partCount = int(int32(binary.BigEndian.Uint32(v[12])))
	if versions {
		o.VersionID = next(13)
		seq = next(14)
		if len(v[15]) != 1 || len(v[16]) != 1 {
			return 0, 0, "", errRawColumn
		}
		o.IsLatest, o.DeleteMarker = v[15][0] != 0, v[16][0] != 0
	} else {
		o.IsLatest = true
	}
	o.Metadata, err = metasql.DecodeMetadata(&md)
	return partsID, partCount, seq, err
}

// rowStrings are the string columns of listCols, in the order
// decodeObjectRow slices them.
var rowStrings = [...]int{0, 2, 3, 4, 5, 6, 8, 9, 10}
