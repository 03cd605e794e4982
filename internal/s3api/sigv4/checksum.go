package sigv4

import (
	"crypto/sha1"
	"crypto/sha256"
	"hash"
	"hash/crc32"
	"hash/crc64"
	"strings"
)

// crc64NVMETable is CRC-64/NVME, the CRC64NVME of S3: the reflected form of
// polynomial 0xad93d23594c93659 (check value of "123456789":
// 0xae8b14860a799888).
var crc64NVMETable = crc64.MakeTable(0x9a6c9329ac4bc9b5)

var castagnoliTable = crc32.MakeTable(crc32.Castagnoli)

// checksumAlg is one of the S3 additional checksums a trailer may carry.
type checksumAlg struct {
	name   string // S3 algorithm name, e.g. "CRC32"
	header string // trailer header, e.g. "x-amz-checksum-crc32"
	size   int    // digest size in bytes
	new    func() hash.Hash
}

var checksumAlgs = [...]checksumAlg{
	{"CRC32", "x-amz-checksum-crc32", 4, func() hash.Hash { return crc32.NewIEEE() }},
	{"CRC32C", "x-amz-checksum-crc32c", 4, func() hash.Hash { return crc32.New(castagnoliTable) }},
	{"CRC64NVME", "x-amz-checksum-crc64nvme", 8, func() hash.Hash { return crc64.New(crc64NVMETable) }},
	{"SHA1", "x-amz-checksum-sha1", 20, sha1.New},
	{"SHA256", "x-amz-checksum-sha256", 32, sha256.New},
}

// checksumByHeader returns the algorithm of a trailer header name (case
// insensitive).
func checksumByHeader(name string) (*checksumAlg, bool) {
	for i := range checksumAlgs {
		if strings.EqualFold(checksumAlgs[i].header, name) {
			return &checksumAlgs[i], true
		}
	}
	return nil, false
}

// parseTrailerHeader validates an x-amz-trailer value: one S3 checksum
// header name, or empty.
func parseTrailerHeader(v string) (*checksumAlg, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return nil, nil
	}
	if strings.Contains(v, ",") {
		return nil, newError(ErrInvalidArgument, "x-amz-trailer must name exactly one trailing checksum, got %q.", clip(v))
	}
	alg, ok := checksumByHeader(v)
	if !ok {
		return nil, newError(ErrInvalidArgument, "x-amz-trailer %q is not a supported checksum (x-amz-checksum-crc32, -crc32c, -crc64nvme, -sha1, -sha256).", clip(v))
	}
	return alg, nil
}
