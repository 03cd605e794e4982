package s3api

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/s3api/s3err"
)

// TestCompletionExpect: CompleteMultipartUpload's whole-object checksum
// and size headers, as the object service is asked to check them.
func TestCompletionExpect(t *testing.T) {
	for _, tc := range []struct {
		hdr  []string
		want string // "%+v" of the Expect, or the S3 error code
	}{
		{nil, "{Checksum:{Algorithm: Type: Value:} Size:-1}"},
		{[]string{"X-Amz-Checksum-Crc32", "AAAAAA=="}, "{Checksum:{Algorithm:CRC32 Type: Value:AAAAAA==} Size:-1}"},
		{[]string{"X-Amz-Checksum-Sha256", "uWBwpe1dxI4Vw8Gf0X9ynOdw/SS6VBzfWm9giiv1sf4=-3", "X-Amz-Checksum-Type", "composite"},
			"{Checksum:{Algorithm:SHA256 Type:COMPOSITE Value:uWBwpe1dxI4Vw8Gf0X9ynOdw/SS6VBzfWm9giiv1sf4=-3} Size:-1}"},
		{[]string{"X-Amz-Mp-Object-Size", "42"}, "{Checksum:{Algorithm: Type: Value:} Size:42}"},
		{[]string{"X-Amz-Checksum-Crc32", "AAAAAA==-0"}, s3err.InvalidDigest},
		{[]string{"X-Amz-Checksum-Crc32", "bad"}, s3err.InvalidDigest},
		{[]string{"X-Amz-Checksum-Crc32", "AAAAAA==", "X-Amz-Checksum-Crc32c", "AAAAAA=="}, s3err.InvalidRequest},
		{[]string{"X-Amz-Checksum-Type", "FULL_OBJECT"}, s3err.InvalidRequest},
		{[]string{"X-Amz-Checksum-Crc32", "AAAAAA==", "X-Amz-Checksum-Type", "HALF"}, s3err.InvalidRequest},
		{[]string{"X-Amz-Mp-Object-Size", "-1"}, s3err.InvalidArgument},
	} {
		h := http.Header{}
		for i := 0; i+1 < len(tc.hdr); i += 2 {
			h.Set(tc.hdr[i], tc.hdr[i+1])
		}
		e, err := completionExpect(h)
		got := fmt.Sprintf("%+v", e)
		if err != nil {
			got = s3err.Translate(err).Code
		}
		if got != tc.want {
			t.Errorf("%v: %s, want %s", tc.hdr, got, tc.want)
		}
	}
}

// TestCompleteChecksumIsTheObjects: CompleteMultipartUpload's
// x-amz-checksum-* is the object's, not its XML body's: it reaches the
// object service's check (an upload without a checksum algorithm cannot
// make one: InvalidRequest), never the body's verification (BadDigest).
func TestCompleteChecksumIsTheObjects(t *testing.T) {
	e := newS3Env(t)
	e.store.Uploads["up1"] = meta.Upload{ID: "up1", Bucket: "b", Key: "k", InitiatorID: alice}
	complete := []byte(`<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>"e"</ETag></Part></CompleteMultipartUpload>`)
	e.alice("POST", "/b/k?uploadId=up1", complete, "X-Amz-Checksum-Crc32", "AAAAAA==").want(t, 400, s3err.InvalidRequest)
	e.noWrites(t)
}
