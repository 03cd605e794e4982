package s3blob

import (
	"testing"

	"github.com/aws/smithy-go"

	"github.com/coffer-storage/coffer/internal/errcode"
)

// TestClassifyStoreFull: an S3 store that says it is full (MinIO's
// XMinioStorageFull, a 507) is errcode.StorageFull, Coffer's own 507 —
// not the 503 Unavailable of a store that is down, as before.
func TestClassifyStoreFull(t *testing.T) {
	for _, code := range []string{"XMinioStorageFull", "XMinioDiskFull"} {
		err := classify(&smithy.GenericAPIError{Code: code, Message: "full"}, "put %q", "k")
		if got := errcode.Of(err); got != errcode.StorageFull {
			t.Errorf("%s: %v (%v), want storage_full", code, got, err)
		}
	}
	// ClientDisconnected (MinIO's 499): the faults harness saw it as a 500
	// after a partition from MinIO healed.
	for _, code := range []string{"SlowDown", "ClientDisconnected"} {
		if got := errcode.Of(classify(&smithy.GenericAPIError{Code: code}, "put")); got != errcode.Unavailable {
			t.Errorf("%s: %v, want unavailable", code, got)
		}
	}
}
