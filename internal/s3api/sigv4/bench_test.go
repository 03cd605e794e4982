package sigv4

import (
	"bytes"
	"io"
	"net/http"
	"testing"
	"time"
)

// BenchmarkVerifyHeader verifies a typical SDK PUT (header auth, signed
// payload hash, seven signed headers) with a warm key cache.
func BenchmarkVerifyHeader(b *testing.B) {
	now := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	r, _ := http.NewRequest("PUT", "http://127.0.0.1:9000/bucket/photos/2024/IMG%200001.jpg?partNumber=3&uploadId=abc", nil)
	r.Header.Set("Content-Type", "image/jpeg")
	r.Header.Set("Content-Length", "5242880")
	r.Header.Set("X-Amz-Meta-Owner", "alice")
	if err := SignRequest(r, "CFTESTKEY0000000001", "secret/key+value", "", EmptySHA256, now); err != nil {
		b.Fatal(err)
	}
	lookup := func(string) (string, error) { return "secret/key+value", nil }
	opts := Options{Now: func() time.Time { return now }, Keys: NewKeyCache(0)}
	if _, err := Verify(r, lookup, opts); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Verify(r, lookup, opts); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerifyHeaderNoCache is the same with the signing key derived
// every time.
func BenchmarkVerifyHeaderNoCache(b *testing.B) {
	now := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	r, _ := http.NewRequest("GET", "http://127.0.0.1:9000/bucket/key", nil)
	if err := SignRequest(r, "CFTESTKEY0000000001", "secret", "", EmptySHA256, now); err != nil {
		b.Fatal(err)
	}
	lookup := func(string) (string, error) { return "secret", nil }
	opts := Options{Now: func() time.Time { return now }}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Verify(r, lookup, opts); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkChunkedReader decodes and verifies 4 MiB sent as signed 64 KiB
// chunks (the SDK default), read 32 KiB at a time as io.Copy does.
func BenchmarkChunkedReader(b *testing.B) {
	data := testData(4 << 20)
	body := signedBody(data, 64<<10, "")
	buf := make([]byte, 32<<10)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		r, err := NewChunkedReader(bytes.NewReader(body), testSeed, testKey, testScope, testAmzDate, ChunkOptions{DecodedLength: int64(len(data))})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.CopyBuffer(io.Discard, struct{ io.Reader }{r}, buf); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkUnsignedTrailerReader is the boto3 default: unsigned 64 KiB
// chunks with a CRC32 trailer.
func BenchmarkUnsignedTrailerReader(b *testing.B) {
	data := testData(4 << 20)
	body := unsignedBody(data, 64<<10, "x-amz-checksum-crc32:"+crc32Base64(data))
	buf := make([]byte, 32<<10)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		r, err := NewUnsignedTrailerReader(bytes.NewReader(body), ChunkOptions{DecodedLength: int64(len(data)), Trailer: "x-amz-checksum-crc32"})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.CopyBuffer(io.Discard, struct{ io.Reader }{r}, buf); err != nil {
			b.Fatal(err)
		}
	}
}
