package integrity

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"hash"
	"hash/crc32"
	"hash/crc64"
	"strings"

	"github.com/coffer-storage/coffer/internal/errcode"
)

// crc64NVME is the CRC-64/NVME polynomial S3 uses (reflected form).
var crc64NVME = crc64.MakeTable(0x9a6c9329ac4bc9b5)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ChecksumAlgorithms are the S3 additional checksums, upper case.
var ChecksumAlgorithms = []string{"CRC32", "CRC32C", "CRC64NVME", "SHA1", "SHA256"}

// NewChecksum returns a hash for an S3 checksum algorithm (case
// insensitive), or InvalidArgument.
func NewChecksum(alg string) (hash.Hash, error) {
	switch strings.ToUpper(alg) {
	case "CRC32":
		return crc32.NewIEEE(), nil
	case "CRC32C":
		return crc32.New(castagnoli), nil
	case "CRC64NVME":
		return crc64.New(crc64NVME), nil
	case "SHA1":
		return sha1.New(), nil
	case "SHA256":
		return sha256.New(), nil
	}
	return nil, errcode.New(errcode.InvalidArgument, "unknown checksum algorithm %q", alg)
}

// ChecksumSize returns the digest size of an algorithm, or 0 if unknown.
func ChecksumSize(alg string) int {
	h, err := NewChecksum(alg)
	if err != nil {
		return 0
	}
	return h.Size()
}

// EncodeChecksum is how S3 sends checksums: standard base64.
func EncodeChecksum(sum []byte) string { return base64.StdEncoding.EncodeToString(sum) }
