package sigv4

import (
	"strings"

	"github.com/coffer-storage/coffer/internal/integrity"
)

// parseTrailerHeader validates an x-amz-trailer value: one S3 checksum
// header name (integrity.AlgorithmOfHeader), or empty (NoChecksum).
func parseTrailerHeader(v string) (integrity.Algorithm, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return integrity.NoChecksum, nil
	}
	if strings.Contains(v, ",") {
		return 0, newError(ErrInvalidArgument, "x-amz-trailer must name exactly one trailing checksum, got %q.", clip(v))
	}
	alg, ok := integrity.AlgorithmOfHeader(v)
	if !ok {
		return 0, newError(ErrInvalidArgument, "x-amz-trailer %q is not a supported checksum (x-amz-checksum-crc32, -crc32c, -crc64nvme, -sha1, -sha256).", clip(v))
	}
	return alg, nil
}
