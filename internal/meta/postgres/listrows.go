package postgres

import (
	"encoding/binary"
	"errors"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

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

// queueObjectRows queues query, a range scan of listCols (with
// versions, objectCols) of bucket's rows, in t; once flushed, dst holds
// its rows, appended to (*dst)[:0], as metasql.ScanObject (ScanVersion)
// reads them.
func queueObjectRows(t *txn, dst *[]metasql.ObjectRow, bucket string, versions bool, query string, args ...any) {
	t.batch.Queue(query, args...).Query(func(rows pgx.Rows) error {
		var err error
		*dst, err = appendObjectRows((*dst)[:0], rows, bucket, versions)
		return err
	})
}

// appendObjectRows appends the rows of rows to dst (see queueObjectRows).
func appendObjectRows(dst []metasql.ObjectRow, rows pgx.Rows, bucket string, versions bool) ([]metasql.ObjectRow, error) {
	defer rows.Close()
	if !rawDecodable(rows.FieldDescriptions(), versions) {
		scan := metasql.ScanObject(bucket)
		if versions {
			scan = metasql.ScanVersion(bucket)
		}
		return pgx.AppendRows(dst, rows, rowTo(scan))
	}
	for rows.Next() {
		o, err := decodeObjectRow(rows.RawValues(), bucket, versions)
		if err != nil {
			return dst, err
		}
		dst = append(dst, o)
	}
	return dst, rows.Err()
}

var errRawColumn = errors.New("postgres: a listed row's column has an unexpected size")

// decodeObjectRow decodes the raw values of one row (rawDecodable).
func decodeObjectRow(v [][]byte, bucket string, versions bool) (metasql.ObjectRow, error) {
	var o metasql.ObjectRow
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
		return o, errRawColumn
	}
	o.Size = int64(binary.BigEndian.Uint64(v[1]))
	o.ModTime = metasql.FromNanos(int64(binary.BigEndian.Uint64(v[7])))
	if v[11] != nil {
		o.PartsID = int64(binary.BigEndian.Uint64(v[11]))
	}
	o.PartCount = int(int32(binary.BigEndian.Uint32(v[12])))
	if versions {
		o.VersionID = next(13)
		o.Seq = next(14)
		if len(v[15]) != 1 || len(v[16]) != 1 {
			return o, errRawColumn
		}
		o.IsLatest, o.DeleteMarker = v[15][0] != 0, v[16][0] != 0
	} else {
		o.IsLatest = true
	}
	if v[5] != nil {
		var err error
		if o.Metadata, err = metasql.DecodeMetadata(&md); err != nil {
			return o, err
		}
	}
	return o, nil
}

// rowStrings are the string columns of listCols, in the order
// decodeObjectRow slices them.
var rowStrings = [...]int{0, 2, 3, 4, 5, 6, 8, 9, 10}
