package integrity

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/coffer-storage/coffer/internal/errcode"
)

// TestParseChecksumType: the types S3 allows for each algorithm, its
// defaults, and refusals with the reason the S3 API answers
// InvalidRequest for.
func TestParseChecksumType(t *testing.T) {
	for _, tc := range []struct {
		typ  string
		a    Algorithm
		want ChecksumType
		ok   bool
	}{
		{"", NoChecksum, NoType, true},
		{"", CRC32, Composite, true},
		{"", CRC32C, Composite, true},
		{"", SHA1, Composite, true},
		{"", SHA256, Composite, true},
		{"", CRC64NVME, FullObject, true},
		{"COMPOSITE", CRC32, Composite, true},
		{"composite", SHA256, Composite, true},
		{"FULL_OBJECT", CRC32, FullObject, true},
		{"full_object", CRC32C, FullObject, true},
		{"FULL_OBJECT", CRC64NVME, FullObject, true},
		// Refused.
		{"COMPOSITE", CRC64NVME, NoType, false},
		{"FULL_OBJECT", SHA1, NoType, false},
		{"FULL_OBJECT", SHA256, NoType, false},
		{"garbage", CRC32, NoType, false},
		{"FULL_OBJECT ", CRC32, NoType, false},
		{"COMPOSITE", NoChecksum, NoType, false},
		{"FULL_OBJECT", NoChecksum, NoType, false},
	} {
		got, err := ParseChecksumType(tc.typ, tc.a)
		if got != tc.want || (err == nil) != tc.ok {
			t.Errorf("ParseChecksumType(%q, %v) = %v, %v; want %v, ok %v", tc.typ, tc.a, got, err, tc.want, tc.ok)
		}
		if err != nil {
			if e := errcode.As(err); e == nil || e.Code != errcode.InvalidArgument || e.Detail["reason"] != "invalid_checksum_type" {
				t.Errorf("ParseChecksumType(%q, %v): %#v, want InvalidArgument with reason invalid_checksum_type", tc.typ, tc.a, err)
			}
		}
	}
}

// TestCombine: the CRC of a concatenation combined from the pieces' CRCs
// equals the CRC over the whole, for every split (empty pieces, lengths
// across byte, word and power-of-two boundaries) and each CRC.
func TestCombine(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	data := make([]byte, 70_000)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	sum := func(a Algorithm, b []byte) []byte { h := a.New(); h.Write(b); return h.Sum(nil) }
	for _, a := range []Algorithm{CRC32, CRC32C, CRC64NVME} {
		for _, n := range []int{0, 1, 2, 3, 7, 8, 9, 255, 256, 1023, 4096, 65_535, 65_536, 69_999, 70_000} {
			for _, split := range []int{0, 1, n / 3, n / 2, n - 1, n} {
				if split < 0 || split > n {
					continue
				}
				got, ok := a.Combine(sum(a, data[:split]), sum(a, data[split:n]), int64(n-split))
				if want := sum(a, data[:n]); !ok || !bytes.Equal(got, want) {
					t.Fatalf("%v: Combine of %d+%d bytes = %x, %v; want %x", a, split, n-split, got, ok, want)
				}
			}
		}
		// Many parts, as a multipart upload has, folded left to right.
		acc, off := sum(a, nil), 0
		for _, size := range []int{5000, 1, 0, 17_000, 333, 40_000, 7666} {
			var ok bool
			if acc, ok = a.Combine(acc, sum(a, data[off:off+size]), int64(size)); !ok {
				t.Fatalf("%v: Combine refused", a)
			}
			off += size
		}
		if want := sum(a, data[:off]); !bytes.Equal(acc, want) {
			t.Errorf("%v: folded %x, want %x", a, acc, want)
		}
	}
	for _, a := range []Algorithm{NoChecksum, SHA1, SHA256} {
		if a.Combinable() {
			t.Errorf("%v is combinable", a)
		}
		if _, ok := a.Combine(make([]byte, a.Size()), make([]byte, a.Size()), 1); ok {
			t.Errorf("%v: Combine accepted", a)
		}
	}
	if _, ok := CRC32.Combine(make([]byte, 8), make([]byte, 4), 1); ok {
		t.Error("CRC32: Combine accepted an 8-byte digest")
	}
}

// FuzzCombine: for any bytes and split, the combined CRC is the CRC of the
// whole.
func FuzzCombine(f *testing.F) {
	f.Add([]byte("hello, world"), uint16(5), uint8(0))
	f.Add([]byte{}, uint16(0), uint8(2))
	f.Fuzz(func(t *testing.T, data []byte, split uint16, alg uint8) {
		a := []Algorithm{CRC32, CRC32C, CRC64NVME}[int(alg)%3]
		k := int(split) % (len(data) + 1)
		sum := func(b []byte) []byte { h := a.New(); h.Write(b); return h.Sum(nil) }
		got, ok := a.Combine(sum(data[:k]), sum(data[k:]), int64(len(data)-k))
		if want := sum(data); !ok || !bytes.Equal(got, want) {
			t.Fatalf("%v: %x, want %x", a, got, want)
		}
	})
}

// FuzzParseChecksumType: a type is accepted only as one S3 names, for an
// algorithm it allows; anything else is refused with the reason.
func FuzzParseChecksumType(f *testing.F) {
	f.Add("FULL_OBJECT", uint8(1))
	f.Add("composite", uint8(3))
	f.Fuzz(func(t *testing.T, s string, alg uint8) {
		a := Algorithm(int(alg) % (len(Algorithms) + 1))
		got, err := ParseChecksumType(s, a)
		switch {
		case err != nil:
			if got != NoType || errcode.As(err).Detail["reason"] != "invalid_checksum_type" {
				t.Fatalf("%q %v: %v with %v", s, a, got, err)
			}
		case s != "" && !strings.EqualFold(s, got.String()), a == NoChecksum && got != NoType,
			a != NoChecksum && got == NoType, got == FullObject && !a.Combinable():
			t.Fatalf("%q %v: accepted as %v", s, a, got)
		}
	})
}
