package crypt

import (
	"crypto/subtle"
	"encoding/binary"
	"io"
	"sync"
)

// unsealReader is Decrypt's reader of DARE 2.0, the inverse of sealReader:
// it accepts exactly what sio's decrypting reader accepts (every check of
// sio's authDecV20.Open, in its order: TestUnsealMatchesSio,
// FuzzUnsealMatchesSio) and reads the ciphertext of up to unsealSegments
// segments with one Read of its source (sio read one segment a call: a
// 1 MiB read from a file was 16 read(2)s, now 4), opening each segment
// straight into the caller's buffer. The AEAD is the Stream's, built once
// per object key (sio built a cipher per stream).
//
// A caller buffer smaller than the next segment's payload is served from
// the ciphertext buffer, opened there in place.
type unsealReader struct {
	st  *Stream
	src io.Reader
	seq uint32 // index of the next segment (the nonce's counter, as sio's)
	// ref is the first header's nonce, the reference every later header's
	// must equal (with the final flag set on the final segment).
	ref    [12]byte
	refSet bool
	final  bool // the final segment was opened
	eof    bool // src returned io.EOF
	bufp   *[]byte
	ct     []byte // ciphertext read and not yet opened (in *bufp)
	out    []byte // plaintext opened in *bufp, not yet returned
	nonce  [12]byte
	err    error // sticky
}

// unsealSegments is how many sealed segments the ciphertext buffer holds:
// as many as WriteTo's plaintext buffer (copyBufSize) holds payloads, so
// each of its fills is one Read of the source.
const unsealSegments = copyBufSize / SegmentSize

// Ciphertext buffers: a large one for a stream of several segments, one
// segment's for a short range.
var (
	unsealBufs      = sync.Pool{New: func() any { b := make([]byte, unsealSegments*sealedSegment); return &b }}
	unsealSmallBufs = sync.Pool{New: func() any { b := make([]byte, sealedSegment); return &b }}
)

// unsealError is a format error: the ciphertext is not what was sealed
// (decReader.classify makes it an integrity error).
type unsealError struct{ msg string }

func (e *unsealError) Error() string { return e.msg }

// The format errors, as sio names them.
var (
	errUnsealVersion = &unsealError{"sio: unsupported version"}
	errUnsealCipher  = &unsealError{"sio: unsupported cipher suite"}
	errUnsealSize    = &unsealError{"sio: invalid payload size"}
	errUnsealNonce   = &unsealError{"sio: header nonce mismatch"}
	errUnsealTag     = &unsealError{"sio: authentication failed"}
	errUnsealData    = &unsealError{"sio: unexpected data after final package"}
	errUnsealShort   = &unsealError{"sio: unexpected EOF"}
)

// newUnsealReader returns the decrypting reader of src, whose first
// segment has index firstSegment, for a plaintext of about length bytes
// (it sizes the buffer: the ciphertext of length bytes fits).
func (s *Stream) newUnsealReader(src io.Reader, firstSegment uint32, length int64) *unsealReader {
	r := &unsealReader{st: s, src: src, seq: firstSegment}
	if length > SegmentSize {
		r.bufp = unsealBufs.Get().(*[]byte)
	} else {
		r.bufp = unsealSmallBufs.Get().(*[]byte)
	}
	return r
}

// release returns the ciphertext buffer to its pool (at the end of the
// stream or at its first error, as sio returned its buffer).
func (r *unsealReader) release() {
	if r.bufp == nil {
		return
	}
	if len(*r.bufp) == sealedSegment {
		unsealSmallBufs.Put(r.bufp)
	} else {
		unsealBufs.Put(r.bufp)
	}
	r.bufp, r.ct, r.out = nil, nil, nil
}

// fail records the sticky error and releases the buffer.
func (r *unsealReader) fail(err error) error {
	r.err = err
	r.release()
	return err
}

func (r *unsealReader) Read(p []byte) (int, error) {
	if len(r.out) > 0 {
		n := copy(p, r.out)
		r.out = r.out[n:]
		return n, nil
	}
	if r.err != nil {
		return 0, r.err
	}
	n := 0
	for len(p) > 0 {
		if err := r.fill(); err != nil {
			return n, r.fail(err)
		}
		if len(r.ct) == 0 { // the source ended
			if !r.final {
				return n, r.fail(errUnsealShort)
			}
			r.release()
			r.err = io.EOF
			if n > 0 {
				return n, nil
			}
			return 0, io.EOF
		}
		pkg := r.ct[:min(len(r.ct), sealedSegment)]
		size, err := r.check(pkg)
		if err != nil {
			return n, r.fail(err)
		}
		if len(p) >= size {
			if err := r.open(p[:0], pkg, size); err != nil {
				return n, r.fail(err)
			}
			r.ct = r.ct[len(pkg):]
			n += size
			p = p[size:]
			continue
		}
		// p is smaller than this payload: open it in place and hand it
		// out in pieces.
		if err := r.open(pkg[headerSize:headerSize], pkg, size); err != nil {
			return n, r.fail(err)
		}
		r.ct = r.ct[len(pkg):]
		r.out = pkg[headerSize : headerSize+size]
		m := copy(p, r.out)
		r.out = r.out[m:]
		return n + m, nil
	}
	return n, nil
}

// fill reads the source until r.ct holds a whole sealed segment, or the
// source ended (then r.ct holds the rest, possibly nothing). It reads as
// much as the buffer holds, so a file source is one read(2) per bufferful.
func (r *unsealReader) fill() error {
	if len(r.ct) >= sealedSegment || r.eof {
		return nil
	}
	var err error
	r.ct, r.eof, err = readAhead(r.src, *r.bufp, r.ct, sealedSegment)
	return err
}

// readAhead moves have (unconsumed bytes in buf, possibly none) to buf's
// start and reads src after them until at least least bytes are there or
// src ends (eof) or fails (its error, unchanged); each Read asks for all
// the room left. It returns the bytes in buf.
func readAhead(src io.Reader, buf, have []byte, least int) (_ []byte, eof bool, _ error) {
	if len(have) > 0 && &have[0] != &buf[0] {
		have = buf[:copy(buf, have)]
	} else {
		have = buf[:len(have)]
	}
	for len(have) < least {
		m, err := src.Read(buf[len(have):])
		have = buf[:len(have)+m]
		if err == io.EOF {
			return have, true, nil
		}
		if err != nil {
			return have, false, err
		}
	}
	return have, false, nil
}

// check validates a package's header as sio's authDecV20.Open does before
// it opens it, and returns the payload size.
func (r *unsealReader) check(pkg []byte) (int, error) {
	if r.final {
		return 0, errUnsealData
	}
	if len(pkg) <= headerSize+tagSize {
		return 0, errUnsealSize
	}
	h := pkg[:headerSize]
	if !r.refSet {
		copy(r.ref[:], h[4:headerSize])
		r.refSet = true
	}
	if h[0] != sioVersion20 {
		return 0, errUnsealVersion
	}
	// sio accepts the configured cipher (one per stream here) if it is
	// the first header's too: the first header passed the same check.
	if h[1] != r.st.cipher.sio() {
		return 0, errUnsealCipher
	}
	size := int(binary.LittleEndian.Uint16(h[2:4])) + 1
	if headerSize+size+tagSize != len(pkg) {
		return 0, errUnsealSize
	}
	final := h[4]&0x80 == 0x80
	if !final && size != SegmentSize {
		return 0, errUnsealSize
	}
	if final {
		r.ref[0] |= 0x80
	}
	if subtle.ConstantTimeCompare(h[4:headerSize], r.ref[:]) != 1 {
		return 0, errUnsealNonce
	}
	return size, nil
}

// open authenticates and decrypts pkg's payload of size bytes into dst
// (pkg's own payload, in place, or a buffer that does not overlap it).
func (r *unsealReader) open(dst, pkg []byte, size int) error {
	if r.final {
		return errUnsealData
	}
	final := pkg[4]&0x80 == 0x80
	copy(r.nonce[:], pkg[4:headerSize])
	binary.LittleEndian.PutUint32(r.nonce[8:], binary.LittleEndian.Uint32(r.nonce[8:])^r.seq)
	if _, err := r.st.aead.Open(dst, r.nonce[:], pkg[headerSize:headerSize+size+tagSize], pkg[:4]); err != nil {
		return errUnsealTag
	}
	r.seq++
	if final {
		r.final = true
	}
	return nil
}
