package sigv4

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"hash/crc32"
	"hash/crc64"
	"io"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
)

const (
	testScope   = "20130524/us-east-1/s3/aws4_request"
	testAmzDate = "20130524T000000Z"
	testSeed    = "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9"
)

var testKey = SigningKey(exampleSecret, "20130524", "us-east-1", "s3")

// independent HMAC for building test bodies (not the reader's code path).
func testHMAC(stringToSign string) string {
	m := hmac.New(sha256.New, testKey)
	m.Write([]byte(stringToSign))
	return hex.EncodeToString(m.Sum(nil))
}

// chunkSizes splits n into chunks of at most size bytes.
func chunkSizes(n, size int) []int {
	var out []int
	for n > 0 {
		c := min(n, size)
		out = append(out, c)
		n -= c
	}
	return out
}

// signedBody frames data as STREAMING-AWS4-HMAC-SHA256-PAYLOAD(-TRAILER).
// With trailer (e.g. "x-amz-checksum-crc32:AAAAAA=="), the trailer section
// is signed.
func signedBody(data []byte, size int, trailer string) []byte {
	var b bytes.Buffer
	prev := testSeed
	emit := func(chunk []byte) {
		sts := "AWS4-HMAC-SHA256-PAYLOAD\n" + testAmzDate + "\n" + testScope + "\n" + prev + "\n" + EmptySHA256 + "\n" + sha256Hex(chunk)
		prev = testHMAC(sts)
		b.WriteString(strconv.FormatInt(int64(len(chunk)), 16) + ";chunk-signature=" + prev + "\r\n")
		b.Write(chunk)
		if len(chunk) > 0 {
			b.WriteString("\r\n")
		}
	}
	off := 0
	for _, n := range chunkSizes(len(data), size) {
		emit(data[off : off+n])
		off += n
	}
	emit(nil)
	if trailer != "" {
		sts := "AWS4-HMAC-SHA256-TRAILER\n" + testAmzDate + "\n" + testScope + "\n" + prev + "\n" + sha256Hex([]byte(trailer+"\n"))
		b.WriteString(trailer + "\r\n")
		b.WriteString("x-amz-trailer-signature:" + testHMAC(sts) + "\r\n")
	}
	b.WriteString("\r\n")
	return b.Bytes()
}

// unsignedBody frames data as STREAMING-UNSIGNED-PAYLOAD-TRAILER, the way
// botocore does.
func unsignedBody(data []byte, size int, trailer string) []byte {
	var b bytes.Buffer
	off := 0
	for _, n := range chunkSizes(len(data), size) {
		b.WriteString(strconv.FormatInt(int64(n), 16) + "\r\n")
		b.Write(data[off : off+n])
		b.WriteString("\r\n")
		off += n
	}
	b.WriteString("0\r\n")
	if trailer != "" {
		b.WriteString(trailer + "\r\n")
	}
	b.WriteString("\r\n")
	return b.Bytes()
}

func crc32Base64(data []byte) string {
	return base64.StdEncoding.EncodeToString(binary.BigEndian.AppendUint32(nil, crc32.ChecksumIEEE(data)))
}

func testData(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i/251)
	}
	return b
}

func newSigned(t testing.TB, body []byte, opts ChunkOptions) *ChunkedReader {
	t.Helper()
	r, err := NewChunkedReader(bytes.NewReader(body), testSeed, testKey, testScope, testAmzDate, opts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func newUnsigned(t testing.TB, body []byte, opts ChunkOptions) *ChunkedReader {
	t.Helper()
	r, err := NewUnsignedTrailerReader(bytes.NewReader(body), opts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestSignedChunkedReader(t *testing.T) {
	data := testData(200_000)
	for _, c := range []struct{ n, size int }{{5000, 1}, {len(data), 8192}, {len(data), 65536}, {len(data), len(data)}} {
		body := signedBody(data[:c.n], c.size, "")
		got, err := io.ReadAll(newSigned(t, body, ChunkOptions{DecodedLength: int64(c.n)}))
		if err != nil {
			t.Fatalf("chunk size %d: %v", c.size, err)
		}
		if !bytes.Equal(got, data[:c.n]) {
			t.Fatalf("chunk size %d: decoded data differs", c.size)
		}
	}
	// Byte-at-a-time reads on both sides.
	r := newSigned(t, nil, ChunkOptions{DecodedLength: -1})
	r.br.Reset(iotest.OneByteReader(bytes.NewReader(signedBody(data[:5000], 1000, ""))))
	got, err := io.ReadAll(iotest.OneByteReader(r))
	if err != nil || !bytes.Equal(got, data[:5000]) {
		t.Fatalf("one-byte reads: %d bytes, %v", len(got), err)
	}
	// An empty object.
	if got, err := io.ReadAll(newSigned(t, signedBody(nil, 1, ""), ChunkOptions{DecodedLength: 0})); err != nil || len(got) != 0 {
		t.Fatalf("empty object: %q, %v", got, err)
	}
}

func TestSignedTrailerReader(t *testing.T) {
	data := testData(70_000)
	trailer := "x-amz-checksum-crc32:" + crc32Base64(data)
	r := newSigned(t, signedBody(data, 65536, trailer), ChunkOptions{DecodedLength: int64(len(data)), Trailer: "x-amz-checksum-crc32"})
	if alg, v := r.Checksum(); alg != "" || v != "" {
		t.Errorf("Checksum before EOF = %q %q", alg, v)
	}
	got, err := io.ReadAll(r)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read: %d bytes, %v", len(got), err)
	}
	if alg, v := r.Checksum(); alg != "CRC32" || v != crc32Base64(data) {
		t.Errorf("Checksum = %s %s, want CRC32 %s", alg, v, crc32Base64(data))
	}
}

func TestChunkedReaderRejects(t *testing.T) {
	data := testData(3 * 1024)
	good := signedBody(data, 1024, "")
	crc := "x-amz-checksum-crc32:" + crc32Base64(data)
	wrongCRC := "x-amz-checksum-crc32:AAAAAA=="

	tamper := func(body []byte, old, new string) []byte {
		if !bytes.Contains(body, []byte(old)) {
			panic("tamper: " + old + " not in body")
		}
		return bytes.Replace(bytes.Clone(body), []byte(old), []byte(new), 1)
	}
	chunk2Sig := func(body []byte) string { // the signature of the second chunk
		i := bytes.Index(body[10:], []byte(";chunk-signature="))
		return string(body[10+i+17 : 10+i+17+64])
	}
	secondChunk := func(body []byte) int { return bytes.Index(body, []byte("\r\n400;")) + 2 }

	for _, c := range []struct {
		name     string
		body     []byte
		unsigned bool
		opts     ChunkOptions
		want     error
	}{
		{name: "valid", body: good, opts: ChunkOptions{DecodedLength: 3072}},
		{name: "tampered middle chunk data", body: func() []byte {
			b := bytes.Clone(good)
			i := secondChunk(b)
			j := i + bytes.Index(b[i:], []byte("\r\n")) + 2 // start of 2nd chunk data
			b[j+10] ^= 1
			return b
		}(), opts: ChunkOptions{DecodedLength: 3072}, want: ErrSignatureDoesNotMatch},
		{name: "bad middle chunk signature", body: tamper(good, chunk2Sig(good), strings.Repeat("a", 64)), opts: ChunkOptions{DecodedLength: 3072}, want: ErrSignatureDoesNotMatch},
		{name: "bad final signature", body: tamper(good, "0;chunk-signature="+string(good[len(good)-68:len(good)-4]), "0;chunk-signature="+strings.Repeat("b", 64)), opts: ChunkOptions{DecodedLength: 3072}, want: ErrSignatureDoesNotMatch},
		{name: "chunks reordered", body: func() []byte {
			a := signedBody(data[:1024], 1024, "")
			b := signedBody(data[1024:2048], 1024, "")
			// first chunk of b (signed after the seed) where a's was.
			out := append([]byte{}, b[:bytes.Index(b, []byte("\r\n0;"))+2]...)
			return append(out, a[bytes.Index(a, []byte("\r\n0;"))+2:]...)
		}(), opts: ChunkOptions{DecodedLength: -1}, want: ErrSignatureDoesNotMatch},
		{name: "uppercase signature", body: tamper(good, chunk2Sig(good), strings.ToUpper(chunk2Sig(good))), opts: ChunkOptions{DecodedLength: 3072}, want: ErrMalformedBody},
		{name: "missing signature", body: []byte("400\r\n"), opts: ChunkOptions{DecodedLength: -1}, want: ErrMalformedBody},
		{name: "truncated in data", body: good[:1500], opts: ChunkOptions{DecodedLength: 3072}, want: ErrIncompleteBody},
		{name: "truncated in header", body: good[:secondChunk(good)+20], opts: ChunkOptions{DecodedLength: 3072}, want: ErrIncompleteBody},
		{name: "truncated before CRLF", body: good[:secondChunk(good)-2], opts: ChunkOptions{DecodedLength: 3072}, want: ErrIncompleteBody},
		{name: "truncated before terminator", body: good[:len(good)-2], opts: ChunkOptions{DecodedLength: 3072}, want: ErrIncompleteBody},
		{name: "empty body", body: nil, opts: ChunkOptions{DecodedLength: 3072}, want: ErrIncompleteBody},
		{name: "decoded length too small", body: good, opts: ChunkOptions{DecodedLength: 2000}, want: ErrBodyTooLarge},
		{name: "decoded length too large", body: good, opts: ChunkOptions{DecodedLength: 4000}, want: ErrIncompleteBody},
		{name: "chunk over limit", body: good, opts: ChunkOptions{DecodedLength: 3072, MaxChunkSize: 1000}, want: ErrMalformedBody},
		{name: "header line too long", body: append([]byte("400;chunk-signature="), bytes.Repeat([]byte("a"), 5000)...), opts: ChunkOptions{DecodedLength: -1}, want: ErrMalformedBody},
		{name: "header line far too long", body: bytes.Repeat([]byte("1"), 20000), opts: ChunkOptions{DecodedLength: -1}, want: ErrMalformedBody},
		{name: "size too many digits", body: []byte("00000000000000001;chunk-signature=" + strings.Repeat("a", 64) + "\r\n"), opts: ChunkOptions{DecodedLength: -1}, want: ErrMalformedBody},
		{name: "non-hex size", body: []byte("x1;chunk-signature=" + strings.Repeat("a", 64) + "\r\n"), opts: ChunkOptions{DecodedLength: -1}, want: ErrMalformedBody},
		{name: "bare LF", body: bytes.Replace(good, []byte("\r\n"), []byte("\n"), 1), opts: ChunkOptions{DecodedLength: 3072}, want: ErrMalformedBody},
		{name: "no CRLF after data", body: tamper(good, "\r\n400;", "XY400;"), opts: ChunkOptions{DecodedLength: 3072}, want: ErrMalformedBody},
		{name: "trailer not allowed", body: tamper(good, "\r\n\r\n", "\r\nx-amz-checksum-crc32:AAAAAA==\r\n\r\n"), opts: ChunkOptions{DecodedLength: 3072}, want: ErrMalformedBody},

		{name: "signed trailer", body: signedBody(data, 1024, crc), opts: ChunkOptions{DecodedLength: 3072, Trailer: "x-amz-checksum-crc32"}},
		{name: "signed trailer, wrong checksum", body: signedBody(data, 1024, wrongCRC), opts: ChunkOptions{DecodedLength: 3072, Trailer: "x-amz-checksum-crc32"}, want: ErrBadDigest},
		{name: "signed trailer, checksum swapped after signing", body: tamper(signedBody(data, 1024, crc), crc, wrongCRC), opts: ChunkOptions{DecodedLength: 3072, Trailer: "x-amz-checksum-crc32"}, want: ErrSignatureDoesNotMatch},
		{name: "signed trailer, missing signature", body: tamper(signedBody(data, 1024, crc), "x-amz-trailer-signature:", "x-amz-meta-sig:"), opts: ChunkOptions{DecodedLength: 3072, Trailer: "x-amz-checksum-crc32"}, want: ErrMalformedBody},
		{name: "signed trailer, other algorithm", body: signedBody(data, 1024, crc), opts: ChunkOptions{DecodedLength: 3072, Trailer: "x-amz-checksum-crc32c"}, want: ErrMalformedBody},
		{name: "signed trailer, absent", body: good, opts: ChunkOptions{DecodedLength: 3072, Trailer: "x-amz-checksum-crc32"}, want: ErrMalformedBody},

		{name: "unsigned", body: unsignedBody(data, 1000, crc), unsigned: true, opts: ChunkOptions{DecodedLength: 3072, Trailer: "x-amz-checksum-crc32"}},
		{name: "unsigned, wrong checksum", body: unsignedBody(data, 1000, wrongCRC), unsigned: true, opts: ChunkOptions{DecodedLength: 3072, Trailer: "x-amz-checksum-crc32"}, want: ErrBadDigest},
		{name: "unsigned, bit flip in data", body: func() []byte {
			b := unsignedBody(data, 1000, crc)
			b[1500] ^= 0x10
			return b
		}(), unsigned: true, opts: ChunkOptions{DecodedLength: 3072, Trailer: "x-amz-checksum-crc32"}, want: ErrBadDigest},
		{name: "unsigned, checksum not base64", body: unsignedBody(data, 1000, "x-amz-checksum-crc32:!!!"), unsigned: true, opts: ChunkOptions{DecodedLength: 3072, Trailer: "x-amz-checksum-crc32"}, want: ErrInvalidDigest},
		{name: "unsigned, checksum wrong size", body: unsignedBody(data, 1000, "x-amz-checksum-crc32:AAAAAAAA"), unsigned: true, opts: ChunkOptions{DecodedLength: 3072, Trailer: "x-amz-checksum-crc32"}, want: ErrInvalidDigest},
		{name: "unsigned, missing trailer", body: unsignedBody(data, 1000, ""), unsigned: true, opts: ChunkOptions{DecodedLength: 3072, Trailer: "x-amz-checksum-crc32"}, want: ErrMalformedBody},
		{name: "unsigned, undeclared trailer", body: unsignedBody(data, 1000, crc), unsigned: true, opts: ChunkOptions{DecodedLength: 3072}, want: ErrMalformedBody},
		{name: "unsigned, repeated trailer", body: unsignedBody(data, 1000, crc+"\r\n"+crc), unsigned: true, opts: ChunkOptions{DecodedLength: 3072, Trailer: "x-amz-checksum-crc32"}, want: ErrMalformedBody},
		{name: "unsigned, trailer without colon", body: unsignedBody(data, 1000, "x-amz-checksum-crc32"), unsigned: true, opts: ChunkOptions{DecodedLength: 3072, Trailer: "x-amz-checksum-crc32"}, want: ErrMalformedBody},
		{name: "unsigned, no trailer at all", body: unsignedBody(data, 1000, ""), unsigned: true, opts: ChunkOptions{DecodedLength: 3072}},
		{name: "unsigned, chunk extension", body: []byte("3;ext=1;chunk-signature=x\r\n" + string(data[:3]) + "\r\n0 ; ext\r\n\r\n"), unsigned: true, opts: ChunkOptions{DecodedLength: 3}},
		{name: "unsigned, garbage after size", body: []byte("3x\r\nabc\r\n0\r\n\r\n"), unsigned: true, opts: ChunkOptions{DecodedLength: 3}, want: ErrMalformedBody},
		{name: "unsigned, too many trailer lines", body: []byte("0\r\n" + strings.Repeat("x-amz-checksum-crc32:AAAAAA==\r\n", 20) + "\r\n"), unsigned: true, opts: ChunkOptions{DecodedLength: 0, Trailer: "x-amz-checksum-crc32"}, want: ErrMalformedBody},
		{name: "unsigned, truncated trailer", body: []byte("0\r\nx-amz-checksum-crc32:AAAA"), unsigned: true, opts: ChunkOptions{DecodedLength: 0, Trailer: "x-amz-checksum-crc32"}, want: ErrIncompleteBody},
		{name: "unsigned, longer than announced", body: unsignedBody(data, 1000, ""), unsigned: true, opts: ChunkOptions{DecodedLength: 100}, want: ErrBodyTooLarge},
		{name: "unsigned, shorter than announced", body: unsignedBody(data, 1000, ""), unsigned: true, opts: ChunkOptions{DecodedLength: 5000}, want: ErrIncompleteBody},
	} {
		t.Run(c.name, func(t *testing.T) {
			var r *ChunkedReader
			if c.unsigned {
				r = newUnsigned(t, c.body, c.opts)
			} else {
				r = newSigned(t, c.body, c.opts)
			}
			got, err := io.ReadAll(r)
			if !errorIs(err, c.want) {
				t.Fatalf("ReadAll = %d bytes, %v; want %v", len(got), err, c.want)
			}
			if err == nil && !bytes.Equal(got, data[:len(got)]) {
				t.Errorf("decoded data differs")
			}
			if err != nil {
				// Sticky: the next Read fails the same way.
				if _, again := r.Read(make([]byte, 10)); again != err {
					t.Errorf("second Read = %v, want %v", again, err)
				}
				if alg, v := r.Checksum(); alg != "" || v != "" {
					t.Errorf("Checksum after error = %q %q", alg, v)
				}
			}
		})
	}
}

func TestChunkedReaderPassesReadErrors(t *testing.T) {
	boom := errors.New("connection reset")
	r, err := NewUnsignedTrailerReader(io.MultiReader(strings.NewReader("10\r\nabc"), iotest.ErrReader(boom)), ChunkOptions{DecodedLength: -1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(r); err != boom {
		t.Fatalf("ReadAll = %v, want %v", err, boom)
	}
}

func TestChunkedReaderConstructorErrors(t *testing.T) {
	if _, err := NewChunkedReader(nil, "abc", testKey, testScope, testAmzDate, ChunkOptions{}); !isKind(err, ErrInvalidArgument) {
		t.Errorf("bad seed: %v", err)
	}
	if _, err := NewChunkedReader(nil, testSeed, nil, testScope, testAmzDate, ChunkOptions{}); !isKind(err, ErrInvalidArgument) {
		t.Errorf("no key: %v", err)
	}
	for _, tr := range []string{"x-amz-checksum-md5", "x-amz-checksum-crc32,x-amz-checksum-sha1", "content-md5"} {
		if _, err := NewUnsignedTrailerReader(nil, ChunkOptions{Trailer: tr}); !isKind(err, ErrInvalidArgument) {
			t.Errorf("trailer %q: %v", tr, err)
		}
	}
	if _, err := NewUnsignedTrailerReader(nil, ChunkOptions{Trailer: " X-Amz-Checksum-CRC32C "}); err != nil {
		t.Errorf("trailer names are case-insensitive: %v", err)
	}
}

// Check values: the CRC catalogue's "123456789" and the S3 documentation's
// "hello world" (as in internal/integrity).
func TestTrailerChecksumAlgorithms(t *testing.T) {
	check := []byte("123456789")
	for _, c := range []struct {
		header string
		sum    []byte // of "123456789"
		hello  string // base64 of "hello world"
	}{
		{"x-amz-checksum-crc32", binary.BigEndian.AppendUint32(nil, 0xcbf43926), "DUoRhQ=="},
		{"x-amz-checksum-crc32c", binary.BigEndian.AppendUint32(nil, 0xe3069283), "yZRlqg=="},
		{"x-amz-checksum-crc64nvme", binary.BigEndian.AppendUint64(nil, 0xae8b14860a799888), "jSnVw/bqjr4="},
		{"x-amz-checksum-sha1", func() []byte { s := sha1.Sum(check); return s[:] }(), "Kq5sNclPz7QV2+lfQIuc6R7oRu0="},
		{"x-amz-checksum-sha256", func() []byte { s := sha256.Sum256(check); return s[:] }(), "uU0nuZNNPgilLlLX2n2r+sSE7+N6U4DukIj3rOLvzek="},
	} {
		t.Run(c.header, func(t *testing.T) {
			for _, v := range []struct {
				data []byte
				want string
			}{
				{check, base64.StdEncoding.EncodeToString(c.sum)},
				{[]byte("hello world"), c.hello},
			} {
				body := unsignedBody(v.data, 4, c.header+":"+v.want)
				r := newUnsigned(t, body, ChunkOptions{DecodedLength: int64(len(v.data)), Trailer: c.header})
				got, err := io.ReadAll(r)
				if err != nil || !bytes.Equal(got, v.data) {
					t.Fatalf("read %q: %q, %v", v.data, got, err)
				}
				alg, sum := r.Checksum()
				if wantAlg := strings.ToUpper(strings.TrimPrefix(c.header, "x-amz-checksum-")); alg != wantAlg || sum != v.want {
					t.Errorf("Checksum = %s %s, want %s %s", alg, sum, wantAlg, v.want)
				}
			}
		})
	}
	// The NVMe polynomial, independently: reflected 0x9a6c9329ac4bc9b5.
	if got := crc64.Checksum(check, crc64.MakeTable(0x9a6c9329ac4bc9b5)); got != 0xae8b14860a799888 {
		t.Errorf("crc64nvme(123456789) = %x", got)
	}
}

func TestPayloadReaderModes(t *testing.T) {
	data := testData(1000)
	res := Result{Signature: testSeed, SigningKey: testKey, Scope: testScope, AmzDate: testAmzDate}
	h := func(kv ...string) map[string][]string {
		m := map[string][]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = []string{kv[i+1]}
		}
		return m
	}
	for _, c := range []struct {
		name    string
		mode    PayloadMode
		hash    string
		body    []byte
		header  map[string][]string
		wantNew error
		want    error
	}{
		{name: "sha256", mode: PayloadSHA256, hash: sha256Hex(data), body: data},
		{name: "sha256 upper-case", mode: PayloadSHA256, hash: strings.ToUpper(sha256Hex(data)), body: data},
		{name: "sha256 mismatch", mode: PayloadSHA256, hash: EmptySHA256, body: data, want: ErrContentSHA256Mismatch},
		{name: "unsigned", mode: PayloadUnsigned, body: data},
		{name: "streaming", mode: PayloadStreaming, body: signedBody(data, 300, ""), header: h("X-Amz-Decoded-Content-Length", "1000")},
		{name: "streaming, missing length", mode: PayloadStreaming, body: signedBody(data, 300, ""), wantNew: ErrMissingSecurityHeader},
		{name: "streaming, bad length", mode: PayloadStreaming, header: h("X-Amz-Decoded-Content-Length", "-1"), wantNew: ErrInvalidArgument},
		{name: "streaming, plus length", mode: PayloadStreaming, header: h("X-Amz-Decoded-Content-Length", "+10"), wantNew: ErrInvalidArgument},
		{name: "streaming, unexpected trailer", mode: PayloadStreaming, header: h("X-Amz-Decoded-Content-Length", "1000", "X-Amz-Trailer", "x-amz-checksum-crc32"), wantNew: ErrInvalidArgument},
		{name: "streaming trailer", mode: PayloadStreamingTrailer, body: signedBody(data, 300, "x-amz-checksum-crc32:"+crc32Base64(data)), header: h("X-Amz-Decoded-Content-Length", "1000", "X-Amz-Trailer", "x-amz-checksum-crc32")},
		{name: "streaming trailer, no x-amz-trailer", mode: PayloadStreamingTrailer, header: h("X-Amz-Decoded-Content-Length", "1000"), wantNew: ErrMissingSecurityHeader},
		{name: "unsigned trailer", mode: PayloadStreamingUnsignedTrailer, body: unsignedBody(data, 300, "x-amz-checksum-crc32:"+crc32Base64(data)), header: h("X-Amz-Decoded-Content-Length", "1000", "X-Amz-Trailer", "x-amz-checksum-crc32")},
		{name: "unsigned trailer, bad checksum", mode: PayloadStreamingUnsignedTrailer, body: unsignedBody(data, 300, "x-amz-checksum-crc32:AAAAAA=="), header: h("X-Amz-Decoded-Content-Length", "1000", "X-Amz-Trailer", "x-amz-checksum-crc32"), want: ErrBadDigest},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := res
			res.Payload, res.PayloadHash = c.mode, c.hash
			pr, err := NewPayloadReader(bytes.NewReader(c.body), res, c.header)
			if !errorIs(err, c.wantNew) {
				t.Fatalf("NewPayloadReader = %v, want %v", err, c.wantNew)
			}
			if err != nil {
				return
			}
			got, err := io.ReadAll(pr)
			if !errorIs(err, c.want) {
				t.Fatalf("ReadAll = %v, want %v", err, c.want)
			}
			if err == nil && !bytes.Equal(got, data) {
				t.Errorf("decoded data differs")
			}
			if c.mode.Chunked() && pr.DecodedLength() != 1000 || !c.mode.Chunked() && pr.DecodedLength() != -1 {
				t.Errorf("DecodedLength = %d", pr.DecodedLength())
			}
		})
	}
}
