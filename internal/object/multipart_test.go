package object

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"hash/crc32"
	"hash/crc64"
	"testing"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

// TestMultipartChecksumType: CreateUpload takes the checksum types S3
// allows for the algorithm (and refuses others, creating nothing); a
// FULL_OBJECT upload completes with the CRC of the whole object (combined
// from its parts' CRCs: compared here with a CRC over every byte, computed
// with the standard library), which a read returns; a COMPOSITE one with
// the checksum of the parts' checksums.
func TestMultipartChecksumType(t *testing.T) {
	f := newFixture(t, 0)
	ctx := t.Context()
	for _, tc := range []struct{ alg, typ string }{
		{"SHA256", "FULL_OBJECT"}, {"SHA1", "full_object"}, {"CRC64NVME", "COMPOSITE"}, {"CRC32", "garbage"}, {"", "COMPOSITE"},
	} {
		_, err := f.svc.CreateUpload(ctx, f.alice, CreateUploadInput{Bucket: "alice-bucket", Key: "k", ChecksumAlgorithm: tc.alg, ChecksumType: tc.typ})
		if e := errcode.As(err); e == nil || e.Code != errcode.InvalidArgument || e.Detail["reason"] != "invalid_checksum_type" {
			t.Errorf("%s %s: %v, want invalid_checksum_type", tc.alg, tc.typ, err)
		}
	}
	if us, _, err := f.svc.ListUploads(ctx, f.alice, "alice-bucket", meta.ListUploadsOptions{Limit: 10}); err != nil || len(us) != 0 {
		t.Fatalf("refused uploads were created: %v, %v", us, err)
	}

	sizes := []int{MinPartSize + 7, MinPartSize, 1234}
	var data []byte
	for i, n := range sizes {
		data = append(data, bytes.Repeat([]byte{byte('a' + i), byte(i)}, n/2+1)[:n]...)
	}
	crc := func(alg string, b []byte) []byte {
		switch alg {
		case "CRC32":
			return binary.BigEndian.AppendUint32(nil, crc32.ChecksumIEEE(b))
		case "CRC32C":
			return binary.BigEndian.AppendUint32(nil, crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)))
		}
		return binary.BigEndian.AppendUint64(nil, crc64.Checksum(b, crc64.MakeTable(0x9a6c9329ac4bc9b5)))
	}
	for _, tc := range []struct{ alg, typ, wantType string }{
		{"CRC32", "FULL_OBJECT", "FULL_OBJECT"},
		{"CRC32C", "full_object", "FULL_OBJECT"},
		{"CRC64NVME", "FULL_OBJECT", "FULL_OBJECT"},
		{"CRC64NVME", "", "FULL_OBJECT"}, // its only type, the default
		{"CRC32", "", "COMPOSITE"},
		{"CRC32C", "COMPOSITE", "COMPOSITE"},
	} {
		t.Run(tc.alg+" "+tc.typ, func(t *testing.T) {
			key := "mp-" + tc.alg + "-" + tc.typ
			u, err := f.svc.CreateUpload(ctx, f.alice, CreateUploadInput{Bucket: "alice-bucket", Key: key, ChecksumAlgorithm: tc.alg, ChecksumType: tc.typ})
			if err != nil {
				t.Fatal(err)
			}
			var parts []meta.CompletePart
			var partSums []byte
			off := 0
			for i, n := range sizes {
				b := data[off : off+n]
				off += n
				p, err := f.svc.PutPart(ctx, f.alice, PartInput{Bucket: "alice-bucket", Key: key, UploadID: u.ID, Number: i + 1,
					Body: bytes.NewReader(b), Size: int64(n)})
				if err != nil {
					t.Fatal(err)
				}
				parts = append(parts, meta.CompletePart{Number: i + 1, ETag: p.ETag})
				partSums = append(partSums, crc(tc.alg, b)...)
			}
			o, err := f.svc.CompleteUpload(ctx, f.alice, "alice-bucket", key, u.ID, parts, meta.Cond{})
			if err != nil {
				t.Fatal(err)
			}
			want := meta.Checksum{Algorithm: tc.alg, Type: tc.wantType, Value: base64.StdEncoding.EncodeToString(crc(tc.alg, data))}
			if tc.wantType == "COMPOSITE" {
				want.Value = base64.StdEncoding.EncodeToString(crc(tc.alg, partSums)) + "-3"
			}
			if o.Checksum != want {
				t.Errorf("completed with %+v, want %+v", o.Checksum, want)
			}
			r, err := f.svc.Get(ctx, f.alice, "alice-bucket", key)
			if err != nil || r.Object.Checksum != want {
				t.Errorf("read back %+v, %v; want %+v", r.Object.Checksum, err, want)
			}
		})
	}
}
