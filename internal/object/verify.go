package object

import (
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/integrity"
	"github.com/coffer-storage/coffer/internal/meta"
)

// Verified reads (docs/operations.md#integrity-of-stored-bytes)
//
// A blob is written once (temporary file, fsync, rename; or a durable
// remote PUT) and never changed, so a blob whose bytes differ from what
// was recorded at its write is damaged: a torn write, bit rot, a file
// truncated or overwritten behind Coffer's back, a store that lost data.
// What a read checks:
//
//   - every plaintext byte range read from a blob must come whole: a blob
//     shorter than its recorded size is an error (exactReader), never a
//     short range followed by the next part's bytes;
//   - a full read of a plaintext single-blob object (a GET without Range,
//     a copy, a zip entry) is checked against its recorded size and
//     CRC-32C (meta.Object.CRC32C, recorded by its write since migration
//     0029; an object written before has none and is checked against its
//     SHA-256) while it streams (verifiedReader), and its last byte is
//     held back until the check passed: a damaged blob is never sent
//     whole, the response is cut before its end (the client sees a
//     broken transfer, never a clean 200). The CRC costs ~1/20 of the
//     SHA-256 (hardware CRC32 instruction) and finds what the reads are
//     there to find: damage by accident (bit rot, a torn or overwritten
//     file, a lossy store), every burst of up to 32 bits and all but
//     2^-32 of other damage. The scrub checks both;
//   - encrypted bytes are authenticated segment by segment (crypt: every
//     64 KiB segment carries an AEAD tag), on every read, ranged or not:
//     no second digest is computed for them.
//
// A ranged read of a plaintext object cannot check the whole digest:
// only the scrub (scrub.go, coffer fsck) finds bit rot there, and in
// multipart objects (whose parts record an MD5 or a CRC-32C in their
// ETags, checked by the scrub: partDigest).
// Each failure is logged, counted (ReadStats) and recorded as a finding
// the scrub's report lists (meta.Scrubs).

// castagnoli is CRC-32C's table (SSE 4.2's CRC32 instruction on amd64,
// the ARMv8 CRC instructions on arm64: over 10 GB/s a core).
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// crcReader computes the CRC-32C of what is read through it: the write
// of a plaintext blob records it (meta.Object.CRC32C) for verified reads.
type crcReader struct {
	r   io.Reader
	crc uint32
}

func (c *crcReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.crc = crc32.Update(c.crc, castagnoli, p[:n])
	return n, err
}

// sum is the CRC-32C read so far, as stored (4 bytes, big-endian).
func (c *crcReader) sum() []byte { return binary.BigEndian.AppendUint32(nil, c.crc) }

// ReadStats are this node's counters of damaged reads (metrics).
type ReadStats struct {
	// Corrupt counts reads that found a blob whose size or digest differs
	// from its record; Failed reads the blob store failed (an I/O error)
	// after the object was found.
	Corrupt, Failed atomic.Int64
}

// ReadStats returns this node's counters of damaged reads.
func (s *Service) ReadStats() *ReadStats { return &s.readStats }

// errCorrupt is the error of a blob whose bytes differ from its record.
func errCorrupt(blobKey string, cause error) error {
	return &errcode.Error{Code: errcode.Internal, Message: "stored object failed its integrity check",
		Detail: map[string]any{"reason": "integrity", "blob": blobKey}, Err: cause}
}

// IsCorrupt reports whether err is a failed integrity check of stored
// bytes (a damaged blob, or encrypted bytes that fail authentication).
func IsCorrupt(err error) bool {
	e := errcode.As(err)
	return e != nil && e.Detail["reason"] == "integrity"
}

// exactReader reads a range of n bytes of blob key and fails if the blob
// ends before (a torn or truncated blob); its WriteTo keeps the blob
// store's (sendfile for a file).
type exactReader struct {
	io.ReadCloser
	ctx  context.Context // the read's, for the log line of a failure
	c    *core
	o    meta.Object
	key  string
	n    int64 // bytes still expected
	done bool  // reported
}

func (e *exactReader) Read(p []byte) (int, error) {
	n, err := e.ReadCloser.Read(p)
	e.n -= int64(n)
	return n, e.check(err)
}

func (e *exactReader) WriteTo(w io.Writer) (int64, error) {
	var (
		n   int64
		err error
	)
	if wt, ok := e.ReadCloser.(io.WriterTo); ok {
		n, err = wt.WriteTo(w)
		if err == nil {
			err = io.EOF
		}
	} else {
		n, err = io.Copy(w, struct{ io.Reader }{e.ReadCloser})
		if err == nil {
			err = io.EOF
		}
	}
	e.n -= n
	if err = e.check(err); err == io.EOF {
		err = nil
	}
	return n, err
}

// check turns an early EOF into an integrity error, and reports store
// failures.
func (e *exactReader) check(err error) error {
	switch {
	case err == io.EOF && e.n > 0:
		err = errCorrupt(e.key, errcode.New(errcode.IncompleteBody, "blob ended %d bytes before its recorded size", e.n))
	case err == io.EOF && e.n < 0:
		err = errCorrupt(e.key, errcode.New(errcode.TooLarge, "blob range longer than asked by %d bytes", -e.n))
	case err == nil || err == io.EOF:
		return err
	}
	if !e.done {
		e.done = true
		e.c.readFailed(e.ctx, e.o, e.key, err)
	}
	return err
}

// crcCheck is integrity.Reader's check of a whole blob with its
// recorded CRC-32C instead of its SHA-256: it fails a byte past size
// (TooLarge), and at EOF a short blob (IncompleteBody) or another CRC
// (ChecksumMismatch). Errors of the blob store pass through.
type crcCheck struct {
	r         io.Reader
	size, n   int64
	want, crc uint32
	err       error // sticky
}

func (c *crcCheck) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.r.Read(p)
	if c.n += int64(n); c.n > c.size {
		c.err = errcode.New(errcode.TooLarge, "blob is longer than its recorded %d bytes", c.size)
		return 0, c.err
	}
	c.crc = crc32.Update(c.crc, castagnoli, p[:n])
	switch {
	case err == io.EOF && c.n != c.size:
		c.err = errcode.New(errcode.IncompleteBody, "blob has %d bytes, %d recorded", c.n, c.size)
	case err == io.EOF && c.crc != c.want:
		c.err = integrity.Mismatch("crc32c", binary.BigEndian.AppendUint32(nil, c.want), binary.BigEndian.AppendUint32(nil, c.crc))
	case err != nil:
		c.err = err
		return n, err
	default:
		return n, nil
	}
	return n, c.err
}

// verifiedReader reads a whole plaintext blob through crcCheck (its
// recorded size and CRC-32C) or, for an object without a CRC-32C,
// integrity.Reader (size and SHA-256), and holds its last byte back until
// the check at EOF passed.
type verifiedReader struct {
	ctx  context.Context // the read's, for the log line of a failure
	rc   io.Closer
	ir   io.Reader // *integrity.Reader or *crcCheck: size and digest checked at EOF
	c    *core
	o    meta.Object
	key  string
	left int64 // bytes not yet handed out
	err  error // sticky
	// storeErr is the blob store's read error, which integrity.Reader
	// reports as a body's (IncompleteBody).
	storeErr error
}

// storeReader records its reader's error (but io.EOF) in err.
type storeReader struct {
	r   io.Reader
	err *error
}

func (s storeReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err != nil && err != io.EOF {
		*s.err = err
	}
	return n, err
}

// verified opens the whole blob key of o (plaintext, o.Size bytes, whose
// SHA-256 is sum) for a verified read.
func (c *core) verified(ctx context.Context, o meta.Object, key string, sum []byte) (io.ReadCloser, error) {
	rc, err := c.blobs.Get(ctx, key, 0, -1)
	if err != nil {
		if !errcode.Is(err, errcode.NotFound) {
			c.readFailed(ctx, o, key, err)
		}
		return nil, err
	}
	v := &verifiedReader{rc: rc, ctx: ctx, c: c, o: o, key: key, left: o.Size}
	src := storeReader{rc, &v.storeErr}
	if len(o.CRC32C) == 4 {
		v.ir = &crcCheck{r: src, size: o.Size, want: binary.BigEndian.Uint32(o.CRC32C)}
	} else { // written before CRC-32Cs were recorded
		v.ir = integrity.NewReader(src, integrity.Options{Size: o.Size, SHA256: sum, NoMD5: true})
	}
	if o.Size == 0 {
		// Nothing to hold back: check now (a zero-byte object's blob must
		// be empty), before any header is sent.
		if err := v.finish(nil); err != nil {
			rc.Close()
			return nil, err
		}
	}
	return v, nil
}

func (v *verifiedReader) Read(p []byte) (int, error) {
	if v.err != nil {
		return 0, v.err
	}
	if v.left == 0 {
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	if v.left > 1 {
		// Everything but the last byte passes through.
		if int64(len(p)) > v.left-1 {
			p = p[:v.left-1]
		}
		n, err := v.ir.Read(p)
		v.left -= int64(n)
		if err == io.EOF {
			err = nil // short: finish says so at the last byte
			if n == 0 {
				return 0, v.finish(nil)
			}
		}
		if err != nil {
			v.err = v.fail(err)
			return n, v.err
		}
		return n, nil
	}
	// The last byte: read it, then EOF, whose check it must pass.
	var last [1]byte
	n, err := io.ReadFull(v.ir, last[:])
	if err != nil {
		if err == io.ErrUnexpectedEOF || err == io.EOF {
			err = nil
		}
		return 0, v.finish(err)
	}
	if err := v.finish(nil); err != nil {
		return 0, err
	}
	p[0] = last[0]
	v.left = 0
	return n, nil
}

// finish reads on to EOF (the check) unless err already failed the read.
func (v *verifiedReader) finish(err error) error {
	if err == nil {
		// integrity.Reader fails a byte past the recorded size (TooLarge)
		// and checks the digest at EOF.
		var extra [1]byte
		for i := 0; err == nil && i < 100; i++ {
			_, err = v.ir.Read(extra[:])
		}
		if err == io.EOF {
			return nil
		}
		if err == nil {
			err = errcode.New(errcode.Internal, "blob store gives no end of the blob")
		}
	}
	v.err = v.fail(err)
	return v.err
}

// fail classifies and reports a read's error.
func (v *verifiedReader) fail(err error) error {
	switch {
	case v.storeErr != nil:
		err = v.storeErr
	case errcode.Of(err) == errcode.ChecksumMismatch, errcode.Of(err) == errcode.IncompleteBody, errcode.Of(err) == errcode.TooLarge:
		err = errCorrupt(v.key, err)
	}
	if !errors.Is(err, context.Canceled) {
		v.c.readFailed(v.ctx, v.o, v.key, err)
	}
	return err
}

func (v *verifiedReader) Close() error { return v.rc.Close() }

// verifyBufs are WriteTo's buffers.
var verifyBufs = sync.Pool{New: func() any { b := make([]byte, 128<<10); return &b }}

// WriteTo copies the verified bytes to w through a pooled buffer (io.Copy
// uses it: no buffer of its own per read); a whole blob in a file with a
// recorded CRC-32C goes out with sendfile instead (sendChecked).
func (v *verifiedReader) WriteTo(w io.Writer) (int64, error) {
	if fb, ok := v.rc.(fileBlob); ok && v.err == nil && v.left == v.o.Size && v.o.Size > 1 {
		if cc, ok := v.ir.(*crcCheck); ok && cc.n == 0 {
			if f, left := fb.File(); left == v.o.Size {
				return v.sendChecked(w, f, cc.want)
			}
		}
	}
	bp := verifyBufs.Get().(*[]byte)
	defer verifyBufs.Put(bp)
	return io.CopyBuffer(w, struct{ io.Reader }{v}, *bp)
}

// fileBlob is a blob store reader backed by a file (diskblob).
type fileBlob interface {
	File() (*os.File, int64)
}

// sendWindow is how many bytes sendChecked checks before it has the
// kernel send them.
const sendWindow = 1 << 20

// sendChecked sends the blob in file f (whole, positioned at its start)
// to w window by window: each window's bytes are read with pread into a
// pooled buffer and added to the CRC-32C, then sent from the file by the
// kernel (w's ReadFrom: sendfile to a TCP connection), so the bytes cross
// into the process once instead of twice (read, then write). As with
// Read, the last byte is held back until the whole CRC-32C and the size
// matched: a damaged blob is never sent whole. The bytes sent are the
// page cache's pages the check just read (a blob is never rewritten).
func (v *verifiedReader) sendChecked(w io.Writer, f *os.File, want uint32) (int64, error) {
	bp := verifyBufs.Get().(*[]byte)
	defer verifyBufs.Put(bp)
	buf := *bp
	size := v.o.Size
	var crc uint32
	var sent int64
	failed := func(err error) (int64, error) {
		if errcode.As(err) == nil {
			v.storeErr = err // the store's (an I/O error), not the bytes'
		}
		v.err = v.fail(err)
		return sent, v.err
	}
	for off := int64(0); off < size-1; {
		end := min(off+sendWindow, size-1)
		for pos := off; pos < end; {
			n, err := f.ReadAt(buf[:min(int64(len(buf)), end-pos)], pos)
			crc = crc32.Update(crc, castagnoli, buf[:n])
			pos += int64(n)
			if err == io.EOF && pos < end {
				err = errcode.New(errcode.IncompleteBody, "blob ended at %d bytes, %d recorded", pos, size)
			}
			if err != nil && err != io.EOF {
				return failed(err)
			}
		}
		n, err := io.Copy(w, &io.LimitedReader{R: f, N: end - off})
		sent += n
		v.left -= n
		if err == nil && n != end-off {
			err = io.ErrUnexpectedEOF // the file shrank under us
		}
		if err != nil {
			v.err = err
			return sent, err
		}
		off = end
	}
	// The last byte, and nothing after it: then the check.
	var tail [2]byte
	n, err := f.ReadAt(tail[:], size-1)
	switch {
	case n == 2:
		return failed(errcode.New(errcode.TooLarge, "blob is longer than its recorded %d bytes", size))
	case n == 0 && (err == nil || err == io.EOF):
		return failed(errcode.New(errcode.IncompleteBody, "blob ended at %d bytes, %d recorded", size-1, size))
	case err != nil && err != io.EOF:
		return failed(err)
	}
	if crc = crc32.Update(crc, castagnoli, tail[:1]); crc != want {
		return failed(integrity.Mismatch("crc32c", binary.BigEndian.AppendUint32(nil, want), binary.BigEndian.AppendUint32(nil, crc)))
	}
	m, err := w.Write(tail[:1])
	sent += int64(m)
	v.left -= int64(m)
	if err != nil {
		v.err = err
	}
	return sent, err
}

// readFailed logs, counts and records a read of blob key of o that found
// it damaged or could not read it (a cancelled read is neither).
func (c *core) readFailed(ctx context.Context, o meta.Object, key string, err error) {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return
	}
	if errcode.Of(err) == errcode.Unavailable {
		// The store is unreachable or busy (a partition, a restart): no
		// fault of this blob, and the client got a 503 with Retry-After.
		// Recorded, it would make coffer fsck report a good blob.
		c.log.WarnContext(ctx, "blob store unavailable for a read", "bucket", o.Bucket, "key", o.Key, "blob", key, "err", err)
		return
	}
	problem := meta.ScrubUnreadable
	if IsCorrupt(err) {
		problem = meta.ScrubCorrupt
		c.readStats.Corrupt.Add(1)
		c.log.ErrorContext(ctx, "read of a damaged blob refused: its bytes differ from its record (coffer fsck lists it)",
			"bucket", o.Bucket, "key", o.Key, "version_id", o.VersionID, "blob", key, "err", err)
	} else {
		c.readStats.Failed.Add(1)
		c.log.ErrorContext(ctx, "blob store failed a read (coffer fsck lists the blob)",
			"bucket", o.Bucket, "key", o.Key, "version_id", o.VersionID, "blob", key, "err", err)
	}
	c.recordFinding(meta.ScrubFinding{Bucket: o.Bucket, Key: o.Key, VersionID: o.VersionID, BlobKey: key,
		Problem: problem, Detail: err.Error(), FoundAt: c.now().UTC()})
}

// recordFinding records f for the scrub's report, in the background of
// the read that found it (bounded; a failure is only logged).
func (c *core) recordFinding(f meta.ScrubFinding) {
	if c.meta.Scrubs == nil {
		return
	}
	// One write a minute per blob: a damaged object read in a loop must
	// not turn every read into a write.
	if last, ok := c.recorded.Load(f.BlobKey); ok && f.FoundAt.Sub(last.(time.Time)) < time.Minute {
		return
	}
	c.recorded.Store(f.BlobKey, f.FoundAt)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	go func() {
		defer cancel()
		if err := c.meta.RecordScrubFinding(ctx, f); err != nil {
			c.log.Warn("could not record a damaged blob for coffer fsck", "blob", f.BlobKey, "err", err)
		}
	}()
}
