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

// Algorithm is one of S3's additional checksums (x-amz-checksum-*): its
// name, header, digest size, hash and wire encoding in one place, for every
// layer that names one (this package's Reader, the aws-chunked trailers of
// sigv4, the object service, the S3 API). Names are parsed once, at the
// edge, by ParseAlgorithm or AlgorithmOfHeader; String is the canonical
// (upper-case) name stored with objects and uploads. The zero value is no
// checksum. Modelled on MinIO's internal/hash.ChecksumType.
type Algorithm uint8

// The algorithms, in S3's order.
const (
	NoChecksum Algorithm = iota
	CRC32
	CRC32C
	CRC64NVME
	SHA1
	SHA256
)

// Algorithms lists every algorithm but NoChecksum, in S3's order.
var Algorithms = [...]Algorithm{CRC32, CRC32C, CRC64NVME, SHA1, SHA256}

// crc64NVME is CRC-64/NVME, S3's CRC64NVME: the reflected form of
// polynomial 0xad93d23594c93659 (check value of "123456789":
// 0xae8b14860a799888).
var crc64NVME = crc64.MakeTable(0x9a6c9329ac4bc9b5)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// algorithmInfo is one row of the table.
type algorithmInfo struct {
	name   string // S3's name, e.g. "CRC32"
	header string // its header, e.g. "x-amz-checksum-crc32"
	size   int    // digest size in bytes
	new    func() hash.Hash
}

var algorithms = [...]algorithmInfo{
	NoChecksum: {},
	CRC32:      {"CRC32", "x-amz-checksum-crc32", crc32.Size, func() hash.Hash { return crc32.NewIEEE() }},
	CRC32C:     {"CRC32C", "x-amz-checksum-crc32c", crc32.Size, func() hash.Hash { return crc32.New(castagnoli) }},
	CRC64NVME:  {"CRC64NVME", "x-amz-checksum-crc64nvme", crc64.Size, func() hash.Hash { return crc64.New(crc64NVME) }},
	SHA1:       {"SHA1", "x-amz-checksum-sha1", sha1.Size, sha1.New},
	SHA256:     {"SHA256", "x-amz-checksum-sha256", sha256.Size, sha256.New},
}

// ParseAlgorithm returns the algorithm S3 names name (case-insensitive):
// NoChecksum for "", InvalidArgument for a name S3 does not define.
func ParseAlgorithm(name string) (Algorithm, error) {
	if name == "" {
		return NoChecksum, nil
	}
	for _, a := range Algorithms {
		if strings.EqualFold(name, algorithms[a].name) {
			return a, nil
		}
	}
	return NoChecksum, errcode.New(errcode.InvalidArgument, "unknown checksum algorithm %q", clip(name))
}

// AlgorithmOfHeader returns the algorithm whose header is name
// (x-amz-checksum-crc32 ..., case-insensitive), or false.
func AlgorithmOfHeader(name string) (Algorithm, bool) {
	for _, a := range Algorithms {
		if strings.EqualFold(name, algorithms[a].header) {
			return a, true
		}
	}
	return NoChecksum, false
}

// String is S3's name of a, e.g. "CRC32"; "" for NoChecksum.
func (a Algorithm) String() string { return a.row().name }

// Header is a's request and response header, e.g. "x-amz-checksum-crc32"
// (also its aws-chunked trailer); "" for NoChecksum.
func (a Algorithm) Header() string { return a.row().header }

// Size is the size in bytes of a's digest; 0 for NoChecksum.
func (a Algorithm) Size() int { return a.row().size }

// New returns a new hash computing a; nil for NoChecksum.
func (a Algorithm) New() hash.Hash {
	if f := a.row().new; f != nil {
		return f()
	}
	return nil
}

// Encode is a digest as S3 sends it: standard base64.
func (a Algorithm) Encode(sum []byte) string { return base64.StdEncoding.EncodeToString(sum) }

// Decode reads a digest as S3 sends it (standard base64, surrounding spaces
// ignored); false unless it is exactly a's size.
func (a Algorithm) Decode(v string) ([]byte, bool) {
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(v))
	if err != nil || len(b) != a.Size() || a.Size() == 0 {
		return nil, false
	}
	return b, true
}

func (a Algorithm) row() *algorithmInfo {
	if int(a) >= len(algorithms) {
		return &algorithms[NoChecksum]
	}
	return &algorithms[a]
}

// clip shortens client input quoted back in an error message.
func clip(s string) string {
	const max = 64
	if len(s) > max {
		return s[:max] + "..."
	}
	return s
}
