package s3api

import (
	"strings"
	"testing"

	"github.com/coffer-storage/coffer/internal/s3api/s3err"
)

// Details of the core operations where Coffer answered otherwise than S3
// (found by versitygw's suite, issue 20), each checked against AWS's
// documentation.

// TestMetadataTooLarge: user metadata over S3's 2 KiB is MetadataTooLarge
// ("Your metadata headers exceed the maximum allowed metadata size", 400,
// AWS's error code list), not EntityTooLarge, which is about the body;
// nothing is written.
func TestMetadataTooLarge(t *testing.T) {
	big := strings.Repeat("v", 2048)
	for _, tc := range []struct {
		name, method, target string
		hdr                  []string
	}{
		{"PutObject", "PUT", "/b/k", []string{"X-Amz-Meta-Big", big}},
		{"CreateMultipartUpload", "POST", "/b/k?uploads", []string{"X-Amz-Meta-Big", big}},
		{"CopyObject replacing metadata", "PUT", "/b/copy", []string{"X-Amz-Copy-Source", "/b/k", "X-Amz-Metadata-Directive", "REPLACE", "X-Amz-Meta-Big", big}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newS3Env(t)
			e.store.add("b", "k", testData)
			var body []byte
			if tc.name == "PutObject" {
				body = []byte("x")
			}
			e.alice(tc.method, tc.target, body, tc.hdr...).want(t, 400, s3err.MetadataTooLarge)
			e.noWrites(t)
		})
	}
	t.Run("2 KiB in all is fine", func(t *testing.T) {
		e := newS3Env(t)
		e.alice("PUT", "/b/k", []byte("x"), "X-Amz-Meta-Ab", strings.Repeat("v", 2046)).want(t, 200, "")
	})
}
