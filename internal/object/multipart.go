package object

import (
	"context"
	"crypto/md5"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/coffer-storage/coffer/internal/blob"
	"github.com/coffer-storage/coffer/internal/detach"
	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/integrity"
	"github.com/coffer-storage/coffer/internal/meta"
)

// Uploads are the multipart uploads of native buckets: S3's, the file
// API's direct uploads (parts to Coffer, or straight to the blob backend
// with presigned URLs), and tus uploads (tus.go), whose parts are its
// PATCH requests. Only CreateUpload asks the bucket's backend; every
// other operation finds the upload by its ID, and only native buckets
// have uploads.
type Uploads struct{ *core }

// Multipart limits (S3's).
const (
	MinPartSize = 5 << 20 // every part but the last
	MaxPartSize = 5 << 30 // any part
	MaxParts    = 10000   // part numbers 1..MaxParts
)

// CreateUploadInput starts a multipart upload.
type CreateUploadInput struct {
	Bucket, Key       string
	ContentType       string
	Metadata          map[string]string
	Tags              []meta.Tag // the object's, on completion (meta.CheckTags)
	Lock              Lock       // the object's, on completion (PutInput.Lock)
	ChecksumAlgorithm string     // S3 x-amz-checksum-algorithm, or ""
	ChecksumType      string     // S3 x-amz-checksum-type, or "" (integrity.ParseChecksumType)
	// Size and PartSize are declared by direct-upload sessions (0 if
	// unknown); a declared Size is reserved against the bucket owner's
	// quota until the upload is completed, aborted or expires.
	Size, PartSize int64
	// TTL bounds how long the upload may stay incomplete before the
	// janitor aborts it; 0 is Config.MultipartExpiry.
	TTL time.Duration
	// Backend asks for the parts to go straight to the blob backend's own
	// multipart upload (see BackendDirect); ignored when it has none, and
	// when the upload is encrypted (its bytes must pass through Coffer).
	Backend bool
	// SSE is the encryption the upload asks for (S3's SSE headers on
	// CreateMultipartUpload); the zero value takes the bucket's default,
	// else the server's. Every part is written under it, each with its
	// own data key; SSE-C uploads keep only a salted check of the key,
	// and every part must bring the same key (PartInput.CustomerKey).
	SSE SSE
	// ACL is the ACL the object asks for on completion (PutInput.ACL).
	ACL *ACL
	// owner and grants are ACL resolved (writeACL).
	owner  string
	grants []meta.Grant
}

// BackendDirect reports whether direct uploads can send their parts
// straight to the blob backend (presigned URLs of the store itself), so
// the bytes never cross Coffer. Never with encryption on: the bytes must
// pass through Coffer to be encrypted.
func (s *core) BackendDirect() bool {
	_, ok := s.blobs.(blob.MultipartPresigner)
	return ok && !s.cfg.Encrypt
}

// PresignBackendPart returns a presigned URL for part number n of a
// backend-assembled upload in a bucket a owns.
func (s *Uploads) PresignBackendPart(ctx context.Context, a Actor, u meta.Upload, n int, ttl time.Duration) (string, error) {
	mp, ok := s.blobs.(blob.MultipartPresigner)
	if !ok || u.BackendUploadID == "" {
		return "", errcode.New(errcode.Internal, "upload %q is not assembled by the blob backend", u.ID)
	}
	if n < 1 || n > MaxParts {
		return "", errcode.New(errcode.InvalidArgument, "part number must be 1 to %d", MaxParts)
	}
	return mp.PresignPart(ctx, u.BlobKey, u.BackendUploadID, n, ttl)
}

// CreateUpload starts a multipart upload into a bucket a owns.
func (s *Uploads) CreateUpload(ctx context.Context, a Actor, in CreateUploadInput) (meta.Upload, error) {
	if err := ValidKey(in.Key); err != nil {
		return meta.Upload{}, err
	}
	if err := ValidMetadata(in.Metadata); err != nil {
		return meta.Upload{}, err
	}
	if err := meta.CheckTags(in.Tags, meta.MaxObjectTags); err != nil {
		return meta.Upload{}, err
	}
	if err := checkLock(in.Lock, s.now()); err != nil {
		return meta.Upload{}, err
	}
	alg, err := integrity.ParseAlgorithm(in.ChecksumAlgorithm)
	if err != nil {
		return meta.Upload{}, err
	}
	typ, err := integrity.ParseChecksumType(in.ChecksumType, alg)
	if err != nil {
		return meta.Upload{}, err
	}
	in.ChecksumAlgorithm = alg.String()
	if in.ChecksumType != "" {
		// As asked (canonical); without one, the algorithm's default
		// applies at completion (MultipartChecksum).
		in.ChecksumType = typ.String()
	}
	b, err := s.authorize(ctx, a, in.Bucket, "s3:PutObject", in.Key)
	if err != nil {
		return meta.Upload{}, err
	}
	if in.owner, in.grants, err = s.writeACL(ctx, a, b.Bucket, in.ACL); err != nil {
		return meta.Upload{}, err
	}
	return b.createUpload(ctx, a, in)
}

// createUpload records the upload (and, for one whose parts go straight
// to the blob backend, starts the backend's multipart upload).
func (n *native) createUpload(ctx context.Context, a Actor, in CreateUploadInput) (meta.Upload, error) {
	s, b := n.s, n.bucket
	if in.Lock.set() && !b.ObjectLock.Enabled {
		return meta.Upload{}, meta.ErrLockNotEnabled(b.Name)
	}
	if in.Size < 0 || in.Size > MaxParts*MaxPartSize || in.Size > s.cfg.MaxObjectSize {
		return meta.Upload{}, errcode.New(errcode.TooLarge, "declared size %d is over the limit", in.Size)
	}
	ct := in.ContentType
	if ct == "" {
		ct = guessType(in.Key)
	}
	ttl := in.TTL
	if ttl == 0 {
		ttl = s.cfg.MultipartExpiry
	}
	now := s.now().UTC()
	u := meta.Upload{
		ID: newUploadID(), Bucket: b.Name, Key: in.Key, InitiatorID: a.UserID,
		ContentType: ct, Metadata: in.Metadata, Tags: in.Tags, Retention: in.Lock.Retention, LegalHold: in.Lock.LegalHold,
		Owner: in.owner, ACL: in.grants,
		ChecksumAlgorithm: in.ChecksumAlgorithm, ChecksumType: in.ChecksumType,
		Size: in.Size, PartSize: in.PartSize,
		CreatedAt: now, ExpiresAt: now.Add(ttl),
	}
	if err := s.uploadEncryption(ctx, a, b, in.SSE, &u); err != nil {
		return meta.Upload{}, err
	}
	if mp, ok := s.blobs.(blob.MultipartPresigner); ok && in.Backend && s.BackendDirect() && u.EncryptionMode == 0 {
		u.BlobKey = newBlobKey()
		id, err := mp.CreateMultipart(ctx, u.BlobKey)
		if err != nil {
			return meta.Upload{}, err
		}
		u.BackendUploadID = id
	}
	if err := s.meta.CreateUpload(ctx, u); err != nil {
		if u.BackendUploadID != "" {
			actx, cancel := detach.Context(ctx)
			_ = s.blobs.(blob.MultipartPresigner).AbortMultipart(actx, u.BlobKey, u.BackendUploadID)
			cancel()
		}
		return meta.Upload{}, err
	}
	return u, nil
}

// newUploadID returns a random upload ID that does not start with '-':
// command-line parsers take such a value for an option (aws s3api
// abort-multipart-upload --upload-id -1gu… fails with "expected one
// argument"; 1 upload in 64 did).
func newUploadID() string {
	b := make([]byte, 24)
	for {
		rand.Read(b)
		if id := base64.RawURLEncoding.EncodeToString(b); id[0] != '-' {
			return id
		}
	}
}

// GetUpload returns an upload in progress in a bucket a owns. bucket and
// key, if not empty, must match the upload's (S3 names both in the URL).
func (s *Uploads) GetUpload(ctx context.Context, a Actor, bucket, key, id string) (meta.Upload, error) {
	u, _, err := s.getUpload(ctx, a, bucket, key, id)
	return u, err
}

// getUpload is GetUpload, with the upload's bucket as resolved.
func (s *Uploads) getUpload(ctx context.Context, a Actor, bucket, key, id string) (meta.Upload, meta.Bucket, error) {
	if id == "" {
		return meta.Upload{}, meta.Bucket{}, ErrNoUpload(id)
	}
	var b meta.Bucket
	if bucket != "" {
		rb, err := s.authorize(ctx, a, bucket, a.opOr("s3:PutObject"), key)
		if err != nil {
			return meta.Upload{}, meta.Bucket{}, err
		}
		b = rb.Bucket
	}
	u, err := s.meta.GetUpload(ctx, id)
	if errcode.Is(err, errcode.NotFound) || err == nil && (bucket != "" && u.Bucket != bucket || key != "" && u.Key != key) {
		return meta.Upload{}, meta.Bucket{}, ErrNoUpload(id)
	}
	if err != nil {
		return meta.Upload{}, meta.Bucket{}, err
	}
	if bucket == "" {
		// Looked up by ID alone (file API): authorise against its bucket,
		// and answer "not found" rather than reveal another user's upload.
		rb, err := s.authorize(ctx, a, u.Bucket, a.opOr("s3:PutObject"), u.Key)
		if err != nil {
			if errcode.Is(err, errcode.PermissionDenied) {
				return meta.Upload{}, meta.Bucket{}, ErrNoUpload(id)
			}
			return meta.Upload{}, meta.Bucket{}, err
		}
		b = rb.Bucket
	}
	return u, b, nil
}

// PartInput is one part upload.
type PartInput struct {
	Bucket, Key, UploadID string // Bucket and Key may be "" (file API)
	Number                int
	Body                  io.Reader
	Size                  int64 // exact, or -1
	MD5, SHA256           []byte
	ChecksumWant          []byte // in the upload's checksum algorithm, if any
	// CustomerKey is the client's key (S3 SSE-C headers on UploadPart /
	// UploadPartCopy), or nil: it must be the upload's, and given exactly
	// when the upload was created with one.
	CustomerKey []byte
	// WholeHashed says the caller hashes the whole upload itself (a tus
	// upload: its running MD5 and SHA-256 become the object's ETag and
	// SHA-256, CompleteWhole): the part gets no MD5 of its own (an empty
	// ETag; MD5 is still checked if announced), and the object's parts are
	// verified together against its SHA-256 (scrub, re-encryption).
	WholeHashed bool
	// Direct says the part was sent to a URL the file API presigned for
	// a direct upload (s3api: SigV4 query authentication with the user's
	// internal key). Such a part gets no MD5 unless MD5 is announced
	// (then it is checked): its ETag is opaque (directETag), and the
	// CRC-32C it carries is what the scrub and re-encryption check the
	// part's bytes against. Ignored for an upload the file API did not
	// create (one without a declared PartSize): S3's UploadPart keeps its
	// MD5 ETag.
	Direct bool
}

// PutPart streams one part into storage and records it.
func (s *Uploads) PutPart(ctx context.Context, a Actor, in PartInput) (meta.Part, error) {
	return s.putPart(ctx, a, in, nil)
}

// putPart is PutPart of a copy of from (nil: not a copy the blob store
// may make; see copy.go), whose in.Body is nil.
func (s *Uploads) putPart(ctx context.Context, a Actor, in PartInput, from *copySource) (meta.Part, error) {
	u, err := s.GetUpload(ctx, a, in.Bucket, in.Key, in.UploadID)
	if err != nil {
		return meta.Part{}, err
	}
	if in.Number < 1 || in.Number > MaxParts {
		return meta.Part{}, &errcode.Error{Code: errcode.InvalidArgument, Message: fmt.Sprintf("part number must be 1 to %d", MaxParts),
			Detail: map[string]any{"reason": "invalid_part_number"}}
	}
	if in.Size > MaxPartSize {
		return meta.Part{}, errcode.New(errcode.TooLarge, "part larger than %d bytes", int64(MaxPartSize))
	}
	b, err := s.meta.GetBucket(ctx, u.Bucket)
	if err != nil {
		return meta.Part{}, err
	}
	sse, err := s.partSSE(u, b, in.CustomerKey)
	if err != nil {
		return meta.Part{}, err
	}
	// Staged before the first byte, as object uploads are; within the
	// upload's declared size, if it has one.
	// Each part has its own data key, bound to its blob key.
	key := newBlobKey()
	sl, err := s.newSealer(ctx, key, sse)
	if err != nil {
		return meta.Part{}, err
	}
	st := meta.Staging{BlobKey: key, OwnerID: b.OwnerID, UploadID: u.ID}
	p := meta.Part{UploadID: u.ID, Number: in.Number, BlobKey: key, Staged: true}
	var rv *reserver
	if from != nil && sl == nil && from.size <= MaxPartSize && in.MD5 == nil && in.SHA256 == nil && in.ChecksumWant == nil &&
		(u.ChecksumAlgorithm == "" || strings.EqualFold(u.ChecksumAlgorithm, from.checksum.Algorithm)) {
		// The store copies the whole source (copy.go).
		if rv, err = s.copyStaged(ctx, st, from.blobCopy); err != nil {
			return meta.Part{}, err
		}
		p.Size, p.ETag = from.size, hex.EncodeToString(from.md5)
		if u.ChecksumAlgorithm != "" {
			p.Checksum = from.checksum.Value
		}
	} else {
		if from != nil {
			rc, err := from.open()
			if err != nil {
				return meta.Part{}, err
			}
			defer rc.Close()
			in.Body = rc
		}
		direct := in.Direct && u.PartSize > 0
		// A part's SHA-256 is only checked (when announced), never kept.
		r := integrity.NewReader(in.Body, integrity.Options{
			Size: in.Size, Limit: MaxPartSize, LimitErr: errPartTooLarge,
			SHA256: in.SHA256, MD5: in.MD5, NoSHA256: true, NoMD5: (in.WholeHashed || direct) && in.MD5 == nil,
			ChecksumAlgorithm: u.ChecksumAlgorithm, ChecksumWant: in.ChecksumWant,
		})
		var body io.Reader = r
		var crc *crcReader
		if direct {
			crc = &crcReader{r: r}
			body = crc
		}
		if rv, p.Size, err = s.writeStaged(ctx, st, body, in.Size, sl); err != nil {
			return meta.Part{}, err
		}
		switch {
		case direct:
			p.ETag = directETag(crc.crc)
		case !in.WholeHashed:
			p.ETag = hex.EncodeToString(r.MD5())
		}
		if sum := r.Checksum(); sum != nil {
			p.Checksum = base64.StdEncoding.EncodeToString(sum)
		}
	}
	p.ModTime = s.now().UTC()
	if sl != nil {
		p.Encryption, p.EncryptionKEK = sl.envelope, sl.kek
	}
	cctx, cancel := detach.Context(ctx)
	defer cancel()
	_, err = s.meta.PutPart(cctx, p)
	rv.done()
	if err != nil {
		s.discardStaged(ctx, []string{key})
		if errcode.Is(err, errcode.NotFound) {
			return meta.Part{}, ErrNoUpload(u.ID)
		}
		return meta.Part{}, err
	}
	s.endStaging(key)
	p.Staged = false
	return p, nil
}

// directETagSize is the length in bytes of a direct-upload part's ETag:
// its CRC-32C (4 bytes, big-endian), then 8 random bytes.
const directETagSize = 12

// directETag is the opaque ETag of a direct-upload part (PartInput.Direct)
// whose bytes have CRC-32C crc: 24 hex digits, unique to this upload of
// the part (a part sent again gets another, so a completion names the one
// it means, as with S3's MD5 ETags), and never the 32 of an MD5, so that no
// client takes it for one. The object such parts make keeps the multipart
// form "<hex>-N" (the MD5 of the parts' ETag bytes, as S3's is of their
// MD5s).
func directETag(crc uint32) string {
	var b [directETagSize]byte
	binary.BigEndian.PutUint32(b[:4], crc)
	rand.Read(b[4:])
	return hex.EncodeToString(b[:])
}

// partDigest is what a part's ETag records of its plaintext: its MD5 (S3's
// UploadPart), its CRC-32C (a direct-upload part: directETag), or neither
// (a tus part, checked with its object's SHA-256). The scrub and
// re-encryption check the part's bytes against it.
func partDigest(etag string) (md5sum, crc []byte) {
	b, err := hex.DecodeString(etag)
	switch {
	case err != nil:
		return nil, nil
	case len(b) == md5.Size:
		return b, nil
	case len(b) == directETagSize:
		return nil, b[:4]
	}
	return nil, nil
}

// CopyPart uploads a byte range of an existing object as a part (the
// whole of one plaintext blob may be copied by the blob store: see
// copy.go).
func (s *Uploads) CopyPart(ctx context.Context, a Actor, in PartInput, src *Reader, offset, length int64) (meta.Part, error) {
	if length < 0 {
		length = src.Object.Size - offset
	}
	if offset < 0 || offset+length > src.Object.Size {
		return meta.Part{}, errcode.New(errcode.RangeNotSatisfiable, "copy range outside the source object")
	}
	if from := s.copySourceOf(ctx, src, offset, length); from != nil {
		in.Body, in.Size = nil, length
		return s.putPart(ctx, a, in, from)
	}
	rc, err := src.Open(ctx, offset, length)
	if err != nil {
		return meta.Part{}, err
	}
	defer rc.Close()
	in.Body, in.Size = rc, length
	return s.PutPart(ctx, a, in)
}

// ListParts lists the parts of an upload.
func (s *Uploads) ListParts(ctx context.Context, a Actor, bucket, key, id string, after, limit int) (meta.Upload, []meta.Part, bool, error) {
	u, err := s.GetUpload(ctx, a, bucket, key, id)
	if err != nil {
		return meta.Upload{}, nil, false, err
	}
	if mp, ok := s.blobs.(blob.MultipartPresigner); ok && u.BackendUploadID != "" {
		// The parts are the backend's.
		have, err := mp.ListMultipartParts(ctx, u.BlobKey, u.BackendUploadID)
		if errcode.Is(err, errcode.NotFound) {
			return meta.Upload{}, nil, false, ErrNoUpload(id)
		}
		if err != nil {
			return meta.Upload{}, nil, false, err
		}
		if limit <= 0 {
			limit = 1000
		}
		var parts []meta.Part
		for _, p := range have {
			if p.Number <= after {
				continue
			}
			if len(parts) == limit {
				return u, parts, true, nil
			}
			parts = append(parts, meta.Part{UploadID: id, Number: p.Number, Size: p.Size, ETag: p.ETag})
		}
		return u, parts, false, nil
	}
	parts, more, err := s.meta.ListParts(ctx, id, after, limit)
	if errcode.Is(err, errcode.NotFound) {
		return meta.Upload{}, nil, false, ErrNoUpload(id)
	}
	return u, parts, more, err
}

// ListUploads lists a bucket's uploads in progress.
func (s *Uploads) ListUploads(ctx context.Context, a Actor, bucket string, opts meta.ListUploadsOptions) ([]meta.Upload, bool, error) {
	if _, err := s.authorize(ctx, a.listing(opts.Prefix), bucket, "s3:ListBucketMultipartUploads", ""); err != nil {
		return nil, false, err
	}
	return s.meta.ListUploads(ctx, bucket, opts)
}

// AbortUpload discards an upload and its parts.
func (s *Uploads) AbortUpload(ctx context.Context, a Actor, bucket, key, id string) error {
	u, err := s.GetUpload(ctx, a, bucket, key, id)
	if err != nil {
		return err
	}
	return s.abortUpload(ctx, u)
}

// abortUpload drops an upload: first its backend multipart upload, if any,
// then its metadata (which queues its blobs).
func (s *Uploads) abortUpload(ctx context.Context, u meta.Upload) error {
	if mp, ok := s.blobs.(blob.MultipartPresigner); ok && u.BackendUploadID != "" {
		if err := mp.AbortMultipart(ctx, u.BlobKey, u.BackendUploadID); err != nil {
			return err
		}
	}
	err := s.meta.AbortUpload(ctx, u.ID)
	if errcode.Is(err, errcode.NotFound) {
		return ErrNoUpload(u.ID)
	}
	return err
}

// CompleteUpload assembles the listed parts into the upload's object. The
// object's ETag is S3's: the MD5 of the concatenated binary part MD5s
// (of direct-upload parts, their ETags' bytes: directETag), then "-" and
// the part count.
//
// Completing again (a client whose first answer was lost retries, or two
// completions race) answers the object the parts made while it is still
// at the key, as S3 answers 200 for an upload completed a moment ago: see
// completedWith.
func (s *Uploads) CompleteUpload(ctx context.Context, a Actor, bucket, key, id string, parts []meta.CompletePart, cond meta.Cond) (meta.Object, error) {
	return s.CompleteUploadExpecting(ctx, a, bucket, key, id, parts, cond, Expect{Size: -1})
}

// CompleteUploadExpecting is CompleteUpload that first checks what the
// client asserts of the object (want, CheckExpect): a mismatch changes
// nothing.
func (s *Uploads) CompleteUploadExpecting(ctx context.Context, a Actor, bucket, key, id string, parts []meta.CompletePart, cond meta.Cond, want Expect) (meta.Object, error) {
	o, err := s.completeUpload(ctx, a, bucket, key, id, parts, cond, want)
	if e := errcode.As(err); e != nil && e.Code == errcode.NotFound && e.Detail["resource"] == "upload" {
		if done, ok := s.completedWith(ctx, a, bucket, key, parts); ok {
			// The same checks, of the parts the object holds.
			stored := make(map[int]meta.Part, len(parts))
			for i, p := range parts {
				stored[p.Number] = meta.Part{Number: p.Number, Size: done.Parts[i].Size, Checksum: done.Parts[i].Checksum}
			}
			if err := checkListed(done.Checksum.Algorithm, done.Checksum.Type, parts, stored); err != nil {
				return meta.Object{}, err
			}
			if err := CheckExpect(done.Checksum, done.Size, want); err != nil {
				return meta.Object{}, err
			}
			return done, nil
		}
	}
	return o, err
}

// Expect is what a client asserts of the object a completion makes, in
// S3's CompleteMultipartUpload headers: the whole-object checksum
// (x-amz-checksum-ALG, with x-amz-checksum-type) and the size
// (x-amz-mp-object-size).
type Expect struct {
	// Checksum: Algorithm "" asserts none; Type "" any type (a Type
	// without an Algorithm asserts the upload's type); a COMPOSITE Value
	// may leave out its "-N".
	Checksum meta.Checksum
	// Size is -1 when not asserted.
	Size int64
}

// CheckCompletion returns the checksum of the object that the listed
// parts (in order; stored by number) of upload u make
// (MultipartChecksum), after checking what the client asserts: the part
// checksums it lists (checkListed), then want (CheckExpect). A listed part
// that is not stored is left to the assembly (invalid_part): nothing is
// compared for it, and want is not compared at all. Every completion
// check of checksums and size is here, for the service and its fake.
func CheckCompletion(u meta.Upload, parts []meta.CompletePart, stored map[int]meta.Part, want Expect) (meta.Checksum, error) {
	if err := checkListed(u.ChecksumAlgorithm, u.ChecksumType, parts, stored); err != nil {
		return meta.Checksum{}, err
	}
	sum, err := MultipartChecksum(u, parts, stored)
	if err != nil {
		return meta.Checksum{}, err
	}
	var size int64
	for _, p := range parts {
		sp, ok := stored[p.Number]
		if !ok {
			return sum, nil
		}
		size += sp.Size
	}
	return sum, CheckExpect(sum, size, want)
}

// checkListed compares the part checksums a completion lists with the
// stored parts' (of algorithm alg and checksum type typ, as in
// meta.Upload), as S3 does: a checksum of another algorithm is BadDigest,
// another value (or any checksum when the upload has none) InvalidPart,
// and a COMPOSITE upload's completion must list every part's checksum
// (InvalidRequest). Parts not stored are skipped.
func checkListed(alg, typ string, parts []meta.CompletePart, stored map[int]meta.Part) error {
	a, _ := integrity.ParseAlgorithm(alg)
	t, _ := integrity.ParseChecksumType(typ, a)
	for _, p := range parts {
		sp, ok := stored[p.Number]
		if !ok {
			continue
		}
		l := p.Checksum
		switch {
		case l.Algorithm == "":
			if a != integrity.NoChecksum && t == integrity.Composite {
				return invalidRequest("The upload was created using a %s checksum. The complete request must include the checksum for each part. It was missing for part %d in the request.",
					strings.ToLower(a.String()), p.Number)
			}
		case a != integrity.NoChecksum && !strings.EqualFold(l.Algorithm, a.String()):
			return &errcode.Error{Code: errcode.ChecksumMismatch,
				Message: fmt.Sprintf("The %s you specified for part %d did not match what we received.", strings.ToLower(l.Algorithm), p.Number),
				Detail:  map[string]any{"s3_code": "BadDigest"}}
		case a == integrity.NoChecksum || l.Value != sp.Checksum:
			return &errcode.Error{Code: errcode.InvalidArgument, Message: fmt.Sprintf("the %s checksum listed for part %d is not the part's", l.Algorithm, p.Number),
				Detail: map[string]any{"reason": "invalid_part", "part_number": p.Number}}
		}
	}
	return nil
}

// CheckExpect compares the checksum and size a completion makes (got,
// size) with want, in S3's words: another size, a type other than the
// upload's, a checksum of another algorithm, or one the upload cannot
// make (created without a checksum algorithm) is InvalidArgument (reason
// invalid_request: S3's InvalidRequest); another value ChecksumMismatch
// (S3's BadDigest).
func CheckExpect(got meta.Checksum, size int64, want Expect) error {
	if want.Size >= 0 && want.Size != size {
		// S3's text, its values in the order versitygw's tests record
		// (the size the parts make first).
		return invalidRequest("The provided 'x-amz-mp-object-size' header value %d does not match what was computed: %d", size, want.Size)
	}
	w := want.Checksum
	if w.Type != "" && !strings.EqualFold(got.Type, w.Type) {
		t := got.Type
		if t == "" {
			t = "null" // S3's word for an upload without a checksum
		}
		return invalidRequest("The upload was created using the %s checksum mode. The complete request must use the same checksum mode.", t)
	}
	switch {
	case w.Algorithm == "":
		return nil
	case got.Algorithm == "":
		return invalidRequest("the upload was created without a checksum algorithm: it cannot make the %s checksum asserted", w.Algorithm)
	case !strings.EqualFold(got.Algorithm, w.Algorithm):
		return invalidRequest("the upload's checksum algorithm is %s, not %s", got.Algorithm, w.Algorithm)
	}
	value, _, _ := strings.Cut(got.Value, "-")
	if w.Value != got.Value && w.Value != value {
		return &errcode.Error{Code: errcode.ChecksumMismatch, Message: fmt.Sprintf("The %s you specified did not match the calculated checksum.", got.Algorithm),
			Detail: map[string]any{"s3_code": "BadDigest"}}
	}
	return nil
}

// invalidRequest is an InvalidArgument that S3 names InvalidRequest.
func invalidRequest(format string, args ...any) error {
	return &errcode.Error{Code: errcode.InvalidArgument, Message: fmt.Sprintf(format, args...),
		Detail: map[string]any{"reason": "invalid_request"}}
}

// completedWith returns the object at bucket/key if it is the one the
// listed parts make: a multipart object whose parts are, in order, parts
// with the listed ETags. No record of the completed upload is kept: the
// object itself answers whether these parts made it (the ETags identify
// the parts' bytes: their MD5s, or a direct-upload part's CRC-32C and
// random tag, directETag; so the bytes at the key are the bytes the parts
// held).
// bucket and key name the object (S3 names both; the file API's
// completions by ID alone are not answered this way).
//
// A completion racing this one may have committed (the upload is gone)
// without its object being visible yet to this node's metadata cache,
// which learns of a change just after its commit (metacache's contract):
// a key that holds another object is looked up again for a moment
// (completedRecheck) before the answer is no.
func (s *Uploads) completedWith(ctx context.Context, a Actor, bucket, key string, parts []meta.CompletePart) (meta.Object, bool) {
	if bucket == "" || key == "" || len(parts) == 0 {
		return meta.Object{}, false
	}
	b, err := s.authorize(ctx, a, bucket, "s3:PutObject", key)
	if err != nil {
		return meta.Object{}, false
	}
	wait := time.Millisecond
	for {
		o, err := b.lookup(ctx, key)
		if err == nil && madeOf(o, parts) {
			return o, true
		}
		if wait > completedRecheck {
			return meta.Object{}, false
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return meta.Object{}, false
		}
		wait *= 2
	}
}

// completedRecheck bounds how long completedWith looks again (in all,
// about twice this).
const completedRecheck = 64 * time.Millisecond

// madeOf reports whether o's parts are, in order, parts with the ETags
// listed.
func madeOf(o meta.Object, parts []meta.CompletePart) bool {
	if len(o.Parts) != len(parts) {
		return false
	}
	for i, p := range parts {
		if strings.Trim(strings.TrimSpace(p.ETag), `"`) != o.Parts[i].ETag {
			return false
		}
	}
	return true
}

func (s *Uploads) completeUpload(ctx context.Context, a Actor, bucket, key, id string, parts []meta.CompletePart, cond meta.Cond, want Expect) (meta.Object, error) {
	u, b, err := s.getUpload(ctx, a, bucket, key, id)
	if err != nil {
		return meta.Object{}, err
	}
	o, err := s.complete(ctx, u, parts, cond, want)
	return reported(b, o), err
}

// complete is CompleteUpload of the authorised upload u.
func (s *Uploads) complete(ctx context.Context, u meta.Upload, parts []meta.CompletePart, cond meta.Cond, want Expect) (meta.Object, error) {
	id := u.ID
	var err error
	if u.BackendUploadID != "" {
		if want.Checksum != (meta.Checksum{}) || want.Size >= 0 || listsChecksums(parts) {
			return meta.Object{}, errcode.New(errcode.NotImplemented, "a checksum, checksum type or size asserted cannot be checked for an upload the blob store assembles")
		}
		return s.completeBackend(ctx, u, parts, cond)
	}
	if len(parts) == 0 || len(parts) > MaxParts {
		return meta.Object{}, &errcode.Error{Code: errcode.InvalidArgument, Message: "list between 1 and 10000 parts",
			Detail: map[string]any{"reason": "invalid_part_order"}}
	}
	h := md5.New()
	for i := range parts {
		parts[i].ETag = strings.Trim(strings.TrimSpace(parts[i].ETag), `"`)
		raw, err := hex.DecodeString(parts[i].ETag)
		if err != nil || len(raw) != md5.Size && len(raw) != directETagSize {
			return meta.Object{}, &errcode.Error{Code: errcode.InvalidArgument, Message: fmt.Sprintf("part %d has a malformed ETag", parts[i].Number),
				Detail: map[string]any{"reason": "invalid_part", "part_number": parts[i].Number}}
		}
		h.Write(raw)
	}
	var stored map[int]meta.Part
	if u.Size > 0 || u.ChecksumAlgorithm != "" || want.Size >= 0 || want.Checksum != (meta.Checksum{}) || listsChecksums(parts) {
		if stored, err = s.storedParts(ctx, u.ID); err != nil {
			return meta.Object{}, err
		}
	}
	if u.Size > 0 {
		// A direct-upload session declared its size: the parts must add
		// up to it exactly.
		var total int64
		for _, p := range parts {
			total += stored[p.Number].Size
		}
		if total != u.Size {
			return meta.Object{}, &errcode.Error{Code: errcode.InvalidArgument,
				Message: fmt.Sprintf("the parts add up to %d bytes, the upload declared %d", total, u.Size),
				Detail:  map[string]any{"reason": "size_mismatch"}}
		}
	}
	obj := meta.Object{
		ETag:        fmt.Sprintf("%s-%d", hex.EncodeToString(h.Sum(nil)), len(parts)),
		ContentType: u.ContentType,
		Metadata:    u.Metadata,
		Tags:        u.Tags,
		Owner:       u.Owner,
		ACL:         u.ACL,
		Retention:   u.Retention,
		LegalHold:   u.LegalHold,
		ModTime:     s.now().UTC(),
	}
	if obj.Checksum, err = CheckCompletion(u, parts, stored, want); err != nil {
		return meta.Object{}, err
	}
	cctx, cancel := detach.Context(ctx)
	defer cancel()
	o, err := s.meta.CompleteUpload(cctx, id, obj, parts, MinPartSize, cond)
	if errcode.Is(err, errcode.NotFound) {
		return meta.Object{}, ErrNoUpload(id)
	}
	return o, err
}

// MultipartChecksum is the checksum of the object that the listed parts
// (in order) of upload u make, from the parts' stored checksums and
// sizes (stored, by part number), of u's checksum type
// (integrity.ParseChecksumType):
//   - COMPOSITE: the checksum of the concatenated binary part checksums,
//     then "-N" (N parts); none if a listed part has no checksum;
//   - FULL_OBJECT: the CRC of the whole object, combined from the parts'
//     CRCs and sizes (integrity.Algorithm.Combine), as if computed over
//     every byte; a listed part without its CRC is an error, never an
//     object without the checksum the client asked for.
//
// None without an algorithm, or if a listed part is not stored (the
// completion then fails for that part).
func MultipartChecksum(u meta.Upload, listed []meta.CompletePart, stored map[int]meta.Part) (meta.Checksum, error) {
	alg, err := integrity.ParseAlgorithm(u.ChecksumAlgorithm)
	if err != nil || alg == integrity.NoChecksum {
		return meta.Checksum{}, err
	}
	typ, err := integrity.ParseChecksumType(u.ChecksumType, alg)
	if err != nil {
		// An upload created before CreateUpload checked the type: it
		// completes as it would have then (FULL_OBJECT without a
		// checksum, anything else COMPOSITE).
		if strings.EqualFold(u.ChecksumType, "FULL_OBJECT") {
			return meta.Checksum{}, nil
		}
		typ = integrity.Composite
	}
	for _, p := range listed {
		if _, ok := stored[p.Number]; !ok {
			return meta.Checksum{}, nil
		}
	}
	if typ == integrity.FullObject {
		sum, _ := alg.Decode(alg.Encode(make([]byte, alg.Size()))) // the CRC of no bytes
		for _, p := range listed {
			ps := stored[p.Number]
			part, ok := alg.Decode(ps.Checksum)
			if ok {
				sum, ok = alg.Combine(sum, part, ps.Size)
			}
			if !ok {
				return meta.Checksum{}, errcode.New(errcode.Internal, "part %d of upload %s has no stored %s checksum", p.Number, u.ID, alg)
			}
		}
		return meta.Checksum{Algorithm: alg.String(), Type: typ.String(), Value: alg.Encode(sum)}, nil
	}
	h := alg.New()
	for _, p := range listed {
		raw, ok := alg.Decode(stored[p.Number].Checksum)
		if !ok {
			return meta.Checksum{}, nil
		}
		h.Write(raw)
	}
	return meta.Checksum{Algorithm: alg.String(), Type: typ.String(), Value: fmt.Sprintf("%s-%d", alg.Encode(h.Sum(nil)), len(listed))}, nil
}

// listsChecksums reports whether a completion lists a part checksum.
func listsChecksums(parts []meta.CompletePart) bool {
	for _, p := range parts {
		if p.Checksum.Algorithm != "" {
			return true
		}
	}
	return false
}

// storedParts returns every uploaded part of upload id by number.
func (s *Uploads) storedParts(ctx context.Context, id string) (map[int]meta.Part, error) {
	parts := map[int]meta.Part{}
	after := 0
	for {
		ps, more, err := s.meta.ListParts(ctx, id, after, 1000)
		if errcode.Is(err, errcode.NotFound) {
			return nil, ErrNoUpload(id)
		}
		if err != nil {
			return nil, err
		}
		for _, p := range ps {
			parts[p.Number] = p
			after = p.Number
		}
		if !more || len(ps) == 0 {
			return parts, nil
		}
	}
}

// CollectExpiredUploads aborts uploads past their expiry.
func (s *Uploads) CollectExpiredUploads(ctx context.Context) (int, error) {
	n := 0
	for {
		us, err := s.meta.ListExpiredUploads(ctx, s.now(), 500)
		if err != nil || len(us) == 0 {
			return n, err
		}
		for _, u := range us {
			if err := s.abortUpload(ctx, u); err != nil && !errcode.Is(err, errcode.NotFound) {
				return n, err
			}
			n++
		}
		if len(us) < 500 {
			return n, nil
		}
	}
}

// completeBackend completes an upload whose parts went to the blob
// backend: the listed parts are checked against what the backend holds
// (ETags, sizes, the declared size), the backend assembles them into the
// upload's blob, and one metadata transaction turns the upload into the
// object. The blob stays referenced by the upload row until that commit,
// so orphan collection never takes it; of concurrent completions on any
// nodes, exactly one commits.
func (s *Uploads) completeBackend(ctx context.Context, u meta.Upload, parts []meta.CompletePart, cond meta.Cond) (meta.Object, error) {
	mp := s.blobs.(blob.MultipartPresigner)
	invalid := func(reason string, n int, format string, args ...any) error {
		d := map[string]any{"reason": reason}
		if n > 0 {
			d["part_number"] = n
		}
		return &errcode.Error{Code: errcode.InvalidArgument, Message: fmt.Sprintf(format, args...), Detail: d}
	}
	if len(parts) == 0 || len(parts) > MaxParts {
		return meta.Object{}, invalid("invalid_part_order", 0, "list between 1 and 10000 parts")
	}
	have, err := mp.ListMultipartParts(ctx, u.BlobKey, u.BackendUploadID)
	if errcode.Is(err, errcode.NotFound) {
		// Gone from the backend: completed already by another request
		// (then the metadata commit below finds the upload gone too), or
		// aborted.
		have = nil
	} else if err != nil {
		return meta.Object{}, err
	}
	byNumber := map[int]blob.PartInfo{}
	for _, p := range have {
		byNumber[p.Number] = p
	}
	h := md5.New()
	var total int64
	list := make([]blob.PartInfo, len(parts))
	for i, cp := range parts {
		if i > 0 && cp.Number <= parts[i-1].Number {
			return meta.Object{}, invalid("invalid_part_order", 0, "parts must be listed in strictly ascending order")
		}
		etag := strings.Trim(strings.TrimSpace(cp.ETag), `"`)
		p, ok := byNumber[cp.Number]
		raw, err := hex.DecodeString(etag)
		if have == nil && err == nil && len(raw) == md5.Size {
			// Assembled already: the blob's size is checked below.
			h.Write(raw)
			continue
		}
		if !ok || p.ETag != etag || err != nil || len(raw) != md5.Size {
			return meta.Object{}, invalid("invalid_part", cp.Number, "part %d was not uploaded or its ETag does not match", cp.Number)
		}
		if i < len(parts)-1 && p.Size < MinPartSize {
			return meta.Object{}, invalid("entity_too_small", cp.Number, "part %d is smaller than the minimum part size %d", cp.Number, MinPartSize)
		}
		h.Write(raw)
		total += p.Size
		list[i] = p
	}
	if have != nil && u.Size > 0 && total != u.Size {
		return meta.Object{}, invalid("size_mismatch", 0, "the parts add up to %d bytes, the upload declared %d", total, u.Size)
	}
	cctx, cancel := detach.WithTimeout(ctx, 2*detach.Timeout)
	defer cancel()
	if have != nil {
		info, err := mp.CompleteMultipart(cctx, u.BlobKey, u.BackendUploadID, list)
		if err != nil {
			return meta.Object{}, err
		}
		total = info.Size
	} else {
		info, err := s.blobs.Stat(cctx, u.BlobKey)
		if errcode.Is(err, errcode.NotFound) {
			return meta.Object{}, ErrNoUpload(u.ID)
		}
		if err != nil {
			return meta.Object{}, err
		}
		if u.Size > 0 && info.Size != u.Size {
			return meta.Object{}, invalid("size_mismatch", 0, "the assembled blob has %d bytes, the upload declared %d", info.Size, u.Size)
		}
		total = info.Size
	}
	obj := meta.Object{
		BlobKey:     u.BlobKey,
		Size:        total,
		ETag:        fmt.Sprintf("%s-%d", hex.EncodeToString(h.Sum(nil)), len(parts)),
		ContentType: u.ContentType,
		Metadata:    u.Metadata,
		Tags:        u.Tags,
		Owner:       u.Owner,
		ACL:         u.ACL,
		Retention:   u.Retention,
		LegalHold:   u.LegalHold,
		ModTime:     s.now().UTC(),
	}
	o, err := s.meta.CompleteBackendUpload(cctx, u.ID, obj, cond)
	if errcode.Is(err, errcode.NotFound) {
		return meta.Object{}, ErrNoUpload(u.ID)
	}
	return o, err
}

// AbortBackendUploads aborts, at the blob backend, the multipart uploads
// of uploads whose metadata is already gone (a deleted account's: see
// meta.Accounts.DeleteUser); their blobs are in the garbage queue. Best
// effort: a failure is logged, and the backend's own expiry of incomplete
// uploads reclaims what is left. Each abort outlives ctx's cancellation
// (the metadata is gone already: this is the only chance).
func (s *Uploads) AbortBackendUploads(ctx context.Context, uploads []meta.Upload) {
	mp, ok := s.blobs.(blob.MultipartPresigner)
	if !ok {
		return
	}
	for _, u := range uploads {
		if u.BackendUploadID == "" {
			continue
		}
		actx, cancel := detach.Context(ctx)
		err := mp.AbortMultipart(actx, u.BlobKey, u.BackendUploadID)
		cancel()
		if err != nil {
			s.log.Warn("aborting a deleted account's backend upload failed", "upload", u.ID, "blob", u.BlobKey, "err", err)
		}
	}
}

func errPartTooLarge() error {
	return errcode.New(errcode.TooLarge, "part larger than %d bytes", int64(MaxPartSize))
}
