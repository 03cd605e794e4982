package s3api

import (
	"testing"

	"github.com/coffer-storage/coffer/internal/s3api/s3err"
)

// TestAnonymousPayload: an anonymous request's x-amz-content-sha256 is
// never taken unchecked: a signed streaming body needs a signature, a hex
// SHA-256 is verified, anything else cannot match; none of them writes.
func TestAnonymousPayload(t *testing.T) {
	body := []byte("public bytes")
	for _, tc := range []struct {
		name, hash string
		status     int
		code       string
	}{
		{"signed streaming", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD", 400, s3err.InvalidRequest},
		{"signed streaming trailer", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER", 400, s3err.InvalidRequest},
		{"unsigned trailer", "STREAMING-UNSIGNED-PAYLOAD-TRAILER", 501, s3err.NotImplemented},
		{"not a SHA-256", "incorrect_hash", 400, s3err.XAmzContentSHA256Mismatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newS3Env(t)
			e.do(req{method: "PUT", target: "/b/anon", body: body, hdr: []string{"X-Amz-Content-Sha256", tc.hash}}).want(t, tc.status, tc.code)
			e.noWrites(t)
		})
	}
}
