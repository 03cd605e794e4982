// Package crypt encrypts object bytes at rest: each object (each part of a
// multipart object, each inline object) gets its own random 256-bit data
// key, and its bytes are sealed in fixed-size authenticated segments that
// can be decrypted independently, so a Range reads only the segments it
// touches.
//
// # Format
//
// The byte stream is DARE 2.0 (github.com/minio/sio, the format MinIO has
// stored encrypted objects in for years): 64 KiB plaintext segments, each
// sealed with AES-256-GCM (or ChaCha20-Poly1305) as a 16-byte header, the
// ciphertext and a 16-byte tag. The header holds a per-stream random nonce;
// each segment's nonce is that nonce XOR its index, and the last segment
// carries a final flag inside the authenticated nonce. So a segment cannot
// be moved to another index (its nonce changes), the stream cannot be cut
// short (the new last segment lacks the final flag) and nothing can follow
// the final segment.
//
// DARE has no associated data, so each object's segments are sealed under
// an object key derived with HKDF-SHA256 from the data key, the envelope's
// random 32-byte salt and the object's identity (the caller's name for the
// bytes: the blob key). A segment or a whole blob from another object, or
// bytes presented under another identity, fail authentication.
//
// The sizes are exact and cheap: see CiphertextSize and Range.
//
// # Envelope
//
// Envelope is what the metadata store keeps next to the object: mode,
// cipher, segment size, salt, the wrapped data key and the id/version of the
// key-encryption key (KEK) that wrapped it, or, for customer keys (SSE-C), a
// salted HMAC of the customer key to recognise it (never the key). It has a
// compact, versioned binary form (Marshal / ParseEnvelope). This package
// never talks to a key provider: the caller (package kms) wraps and unwraps
// data keys; crypt wraps them only with customer keys.
//
// # Errors
//
// Ciphertext that fails authentication — a flipped byte, a swapped,
// reordered or missing segment, a truncated blob, another object's bytes —
// fails the read with an error for which IsIntegrity is true (errcode.Internal
// with Detail["reason"] = "integrity", wrapping ErrIntegrity). No byte of a
// segment is returned before the whole segment has been authenticated, so a
// reader never yields wrong bytes: it yields the exact plaintext or an
// error. Errors of the underlying reader (a blob store that is down, a
// cancelled request) pass through unchanged.
//
// # Memory
//
// A decrypting stream holds one pooled ciphertext buffer besides the
// caller's own buffer: one sealed segment (64 KiB + 32 bytes) for a range
// within a segment, else four (256 KiB + 128 bytes: one read of the blob
// per four segments, see unsealReader). An encrypting one seals into the
// caller's buffer from a pooled staging buffer of four segments (+1 byte)
// of plaintext read ahead, and holds one more segment only while serving
// a caller whose buffer is smaller than a sealed segment. Memory per stream is bounded
// whatever the object's size. A decrypting reader's WriteTo (what io.Copy
// uses) adds one pooled buffer of four segments, decrypted into directly
// and written out in one call; for a rest of 1 MiB or more, two such
// buffers (one filled by a goroutine while the other is written): at most
// 768 KiB + 128 bytes per stream.
package crypt

import (
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/coffer-storage/coffer/internal/errcode"
)

// SegmentSize is the plaintext size of every segment but the last.
const SegmentSize = 64 << 10

// segmentOverhead is what each segment adds: a 16-byte header and a 16-byte
// authentication tag.
const segmentOverhead = 32

// sealedSegment is the ciphertext size of a full segment.
const sealedSegment = SegmentSize + segmentOverhead

// KeySize is the size of data keys and customer keys in bytes.
const KeySize = 32

// MaxPlaintextSize is the largest object the format can hold (2^32 segments).
const MaxPlaintextSize = int64(SegmentSize) << 32

// ErrIntegrity is the cause of every integrity error; see IsIntegrity.
var ErrIntegrity = errors.New("ciphertext failed authentication")

// integrityErr wraps cause (for logs) in the integrity error.
func integrityErr(cause error) error {
	err := ErrIntegrity
	if cause != nil {
		err = fmt.Errorf("%w: %v", ErrIntegrity, cause)
	}
	return &errcode.Error{Code: errcode.Internal, Message: "stored object failed its integrity check",
		Err: err, Detail: map[string]any{"reason": "integrity"}}
}

// IsIntegrity reports whether err says that stored ciphertext was tampered
// with or damaged.
func IsIntegrity(err error) bool { return errors.Is(err, ErrIntegrity) }

// CiphertextSize returns the exact ciphertext size of a plaintext of size
// bytes: what a blob Put of the encrypted stream must announce.
func CiphertextSize(size int64) (int64, error) {
	if size < 0 || size > MaxPlaintextSize {
		return 0, errcode.New(errcode.InvalidArgument, "plaintext size %d out of range", size)
	}
	n := (size / SegmentSize) * sealedSegment
	if r := size % SegmentSize; r > 0 {
		n += r + segmentOverhead
	}
	return n, nil
}

// PlaintextSize is the inverse of CiphertextSize; a size no plaintext
// encrypts to is an integrity error.
func PlaintextSize(size int64) (int64, error) {
	if size < 0 {
		return 0, integrityErr(fmt.Errorf("negative ciphertext size %d", size))
	}
	n := (size / sealedSegment) * SegmentSize
	if r := size % sealedSegment; r > 0 {
		if r <= segmentOverhead {
			return 0, integrityErr(fmt.Errorf("ciphertext size %d is no valid stream size", size))
		}
		n += r - segmentOverhead
	}
	if n > MaxPlaintextSize {
		return 0, integrityErr(fmt.Errorf("ciphertext size %d too large", size))
	}
	return n, nil
}

// Range returns the ciphertext bytes [off, off+n) to fetch to decrypt the
// plaintext bytes [offset, offset+length) of an object of plainSize bytes:
// the whole segments the range touches, and no others. length -1 means to
// the end; a range running past the end is cut at the end, as blob.Store.Get
// does. offset > plainSize is errcode.RangeNotSatisfiable.
func Range(plainSize, offset, length int64) (off, n int64, err error) {
	offset, length, err = clip(plainSize, offset, length)
	if err != nil || length == 0 {
		return 0, 0, err
	}
	first := offset / SegmentSize
	last := (offset + length - 1) / SegmentSize
	ctSize, err := CiphertextSize(plainSize)
	if err != nil {
		return 0, 0, err
	}
	off = first * sealedSegment
	end := min((last+1)*sealedSegment, ctSize)
	return off, end - off, nil
}

// clip validates and normalises a plaintext range.
func clip(plainSize, offset, length int64) (int64, int64, error) {
	if plainSize < 0 || plainSize > MaxPlaintextSize {
		return 0, 0, errcode.New(errcode.InvalidArgument, "plaintext size %d out of range", plainSize)
	}
	if offset < 0 || offset > plainSize {
		return 0, 0, errcode.New(errcode.RangeNotSatisfiable, "offset %d outside the object's %d bytes", offset, plainSize)
	}
	if length < 0 || length > plainSize-offset {
		length = plainSize - offset
	}
	return offset, length, nil
}

// NewDataKey returns a fresh random data key.
func NewDataKey() []byte {
	k := make([]byte, KeySize)
	rand.Read(k) // never fails (crypto/rand)
	return k
}

// Stream is one object's encryption state: the object key derived from its
// data key, envelope and identity. It is safe for concurrent use; each
// Encrypt or Decrypt call makes an independent stream.
type Stream struct {
	cipher Cipher
	key    [KeySize]byte
	aead   cipher.AEAD // of key: built once per object key (a cached stream serves many reads)
}

// NewStream derives the object key of the object identified by identity
// (the blob key, or whatever name the caller binds the bytes to: decrypting
// needs the same one) from its data key and envelope.
func NewStream(dataKey []byte, env *Envelope, identity string) (*Stream, error) {
	if len(dataKey) != KeySize {
		return nil, errcode.New(errcode.InvalidArgument, "data key must be %d bytes, not %d", KeySize, len(dataKey))
	}
	if err := env.validate(); err != nil {
		return nil, err
	}
	info := make([]byte, 0, len(hkdfLabel)+2+len(identity))
	info = append(info, hkdfLabel...)
	info = append(info, byte(env.Cipher), byte(env.Version))
	info = append(info, identity...)
	k, err := hkdf.Key(sha256.New, dataKey, env.Salt[:], string(info), KeySize)
	if err != nil {
		return nil, errcode.Wrap(errcode.Internal, err, "derive object key")
	}
	s := &Stream{cipher: env.Cipher}
	copy(s.key[:], k)
	if s.aead, err = newAEAD(env.Cipher, s.key[:]); err != nil {
		return nil, errcode.Wrap(errcode.Internal, err, "object cipher")
	}
	return s, nil
}

const hkdfLabel = "coffer/crypt object key v1\x00"

// Encrypt returns a reader of the ciphertext of plain. It reads plain as
// it is read (streaming, at most four segments ahead) and passes plain's
// errors on unchanged, so a failing source fails the ciphertext stream: a
// blob Put consuming it stores nothing. A plaintext of n bytes yields
// exactly CiphertextSize(n) bytes. For the best throughput, read it with
// buffers of at least 64 KiB + 32 bytes: plain is then read in pieces of
// up to four segments and each segment sealed from there straight into the
// caller's buffer (sealReader); a Read returns at most one sealed segment.
func (s *Stream) Encrypt(plain io.Reader) io.Reader {
	return newSealReader(s.cipher, s.aead, plain)
}

// Fetcher returns a reader over the ciphertext bytes [off, off+n), as
// blob.Store.Get does (a missing blob's error passes through).
type Fetcher func(off, n int64) (io.ReadCloser, error)

// Open returns the plaintext bytes [offset, offset+length) of an object of
// plainSize bytes (length -1: to the end), fetching only the ciphertext
// segments the range touches (see Range). The reader yields exactly those
// bytes, then io.EOF; or an integrity error (see IsIntegrity) if the
// ciphertext is not what was sealed, including when it is shorter than
// plainSize implies. The caller must Close it.
func (s *Stream) Open(fetch Fetcher, plainSize, offset, length int64) (io.ReadCloser, error) {
	offset, length, err := clip(plainSize, offset, length)
	if err != nil {
		return nil, err
	}
	if length == 0 {
		return io.NopCloser(eofReader{}), nil
	}
	off, n, err := Range(plainSize, offset, length)
	if err != nil {
		return nil, err
	}
	ct, err := fetch(off, n)
	if err != nil {
		if errcode.Is(err, errcode.RangeNotSatisfiable) {
			// The blob is shorter than the object's size implies.
			return nil, integrityErr(err)
		}
		return nil, err
	}
	r, err := s.Decrypt(ct, offset%SegmentSize, offset/SegmentSize, length)
	if err != nil {
		ct.Close()
		return nil, err
	}
	return openReader{r.(*decReader), ct}, nil
}

// openReader is Open's reader: Read and WriteTo of the plaintext, Close of
// the ciphertext source.
type openReader struct {
	*decReader
	io.Closer
}

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

// Decrypt returns a reader of length plaintext bytes from ct, a ciphertext
// stream that starts at the start of segment number firstSegment (as
// fetched from Range's offset), skipping the first skip plaintext bytes of
// that segment. It fails with an integrity error if ct ends before length
// bytes could be authenticated and returned. Most callers want Open.
func (s *Stream) Decrypt(ct io.Reader, skip, firstSegment, length int64) (io.Reader, error) {
	if firstSegment < 0 || firstSegment >= 1<<32 || skip < 0 || skip >= SegmentSize || length < 0 {
		return nil, errcode.New(errcode.InvalidArgument, "decrypt range out of bounds")
	}
	src := &source{r: ct}
	r := s.newUnsealReader(src, uint32(firstSegment), skip+length)
	return &decReader{src: r, ct: src, skip: skip, remaining: length}, nil
}

// source wraps the ciphertext reader to tell its failures from the
// format's: an error other than io.EOF is the source's own (a dropped
// connection, a cancelled request) and must not pass for tampering. Its
// io.ErrUnexpectedEOF is hidden from the format reader (sio took it for a
// short segment).
type source struct {
	r   io.Reader
	err error
}

var errSourceShort = errors.New("ciphertext source ended unexpectedly")

func (s *source) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err != nil && err != io.EOF {
		s.err = err
		if err == io.ErrUnexpectedEOF {
			err = errSourceShort
		}
	}
	return n, err
}

// decReader skips into the first segment, delivers exactly remaining bytes
// and turns short or inauthentic ciphertext into integrity errors. Errors
// are sticky.
type decReader struct {
	src       io.Reader
	ct        *source
	skip      int64
	remaining int64
	err       error
}

func (d *decReader) Read(p []byte) (int, error) {
	if d.err != nil {
		return 0, d.err
	}
	if d.skip > 0 {
		n, err := io.CopyN(io.Discard, d.src, d.skip)
		d.skip -= n
		if err != nil {
			d.err = d.classify(err)
			return 0, d.err
		}
	}
	if d.remaining <= 0 {
		d.err = io.EOF
		return 0, io.EOF
	}
	if int64(len(p)) > d.remaining {
		p = p[:d.remaining]
	}
	n, err := d.src.Read(p)
	d.remaining -= int64(n)
	switch {
	case d.remaining == 0:
		d.err = io.EOF
		// unsealReader delivers only authenticated segments: whatever
		// err says about later bytes, these n are the requested ones.
		// Drain the rest of the last segment (already decrypted, less
		// than one segment) so the reader returns its pooled buffer and
		// the source is read to its end (a connection can be reused).
		if err == nil {
			_, _ = io.Copy(io.Discard, d.src)
		}
		return n, nil
	case err != nil:
		d.err = d.classify(err)
		return n, d.err
	}
	return n, nil
}

// copyBufSize is WriteTo's buffer: four segments, which unsealReader
// opens straight into it (no intermediate copy) from one read of their
// ciphertext, handed to the writer in one call (a 1 MiB response is 4
// socket writes, not 32 with io.Copy's 32 KiB buffer).
const copyBufSize = 4 * SegmentSize

// smallRead is the largest read WriteTo serves with a buffer of its own
// size rather than a pooled one.
const smallRead = 16 << 10

var copyBufs = sync.Pool{New: func() any {
	b := make([]byte, copyBufSize)
	return &b
}}

// WriteTo writes the rest of the plaintext to w (io.Copy calls it), with
// Read's guarantees: only authenticated bytes are written; an integrity
// error or the source's error ends it.
func (d *decReader) WriteTo(w io.Writer) (int64, error) {
	if d.remaining >= readAheadMin {
		return d.writeToAhead(w)
	}
	var buf []byte
	if d.remaining <= smallRead {
		// A small object or range: less than one segment, which
		// unsealReader decrypts in its own buffer anyway; no large
		// buffer for it.
		buf = make([]byte, max(d.remaining, 1))
	} else {
		bp := copyBufs.Get().(*[]byte)
		defer copyBufs.Put(bp)
		buf = *bp
	}
	var total int64
	for {
		n, err := d.Read(buf)
		if n > 0 {
			m, werr := w.Write(buf[:n])
			total += int64(m)
			if werr == nil && m != n {
				werr = io.ErrShortWrite
			}
			if werr != nil {
				return total, werr
			}
		}
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

// readAheadMin is the smallest rest of a stream WriteTo decrypts ahead
// for: while one buffer is written to the client, a goroutine decrypts
// the next (fetching its ciphertext), so decryption overlaps the socket
// writes. Two pooled buffers per stream, whatever its size.
const readAheadMin = 4 * copyBufSize

// writeToAhead is WriteTo with the next buffer decrypted while the last
// one is written: two pooled buffers, one being filled by a goroutine,
// one being written. The goroutine has returned before writeToAhead does
// (the caller may close the source then); a write error stops it.
func (d *decReader) writeToAhead(w io.Writer) (int64, error) {
	type chunk struct {
		bp  *[]byte
		n   int
		err error
	}
	free := make(chan *[]byte, 2) // never blocks: two buffers exist
	full := make(chan chunk, 1)
	stop := make(chan struct{})
	free <- copyBufs.Get().(*[]byte)
	free <- copyBufs.Get().(*[]byte)
	go func() {
		defer close(full)
		for {
			select {
			case <-stop: // checked first: a free buffer must not win after a stop
				return
			default:
			}
			var bp *[]byte
			select {
			case bp = <-free:
			case <-stop:
				return
			}
			n, err := d.Read(*bp)
			full <- chunk{bp, n, err} // the writer drains full until it is closed
			if err != nil {
				return
			}
		}
	}()
	var total int64
	var err error
	for c := range full {
		if err == nil && c.n > 0 {
			m, werr := w.Write((*c.bp)[:c.n])
			total += int64(m)
			if werr == nil && m != c.n {
				werr = io.ErrShortWrite
			}
			if werr != nil {
				err = werr
				close(stop)
			}
		}
		if err == nil && c.err != nil && c.err != io.EOF {
			err = c.err
		}
		free <- c.bp
	}
	close(free)
	for bp := range free {
		copyBufs.Put(bp)
	}
	return total, err
}

// classify maps a decryption stream error: the format's (and an early
// end) are integrity errors, the underlying reader's pass through.
func (d *decReader) classify(err error) error {
	if d.ct.err != nil {
		return d.ct.err
	}
	var ue *unsealError
	switch {
	case errors.As(err, &ue), err == io.EOF, err == io.ErrUnexpectedEOF:
		return integrityErr(err)
	}
	return err
}
