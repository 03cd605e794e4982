package s3api

import (
	"encoding/xml"
	"fmt"
	"net/http"
	"testing"

	"github.com/coffer-storage/coffer/internal/errcode"
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
		// A type alone asserts the upload's (the object service compares).
		{[]string{"X-Amz-Checksum-Type", "full_object"}, "{Checksum:{Algorithm: Type:FULL_OBJECT Value:} Size:-1}"},
		// Malformed values: InvalidRequest in S3's words.
		{[]string{"X-Amz-Checksum-Crc32", "AAAAAA==-0"}, "InvalidRequest: Value for x-amz-checksum-crc32 header is invalid."},
		{[]string{"X-Amz-Checksum-Crc32", "bad"}, "InvalidRequest: Value for x-amz-checksum-crc32 header is invalid."},
		{[]string{"X-Amz-Checksum-Crc32", "AAAAAA==", "X-Amz-Checksum-Crc32c", "AAAAAA=="},
			"InvalidRequest: Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed."},
		{[]string{"X-Amz-Checksum-Type", "HALF"}, "InvalidRequest: Value for x-amz-checksum-type header is invalid."},
		{[]string{"X-Amz-Mp-Object-Size", "-1"}, "InvalidRequest: Value for x-amz-mp-object-size header is less than zero: '-1'"},
		{[]string{"X-Amz-Mp-Object-Size", "x"}, "InvalidRequest: Value for x-amz-mp-object-size header is invalid: 'x'"},
	} {
		h := http.Header{}
		for i := 0; i+1 < len(tc.hdr); i += 2 {
			h.Set(tc.hdr[i], tc.hdr[i+1])
		}
		e, err := completionExpect(h)
		got := fmt.Sprintf("%+v", e)
		if err != nil {
			r := s3err.Translate(err)
			got = r.Code + ": " + r.Message
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
	e.store.Parts["up1"] = []meta.Part{{UploadID: "up1", Number: 1, ETag: "e", Size: 1}}
	complete := []byte(`<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>"e"</ETag></Part></CompleteMultipartUpload>`)
	e.alice("POST", "/b/k?uploadId=up1", complete, "X-Amz-Checksum-Crc32", "AAAAAA==").want(t, 400, s3err.InvalidRequest)
	e.noWrites(t)
}

// TestCompletedParts: CompleteMultipartUpload's parts list, read as S3
// reads it: at least one part, each with a PartNumber >= 1 and an ETag,
// and at most one well-formed part checksum, which reaches the object
// service with its algorithm.
func TestCompletedParts(t *testing.T) {
	part := func(inner string) string { return "<Part>" + inner + "</Part>" }
	const pe = `<PartNumber>1</PartNumber><ETag>"e"</ETag>`
	for _, tc := range []struct {
		body, want string // want: "%+v" of the parts, or the S3 error
	}{
		{part(pe), `[{Number:1 ETag:"e" Checksum:{Algorithm: Type: Value:}}]`},
		{part(pe + "<ChecksumSHA1>Kq5sNclPz7QV2+lfQIuc6R7oRu0=</ChecksumSHA1>"),
			`[{Number:1 ETag:"e" Checksum:{Algorithm:SHA1 Type: Value:Kq5sNclPz7QV2+lfQIuc6R7oRu0=}}]`},
		{"", "MalformedXML"},
		{part(`<PartNumber>1</PartNumber>`), "MalformedXML"},
		{part(`<ETag>"e"</ETag>`), "MalformedXML"},
		{part(`<PartNumber>-4</PartNumber><ETag>"e"</ETag>`), "InvalidArgument: PartNumber must be >= 1"},
		{part(pe + "<ChecksumCRC32>invalid_checksum</ChecksumCRC32>"), "InvalidArgument: Invalid Base64 or multiple checksums present in request"},
		{part(pe + "<ChecksumCRC32>AAAAAA==</ChecksumCRC32><ChecksumSHA1>Kq5sNclPz7QV2+lfQIuc6R7oRu0=</ChecksumSHA1>"),
			"InvalidArgument: Invalid Base64 or multiple checksums present in request"},
	} {
		var req completeMultipartUpload
		if err := xml.Unmarshal([]byte("<CompleteMultipartUpload>"+tc.body+"</CompleteMultipartUpload>"), &req); err != nil {
			t.Fatal(err)
		}
		parts, err := completedParts(req)
		got := fmt.Sprintf("%+v", parts)
		if err != nil {
			r := s3err.Translate(err)
			got = r.Code
			if r.Code != s3err.MalformedXML {
				got += ": " + r.Message
			}
		}
		if got != tc.want {
			t.Errorf("%s: %s, want %s", tc.body, got, tc.want)
		}
	}
}

// TestCompletionPartErrors: the part faults of a completion answer S3's
// own texts (clients and test suites compare them), whatever the object
// service's message names.
func TestCompletionPartErrors(t *testing.T) {
	for reason, want := range map[string]string{
		"invalid_part":       "One or more of the specified parts could not be found.  The part may not have been uploaded, or the specified entity tag may not match the part's entity tag.",
		"invalid_part_order": "The list of parts was not in ascending order. Parts must be ordered by part number.",
		"entity_too_small":   "Your proposed upload is smaller than the minimum allowed size",
	} {
		err := &errcode.Error{Code: errcode.InvalidArgument, Message: "part 2 is wrong", Detail: map[string]any{"reason": reason}}
		if got := s3err.Translate(err).Message; got != want {
			t.Errorf("%s: %q, want %q", reason, got, want)
		}
	}
}
