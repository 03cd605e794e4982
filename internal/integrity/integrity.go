// Package integrity verifies bytes while they stream: one reader that counts,
// caps and hashes (SHA-256 and MD5 in the same pass) and, at EOF, checks the
// count and the digests the client announced. A mismatch surfaces as the
// reader's error instead of io.EOF, so whatever consumes the reader (a blob
// store's Put) aborts and stores nothing.
//
// Modelled on MinIO's internal/hash.Reader.
package integrity

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash"
	"io"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/coffer-storage/coffer/internal/errcode"
	md5simd "github.com/minio/md5-simd"
)

// Options configure a Reader. Zero values disable each check.
type Options struct {
	// Size is the exact number of bytes expected, or -1 if unknown. Note
	// that 0 means "exactly zero bytes".
	Size int64
	// Limit is the maximum number of bytes accepted, or <= 0 for no limit.
	// Reading past it fails with LimitErr's error (errcode.TooLarge if
	// nil), made only then: an error built per request is garbage on every
	// upload that fits.
	Limit    int64
	LimitErr func() error
	// SHA256 and MD5 are digests announced by the client (raw bytes).
	SHA256 []byte
	MD5    []byte
	// NoMD5 skips MD5 (when the caller needs no ETag from it).
	NoMD5 bool
	// NoSHA256 skips SHA-256 unless SHA256 is announced (when the caller
	// reads no SHA256 of it): SHA256 then returns nil.
	NoSHA256 bool
	// ChecksumAlgorithm, if set, also computes that S3 checksum (a name
	// ParseAlgorithm accepts); ChecksumWant, if set, must match it at EOF.
	ChecksumAlgorithm string
	ChecksumWant      []byte
}

// Reader wraps a stream; see the package doc.
type Reader struct {
	r    io.Reader
	opts Options
	n    int64
	sha  hash.Hash
	md5  hash.Hash
	alg  Algorithm // optional S3 checksum
	sum  hash.Hash // computing alg
	err  error     // sticky
	// md5Sum is the MD5 once taken (at EOF, or by MD5 before it): the
	// hasher is then released, and no byte may follow.
	md5Sum []byte
	// md5Done ends the MD5 hasher once: it releases a vector lane and
	// leaves the count of streams hashing.
	md5Done func()
}

// NewReader returns a Reader over r. An unknown ChecksumAlgorithm fails
// the first Read with InvalidArgument.
func NewReader(r io.Reader, opts Options) *Reader {
	ir := &Reader{r: r, opts: opts}
	if !opts.NoSHA256 || opts.SHA256 != nil {
		ir.sha = sha256.New()
	}
	switch {
	case opts.NoMD5:
	case opts.Size >= 0 && opts.Size < simdMinSize:
		// A small announced body: a vector lane would not pay.
		ir.md5, ir.md5Done = md5.New(), func() {}
	default:
		ir.md5, ir.md5Done = newMD5()
		// A Reader dropped mid-stream (its consumer failed) still gives
		// its lane back.
		runtime.AddCleanup(ir, func(done func()) { done() }, ir.md5Done)
	}
	ir.alg, ir.err = ParseAlgorithm(opts.ChecksumAlgorithm)
	ir.sum = ir.alg.New()
	return ir
}

// Read implements io.Reader.
func (ir *Reader) Read(p []byte) (int, error) {
	if ir.err != nil {
		return 0, ir.err
	}
	n, err := ir.r.Read(p)
	if n > 0 {
		ir.n += int64(n)
		if ir.opts.Limit > 0 && ir.n > ir.opts.Limit {
			ir.err = ir.limitErr()
			return 0, ir.err
		}
		if ir.opts.Size >= 0 && ir.n > ir.opts.Size {
			ir.err = errcode.New(errcode.TooLarge, "body is longer than the announced %d bytes", ir.opts.Size)
			return 0, ir.err
		}
		if ir.md5Sum != nil {
			// MD5 was asked for before the end: the sum must not change.
			ir.err = errcode.New(errcode.Internal, "integrity: bytes read after the MD5 was taken")
			return 0, ir.err
		}
		if ir.sha != nil {
			ir.sha.Write(p[:n])
		}
		if ir.md5 != nil {
			ir.md5.Write(p[:n])
		}
		if ir.sum != nil {
			ir.sum.Write(p[:n])
		}
	}
	if err == io.EOF {
		ir.MD5() // final: take it now and give the hasher back
		if verr := ir.verify(); verr != nil {
			ir.err = verr
			return n, verr
		}
		ir.err = io.EOF
		return n, io.EOF
	}
	if err != nil {
		// Typed errors (timeouts, digests) and cancellations keep their
		// meaning; anything else from the client's body (a reset, a
		// malformed chunked encoding) is the client's fault, not ours.
		if errcode.As(err) == nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
			err = errcode.Wrap(errcode.IncompleteBody, err, "reading the body failed")
		}
		ir.err = err
		if ir.md5Done != nil {
			ir.md5Done() // the MD5 of a failed body is never asked for
		}
	}
	return n, err
}

func (ir *Reader) limitErr() error {
	if ir.opts.LimitErr != nil {
		return ir.opts.LimitErr()
	}
	return errcode.New(errcode.TooLarge, "body exceeds the limit of %d bytes", ir.opts.Limit)
}

func (ir *Reader) verify() error {
	if ir.opts.Size >= 0 && ir.n != ir.opts.Size {
		return errcode.New(errcode.IncompleteBody, "body has %d bytes, %d announced", ir.n, ir.opts.Size)
	}
	if ir.opts.SHA256 != nil {
		if got := ir.sha.Sum(nil); !bytes.Equal(got, ir.opts.SHA256) {
			return Mismatch("sha256", ir.opts.SHA256, got)
		}
	}
	if ir.opts.MD5 != nil && ir.md5 != nil {
		if got := ir.MD5(); !bytes.Equal(got, ir.opts.MD5) {
			return Mismatch("md5", ir.opts.MD5, got)
		}
	}
	if ir.opts.ChecksumWant != nil && ir.sum != nil {
		if got := ir.sum.Sum(nil); !bytes.Equal(got, ir.opts.ChecksumWant) {
			// "checksum-sha256", not "sha256": an x-amz-checksum-sha256
			// mismatch is not a payload-hash mismatch.
			return Mismatch(strings.TrimPrefix(ir.alg.Header(), "x-amz-"), ir.opts.ChecksumWant, got)
		}
	}
	return nil
}

// Checksum returns the S3 checksum of the bytes read so far (nil if no
// ChecksumAlgorithm was set).
func (ir *Reader) Checksum() []byte {
	if ir.sum == nil {
		return nil
	}
	return ir.sum.Sum(nil)
}

// Mismatch returns a ChecksumMismatch error carrying want and got (hex).
func Mismatch(alg string, want, got []byte) error {
	return &errcode.Error{
		Code:    errcode.ChecksumMismatch,
		Message: alg + " of the body does not match the announced digest",
		Detail: map[string]any{
			"algorithm": alg,
			"expected":  hex.EncodeToString(want),
			"actual":    hex.EncodeToString(got),
		},
	}
}

// N returns the number of bytes read so far.
func (ir *Reader) N() int64 { return ir.n }

// SHA256 returns the SHA-256 of the bytes read so far (nil with NoSHA256
// and no SHA256 announced).
func (ir *Reader) SHA256() []byte {
	if ir.sha == nil {
		return nil
	}
	return ir.sha.Sum(nil)
}

// MD5 returns the MD5 of the bytes read so far (nil with NoMD5). Once it
// is taken the Reader reads no more bytes (it fails with Internal).
func (ir *Reader) MD5() []byte {
	if ir.md5 == nil {
		return nil
	}
	if ir.md5Sum == nil {
		ir.md5Sum = ir.md5.Sum(nil)
		ir.md5Done()
	}
	return ir.md5Sum
}

// MD5 on many streams at once
//
// MD5 is the dearest hash of an upload (S3's ETag needs it; ~1.4 ms of a
// core per MiB here, twice SHA-256 with SHA-NI). github.com/minio/md5-simd
// hashes 8 (AVX2) or 16 (AVX-512) streams in the lanes of one vector
// instruction stream, on one server goroutine per process: the writers
// hand it 32 KiB blocks asynchronously and wait only for the sum. With
// many streams hashing it halves MD5's CPU per byte; with few it costs
// more than crypto/md5 (a copy, channel hand-offs, and lanes run mostly
// empty): BenchmarkMD5Streams measured 0.54 vs 1.42 ms of CPU per MiB at
// 16 streams, 1.0 vs 1.44 at 4, 1.8 vs 1.44 at 1. So a Reader takes a lane
// only while at least simdFrom other streams are hashing, and
// crypto/md5 otherwise.

// simdFrom is how many MD5 streams must be running for a new one to use
// md5-simd (a variable for tests).
var simdFrom int64 = 8

// simdMinSize is the smallest announced body that may take an md5-simd
// lane (bodies of unknown size may too). Below it crypto/md5: GoVault's
// scenario (1 MiB uploads at 200 VUs) measured 208-226 uploads/s with
// lanes against 248-267 without (docs/PERFORMANCE.md, "Issue 23: the
// merged code on a quiet machine"), while 10 MiB PUTs at c16 gained.
var simdMinSize int64 = 4 << 20

// simdHashers bounds the md5-simd hashers ever made. They are reused
// (Reset), never closed: md5-simd v1.1.2's server never forgets a closed
// client (it deletes the zero uid instead of the client's), so every
// closed hasher would stay in its map and slow each of its cycles for
// good (TestMD5LanesReused). A stream finding none free uses crypto/md5.
const simdHashers = 32

var (
	md5Streams   atomic.Int64 // Readers hashing MD5 now
	md5Server    md5simd.Server
	md5ServerOne sync.Once
	md5Made      atomic.Int64                             // md5-simd hashers made
	md5Free      = make(chan md5simd.Hasher, simdHashers) // ... and idle
)

// newMD5 returns an MD5 hasher and the func that ends it (idempotent).
func newMD5() (hash.Hash, func()) {
	var once sync.Once
	stdlib := func() (hash.Hash, func()) {
		return md5.New(), func() { once.Do(func() { md5Streams.Add(-1) }) }
	}
	if md5Streams.Add(1) <= simdFrom {
		return stdlib()
	}
	var h md5simd.Hasher
	select {
	case h = <-md5Free:
	default:
		if md5Made.Add(1) > simdHashers {
			md5Made.Add(-1)
			return stdlib()
		}
		md5ServerOne.Do(func() { md5Server = md5simd.NewServer() })
		h = md5Server.NewHash()
	}
	return h, func() {
		once.Do(func() {
			h.Reset()    // after the blocks still queued, in order
			md5Free <- h // never blocks: at most simdHashers exist
			md5Streams.Add(-1)
		})
	}
}
