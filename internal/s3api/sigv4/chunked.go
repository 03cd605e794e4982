package sigv4

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"hash"
	"io"

	"github.com/coffer-storage/coffer/internal/integrity"
)

// Limits of the aws-chunked readers.
const (
	// DefaultMaxChunkSize bounds the data of one chunk (ChunkOptions).
	DefaultMaxChunkSize = 16 << 20
	// MaxChunkLine bounds a chunk header or trailer line, without CRLF.
	MaxChunkLine = 4096
	// maxTrailerLines bounds the number of trailer lines.
	maxTrailerLines = 8
	// readBufferSize is the bufio size: a full MaxChunkLine must fit.
	readBufferSize = 8 << 10
)

// ChunkOptions configure the aws-chunked readers.
type ChunkOptions struct {
	// DecodedLength is x-amz-decoded-content-length: the exact number of
	// object bytes the body must carry. Negative: not enforced. (Zero means
	// an empty object.)
	DecodedLength int64
	// Trailer is the x-amz-trailer header: the one trailing checksum the
	// body ends with, e.g. "x-amz-checksum-crc32". Empty: no trailer. For
	// the signed reader a non-empty Trailer means
	// STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER (signed trailer section).
	Trailer string
	// MaxChunkSize bounds one chunk's data. Default DefaultMaxChunkSize.
	MaxChunkSize int
}

const (
	stateHeader  = iota // expecting a chunk header line
	stateData           // inside chunk data
	stateDataEnd        // expecting the CRLF after chunk data
	stateDone           // terminator read and verified
)

// ChunkedReader decodes an aws-chunked body (Content-Encoding: aws-chunked)
// and verifies it while streaming: chunk signatures (signed modes), the
// trailer signature (signed trailer mode), the trailing checksum, the chunk
// framing and x-amz-decoded-content-length. Memory is bounded by one
// header line; chunk data is never buffered.
//
// Read yields the object bytes. Bytes of a chunk are returned before that
// chunk's signature can be checked (the signature covers the whole chunk),
// so the consumer must not commit anything until Read returns io.EOF: any
// other error, including ErrSignatureDoesNotMatch from the middle of the
// stream, means the upload must be discarded. Errors are sticky.
//
// Decoding stops at the aws-chunked terminator: bytes after it are ignored
// (a read-ahead buffer may have consumed some of them from body).
type ChunkedReader struct {
	br      *bufio.Reader
	max     int64
	decoded int64

	// Trailing checksum.
	alg      integrity.Algorithm // NoChecksum without a trailer
	sum      hash.Hash           // over the data; nil without a trailer
	declared []byte              // the checksum the trailer declared
	checksum string              // base64 of sum, set at EOF

	// Signing (nil mac: unsigned).
	mac         hash.Hash // HMAC-SHA256 under the signing key
	chunkHash   hash.Hash // SHA-256 of the current chunk
	amzDate     string
	scope       string
	chunkPrefix []byte   // "AWS4-HMAC-SHA256-PAYLOAD\n<amzDate>\n<scope>\n"
	chunkMid    []byte   // "\n<hex sha256 of empty>\n"
	prevSig     [64]byte // hex signature of the previous chunk (seed first)
	wantSig     [64]byte // hex signature the current chunk declares
	scratch     [64]byte

	state     int
	remaining int64 // data bytes left in the current chunk
	total     int64 // data bytes returned so far
	err       error
}

// NewChunkedReader returns a reader for a STREAMING-AWS4-HMAC-SHA256-PAYLOAD
// body, or STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER when opts.Trailer is
// set. Each chunk is "hex-size;chunk-signature=sig\r\n data \r\n", the last
// one empty; chunk n's signature is HMAC(signingKey,
// "AWS4-HMAC-SHA256-PAYLOAD\n" + amzDate + "\n" + scope + "\n" + sig(n-1) +
// "\n" + hex(sha256("")) + "\n" + hex(sha256(data))), starting from the
// seed signature. The trailer section is signed with
// "AWS4-HMAC-SHA256-TRAILER" in its x-amz-trailer-signature line.
//
// seedSignature, signingKey, scope and amzDate come from the verified
// request (Result.Signature, SigningKey, Scope, AmzDate).
func NewChunkedReader(body io.Reader, seedSignature string, signingKey []byte, scope, amzDate string, opts ChunkOptions) (*ChunkedReader, error) {
	if !isSig(seedSignature) {
		return nil, newError(ErrInvalidArgument, "The seed signature must be 64 lower-case hex digits.")
	}
	if len(signingKey) == 0 {
		return nil, newError(ErrInvalidArgument, "A signing key is required to verify chunk signatures.")
	}
	r, err := newChunkedReader(body, opts)
	if err != nil {
		return nil, err
	}
	r.mac = hmac.New(sha256.New, signingKey)
	r.chunkHash = sha256.New()
	r.amzDate, r.scope = amzDate, scope
	r.chunkPrefix = []byte("AWS4-HMAC-SHA256-PAYLOAD\n" + amzDate + "\n" + scope + "\n")
	r.chunkMid = []byte("\n" + EmptySHA256 + "\n")
	copy(r.prevSig[:], seedSignature)
	return r, nil
}

// NewUnsignedTrailerReader returns a reader for a
// STREAMING-UNSIGNED-PAYLOAD-TRAILER body, what current boto3 and the AWS
// CLI send by default:
//
//	hex-size\r\n data \r\n ... 0\r\n x-amz-checksum-crc32:BASE64\r\n \r\n
//
// Chunk extensions are ignored. With opts.Trailer set, the trailer must
// carry that checksum and it must match the data (else ErrBadDigest).
func NewUnsignedTrailerReader(body io.Reader, opts ChunkOptions) (*ChunkedReader, error) {
	return newChunkedReader(body, opts)
}

func newChunkedReader(body io.Reader, opts ChunkOptions) (*ChunkedReader, error) {
	alg, err := parseTrailerHeader(opts.Trailer)
	if err != nil {
		return nil, err
	}
	max := opts.MaxChunkSize
	if max <= 0 {
		max = DefaultMaxChunkSize
	}
	r := &ChunkedReader{
		br:      bufio.NewReaderSize(body, readBufferSize),
		max:     int64(max),
		decoded: opts.DecodedLength,
		alg:     alg,
	}
	r.sum = alg.New()
	return r, nil
}

// Checksum returns the trailing checksum computed over the data — algorithm
// ("CRC32", "CRC32C", "CRC64NVME", "SHA1", "SHA256") and standard base64
// value — once Read has returned io.EOF (so it equals the one the client
// declared). It returns "", "" before that or without a trailer.
func (r *ChunkedReader) Checksum() (algorithm, value string) {
	if r.state != stateDone || r.alg == integrity.NoChecksum {
		return "", ""
	}
	return r.alg.String(), r.checksum
}

// Read implements io.Reader; see ChunkedReader.
func (r *ChunkedReader) Read(p []byte) (int, error) {
	for r.err == nil {
		switch r.state {
		case stateHeader:
			r.err = r.readChunkHeader()
		case stateDataEnd:
			r.err = r.readDataEnd()
		case stateDone:
			return 0, io.EOF
		case stateData:
			if len(p) == 0 {
				return 0, nil
			}
			if int64(len(p)) > r.remaining {
				p = p[:r.remaining]
			}
			n, err := r.br.Read(p)
			if n > 0 {
				if r.chunkHash != nil {
					r.chunkHash.Write(p[:n])
				}
				if r.sum != nil {
					r.sum.Write(p[:n])
				}
				r.remaining -= int64(n)
				r.total += int64(n)
				if r.remaining == 0 {
					r.state = stateDataEnd
				}
			}
			if err != nil {
				if err == io.EOF || err == io.ErrUnexpectedEOF {
					err = newError(ErrIncompleteBody, "The body ended inside a chunk: %d bytes of it are missing.", r.remaining)
				}
				r.err = err
			}
			if n > 0 || err == nil {
				return n, nil
			}
		}
	}
	return 0, r.err
}

// readLine reads one CRLF-terminated line and returns it without the CRLF.
// The slice is valid until the next read.
func (r *ChunkedReader) readLine(what string) ([]byte, error) {
	line, err := r.br.ReadSlice('\n')
	switch {
	case err == bufio.ErrBufferFull || len(line) > MaxChunkLine+2:
		return nil, newError(ErrMalformedBody, "The %s is longer than %d bytes.", what, MaxChunkLine)
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		return nil, newError(ErrIncompleteBody, "The body ended inside the %s.", what)
	case err != nil:
		return nil, err
	}
	if len(line) < 2 || line[len(line)-2] != '\r' {
		return nil, newError(ErrMalformedBody, "The %s is not terminated by CRLF.", what)
	}
	return line[:len(line)-2], nil
}

const chunkSignatureExt = ";chunk-signature="

func (r *ChunkedReader) readChunkHeader() error {
	line, err := r.readLine("chunk header")
	if err != nil {
		return err
	}
	i := 0
	var size uint64
	for ; i < len(line); i++ {
		d, ok := unhex(line[i])
		if !ok {
			break
		}
		if i == 16 {
			return newError(ErrMalformedBody, "The chunk size has more than 16 hex digits.")
		}
		size = size<<4 | uint64(d)
	}
	if i == 0 {
		return newError(ErrMalformedBody, "The chunk header %q does not start with a hex chunk size.", clip(string(line)))
	}
	ext := line[i:]
	if r.mac != nil {
		if !bytes.HasPrefix(ext, []byte(chunkSignatureExt)) || !isSig(ext[len(chunkSignatureExt):]) {
			return newError(ErrMalformedBody, "The chunk header %q is not of the form <hex-size>;chunk-signature=<64 hex digits>.", clip(string(line)))
		}
		copy(r.wantSig[:], ext[len(chunkSignatureExt):])
	} else if len(ext) > 0 && ext[0] != ';' && ext[0] != ' ' && ext[0] != '\t' {
		return newError(ErrMalformedBody, "The chunk header %q has garbage after the chunk size.", clip(string(line)))
	}
	if size > uint64(r.max) {
		return newError(ErrMalformedBody, "A chunk of %d bytes exceeds the limit of %d bytes.", size, r.max)
	}
	n := int64(size)
	if r.decoded >= 0 && r.total+n > r.decoded {
		return newError(ErrBodyTooLarge, "The body carries more than the %d bytes announced in x-amz-decoded-content-length.", r.decoded)
	}
	if r.chunkHash != nil {
		r.chunkHash.Reset()
	}
	if n > 0 {
		r.remaining = n
		r.state = stateData
		return nil
	}
	// The final, empty chunk.
	if r.mac != nil {
		if err := r.verifyChunk(); err != nil {
			return err
		}
	}
	if r.decoded >= 0 && r.total != r.decoded {
		return newError(ErrIncompleteBody, "The body carries %d bytes, but x-amz-decoded-content-length announced %d.", r.total, r.decoded)
	}
	if err := r.readTrailers(); err != nil {
		return err
	}
	if r.sum != nil {
		r.checksum = r.alg.Encode(r.sum.Sum(nil))
	}
	r.state = stateDone
	return nil
}

func (r *ChunkedReader) readDataEnd() error {
	b, err := r.br.Peek(2)
	if err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return newError(ErrIncompleteBody, "The body ended after chunk data, before its CRLF.")
		}
		return err
	}
	if b[0] != '\r' || b[1] != '\n' {
		return newError(ErrMalformedBody, "Chunk data is not followed by CRLF.")
	}
	r.br.Discard(2)
	if r.mac != nil {
		if err := r.verifyChunk(); err != nil {
			return err
		}
	}
	r.state = stateHeader
	return nil
}

// verifyChunk checks the declared signature of the chunk just read (its
// data hashed in chunkHash) and chains it.
func (r *ChunkedReader) verifyChunk() error {
	var sum [32]byte
	r.chunkHash.Sum(r.scratch[:0])
	copy(sum[:], r.scratch[:32])
	got := r.chainSignature(r.chunkPrefix, r.chunkMid, &sum)
	if subtle.ConstantTimeCompare(got[:], r.wantSig[:]) != 1 {
		return newError(ErrSignatureDoesNotMatch, "The chunk signature we calculated does not match the signature you provided (chunk ending at byte %d).", r.total)
	}
	r.prevSig = got
	return nil
}

// chainSignature computes hex(HMAC(key, prefix + prevSig + mid + hex(sum))),
// where prefix is "<algorithm>\n<amzDate>\n<scope>\n".
func (r *ChunkedReader) chainSignature(prefix, mid []byte, sum *[32]byte) [64]byte {
	m := r.mac
	m.Reset()
	m.Write(prefix)
	m.Write(r.prevSig[:])
	m.Write(mid)
	hex.Encode(r.scratch[:], sum[:])
	m.Write(r.scratch[:])
	m.Sum(r.scratch[:0])
	var out [64]byte
	hex.Encode(out[:], r.scratch[:32])
	return out
}

// readTrailers reads the trailer section after the final chunk, up to and
// including the empty line, and verifies the trailer signature (signed
// trailer mode) and the checksum.
func (r *ChunkedReader) readTrailers() error {
	signedTrailer := r.mac != nil && r.alg != integrity.NoChecksum
	var canon []byte // "name:value\n" of each signed trailer
	var trailerSig [64]byte
	haveSum, haveSig := false, false
	for n := 0; ; n++ {
		if n > maxTrailerLines {
			return newError(ErrMalformedBody, "Too many trailer lines.")
		}
		line, err := r.readLine("trailer")
		if err != nil {
			return err
		}
		if len(line) == 0 {
			break
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return newError(ErrMalformedBody, "The trailer line %q is not of the form name:value.", clip(string(line)))
		}
		name, value = bytes.TrimSpace(name), bytes.TrimSpace(value)
		switch {
		case signedTrailer && asciiEqualFold(name, "x-amz-trailer-signature"):
			if haveSig || !isSig(value) {
				return newError(ErrMalformedBody, "The x-amz-trailer-signature trailer is repeated or not 64 lower-case hex digits.")
			}
			copy(trailerSig[:], value)
			haveSig = true
		case r.alg != integrity.NoChecksum && asciiEqualFold(name, r.alg.Header()):
			if haveSum || haveSig {
				return newError(ErrMalformedBody, "The %s trailer is repeated or follows the trailer signature.", r.alg.Header())
			}
			sum, ok := r.alg.Decode(string(value))
			if !ok {
				return with(newError(ErrInvalidDigest, "Value for %s trailing header is invalid.", r.alg.Header()), "algorithm", r.alg.String())
			}
			r.declared = sum
			haveSum = true
			canon = append(canon, r.alg.Header()...)
			canon = append(canon, ':')
			canon = append(canon, value...)
			canon = append(canon, '\n')
		default:
			return newError(ErrMalformedBody, "The trailer %q was not declared in x-amz-trailer.", clip(string(name)))
		}
	}
	if r.alg != integrity.NoChecksum && !haveSum {
		return newError(ErrMalformedBody, "The body does not end with the %s trailer declared in x-amz-trailer.", r.alg.Header())
	}
	if signedTrailer {
		if !haveSig {
			return newError(ErrMalformedBody, "The trailer has no x-amz-trailer-signature.")
		}
		sum := sha256.Sum256(canon)
		prefix := []byte("AWS4-HMAC-SHA256-TRAILER\n" + r.amzDate + "\n" + r.scope + "\n")
		got := r.chainSignature(prefix, []byte("\n"), &sum)
		if subtle.ConstantTimeCompare(got[:], trailerSig[:]) != 1 {
			return newError(ErrSignatureDoesNotMatch, "The trailer signature we calculated does not match the signature you provided.")
		}
		r.prevSig = got
	}
	if r.alg != integrity.NoChecksum {
		if got := r.sum.Sum(nil); !bytes.Equal(got, r.declared) {
			e := newError(ErrBadDigest, "The %s you specified did not match the calculated checksum.", r.alg.Header())
			with(e, "algorithm", r.alg.String())
			with(e, "want", r.alg.Encode(r.declared))
			return with(e, "got", r.alg.Encode(got))
		}
	}
	return nil
}

func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := 0; i < len(b); i++ {
		c, d := b[i], s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if 'A' <= d && d <= 'Z' {
			d += 'a' - 'A'
		}
		if c != d {
			return false
		}
	}
	return true
}

// isSig reports whether s is 64 lower-case hex digits.
func isSig[T string | []byte](s T) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
