package integrity

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/coffer-storage/coffer/internal/errcode"
)

// ChecksumType is how the checksum of a multipart object is made from its
// parts' (S3's x-amz-checksum-type): a checksum of the parts' checksums
// (Composite, "VALUE-N"), or the checksum of the whole object's bytes
// (FullObject), which for the CRCs is combined from the parts' CRCs
// without reading the bytes again (Combine). The zero value is none.
type ChecksumType uint8

// The checksum types.
const (
	NoType ChecksumType = iota
	Composite
	FullObject
)

// String is S3's name of t: "COMPOSITE", "FULL_OBJECT"; "" for NoType.
func (t ChecksumType) String() string {
	switch t {
	case Composite:
		return "COMPOSITE"
	case FullObject:
		return "FULL_OBJECT"
	}
	return ""
}

// ParseChecksumType returns the checksum type that typ (case-insensitive;
// "" for the algorithm's default) names for a multipart upload with
// algorithm a, with the combinations S3 allows: FULL_OBJECT only for
// CRC32, CRC32C and CRC64NVME, COMPOSITE for every algorithm but
// CRC64NVME. Without typ, CRC64NVME is FULL_OBJECT and the others
// COMPOSITE; without an algorithm there is no type (NoType), and a typ is
// refused. Refusals are InvalidArgument with the reason
// "invalid_checksum_type" (S3's InvalidRequest).
func ParseChecksumType(typ string, a Algorithm) (ChecksumType, error) {
	if a == NoChecksum {
		if typ != "" {
			return NoType, typeError("the x-amz-checksum-type header can only be used with the x-amz-checksum-algorithm header")
		}
		return NoType, nil
	}
	var t ChecksumType
	switch {
	case typ == "" && a == CRC64NVME:
		return FullObject, nil
	case typ == "":
		return Composite, nil
	case strings.EqualFold(typ, "COMPOSITE"):
		t = Composite
	case strings.EqualFold(typ, "FULL_OBJECT"):
		t = FullObject
	default:
		return NoType, typeError("value for x-amz-checksum-type header is invalid: %q is not COMPOSITE or FULL_OBJECT", clip(typ))
	}
	if t == FullObject && !a.Combinable() || t == Composite && a == CRC64NVME {
		return NoType, typeError("the %s checksum type cannot be used with the %s checksum algorithm", t, a)
	}
	return t, nil
}

func typeError(format string, args ...any) error {
	return &errcode.Error{Code: errcode.InvalidArgument, Message: fmt.Sprintf(format, args...),
		Detail: map[string]any{"reason": "invalid_checksum_type"}}
}

// Combinable reports whether a's checksum of two concatenated byte strings
// can be computed from theirs (Combine): the CRCs.
func (a Algorithm) Combinable() bool { return a.poly() != 0 }

// poly is a's CRC polynomial in reflected form (0: not a CRC).
func (a Algorithm) poly() uint64 {
	switch a {
	case CRC32:
		return 0xedb88320
	case CRC32C:
		return 0x82f63b78
	case CRC64NVME:
		return 0x9a6c9329ac4bc9b5
	}
	return 0
}

// Combine returns a's checksum of A followed by B from sumA (A's checksum),
// sumB (B's) and lenB (B's length in bytes), as zlib's crc32_combine does:
// sumA is carried through lenB zero bytes by squaring the matrix of the
// CRC's one-bit step over GF(2) (O(log lenB) matrix products, not lenB
// steps), then xored with sumB (the CRCs' initial value and final xor
// cancel out). Digests are big-endian, as S3 encodes them. false if a is
// not a CRC or a digest is not a's size.
func (a Algorithm) Combine(sumA, sumB []byte, lenB int64) ([]byte, bool) {
	poly := a.poly()
	if poly == 0 || len(sumA) != a.Size() || len(sumB) != a.Size() || lenB < 0 {
		return nil, false
	}
	width := a.Size() * 8
	crcA, crcB := readCRC(sumA), readCRC(sumB)
	if lenB > 0 {
		crcA = shiftZeros(crcA, poly, width, lenB)
	}
	out := make([]byte, a.Size())
	writeCRC(out, crcA^crcB)
	return out, true
}

// shiftZeros is the CRC register crc after n more zero bytes (without
// the final xor).
func shiftZeros(crc, poly uint64, width int, n int64) uint64 {
	// odd is the operator of one zero bit: shift right, xor poly if the
	// bit shifted out was 1.
	var odd, even [64]uint64
	odd[0] = poly
	for i, row := 1, uint64(1); i < width; i, row = i+1, row<<1 {
		odd[i] = row
	}
	square(even[:width], odd[:width]) // two zero bits
	square(odd[:width], even[:width]) // four
	for {
		square(even[:width], odd[:width]) // one zero byte, then 4, 16, ...
		if n&1 != 0 {
			crc = times(even[:width], crc)
		}
		if n >>= 1; n == 0 {
			break
		}
		square(odd[:width], even[:width]) // 2, 8, 32, ... zero bytes
		if n&1 != 0 {
			crc = times(odd[:width], crc)
		}
		if n >>= 1; n == 0 {
			break
		}
	}
	return crc
}

// times is the matrix mat times the vector vec over GF(2).
func times(mat []uint64, vec uint64) uint64 {
	var sum uint64
	for i := 0; vec != 0; i, vec = i+1, vec>>1 {
		if vec&1 != 0 {
			sum ^= mat[i]
		}
	}
	return sum
}

// square sets sq to mat × mat.
func square(sq, mat []uint64) {
	for i := range mat {
		sq[i] = times(mat, mat[i])
	}
}

func readCRC(b []byte) uint64 {
	if len(b) == 4 {
		return uint64(binary.BigEndian.Uint32(b))
	}
	return binary.BigEndian.Uint64(b)
}

func writeCRC(b []byte, v uint64) {
	if len(b) == 4 {
		binary.BigEndian.PutUint32(b, uint32(v))
		return
	}
	binary.BigEndian.PutUint64(b, v)
}
