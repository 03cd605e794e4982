package object

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"strings"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

// backend is where the objects of one bucket live: rows of the metadata
// store and blobs of the blob store (native), or the S3 bucket a gateway
// fronts (gateway.go). It is chosen once, when the bucket is resolved
// (core.authorize, backendOf); the service checks the request, authorises
// it and decides its encryption, and the backend does the rest. What a
// backend cannot do it answers from unsupported (versitygw's
// BackendUnsupported).
type backend interface {
	// lookup returns the current object key; NotFound if there is none.
	lookup(ctx context.Context, key string) (meta.Object, error)
	// open returns the plaintext bytes [offset, offset+length) of r.Object,
	// a version lookup returned (0 ≤ offset ≤ size, offset+length ≤ size).
	open(ctx context.Context, r *Reader, offset, length int64) (io.ReadCloser, error)
	// md5 returns the MD5 of o's plaintext if o's ETag is one, else nil.
	md5(o meta.Object) []byte
	// blob returns o's bytes as one plaintext blob of the blob store, for
	// the store to copy without streaming them (ok false: o is not one).
	blob(o meta.Object) (src blobCopy, ok bool)
	// put streams w into the bucket and makes it visible.
	put(ctx context.Context, w *incoming) (meta.Object, error)
	// stage streams w durably without making it visible: commit, with the
	// other uploads of an atomic batch, does.
	stage(ctx context.Context, w *incoming) (staged, error)
	// delete deletes key if cond holds for it.
	delete(ctx context.Context, key string, cond meta.Cond) (meta.Object, error)
	// list returns one page of the bucket's objects.
	list(ctx context.Context, opts meta.ListOptions) (meta.ListPage, error)
	// lookupVersion returns version versionID of key (a delete marker
	// too); ErrNoVersion if there is none.
	lookupVersion(ctx context.Context, key, versionID string) (meta.Object, error)
	// deleteVersion removes version versionID of key for good, if cond
	// holds for it.
	deleteVersion(ctx context.Context, key, versionID string, cond meta.Cond) (meta.Object, error)
	// listVersions returns one page of the bucket's versions.
	listVersions(ctx context.Context, opts meta.VersionListOptions) (meta.VersionPage, error)
	// setVersioning sets the bucket's versioning state.
	setVersioning(ctx context.Context, v meta.Versioning) error
	// objectTags returns version versionID ("": the latest) of key with
	// its tags (tags.go).
	objectTags(ctx context.Context, key, versionID string) (meta.Object, error)
	// setObjectTags replaces the tags of version versionID ("": the
	// latest) of key.
	setObjectTags(ctx context.Context, key, versionID string, tags []meta.Tag) (meta.Object, error)
	// bucketTags returns the bucket's tags; setBucketTags replaces them.
	bucketTags(ctx context.Context) ([]meta.Tag, error)
	setBucketTags(ctx context.Context, tags []meta.Tag) error
	// objectLock returns the bucket's object lock state; setObjectLock
	// sets its default retention (lock.go).
	objectLock() (meta.ObjectLock, error)
	setObjectLock(ctx context.Context, d meta.DefaultRetention) error
	// lockedVersion returns version versionID ("": the latest) of key
	// with its lock; setRetention and setLegalHold change it in place.
	lockedVersion(ctx context.Context, key, versionID string) (meta.Object, error)
	setRetention(ctx context.Context, key, versionID string, r meta.Retention, bypass bool) (meta.Object, error)
	setLegalHold(ctx context.Context, key, versionID string, on bool) (meta.Object, error)
	// moveOut renames srcKey to dstKey of dst, as dst.moveIn does it.
	moveOut(ctx context.Context, srcKey string, dst backend, dstKey string, cond meta.Cond) (meta.Object, error)
	// moveIn renames srcKey of the native bucket src to dstKey here.
	moveIn(ctx context.Context, src, srcKey, dstKey string, cond meta.Cond) (meta.Object, error)
	// createUpload starts a multipart upload by a into the bucket.
	createUpload(ctx context.Context, a Actor, in CreateUploadInput) (meta.Upload, error)
	// deleteBucket deletes the bucket, which must be empty.
	deleteBucket(ctx context.Context) error
}

// backendOf returns the backend of bucket b: the one place that asks
// whether a bucket is a gateway's.
func (s *core) backendOf(b meta.Bucket) backend {
	if b.IsGateway() {
		return newGatewayBackend(s, b)
	}
	return &native{s: s, bucket: b}
}

// unsupported answers what a backend cannot do: the operations only
// native buckets have (multipart uploads, atomic batches, moves,
// versioning: versions other than "null") are NotImplemented (reason
// gateway_unsupported), after the refusal of a write to a read-only
// backend (writable); the bucket cannot be deleted by its owner
// (PermissionDenied, reason gateway_bucket).
type unsupported struct {
	bucket string
	// writable returns nil if the backend takes writes, else their
	// refusal.
	writable func(ctx context.Context) error
}

func errGatewayUnsupported(what string) error {
	return &errcode.Error{Code: errcode.NotImplemented, Message: what + " is not supported in gateway buckets (docs/gateway.md)",
		Detail: map[string]any{"reason": "gateway_unsupported"}}
}

func (u unsupported) stage(ctx context.Context, _ *incoming) (staged, error) {
	if err := u.writable(ctx); err != nil {
		return staged{}, err
	}
	return staged{}, errGatewayUnsupported("an atomic upload of several files")
}

func (u unsupported) createUpload(ctx context.Context, _ Actor, _ CreateUploadInput) (meta.Upload, error) {
	if err := u.writable(ctx); err != nil {
		return meta.Upload{}, err
	}
	return meta.Upload{}, errGatewayUnsupported("a multipart upload")
}

func (unsupported) moveOut(context.Context, string, backend, string, meta.Cond) (meta.Object, error) {
	return meta.Object{}, errGatewayUnsupported("moving an object")
}

func (unsupported) moveIn(context.Context, string, string, string, meta.Cond) (meta.Object, error) {
	return meta.Object{}, errGatewayUnsupported("moving an object")
}

func (unsupported) setVersioning(context.Context, meta.Versioning) error {
	return errGatewayUnsupported("versioning")
}

func (unsupported) lookupVersion(context.Context, string, string) (meta.Object, error) {
	return meta.Object{}, errGatewayUnsupported("a version other than \"null\"")
}

func (u unsupported) deleteVersion(ctx context.Context, _, _ string, _ meta.Cond) (meta.Object, error) {
	if err := u.writable(ctx); err != nil {
		return meta.Object{}, err
	}
	return meta.Object{}, errGatewayUnsupported("a version other than \"null\"")
}

func (u unsupported) deleteBucket(context.Context) error {
	return &errcode.Error{Code: errcode.PermissionDenied, Message: fmt.Sprintf("bucket %q is a gateway bucket: an administrator removes it", u.bucket),
		Detail: map[string]any{"reason": "gateway_bucket"}}
}

// native is the backend of a native bucket: object rows in the metadata
// store, bytes inline in them, in one blob, or in the blobs of a
// multipart object's parts. Its writes are in write.go, its multipart
// uploads in multipart.go.
type native struct {
	s      *core
	bucket meta.Bucket
}

func (n *native) lookup(ctx context.Context, key string) (meta.Object, error) {
	o, err := n.s.meta.GetObject(ctx, n.bucket.Name, key)
	return o, notFound(err, key, "")
}

func (n *native) lookupVersion(ctx context.Context, key, versionID string) (meta.Object, error) {
	o, err := n.s.meta.GetObjectVersion(ctx, n.bucket.Name, key, versionID)
	return o, notFound(err, key, versionID)
}

// notFound is err with the store's NotFound of a key or a version as the
// service's (ErrNoObject, ErrDeleteMarker, ErrNoVersion); a missing bucket
// (deleted since it was resolved) is a missing key.
func notFound(err error, key, versionID string) error {
	e := errcode.As(err)
	switch {
	case err == nil || e == nil || e.Code != errcode.NotFound || e.Detail["resource"] != nil:
		return err // not a NotFound, or the service's own
	case e.Detail["delete_marker"] == true:
		id, _ := e.Detail["version_id"].(string)
		return ErrDeleteMarker(id)
	case versionID != "" && e.Detail["reason"] == "no_such_version":
		return ErrNoVersion(versionID)
	}
	return ErrNoObject(key)
}

// open reads an inline object from its row, a single blob, or a multipart
// object part after part.
func (n *native) open(ctx context.Context, r *Reader, offset, length int64) (io.ReadCloser, error) {
	o := r.Object
	if o.IsInline() {
		if o.Encryption == nil && int64(len(o.Inline)) != o.Size {
			return nil, errcode.New(errcode.Internal, "inline object %q has %d of its %d bytes", o.Key, len(o.Inline), o.Size)
		}
		return r.opener(o.Encryption, inlineIdentity, o.Size, bytesFetcher(o.Inline)).open(ctx, offset, length)
	}
	if o.Parts == nil {
		if sum := unhex(o.SHA256); o.Encryption == nil && offset == 0 && length == o.Size && sum != nil && r.s.cfg.VerifyReads {
			rc, err := r.s.verified(ctx, o, o.BlobKey, sum)
			return rc, r.gone(err)
		}
		return r.blobOpener(ctx, o.BlobKey, o.Size, o.Encryption).open(ctx, offset, length)
	}
	p := &partsReader{ctx: ctx, r: r, parts: o.Parts, offset: offset, remaining: length}
	// The first part opens now, so that a failure to open it (a key
	// service outage, a missing blob) is an error before any byte is sent.
	if err := p.next(); err != nil {
		return nil, err
	}
	return p, nil
}

// md5: a single-part object's ETag is its plaintext's MD5 (encrypted or
// not: it is computed before the bytes are sealed).
func (n *native) md5(o meta.Object) []byte {
	if o.Parts != nil || o.ETag == "" {
		return nil
	}
	m, err := hex.DecodeString(o.ETag)
	if err != nil {
		return nil
	}
	return m
}

// blob: a plaintext object of one blob whose ETag (MD5) and SHA-256 are
// known, so that a copy made by the store has them too.
func (n *native) blob(o meta.Object) (blobCopy, bool) {
	md5, sha := n.md5(o), unhex(o.SHA256)
	if o.BlobKey == "" || o.Parts != nil || o.IsInline() || o.Encryption != nil || len(md5) != 16 || sha == nil {
		return blobCopy{}, false
	}
	bc := blobCopy{key: o.BlobKey, object: o.Key, size: o.Size, md5: md5, sha256: sha, crc32c: o.CRC32C}
	if o.Checksum.Type == "FULL_OBJECT" {
		bc.checksum = o.Checksum
	}
	return bc, true
}

func (n *native) delete(ctx context.Context, key string, cond meta.Cond) (meta.Object, error) {
	o, err := n.s.meta.DeleteObject(ctx, n.bucket.Name, key, cond)
	return o, notFound(err, key, "")
}

func (n *native) deleteVersion(ctx context.Context, key, versionID string, cond meta.Cond) (meta.Object, error) {
	o, err := n.s.meta.DeleteVersion(ctx, n.bucket.Name, key, versionID, cond)
	return o, notFound(err, key, versionID)
}

func (n *native) list(ctx context.Context, opts meta.ListOptions) (meta.ListPage, error) {
	return n.s.meta.ListObjects(ctx, n.bucket.Name, opts)
}

func (n *native) listVersions(ctx context.Context, opts meta.VersionListOptions) (meta.VersionPage, error) {
	return n.s.meta.ListObjectVersions(ctx, n.bucket.Name, opts)
}

func (n *native) setVersioning(ctx context.Context, v meta.Versioning) error {
	return n.s.meta.SetBucketVersioning(ctx, n.bucket.Name, v)
}

func (n *native) moveOut(ctx context.Context, srcKey string, dst backend, dstKey string, cond meta.Cond) (meta.Object, error) {
	return dst.moveIn(ctx, n.bucket.Name, srcKey, dstKey, cond)
}

// moveIn renames the row: one metadata transaction, no byte moves. The
// store refuses it where either bucket is versioned (a rename would take
// a version out of its key's history): ErrMoveVersioned, which Move
// answers by copying and deleting.
func (n *native) moveIn(ctx context.Context, src, srcKey, dstKey string, cond meta.Cond) (meta.Object, error) {
	if err := ValidKey(srcKey); err != nil {
		return meta.Object{}, err
	}
	if err := ValidKey(dstKey); err != nil {
		return meta.Object{}, err
	}
	o, err := n.s.meta.MoveObject(ctx, src, srcKey, n.bucket.Name, dstKey, cond)
	if errcode.Is(err, errcode.NotFound) {
		return meta.Object{}, ErrNoObject(srcKey)
	}
	return o, err
}

func (n *native) deleteBucket(ctx context.Context) error {
	err := n.s.meta.DeleteBucket(ctx, n.bucket.Name)
	if errcode.Is(err, errcode.Conflict) {
		return &errcode.Error{Code: errcode.Conflict, Message: fmt.Sprintf("bucket %q is not empty", n.bucket.Name),
			Detail: map[string]any{"reason": "bucket_not_empty"}}
	}
	return err
}

// partsReader streams a range of a multipart object, opening one part's
// blob at a time.
type partsReader struct {
	ctx       context.Context
	r         *Reader
	parts     []meta.ObjectPart
	offset    int64 // within the remaining parts
	remaining int64
	cur       io.ReadCloser
}

func (p *partsReader) Read(b []byte) (int, error) {
	for {
		if p.remaining <= 0 {
			return 0, io.EOF
		}
		if p.cur == nil {
			if err := p.next(); err != nil {
				return 0, err
			}
		}
		n, err := p.cur.Read(b)
		p.remaining -= int64(n)
		if err == io.EOF {
			p.cur.Close()
			p.cur = nil
			if n > 0 {
				return n, nil
			}
			continue
		}
		return n, err
	}
}

// WriteTo writes the rest of the range to w part by part, each through
// its own reader's WriteTo when it has one (a decrypting reader's large
// buffer; a plaintext file's sendfile), which io.Copy uses.
func (p *partsReader) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for p.remaining > 0 {
		if p.cur == nil {
			if err := p.next(); err != nil {
				return total, err
			}
		}
		n, err := io.Copy(w, p.cur)
		total += n
		p.remaining -= n
		if err != nil {
			return total, err
		}
		p.cur.Close()
		p.cur = nil
	}
	return total, nil
}

// next opens the part the remaining range starts in.
func (p *partsReader) next() error {
	if p.remaining <= 0 {
		p.cur = io.NopCloser(strings.NewReader(""))
		return nil
	}
	for len(p.parts) > 0 && p.offset >= p.parts[0].Size {
		p.offset -= p.parts[0].Size
		p.parts = p.parts[1:]
	}
	if len(p.parts) == 0 {
		return errcode.New(errcode.Internal, "multipart object is shorter than its size")
	}
	part := p.parts[0]
	n := min(part.Size-p.offset, p.remaining)
	rc, err := p.r.blobOpener(p.ctx, part.BlobKey, part.Size, part.Encryption).open(p.ctx, p.offset, n)
	if err != nil {
		return err
	}
	p.cur, p.offset, p.parts = rc, 0, p.parts[1:]
	return nil
}

func (p *partsReader) Close() error {
	if p.cur != nil {
		return p.cur.Close()
	}
	return nil
}
