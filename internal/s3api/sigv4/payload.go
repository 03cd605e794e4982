package sigv4

import (
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// PayloadReader yields the object bytes of a verified request's body,
// verified as its PayloadMode requires. See NewPayloadReader.
type PayloadReader struct {
	r       io.Reader
	chunked *ChunkedReader
	length  int64
}

// NewPayloadReader wraps body (the request body) for the verified request
// res, with the request's header:
//
//   - PayloadSHA256: SHA-256 of the body checked at EOF
//     (ErrContentSHA256Mismatch);
//   - PayloadUnsigned: the body as is;
//   - the aws-chunked modes: decoded and verified by a ChunkedReader, with
//     x-amz-decoded-content-length (required) and x-amz-trailer from header.
//
// As with ChunkedReader, nothing may be committed until Read returns
// io.EOF. The S3 layer must also drop "aws-chunked" from the stored
// Content-Encoding.
func NewPayloadReader(body io.Reader, res Result, header http.Header) (*PayloadReader, error) {
	switch res.Payload {
	case PayloadUnsigned:
		return &PayloadReader{r: body, length: -1}, nil
	case PayloadSHA256:
		return &PayloadReader{r: NewSHA256Reader(body, res.PayloadHash), length: -1}, nil
	}
	v, ok := lookupHeader(header, "x-amz-decoded-content-length")
	if !ok || len(v) == 0 {
		return nil, newError(ErrMissingSecurityHeader, "Missing required header for this request: x-amz-decoded-content-length.")
	}
	n, err := strconv.ParseInt(v[0], 10, 64)
	if err != nil || n < 0 || len(v) > 1 || v[0][0] == '+' {
		return nil, newError(ErrInvalidArgument, "x-amz-decoded-content-length must be a non-negative integer.")
	}
	var trailer string
	if t, ok := lookupHeader(header, "x-amz-trailer"); ok {
		trailer = strings.TrimSpace(strings.Join(t, ","))
	}
	opts := ChunkOptions{DecodedLength: n, Trailer: trailer}
	var cr *ChunkedReader
	switch res.Payload {
	case PayloadStreaming:
		if trailer != "" {
			return nil, newError(ErrInvalidArgument, "x-amz-trailer requires x-amz-content-sha256: %s or %s.", StreamingPayloadTrailer, StreamingUnsignedPayloadTrailer)
		}
		cr, err = NewChunkedReader(body, res.Signature, res.SigningKey, res.Scope, res.AmzDate, opts)
	case PayloadStreamingTrailer:
		if trailer == "" {
			return nil, newError(ErrMissingSecurityHeader, "Missing required header for this request: x-amz-trailer.")
		}
		cr, err = NewChunkedReader(body, res.Signature, res.SigningKey, res.Scope, res.AmzDate, opts)
	case PayloadStreamingUnsignedTrailer:
		cr, err = NewUnsignedTrailerReader(body, opts)
	default:
		return nil, newError(ErrInvalidArgument, "Unknown payload mode %d.", int(res.Payload))
	}
	if err != nil {
		return nil, err
	}
	return &PayloadReader{r: cr, chunked: cr, length: n}, nil
}

// Read implements io.Reader.
func (p *PayloadReader) Read(b []byte) (int, error) { return p.r.Read(b) }

// DecodedLength returns the object size announced by
// x-amz-decoded-content-length for aws-chunked bodies, or -1 (the size is
// then the request's Content-Length).
func (p *PayloadReader) DecodedLength() int64 { return p.length }

// Checksum returns the verified trailing checksum after EOF; see
// ChunkedReader.Checksum.
func (p *PayloadReader) Checksum() (algorithm, value string) {
	if p.chunked == nil {
		return "", ""
	}
	return p.chunked.Checksum()
}

// NewSHA256Reader returns a reader of body that fails at EOF with
// ErrContentSHA256Mismatch unless the body's SHA-256 is wantHex (the
// x-amz-content-sha256 of a PayloadSHA256 request; case-insensitive).
func NewSHA256Reader(body io.Reader, wantHex string) io.Reader {
	return &sha256Reader{r: body, h: sha256.New(), want: strings.ToLower(wantHex)}
}

type sha256Reader struct {
	r    io.Reader
	h    hash.Hash
	want string
	err  error
}

func (s *sha256Reader) Read(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	n, err := s.r.Read(p)
	s.h.Write(p[:n])
	if err == io.EOF {
		if got := hex.EncodeToString(s.h.Sum(nil)); got != s.want {
			e := newError(ErrContentSHA256Mismatch, "The provided 'x-amz-content-sha256' header does not match what was computed.")
			with(e, "algorithm", "sha256")
			with(e, "want", s.want)
			err = with(e, "got", got)
		}
	}
	if err != nil {
		s.err = err
	}
	return n, err
}
