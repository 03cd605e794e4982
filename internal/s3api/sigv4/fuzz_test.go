package sigv4

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

func FuzzParseAuthorization(f *testing.F) {
	const sig = "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
	for _, s := range []string{
		"AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,Signature=" + sig,
		"AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, SignedHeaders=host;x-amz-date, Signature=" + sig,
		"AWS4-HMAC-SHA256  Signature=" + sig + " , Credential=a/b/20130524/r/s/aws4_request,SignedHeaders=host",
		"AWS4-HMAC-SHA256 Credential=AKID/20130524/us-east-1/s3/aws4_request, SignedHeaders=host;host, Signature=" + sig,
		"AWS4-HMAC-SHA256 Credential=AKID/20131324/us-east-1/s3/aws4_request, SignedHeaders=Host, Signature=" + sig,
		"AWS4-HMAC-SHA256 Credential=//////, SignedHeaders=;, Signature=",
		"AWS AKIAIOSFODNN7EXAMPLE:frJIUN8DYpKDtOLCwo//yllqDzg=",
		"AWS4-ECDSA-P256-SHA256 Credential=x",
		"",
		"AWS4-HMAC-SHA256 ,,,===",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		a, err := ParseAuthorization(h)
		if err != nil {
			if S3Code(err) == "" {
				t.Fatalf("error without S3 code: %v", err)
			}
			return
		}
		if !isSig(a.Signature) || len(a.SignedHeaders) == 0 || a.AccessKeyID == "" || len(a.Date) != 8 || a.Region == "" || a.Service == "" {
			t.Fatalf("accepted an incomplete credential: %+v", a)
		}
		b, err := ParseAuthorization(a.String())
		if err != nil {
			t.Fatalf("String() of %+v does not parse: %v", a, err)
		}
		if b.String() != a.String() {
			t.Fatalf("round trip: %q != %q", b.String(), a.String())
		}
	})
}

// readAllBounded reads r in small steps and fails the test if it yields more
// than limit bytes.
func readAllBounded(t *testing.T, r io.Reader, limit int) ([]byte, error) {
	var out []byte
	buf := make([]byte, 7)
	for {
		n, err := r.Read(buf)
		if n < 0 || n > len(buf) {
			t.Fatalf("Read returned n = %d", n)
		}
		out = append(out, buf[:n]...)
		if len(out) > limit {
			t.Fatalf("decoded %d bytes out of a %d byte body", len(out), limit)
		}
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
	}
}

func FuzzChunkedReader(f *testing.F) {
	data := testData(100)
	crc := "x-amz-checksum-crc32:" + crc32Base64(data)
	f.Add(signedBody(data, 40, ""), int64(100), false)
	f.Add(signedBody(data, 100, ""), int64(-1), false)
	f.Add(signedBody(nil, 1, ""), int64(0), false)
	f.Add(signedBody(data, 33, crc), int64(100), true)
	f.Add(signedBody(data, 33, "x-amz-checksum-crc32:AAAAAA=="), int64(100), true)
	f.Add(signedBody(data, 40, "")[:70], int64(100), false)
	f.Add([]byte("ffffffffffffffff;chunk-signature="+strings.Repeat("a", 64)+"\r\n"), int64(-1), false)
	f.Add([]byte("0;chunk-signature="+strings.Repeat("0", 64)+"\r\n\r\n"), int64(0), false)
	f.Fuzz(func(t *testing.T, body []byte, decoded int64, trailer bool) {
		opts := ChunkOptions{DecodedLength: decoded, MaxChunkSize: 1 << 16}
		if trailer {
			opts.Trailer = "x-amz-checksum-crc32"
		}
		r, err := NewChunkedReader(bytes.NewReader(body), testSeed, testKey, testScope, testAmzDate, opts)
		if err != nil {
			t.Fatal(err)
		}
		out, err := readAllBounded(t, r, len(body))
		if err != nil {
			if S3Code(err) == "" {
				t.Fatalf("error without S3 code: %v", err)
			}
			return
		}
		if decoded >= 0 && int64(len(out)) != decoded {
			t.Fatalf("accepted %d bytes, x-amz-decoded-content-length %d", len(out), decoded)
		}
		if trailer {
			if _, sum := r.Checksum(); sum != crc32Base64(out) {
				t.Fatalf("accepted a checksum %s that is not the data's %s", sum, crc32Base64(out))
			}
		}
	})
}

func FuzzUnsignedTrailerReader(f *testing.F) {
	data := testData(100)
	crc := "x-amz-checksum-crc32:" + crc32Base64(data)
	f.Add(unsignedBody(data, 40, crc), int64(100), true)
	f.Add(unsignedBody(data, 100, ""), int64(-1), false)
	f.Add(unsignedBody(nil, 1, "x-amz-checksum-crc32:AAAAAA=="), int64(0), true)
	f.Add(unsignedBody(data, 7, "x-amz-checksum-crc32:AAAAAA=="), int64(100), true)
	f.Add([]byte("5;ext=x\r\nhello\r\n0\r\nx-amz-checksum-crc32:NhCmhg==\r\n\r\n"), int64(5), true)
	f.Add([]byte("5\r\nhel"), int64(5), false)
	f.Add([]byte("0\r\n\r\n"), int64(0), false)
	f.Fuzz(func(t *testing.T, body []byte, decoded int64, trailer bool) {
		opts := ChunkOptions{DecodedLength: decoded, MaxChunkSize: 1 << 16}
		if trailer {
			opts.Trailer = "x-amz-checksum-crc32"
		}
		r, err := NewUnsignedTrailerReader(bytes.NewReader(body), opts)
		if err != nil {
			t.Fatal(err)
		}
		out, err := readAllBounded(t, r, len(body))
		if err != nil {
			if S3Code(err) == "" {
				t.Fatalf("error without S3 code: %v", err)
			}
			return
		}
		if decoded >= 0 && int64(len(out)) != decoded {
			t.Fatalf("accepted %d bytes, x-amz-decoded-content-length %d", len(out), decoded)
		}
		alg, sum := r.Checksum()
		switch {
		case trailer && (alg != "CRC32" || sum != crc32Base64(out)):
			t.Fatalf("accepted checksum %s %s, data's is %s", alg, sum, crc32Base64(out))
		case !trailer && (alg != "" || sum != ""):
			t.Fatalf("checksum %s %s without a trailer", alg, sum)
		}
	})
}
