// Package blob defines the byte store behind Coffer: a flat namespace of
// immutable blobs addressed by key. The object service writes every blob
// under a fresh key and never overwrites one in place, so backends only need
// atomic create, ranged read, stat, delete and list.
//
// # Contract
//
// Every implementation must pass the conformance suite in package blobtest.
// In short:
//   - Put is atomic: until it returns nil, no reader (Get, Stat, List) sees
//     the key, and after it returns nil the bytes are durable (fsync'd or
//     acknowledged by a durable remote store). A cancelled context or a
//     reader error aborts the write and leaves nothing behind.
//   - Data is streamed: no implementation may hold a whole blob in memory
//     (memblob, the test double, excepted).
//   - Failures are classified into errcode codes: a missing key is
//     errcode.NotFound, an unusable key errcode.InvalidArgument, a store
//     that is down errcode.Unavailable.
//
// # Keys
//
// Keys are non-empty UTF-8 strings of at most MaxKeyLen bytes made of
// slash-separated segments; segments are non-empty and neither "." nor "..",
// and contain no NUL byte. ValidKey checks this; backends call it and must
// make sure no key can address anything outside their namespace.
//
// # Optional capabilities
//
// Backends may implement extra one-method interfaces (Copier, ...), detected
// by type assertion; callers fall back to the portable path when absent.
package blob

import (
	"context"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/coffer-storage/coffer/internal/errcode"
)

// MaxKeyLen is the longest key a Store must accept, in bytes.
const MaxKeyLen = 1024

// Info describes a stored blob.
type Info struct {
	Key     string
	Size    int64
	ModTime time.Time
}

// Store is a blob backend. All methods must be safe for concurrent use.
type Store interface {
	// Put stores the bytes of r under key, replacing nothing: if key exists
	// the behaviour is backend-defined but must stay atomic (the object
	// service never reuses keys). size is the exact length if known, or -1.
	// If size >= 0 and r yields a different number of bytes, Put must fail
	// with errcode.IncompleteBody (short) or errcode.TooLarge (long) and
	// store nothing. Put must return only once the blob is durable.
	Put(ctx context.Context, key string, r io.Reader, size int64) (Info, error)

	// Get returns a reader over length bytes starting at offset. length -1
	// means "to the end". The range must lie within the blob: offset > size
	// is errcode.RangeNotSatisfiable; a length running past the end is
	// truncated to the end. The caller must Close the reader. Readers must
	// not be affected by a later Delete of the key (they may fail with an
	// error but must never return other bytes).
	Get(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error)

	// Stat returns the blob's Info or errcode.NotFound.
	Stat(ctx context.Context, key string) (Info, error)

	// Delete removes key. Deleting a missing key is not an error.
	Delete(ctx context.Context, key string) error

	// List calls fn for every blob whose key starts with prefix, in
	// lexicographic byte order of keys. It stops at and returns the first
	// error fn returns. Blobs being written (Put not returned) are never
	// listed.
	List(ctx context.Context, prefix string, fn func(Info) error) error
}

// Copier is implemented by stores that copy a blob without streaming it
// through Coffer (server-side copy, reflink, hard link of an immutable file).
// The object service uses it for copies of plaintext blobs into plaintext
// blobs (CopyObject, UploadPartCopy of a whole object), always to a fresh
// key.
type Copier interface {
	// Copy makes dst a durable copy of src, with Put's atomicity; a
	// missing src is errcode.NotFound.
	Copy(ctx context.Context, src, dst string) (Info, error)
}

// UnitReader is implemented by a body whose Reads yield whole units of
// ReadUnit bytes (the last may be shorter) and which serves a Read into
// less than a unit through a buffer of its own and a copy: an encrypting
// stream (crypt), whose unit is a sealed segment. A store that fills a
// buffer before each write should then ask for whole units only
// (diskblob does); a plain reader does not implement it.
type UnitReader interface {
	io.Reader
	// ReadUnit is the unit in bytes (> 0).
	ReadUnit() int
}

// Closer is implemented by stores that hold resources.
type Closer interface {
	Close() error
}

// ValidKey reports whether key is acceptable to every Store, and why not.
func ValidKey(key string) error {
	if key == "" {
		return errcode.New(errcode.InvalidArgument, "blob key is empty")
	}
	if len(key) > MaxKeyLen {
		return errcode.New(errcode.InvalidArgument, "blob key longer than %d bytes", MaxKeyLen)
	}
	if !utf8.ValidString(key) {
		return errcode.New(errcode.InvalidArgument, "blob key is not valid UTF-8")
	}
	if strings.IndexByte(key, 0) >= 0 {
		return errcode.New(errcode.InvalidArgument, "blob key contains NUL")
	}
	for seg := range strings.SplitSeq(key, "/") {
		switch seg {
		case "":
			return errcode.New(errcode.InvalidArgument, "blob key has an empty segment")
		case ".", "..":
			return errcode.New(errcode.InvalidArgument, "blob key has a %q segment", seg)
		}
	}
	return nil
}

// PartInfo is one part of a backend multipart upload.
type PartInfo struct {
	Number int
	Size   int64
	ETag   string // without quotes
}

// MultipartPresigner is implemented by stores whose clients can send the
// parts of a blob straight to the backend with presigned URLs (direct
// uploads that never cross Coffer). The backend assembles the parts into
// the blob key on CompleteMultipart; until then nothing is visible.
type MultipartPresigner interface {
	CreateMultipart(ctx context.Context, key string) (uploadID string, err error)
	// PresignPart returns a URL a client PUTs part number part to.
	PresignPart(ctx context.Context, key, uploadID string, part int, ttl time.Duration) (string, error)
	// ListMultipartParts lists the parts uploaded so far, ascending.
	ListMultipartParts(ctx context.Context, key, uploadID string) ([]PartInfo, error)
	// CompleteMultipart assembles parts (ascending) into the blob key. If
	// the upload was completed already with the same parts, it returns
	// the blob's Info.
	CompleteMultipart(ctx context.Context, key, uploadID string, parts []PartInfo) (Info, error)
	// AbortMultipart drops the upload and its parts; an unknown or
	// finished upload is not an error.
	AbortMultipart(ctx context.Context, key, uploadID string) error
}
