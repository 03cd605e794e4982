package crypt

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"io"
	"sync"

	"golang.org/x/crypto/chacha20poly1305"

	"github.com/coffer-storage/coffer/internal/errcode"
)

// sealReader is Encrypt's reader: it writes DARE 2.0 byte for byte as
// sio's encrypting reader does (TestSealMatchesSio), which reads what it
// wrote (Decrypt, and every object stored before), but seals each segment
// straight into the caller's buffer: for a caller with whole-segment
// buffers (diskblob) from a staging buffer that the source is read into up
// to four segments at a time (sealStaged: the AEAD reads the plaintext
// there and writes the ciphertext where it goes, no copy besides), for a
// first segment read with a smaller buffer in place. sio read each segment
// into a pooled buffer of its own, one Read of the source per segment,
// sealed it from there and copied every segment that did not fit the rest
// of the caller's buffer; it also never returned that buffer to its pool
// when the final segment was sealed into the caller's (a fresh 64 KiB for
// the next stream), and allocated a nonce per segment (issue 23,
// docs/PERFORMANCE.md).
//
// A Read returns at most one sealed segment, written as soon as it is
// sealed (diskblob writes what each Read yields). A caller buffer smaller
// than a sealed segment is served from a pooled one.
//
// The format (sio's DARE 2.0, see the package doc): per segment a 16-byte
// header — version 0x20, cipher, payload length - 1 (uint16, little
// endian), the stream's 12-byte random value with the final flag in the
// top bit of its first byte — then the AEAD ciphertext and tag of the
// payload, with the header's first 4 bytes as associated data and the
// header's 12 bytes, their last 4 XORed with the segment's index (uint32,
// little endian), as the nonce. Every segment holds SegmentSize bytes but
// the last, which carries the final flag and holds 1 to SegmentSize bytes;
// an empty plaintext is an empty stream.
type sealReader struct {
	aead    cipher.AEAD
	cipher  byte // sio's cipher id
	randVal [12]byte
	seq     uint64 // index of the next segment
	src     io.Reader
	// ahead is the byte read past the last segment (a segment is the
	// final one when no byte follows it); started says it was read.
	ahead   [1]byte
	started bool
	done    bool
	err     error // sticky: io.EOF once the final segment is out
	// pending is the rest of a segment sealed into buf for a caller
	// whose buffer could not hold it.
	pending []byte
	buf     *[]byte
	nonce   [12]byte // the segment's (a field: a local would escape to the heap through the AEAD interface)
	// stage holds plaintext read ahead for a caller with whole-segment
	// buffers (diskblob): staged is its unsealed part, srcEOF says the
	// source ended. See sealStaged.
	stage   *[]byte
	staged  []byte
	srcEOF  bool
	inPlace bool // never stage (benchmarks compare both ways)
}

const (
	sioVersion20 = 0x20
	headerSize   = 16
	tagSize      = 16
)

var sealBufs = sync.Pool{New: func() any {
	b := make([]byte, sealedSegment)
	return &b
}}

// stageSize is the plaintext read ahead for a caller with whole-segment
// buffers: four segments (and the byte that tells whether the fourth is
// the last), so a body is read from its socket, and hashed above it, in
// pieces of up to 256 KiB as a plaintext PUT's is (diskblob fills 256 KiB),
// not one segment at a time.
const stageSize = 4*SegmentSize + 1

var stageBufs = sync.Pool{New: func() any {
	b := make([]byte, stageSize)
	return &b
}}

// newAEAD returns the segment cipher c under key. An AEAD of the standard
// library (and x/crypto's ChaCha20-Poly1305) keeps no state between calls:
// one serves every stream of its key, concurrently.
func newAEAD(c Cipher, key []byte) (cipher.AEAD, error) {
	if c == ChaCha20Poly1305 {
		return chacha20poly1305.New(key)
	}
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(b)
}

// newSealReader returns the encrypting reader of plain under aead (a c).
func newSealReader(c Cipher, aead cipher.AEAD, plain io.Reader) *sealReader {
	r := &sealReader{aead: aead, cipher: c.sio(), src: plain}
	rand.Read(r.randVal[:]) // never fails (crypto/rand)
	return r
}

func (r *sealReader) Read(p []byte) (int, error) {
	if len(r.pending) > 0 {
		n := copy(p, r.pending)
		r.pending = r.pending[n:]
		if len(r.pending) == 0 {
			r.release()
		}
		return n, nil
	}
	if r.err != nil {
		return 0, r.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	if len(p) >= sealedSegment {
		seal := r.sealStaged
		if r.inPlace {
			seal = r.seal
		}
		n, err := seal(p[:sealedSegment])
		if err != nil {
			r.err = err
			r.releaseStage()
			if err != io.EOF || n == 0 {
				return n, err
			}
		}
		return n, nil
	}
	// A small buffer: seal into a pooled segment and hand it out in
	// pieces.
	if r.buf == nil {
		r.buf = sealBufs.Get().(*[]byte)
	}
	var n int
	var err error
	if r.stage != nil { // staged before, by a larger buffer
		n, err = r.sealStaged(*r.buf)
	} else {
		n, err = r.seal(*r.buf)
	}
	if err != nil {
		r.err = err
		r.releaseStage()
		if err != io.EOF || n == 0 {
			r.release()
			return 0, err
		}
	}
	m := copy(p, (*r.buf)[:n])
	r.pending = (*r.buf)[m:n]
	if len(r.pending) == 0 {
		r.release()
	}
	return m, nil
}

// ReadUnit is what a Read into a buffer of at least that size yields: one
// sealed segment (the last may be shorter). A Read into less seals the
// segment into a pooled buffer and copies it out, so a caller that fills
// its buffer before each write (diskblob, through blob.UnitReader) leaves
// room for whole segments only: without that, diskblob's 256 KiB buffer
// took three segments and a copy of the fourth, a quarter of an encrypted
// PUT's bytes (issue 23, fifth pass, in docs/PERFORMANCE.md).
func (r *sealReader) ReadUnit() int { return sealedSegment }

// release returns the pooled buffer, if any.
func (r *sealReader) release() {
	if r.buf != nil {
		r.pending = nil
		sealBufs.Put(r.buf)
		r.buf = nil
	}
}

// releaseStage returns the staging buffer, if any.
func (r *sealReader) releaseStage() {
	if r.stage != nil {
		stageBufs.Put(r.stage)
		r.stage, r.staged = nil, nil
	}
}

// errTooLong: the stream reached 2^32 segments, the format's limit
// (MaxPlaintextSize).
var errTooLong = errors.New("plaintext longer than the encryption format's limit")

// seal reads the next segment's plaintext into dst (sealedSegment bytes)
// after its header and seals it in place. It returns the sealed length,
// or io.EOF once the stream is complete (with the final segment's length,
// if it sealed it now), or the source's error unchanged.
func (r *sealReader) seal(dst []byte) (int, error) {
	if r.done {
		return 0, io.EOF
	}
	if !r.started {
		// The first byte, so that an empty source is an empty stream and
		// every segment knows whether another follows it.
		n, err := readFull(r.src, r.ahead[:])
		if err != nil {
			return 0, err
		}
		if n == 0 {
			r.done = true
			return 0, io.EOF
		}
		r.started = true
	}
	if r.seq >= 1<<32 {
		return 0, errcode.Wrap(errcode.TooLarge, errTooLong, "encrypt")
	}
	// The payload is the byte read ahead and up to SegmentSize more: one
	// more than a segment holds (it lands in the tag's place, overwritten
	// by the seal), to learn whether a byte follows the segment.
	payload := dst[headerSize : headerSize+SegmentSize+1]
	payload[0] = r.ahead[0]
	n, err := readFull(r.src, payload[1:])
	if err != nil {
		return 0, err
	}
	final := n < SegmentSize
	size := 1 + n
	if !final {
		r.ahead[0] = payload[SegmentSize]
		size = SegmentSize
	}
	return r.sealSegment(dst, dst[headerSize:headerSize+size], final)
}

// sealSegment writes the header of the next segment, whose plaintext is pt
// (in place after the header in dst, or elsewhere), into dst and seals pt
// after it. It returns what seal returns.
func (r *sealReader) sealSegment(dst, pt []byte, final bool) (int, error) {
	size := len(pt)
	h := dst[:headerSize]
	h[0], h[1] = sioVersion20, r.cipher
	binary.LittleEndian.PutUint16(h[2:4], uint16(size-1))
	copy(h[4:], r.randVal[:])
	if final {
		h[4] |= 0x80
	} else {
		h[4] &= 0x7f
	}
	nonce := r.nonce[:]
	copy(nonce, h[4:])
	binary.LittleEndian.PutUint32(nonce[8:], binary.LittleEndian.Uint32(nonce[8:])^uint32(r.seq))
	r.aead.Seal(dst[headerSize:headerSize], nonce, pt, h[:4])
	r.seq++
	out := headerSize + size + tagSize
	if final {
		r.done = true
		return out, io.EOF
	}
	return out, nil
}

// sealStaged is seal for a caller with whole-segment buffers: the
// plaintext is read ahead into the staging buffer with one Read of the
// source for as much as it holds (up to four segments), and each segment
// is sealed from there into dst (the AEAD reads it where it is and writes
// the ciphertext: no more copies than sealing in place). Only the
// unsealed rest of a segment, under 64 KiB, moves to the buffer's start
// before the next read.
func (r *sealReader) sealStaged(dst []byte) (int, error) {
	if r.done {
		return 0, io.EOF
	}
	if r.stage == nil {
		r.stage = stageBufs.Get().(*[]byte)
		r.staged = (*r.stage)[:0]
		if r.started { // the byte seal read ahead
			r.staged = append(r.staged, r.ahead[0])
		}
	}
	if len(r.staged) <= SegmentSize && !r.srcEOF {
		if err := r.refill(); err != nil {
			return 0, err
		}
	}
	if len(r.staged) == 0 { // an empty source: an empty stream
		r.done = true
		return 0, io.EOF
	}
	if r.seq >= 1<<32 {
		return 0, errcode.Wrap(errcode.TooLarge, errTooLong, "encrypt")
	}
	// A segment is the last one when no byte follows it.
	size := min(len(r.staged), SegmentSize)
	final := r.srcEOF && len(r.staged) == size
	pt := r.staged[:size]
	r.staged = r.staged[size:]
	return r.sealSegment(dst, pt, final)
}

// refill reads the source into the staging buffer until it holds more
// than a segment (a segment and the byte that says one follows) or the
// source ends; each Read asks for all the room left. The source's errors
// pass unchanged.
func (r *sealReader) refill() error {
	var err error
	r.staged, r.srcEOF, err = readAhead(r.src, *r.stage, r.staged, SegmentSize+1)
	return err
}

// readFull reads into p until it is full or src ends: (len(p), nil), or
// (fewer, nil) at io.EOF, or the source's error as it is (io.ReadFull
// would turn an early end into io.ErrUnexpectedEOF, and sio took a source's
// own io.ErrUnexpectedEOF for the end of the stream).
func readFull(src io.Reader, p []byte) (int, error) {
	n := 0
	for n < len(p) {
		m, err := src.Read(p[n:])
		n += m
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
	return n, nil
}
