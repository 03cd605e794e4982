package integrity

import (
	"strings"
	"testing"

	"github.com/coffer-storage/coffer/internal/errcode"
)

// TestAlgorithmTable: each algorithm's name, header and size as S3 defines
// them, and its hash of that size.
func TestAlgorithmTable(t *testing.T) {
	for _, tc := range []struct {
		a            Algorithm
		name, header string
		size         int
	}{
		{NoChecksum, "", "", 0},
		{CRC32, "CRC32", "x-amz-checksum-crc32", 4},
		{CRC32C, "CRC32C", "x-amz-checksum-crc32c", 4},
		{CRC64NVME, "CRC64NVME", "x-amz-checksum-crc64nvme", 8},
		{SHA1, "SHA1", "x-amz-checksum-sha1", 20},
		{SHA256, "SHA256", "x-amz-checksum-sha256", 32},
		{Algorithm(200), "", "", 0},
	} {
		if got, want := tc.a.String(), tc.name; got != want {
			t.Errorf("%d: String %q, want %q", tc.a, got, want)
		}
		if got, want := tc.a.Header(), tc.header; got != want {
			t.Errorf("%d: Header %q, want %q", tc.a, got, want)
		}
		if got, want := tc.a.Size(), tc.size; got != want {
			t.Errorf("%d: Size %d, want %d", tc.a, got, want)
		}
		if h := tc.a.New(); (h == nil) != (tc.size == 0) || h != nil && h.Size() != tc.size {
			t.Errorf("%d: New %v", tc.a, h)
		}
	}
}

func TestParseAlgorithm(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Algorithm
		ok   bool
	}{
		{"", NoChecksum, true},
		{"CRC32", CRC32, true},
		{"crc32c", CRC32C, true},
		{"Crc64Nvme", CRC64NVME, true},
		{"sha1", SHA1, true},
		{"SHA256", SHA256, true},
		{"MD5", NoChecksum, false},
		{"CRC64", NoChecksum, false},
		{"SHA256 ", NoChecksum, false},
		{"x-amz-checksum-crc32", NoChecksum, false},
	} {
		got, err := ParseAlgorithm(tc.in)
		if got != tc.want || (err == nil) != tc.ok {
			t.Errorf("ParseAlgorithm(%q) = %v, %v; want %v, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
		if err != nil && !errcode.Is(err, errcode.InvalidArgument) {
			t.Errorf("ParseAlgorithm(%q): %v, want InvalidArgument", tc.in, err)
		}
	}
	for _, tc := range []struct {
		in   string
		want Algorithm
		ok   bool
	}{
		{"x-amz-checksum-crc32", CRC32, true},
		{"X-Amz-Checksum-CRC64NVME", CRC64NVME, true},
		{"x-amz-checksum-sha256", SHA256, true},
		{"x-amz-checksum-", NoChecksum, false},
		{"x-amz-checksum-md5", NoChecksum, false},
		{"crc32", NoChecksum, false},
		{"x-amz-checksum-algorithm", NoChecksum, false},
		{"x-amz-checksum-type", NoChecksum, false},
		{"", NoChecksum, false},
	} {
		if got, ok := AlgorithmOfHeader(tc.in); got != tc.want || ok != tc.ok {
			t.Errorf("AlgorithmOfHeader(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestAlgorithmDecode(t *testing.T) {
	for _, tc := range []struct {
		a    Algorithm
		in   string
		want bool
	}{
		{CRC32, "DUoRhQ==", true},
		{CRC32, " DUoRhQ== ", true},
		{CRC32, "DUoRhQ", false},          // unpadded
		{CRC32, "jSnVw/bqjr4=", false},    // 8 bytes
		{CRC64NVME, "jSnVw/bqjr4=", true}, //
		{SHA1, "DUoRhQ==", false},         // 4 bytes
		{CRC32C, "!!!!", false},           // not base64
		{NoChecksum, "", false},           // nothing to decode
		{NoChecksum, "DUoRhQ==", false},   // no size
		{SHA256, strings.Repeat("A", 43) + "=", true},
		{SHA256, strings.Repeat("A", 44), false}, // 33 bytes
	} {
		b, ok := tc.a.Decode(tc.in)
		if ok != tc.want || ok && (len(b) != tc.a.Size() || tc.a.Encode(b) != strings.TrimSpace(tc.in)) {
			t.Errorf("%v.Decode(%q) = %x, %v; want ok %v", tc.a, tc.in, b, ok, tc.want)
		}
	}
}

// FuzzParseAlgorithm: a name or header is accepted only if it names one
// algorithm, whose canonical name and header parse back to it.
func FuzzParseAlgorithm(f *testing.F) {
	for _, s := range []string{"", "crc32", "CRC64NVME", "sha256", "md5", "x-amz-checksum-crc32c", "X-AMZ-CHECKSUM-SHA1", "ſha1", "x-amz-checksum-"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := ParseAlgorithm(s)
		switch {
		case err != nil:
			if a != NoChecksum || !errcode.Is(err, errcode.InvalidArgument) || len(errcode.Message(err)) > 400 {
				t.Fatalf("ParseAlgorithm(%q) = %v, %v", s, a, err)
			}
		case s == "":
			if a != NoChecksum {
				t.Fatalf("ParseAlgorithm(\"\") = %v", a)
			}
		default:
			if !strings.EqualFold(a.String(), s) || a.Size() == 0 {
				t.Fatalf("ParseAlgorithm(%q) = %v", s, a)
			}
			if b, err := ParseAlgorithm(a.String()); b != a || err != nil {
				t.Fatalf("canonical name %q parses to %v, %v", a.String(), b, err)
			}
		}
		h, ok := AlgorithmOfHeader(s)
		if ok != (h != NoChecksum) || ok && (!strings.EqualFold(h.Header(), s) || h.Size() == 0) {
			t.Fatalf("AlgorithmOfHeader(%q) = %v, %v", s, h, ok)
		}
		if ok {
			if b, ok := AlgorithmOfHeader(h.Header()); b != h || !ok {
				t.Fatalf("canonical header %q parses to %v, %v", h.Header(), b, ok)
			}
		}
	})
}
