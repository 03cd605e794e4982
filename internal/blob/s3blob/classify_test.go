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
	if got := errcode.Of(classify(&smithy.GenericAPIError{Code: "SlowDown"}, "put")); got != errcode.Unavailable {
		t.Errorf("SlowDown: %v, want unavailable", got)
	}
}
