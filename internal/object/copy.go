package object

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"io"

	"github.com/coffer-storage/coffer/internal/blob"
	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

// Copies
//
// A copy is an upload whose body is its source's bytes: the write
// pipeline of write.go (or of parts, multipart.go), verified against the
// source's digests. When the source is one plaintext blob (blobCopy) and
// the copy is written plaintext into a blob of the same store (a native,
// unencrypted destination above the inline size; for UploadPartCopy the
// whole source into an unencrypted upload), and the blob store copies
// blobs itself (blob.Copier: s3blob's CopyObject), the store makes the
// copy and no byte passes through Coffer. Everything else is as for a
// streamed copy: the copy is a fresh blob key, staged before it is
// written (reserved against the owner's quota, safe from orphan
// collection) and committed like any upload; the source's blob is only
// read, so the garbage queue's re-check is untouched (docs/
// architecture.md, "The copy-vs-delete race"). Its digests are the
// source's, which were verified when the source was written.

// blobCopy is an object whose bytes are one plaintext blob, and what is
// known of them.
type blobCopy struct {
	key         string // the blob
	object      string // the object's key (for errors)
	size        int64
	md5, sha256 []byte
	checksum    meta.Checksum // FULL_OBJECT, or none
	crc32c      []byte        // the source's recorded CRC-32C, or nil
}

// copySource is the source of a copy the store may make: its blob, and
// how to open its bytes if they stream after all (an encrypted or inline
// destination, a gateway's).
type copySource struct {
	blobCopy
	open func() (io.ReadCloser, error)
}

// copies reports whether the blob store copies blobs itself.
func (s *core) copies() bool {
	_, ok := s.blobs.(blob.Copier)
	return ok
}

// copySourceOf returns src as a source the store may copy (nil if it may
// not): then its bytes are opened only if they stream after all, else now.
func (s *core) copySourceOf(ctx context.Context, src *Reader, offset, length int64) *copySource {
	bc, ok := src.backend.blob(src.Object)
	if !ok || !s.copies() || offset != 0 || length != src.Object.Size {
		return nil
	}
	return &copySource{blobCopy: bc, open: func() (io.ReadCloser, error) { return src.Open(ctx, 0, -1) }}
}

// copyStaged stages a fresh blob for st, as writeStaged does, and has the
// blob store copy src into it (blob.Copier), reserving its size against
// the owner's quota first. On failure nothing is left: no blob, no
// staging.
func (s *core) copyStaged(ctx context.Context, st meta.Staging, src blobCopy) (*reserver, error) {
	st.Bytes = src.size
	_, _, e, err := s.beginStaging(ctx, st, st.Bytes)
	if err != nil {
		return nil, err
	}
	info, err := s.blobs.(blob.Copier).Copy(ctx, src.key, st.BlobKey)
	switch {
	case errcode.Is(err, errcode.NotFound):
		err = ErrNoObject(src.object) // replaced and reclaimed since it was looked up
	case err == nil && info.Size != src.size:
		err = errcode.New(errcode.Internal, "the copy of blob %s has %d bytes, want %d", src.key, info.Size, src.size)
	case err == nil && e.lost.Load():
		err = meta.ErrLeaseLost()
	}
	if err != nil {
		s.discardStaged(ctx, []string{st.BlobKey})
		return nil, err
	}
	return &reserver{ctx: ctx, s: s, key: st.BlobKey, e: e}, nil
}

// CopyInput describes a copy. A nil Metadata keeps the source's metadata and
// content type; a non-nil one replaces both.
type CopyInput struct {
	SrcBucket, SrcKey string
	DstBucket, DstKey string
	Cond              meta.Cond // on the destination
	ReplaceMetadata   bool
	ContentType       string
	Metadata          map[string]string
	// ReplaceTags gives the copy Tags; without it, it gets the source
	// version's tags (S3's tagging directive, COPY by default).
	ReplaceTags bool
	Tags        []meta.Tag
	// Lock is the copy's lock (PutInput.Lock); the source's is not
	// copied.
	Lock Lock
	// SSE asks for the copy's encryption (the zero value: the server's
	// default), whatever the source's.
	SSE SSE
	// ACL is the copy's ACL (PutInput.ACL); the source's is not copied.
	ACL *ACL
}

// Copy copies an object a may read into a bucket a owns. The bytes are
// copied into a fresh blob and verified against the source's SHA-256 (or
// copied by the blob store: see above).
func (s *Service) Copy(ctx context.Context, a Actor, in CopyInput) (meta.Object, error) {
	src, err := s.Get(ctx, a, in.SrcBucket, in.SrcKey)
	if err != nil {
		return meta.Object{}, err
	}
	return s.CopyFrom(ctx, a, src, in)
}

// CopyFrom copies from an already authorised source handle (so callers can
// evaluate copy-source conditions on src.Object first).
func (s *Service) CopyFrom(ctx context.Context, a Actor, src *Reader, in CopyInput) (meta.Object, error) {
	ct, md, tags := src.Object.ContentType, src.Object.Metadata, src.Object.Tags
	if in.ReplaceMetadata {
		ct, md = in.ContentType, in.Metadata
	}
	if in.ReplaceTags {
		tags = in.Tags
	}
	// Verify the copy against what we know of the source.
	var sum []byte
	if src.Object.SHA256 != "" {
		var err error
		if sum, err = hex.DecodeString(src.Object.SHA256); err != nil {
			return meta.Object{}, errcode.Wrap(errcode.Internal, err, "stored SHA-256 is malformed")
		}
	}
	in2 := PutInput{
		Bucket: in.DstBucket, Key: in.DstKey, Size: src.Object.Size,
		ContentType: ct, Metadata: md, Tags: tags, SHA256: sum, MD5: src.backend.md5(src.Object), Cond: in.Cond, SSE: in.SSE,
		Lock: in.Lock, ACL: in.ACL,
	}
	if c := src.Object.Checksum; c.Algorithm != "" && c.Type == "FULL_OBJECT" {
		if want, err := base64.StdEncoding.DecodeString(c.Value); err == nil {
			in2.ChecksumAlgorithm, in2.ChecksumWant = c.Algorithm, want
		}
	}
	from := s.copySourceOf(ctx, src, 0, src.Object.Size)
	if from == nil {
		rc, err := src.Open(ctx, 0, -1)
		if err != nil {
			return meta.Object{}, err
		}
		defer rc.Close()
		in2.Body = rc
	}
	return s.put(ctx, a, in2, from)
}
