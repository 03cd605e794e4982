package integrity

import (
	"bytes"
	"crypto/md5"
	"crypto/sha256"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/coffer-storage/coffer/internal/errcode"
)

func TestReader(t *testing.T) {
	data := []byte(strings.Repeat("coffer", 1000))
	sha := sha256.Sum256(data)
	sum := md5.Sum(data)
	quota := errcode.New(errcode.QuotaExceeded, "quota")
	tests := []struct {
		name string
		opts Options
		want errcode.Code // Unknown = success
	}{
		{"unknown size", Options{Size: -1}, errcode.Unknown},
		{"exact size", Options{Size: int64(len(data))}, errcode.Unknown},
		{"short", Options{Size: int64(len(data)) + 1}, errcode.IncompleteBody},
		{"long", Options{Size: int64(len(data)) - 1}, errcode.TooLarge},
		{"zero size means zero", Options{Size: 0}, errcode.TooLarge},
		{"limit ok", Options{Size: -1, Limit: int64(len(data))}, errcode.Unknown},
		{"limit exceeded", Options{Size: -1, Limit: int64(len(data)) - 1}, errcode.TooLarge},
		{"limit custom error", Options{Size: -1, Limit: 10, LimitErr: func() error { return quota }}, errcode.QuotaExceeded},
		{"sha ok", Options{Size: -1, SHA256: sha[:]}, errcode.Unknown},
		{"sha bad", Options{Size: -1, SHA256: make([]byte, 32)}, errcode.ChecksumMismatch},
		{"md5 ok", Options{Size: -1, MD5: sum[:]}, errcode.Unknown},
		{"md5 bad", Options{Size: -1, MD5: make([]byte, 16)}, errcode.ChecksumMismatch},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := NewReader(iotest.HalfReader(bytes.NewReader(data)), tc.opts)
			_, err := io.Copy(io.Discard, r)
			if got := errcode.Of(err); err != nil && got != tc.want || err == nil && tc.want != errcode.Unknown {
				t.Fatalf("err = %v (code %v), want code %v", err, got, tc.want)
			}
			if err != nil {
				// sticky
				if _, err2 := r.Read(make([]byte, 1)); err2 == nil || err2 == io.EOF {
					t.Fatalf("error is not sticky: %v", err2)
				}
				return
			}
			if got, want := r.N(), int64(len(data)); got != want {
				t.Errorf("N = %d, want %d", got, want)
			}
			if !bytes.Equal(r.SHA256(), sha[:]) || !bytes.Equal(r.MD5(), sum[:]) {
				t.Errorf("digests differ")
			}
		})
	}
}

func TestReaderUnexpectedEOF(t *testing.T) {
	r := NewReader(iotest.ErrReader(io.ErrUnexpectedEOF), Options{Size: -1})
	_, err := io.Copy(io.Discard, r)
	if got, want := errcode.Of(err), errcode.IncompleteBody; got != want {
		t.Fatalf("code = %v, want %v", got, want)
	}
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("cause lost: %v", err)
	}
}

func TestMismatchDetail(t *testing.T) {
	err := Mismatch("sha256", []byte{1}, []byte{2})
	e := errcode.As(err)
	if e == nil || e.Detail["expected"] != "01" || e.Detail["actual"] != "02" {
		t.Fatalf("detail = %+v", e)
	}
}

func TestChecksums(t *testing.T) {
	// Known values of "hello world" (the S3 documentation's examples and
	// the CRC catalogue's check values).
	want := map[string]string{
		"CRC32":     "DUoRhQ==",
		"CRC32C":    "yZRlqg==",
		"CRC64NVME": "jSnVw/bqjr4=",
		"SHA1":      "Kq5sNclPz7QV2+lfQIuc6R7oRu0=",
		"SHA256":    "uU0nuZNNPgilLlLX2n2r+sSE7+N6U4DukIj3rOLvzek=",
	}
	for _, a := range Algorithms {
		alg := a.String()
		r := NewReader(strings.NewReader("hello world"), Options{Size: -1, ChecksumAlgorithm: alg})
		if _, err := io.Copy(io.Discard, r); err != nil {
			t.Fatal(err)
		}
		if got := a.Encode(r.Checksum()); got != want[alg] {
			t.Errorf("%s = %s, want %s", alg, got, want[alg])
		}
		bad := NewReader(strings.NewReader("hello world"), Options{Size: -1, ChecksumAlgorithm: strings.ToLower(alg), ChecksumWant: make([]byte, a.Size())})
		_, err := io.Copy(io.Discard, bad)
		if e := errcode.As(err); e == nil || e.Code != errcode.ChecksumMismatch || e.Detail["algorithm"] != "checksum-"+strings.ToLower(alg) {
			t.Errorf("%s mismatch: %v", alg, err)
		}
	}
	if _, err := io.Copy(io.Discard, NewReader(strings.NewReader("x"), Options{Size: -1, ChecksumAlgorithm: "MD4"})); !errcode.Is(err, errcode.InvalidArgument) {
		t.Errorf("unknown algorithm: %v", err)
	}
}

// TestNoSHA256: with NoSHA256 the reader computes no SHA-256 (nobody
// reads it: SHA256 is nil) unless one is announced, which is then still
// checked; the MD5 is unaffected.
func TestNoSHA256(t *testing.T) {
	data := []byte(strings.Repeat("coffer", 1000))
	sha, sum := sha256.Sum256(data), md5.Sum(data)
	r := NewReader(bytes.NewReader(data), Options{Size: -1, NoSHA256: true})
	if _, err := io.Copy(io.Discard, r); err != nil {
		t.Fatal(err)
	}
	if r.SHA256() != nil || !bytes.Equal(r.MD5(), sum[:]) {
		t.Errorf("SHA256 %x (want none), MD5 %x (want %x)", r.SHA256(), r.MD5(), sum)
	}
	for _, tc := range []struct {
		want []byte
		code errcode.Code
	}{{sha[:], errcode.Unknown}, {make([]byte, 32), errcode.ChecksumMismatch}} {
		r := NewReader(bytes.NewReader(data), Options{Size: -1, NoSHA256: true, SHA256: tc.want})
		if _, err := io.Copy(io.Discard, r); errcode.Of(err) != tc.code && (err != nil || tc.code != errcode.Unknown) {
			t.Errorf("announced %x: %v, want %v", tc.want, err, tc.code)
		}
	}
	// Hashing nothing allocates nothing per Read.
	buf := make([]byte, 4096)
	src := bytes.NewReader(data)
	r = NewReader(src, Options{Size: -1, NoSHA256: true, NoMD5: true})
	if n := testing.AllocsPerRun(100, func() {
		src.Reset(data)
		r.Read(buf)
	}); n != 0 {
		t.Errorf("%v allocations per Read", n)
	}
}
