// Package object is Coffer's object service: buckets and objects on top of
// a metadata store and a blob store. It is the only package that touches
// both, and the only place that decides who may do what to a bucket, so the
// file API and the S3 API cannot disagree on either.
//
// # Invariants
//
//   - A blob is durable before the metadata that points at it commits; a
//     2xx answer therefore means the object survives kill -9 and power loss.
//   - Blobs are written under fresh keys and never overwritten: an
//     overwrite is a new blob plus a pointer swap in one metadata
//     transaction, so readers see the old or the new object, never a mix.
//   - Replaced and deleted blobs are queued in the same transaction and
//     reclaimed after a grace period, once re-checked (at delete time) that
//     no row points at them again; blobs no row points at (a crash
//     between blob write and commit) are collected by CollectOrphans.
//   - A blob is staged in the metadata store before its first byte is
//     written (see staging.go): the staging reserves the upload's bytes
//     against the bucket owner's quota while it is in flight, and keeps
//     every node's orphan collection off the blob.
//   - Every operation authorises its Actor against the bucket first.
package object

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coffer-storage/coffer/internal/blob"
	"github.com/coffer-storage/coffer/internal/config"
	"github.com/coffer-storage/coffer/internal/detach"
	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/integrity"
	"github.com/coffer-storage/coffer/internal/meta"
)

// Actor is who an operation acts for: a user ID, or "" for anonymous.
type Actor struct {
	UserID string
}

// Config of the service. New takes it as given: build it with ConfigFrom
// (from config.Defaults() for the defaults), which reads config.Config's
// fields of the same names.
type Config struct {
	// MaxObjectSize bounds a single streamed upload.
	MaxObjectSize int64
	// GarbageGrace is how long a replaced or deleted blob is kept before it
	// is reclaimed, so readers that looked it up just before can open it.
	GarbageGrace time.Duration
	// OrphanGrace is the minimum age of an unreferenced blob before it is
	// collected as an orphan.
	OrphanGrace time.Duration
	// InlineMax is the largest object (of known size) stored inline in the
	// metadata store instead of as a blob: it commits with its metadata in
	// one transaction, saving a file create and two fsyncs. 0 disables
	// inlining (--inline-max 0).
	InlineMax int64
	// StagingLease is the lease of an upload in flight (meta.Staging): the
	// writing node renews it every StagingLease/3; if the node dies, its
	// reservations lapse and its blobs become orphans this long after.
	StagingLease time.Duration
	// Encrypt makes every new object, part and inline object encrypted at
	// rest with a data key from Keys (see encrypt.go).
	Encrypt bool
	// Keys issues and opens data keys: needed with Encrypt, and to read
	// objects written encrypted.
	Keys Keys
	// OpenGateway opens the backend of a gateway bucket (gateway.go);
	// nil: gateway buckets answer NotImplemented.
	OpenGateway OpenGateway
}

// Service is the object service.
type Service struct {
	meta  meta.Store
	blobs blob.Store
	cfg   Config
	log   *slog.Logger
	now   func() time.Time

	// staging holds the blobs this node is writing or has written and not
	// yet committed (a form upload can stage files for a long time), whose
	// leases it renews (see staging.go).
	stagingMu   sync.Mutex
	staging     map[string]*staging
	renewing    bool // renewStagings runs
	stagedBytes atomic.Int64

	gw       gateways // the opened backends of gateway buckets
	jobStats JobStats // background jobs of encryption at rest (kmsjobs.go)
}

// ConfigFrom returns the service's configuration in c: its size limits,
// graces, staging lease and --encryption. Keys and OpenGateway are the
// caller's to add.
func ConfigFrom(c config.Config) Config {
	return Config{
		MaxObjectSize: c.MaxObjectSize, GarbageGrace: c.GarbageGrace, OrphanGrace: c.OrphanGrace,
		InlineMax: c.InlineMax, StagingLease: c.StagingLease, Encrypt: c.Encryption == "on",
	}
}

// New returns a Service over m and b, configured by cfg as it is (see
// ConfigFrom).
func New(m meta.Store, b blob.Store, cfg Config, log *slog.Logger) *Service {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Service{meta: m, blobs: b, cfg: cfg, log: log, now: time.Now, staging: map[string]*staging{}}
}

// action is what an actor wants to do to a bucket.
type action int

const (
	read  action = iota // read objects (GET/HEAD)
	write               // anything else: list, put, delete, configure
)

// authorize loads bucket and checks that a may perform act on it. Owners
// may do anything; anyone may read objects of public-read buckets.
func (s *Service) authorize(ctx context.Context, a Actor, bucket string, act action) (meta.Bucket, error) {
	if err := ValidBucketName(bucket); err != nil {
		return meta.Bucket{}, ErrNoBucket(bucket)
	}
	b, err := s.meta.GetBucket(ctx, bucket)
	if err != nil {
		if errcode.Is(err, errcode.NotFound) {
			if a.UserID == "" {
				return meta.Bucket{}, errcode.New(errcode.Unauthenticated, "authentication required")
			}
			return meta.Bucket{}, ErrNoBucket(bucket)
		}
		return meta.Bucket{}, err
	}
	switch {
	case a.UserID != "" && b.OwnerID == a.UserID:
		return b, nil
	case act == read && b.Visibility == meta.PublicRead:
		return b, nil
	case a.UserID == "":
		return meta.Bucket{}, errcode.New(errcode.Unauthenticated, "authentication required")
	}
	return meta.Bucket{}, errcode.New(errcode.PermissionDenied, "access to bucket %q denied", bucket)
}

// ---- buckets ----

// CreateBucket creates a bucket owned by a.
func (s *Service) CreateBucket(ctx context.Context, a Actor, name string, v meta.Visibility) (meta.Bucket, error) {
	if a.UserID == "" {
		return meta.Bucket{}, errcode.New(errcode.Unauthenticated, "authentication required")
	}
	if err := ValidBucketName(name); err != nil {
		e := errcode.As(err)
		return meta.Bucket{}, &errcode.Error{Code: errcode.InvalidArgument, Message: e.Message, Detail: map[string]any{"reason": "invalid_bucket_name"}}
	}
	if v == "" {
		v = meta.Private
	}
	if !v.Valid() {
		return meta.Bucket{}, errcode.New(errcode.InvalidArgument, "visibility must be %q or %q", meta.Private, meta.PublicRead)
	}
	b := meta.Bucket{Name: name, OwnerID: a.UserID, Visibility: v, CreatedAt: s.now().UTC()}
	if err := s.meta.CreateBucket(ctx, b); err != nil {
		if errcode.Is(err, errcode.AlreadyExists) {
			e := &errcode.Error{Code: errcode.AlreadyExists, Message: fmt.Sprintf("bucket name %q is taken", name)}
			if cur, gerr := s.meta.GetBucket(ctx, name); gerr == nil && cur.OwnerID == a.UserID {
				e.Message = fmt.Sprintf("you already own bucket %q", name)
				e.Detail = map[string]any{"s3_code": "BucketAlreadyOwnedByYou"}
			}
			return meta.Bucket{}, e
		}
		return meta.Bucket{}, err
	}
	return b, nil
}

// ListBuckets lists a's buckets.
func (s *Service) ListBuckets(ctx context.Context, a Actor) ([]meta.Bucket, error) {
	if a.UserID == "" {
		return nil, errcode.New(errcode.Unauthenticated, "authentication required")
	}
	return s.meta.ListBuckets(ctx, a.UserID)
}

// GetBucket returns a bucket a owns.
func (s *Service) GetBucket(ctx context.Context, a Actor, name string) (meta.Bucket, error) {
	return s.authorize(ctx, a, name, write)
}

// SetBucketVisibility changes who may read a bucket's objects.
func (s *Service) SetBucketVisibility(ctx context.Context, a Actor, name string, v meta.Visibility) (meta.Bucket, error) {
	b, err := s.authorize(ctx, a, name, write)
	if err != nil {
		return meta.Bucket{}, err
	}
	if !v.Valid() {
		return meta.Bucket{}, errcode.New(errcode.InvalidArgument, "visibility must be %q or %q", meta.Private, meta.PublicRead)
	}
	if err := s.meta.SetBucketVisibility(ctx, name, v); err != nil {
		return meta.Bucket{}, err
	}
	b.Visibility = v
	return b, nil
}

// DeleteBucket deletes an empty bucket a owns.
func (s *Service) DeleteBucket(ctx context.Context, a Actor, name string) error {
	b, err := s.authorize(ctx, a, name, write)
	if err != nil {
		return err
	}
	if b.IsGateway() {
		return &errcode.Error{Code: errcode.PermissionDenied, Message: fmt.Sprintf("bucket %q is a gateway bucket: an administrator removes it", name),
			Detail: map[string]any{"reason": "gateway_bucket"}}
	}
	err = s.meta.DeleteBucket(ctx, name)
	if errcode.Is(err, errcode.Conflict) {
		return &errcode.Error{Code: errcode.Conflict, Message: fmt.Sprintf("bucket %q is not empty", name),
			Detail: map[string]any{"reason": "bucket_not_empty"}}
	}
	return err
}

// ---- objects ----

// PutInput describes one object upload.
type PutInput struct {
	Bucket, Key string
	Body        io.Reader
	Size        int64 // exact size, or -1 if unknown (chunked)
	ContentType string
	Metadata    map[string]string
	// Client-announced digests (raw bytes), checked at EOF.
	SHA256, MD5 []byte
	// ChecksumAlgorithm, if set, makes the service compute and store that
	// S3 checksum; ChecksumWant, if set, must match it.
	ChecksumAlgorithm string
	ChecksumWant      []byte
	Cond              meta.Cond
	// SSE asks for encryption (the zero value: the server's default).
	SSE SSE
}

// Put streams one object into storage and commits it.
func (s *Service) Put(ctx context.Context, a Actor, in PutInput) (meta.Object, error) {
	st, err := s.stage(ctx, a, in, true)
	if err != nil {
		return meta.Object{}, err
	}
	if st.gateway {
		return st.put.Object, nil
	}
	objs, err := s.commit(ctx, []staged{st})
	if err != nil {
		return meta.Object{}, err
	}
	return objs[0], nil
}

// staged is an upload written durably but not yet committed: a staged blob
// (with its reserver), or inline bytes.
type staged struct {
	put meta.Put
	rv  *reserver // nil for inline bytes
	// gateway: put.Object was written to a gateway bucket's backend
	// already; there is nothing to commit.
	gateway bool
}

// stage validates, authorises and writes in's bytes: small ones of known
// size into memory (inline), others to a fresh staged blob. With
// gateway, an upload to a gateway bucket is written to its backend at
// once (staged.gateway); without, it is refused.
func (s *Service) stage(ctx context.Context, a Actor, in PutInput, gateway bool) (staged, error) {
	if err := ValidKey(in.Key); err != nil {
		return staged{}, err
	}
	if err := validMetadata(in.Metadata); err != nil {
		return staged{}, err
	}
	b, err := s.authorize(ctx, a, in.Bucket, write)
	if err != nil {
		return staged{}, err
	}
	if in.Size > s.cfg.MaxObjectSize {
		return staged{}, errcode.New(errcode.TooLarge, "object larger than the limit of %d bytes", s.cfg.MaxObjectSize)
	}
	if in.SSE, err = s.writeSSE(ctx, a, b, in.SSE); err != nil {
		return staged{}, err
	}
	if b.IsGateway() {
		if _, err := s.writableGateway(ctx, b); err != nil {
			return staged{}, err
		}
		if !gateway {
			return staged{}, errGatewayUnsupported("an atomic upload of several files")
		}
		o, err := s.gatewayPut(ctx, b, in)
		return staged{put: meta.Put{Object: o}, gateway: true}, err
	}
	// Fail fast, before reading the body: create-only on an existing key,
	// If-Match on a missing or different object.
	var old meta.Object
	if in.Cond.IfNoneMatch || in.Cond.IfMatch != "" {
		old, err = s.meta.GetObject(ctx, b.Name, in.Key)
		if err != nil && !errcode.Is(err, errcode.NotFound) {
			return staged{}, err
		}
		if err := in.Cond.Check(old, err == nil); err != nil {
			return staged{}, err
		}
	}
	ct := in.ContentType
	if ct == "" {
		ct = guessType(in.Key)
	}
	body := in.Body
	if body == nil {
		body = strings.NewReader("")
	}
	inline := s.cfg.InlineMax > 0 && in.Size >= 0 && in.Size <= s.cfg.InlineMax
	limit := s.cfg.MaxObjectSize
	limitErr := errcode.New(errcode.TooLarge, "object larger than the limit of %d bytes", s.cfg.MaxObjectSize)
	if inline {
		// Fail fast on the quota too (the commit checks it exactly).
		owner, err := s.meta.GetUser(ctx, b.OwnerID)
		if err != nil {
			return staged{}, err
		}
		looked := in.Cond.IfNoneMatch || in.Cond.IfMatch != "" // old is the current object, if any
		if owner.QuotaBytes > 0 && in.Size > owner.QuotaBytes-owner.UsageBytes && !looked {
			// An overwrite frees the old object's bytes.
			if o, err := s.meta.GetObject(ctx, b.Name, in.Key); err == nil {
				old = o
			} else if !errcode.Is(err, errcode.NotFound) {
				return staged{}, err
			}
		}
		if owner.QuotaBytes > 0 && in.Size > owner.QuotaBytes-owner.UsageBytes+old.Size {
			return staged{}, quotaErr(owner)
		}
	}
	r := integrity.NewReader(body, integrity.Options{
		Size: in.Size, Limit: limit, LimitErr: limitErr,
		SHA256: in.SHA256, MD5: in.MD5,
		ChecksumAlgorithm: in.ChecksumAlgorithm, ChecksumWant: in.ChecksumWant,
	})
	out := staged{put: meta.Put{
		Object: meta.Object{
			Bucket: b.Name, Key: in.Key, ContentType: ct, Metadata: in.Metadata,
		},
		Cond:        in.Cond,
		BucketOwner: b.OwnerID,
	}}
	o := &out.put.Object
	blobKey := ""
	if !inline {
		blobKey = newBlobKey()
	}
	// A data key before the first byte: no key, no write (a key service
	// outage fails the upload with Unavailable, never stores plaintext).
	identity := blobKey
	if inline {
		identity = inlineIdentity
	}
	sl, err := s.newSealer(ctx, identity, in.SSE)
	if err != nil {
		return staged{}, err
	}
	if sl != nil {
		o.Encryption, o.EncryptionKEK = sl.envelope, sl.kek
	}
	if inline {
		// Small and of known size: keep the bytes for the metadata store.
		buf := bytes.NewBuffer(make([]byte, 0, in.Size+1))
		if _, err := buf.ReadFrom(r); err != nil {
			return staged{}, err
		}
		o.Inline, o.Size = buf.Bytes(), int64(buf.Len())
		if sl != nil {
			n, err := sl.blobSize(o.Size)
			if err != nil {
				return staged{}, err
			}
			ct := bytes.NewBuffer(make([]byte, 0, n+1))
			if _, err := ct.ReadFrom(sl.encrypt(bytes.NewReader(o.Inline))); err != nil {
				return staged{}, err
			}
			clear(o.Inline)
			o.Inline = ct.Bytes()
		}
	} else {
		// Staged before the first byte: reserved against the owner's
		// quota (refused here, before reading, if it cannot fit), and
		// safe from every node's orphan collection.
		st := meta.Staging{BlobKey: blobKey, OwnerID: b.OwnerID, Bucket: b.Name, Key: in.Key}
		rv, size, err := s.writeStaged(ctx, st, r, in.Size, sl)
		if err != nil {
			return staged{}, err
		}
		o.BlobKey, o.Size = st.BlobKey, size
		out.put.Staged, out.rv = true, rv
	}
	o.ETag = hex.EncodeToString(r.MD5())
	o.SHA256 = hex.EncodeToString(r.SHA256())
	o.Checksum = checksumOf(in.ChecksumAlgorithm, r.Checksum())
	o.ModTime = s.now().UTC()
	return out, nil
}

func checksumOf(alg string, sum []byte) meta.Checksum {
	if alg == "" || sum == nil {
		return meta.Checksum{}
	}
	return meta.Checksum{Algorithm: strings.ToUpper(alg), Type: "FULL_OBJECT", Value: integrity.EncodeChecksum(sum)}
}

// guessType returns the media type of key's extension, or
// application/octet-stream.
func guessType(key string) string {
	if ct := mime.TypeByExtension(path.Ext(key)); ct != "" {
		return ct
	}
	return "application/octet-stream"
}

// ErrNoBucket, ErrNoObject and ErrNoUpload are the NotFound errors of the
// service; Detail["resource"] tells the APIs which one it is.
func ErrNoBucket(name string) error {
	return &errcode.Error{Code: errcode.NotFound, Message: "bucket not found", Detail: map[string]any{"resource": "bucket"}}
}

// ErrNoObject is the NotFound error for a missing object.
func ErrNoObject(key string) error {
	return &errcode.Error{Code: errcode.NotFound, Message: "object not found", Detail: map[string]any{"resource": "key"}}
}

// ErrNoUpload is the NotFound error for a missing multipart upload.
func ErrNoUpload(id string) error {
	return &errcode.Error{Code: errcode.NotFound, Message: "upload not found", Detail: map[string]any{"resource": "upload"}}
}

func quotaErr(u meta.User) error {
	return &errcode.Error{Code: errcode.QuotaExceeded, Message: "storage quota exceeded",
		Detail: map[string]any{"quota_bytes": u.QuotaBytes, "usage_bytes": u.UsageBytes}}
}

// commit makes staged uploads visible atomically, or discards them.
func (s *Service) commit(ctx context.Context, sts []staged) ([]meta.Object, error) {
	puts := make([]meta.Put, len(sts))
	for i, st := range sts {
		puts[i] = st.put
	}
	// The blobs are durable; commit even if the client went away meanwhile,
	// so what we may already have acknowledged by side effect stays
	// consistent. A bounded context keeps a stuck store from hanging us.
	cctx, cancel := detach.Context(ctx)
	defer cancel()
	_, err := s.meta.PutObjects(cctx, puts)
	if err != nil {
		s.discard(ctx, sts)
		switch {
		case errcode.Is(err, errcode.QuotaExceeded):
			return nil, errcode.New(errcode.QuotaExceeded, "storage quota exceeded")
		case cctx.Err() != nil:
			return nil, errcode.Retry(errcode.Unavailable, time.Second, "metadata store too slow to commit; retry")
		}
		return nil, err
	}
	// The stagings went with the commit; replaced blobs are reclaimed by
	// the garbage queue.
	var keys []string
	for _, st := range sts {
		if st.rv != nil {
			st.rv.done()
			keys = append(keys, st.put.Object.BlobKey)
		}
	}
	s.endStaging(keys...)
	out := make([]meta.Object, len(puts))
	for i := range puts {
		out[i] = puts[i].Object
	}
	return out, nil
}

// discard drops staged uploads that will never be committed.
func (s *Service) discard(ctx context.Context, sts []staged) {
	var keys []string
	for _, st := range sts {
		if st.rv != nil {
			st.rv.done()
			keys = append(keys, st.put.Object.BlobKey)
		}
	}
	s.discardStaged(ctx, keys)
}

// Batch stages several uploads and commits them in one transaction: all
// become visible together, or none does.
type Batch struct {
	s      *Service
	a      Actor
	staged []staged
	done   bool
}

// NewBatch starts a batch for a.
func (s *Service) NewBatch(a Actor) *Batch {
	return &Batch{s: s, a: a}
}

// Add streams one upload to storage; it becomes visible only at Commit.
func (bt *Batch) Add(ctx context.Context, in PutInput) (meta.Object, error) {
	for _, st := range bt.staged {
		if st.put.Object.Bucket == in.Bucket && st.put.Object.Key == in.Key {
			return meta.Object{}, errcode.New(errcode.InvalidArgument, "key %q appears twice in one upload", in.Key)
		}
	}
	st, err := bt.s.stage(ctx, bt.a, in, false)
	if err != nil {
		return meta.Object{}, err
	}
	bt.staged = append(bt.staged, st)
	return st.put.Object, nil
}

// Commit makes every added object visible at once.
func (bt *Batch) Commit(ctx context.Context) ([]meta.Object, error) {
	bt.done = true
	if len(bt.staged) == 0 {
		return nil, nil
	}
	return bt.s.commit(ctx, bt.staged)
}

// Abort discards everything staged. Safe after Commit (no-op).
func (bt *Batch) Abort() {
	if bt.done {
		return
	}
	bt.done = true
	bt.s.discard(context.Background(), bt.staged)
}

// Reader is an authorised handle on one object version: its metadata, and
// a way to open its bytes.
type Reader struct {
	Object meta.Object
	Bucket meta.Bucket
	// CustomerKey is the key an object stored with a customer key (S3
	// SSE-C) is read with; see CheckCustomerKey.
	CustomerKey []byte
	s           *Service
	gw          GatewayStore // a gateway bucket's backend; nil for native buckets
}

// Get authorises a read of bucket/key and returns a handle; no bytes are
// read until Open.
func (s *Service) Get(ctx context.Context, a Actor, bucket, key string) (*Reader, error) {
	b, err := s.authorize(ctx, a, bucket, read)
	if err != nil {
		return nil, err
	}
	if err := ValidKey(key); err != nil {
		return nil, err
	}
	o, err := s.lookup(ctx, b, key)
	if err != nil {
		if errcode.Is(err, errcode.NotFound) {
			return nil, ErrNoObject(key)
		}
		return nil, err
	}
	r := &Reader{Object: o, Bucket: b, s: s}
	if b.IsGateway() {
		r.gw, _ = s.gateway(ctx, b) // opened by lookup
	}
	return r, nil
}

// Open returns the bytes [offset, offset+length) of the object version;
// length -1 means to the end. Multipart objects are read part after part.
func (r *Reader) Open(ctx context.Context, offset, length int64) (io.ReadCloser, error) {
	o := r.Object
	if offset < 0 || offset > o.Size {
		return nil, errcode.New(errcode.RangeNotSatisfiable, "offset %d outside the object's %d bytes", offset, o.Size)
	}
	if length < 0 || offset+length > o.Size {
		length = o.Size - offset
	}
	if r.gw != nil {
		return r.gatewayOpen(ctx, offset, length)
	}
	if o.IsInline() {
		if o.Encryption == nil && int64(len(o.Inline)) != o.Size {
			return nil, errcode.New(errcode.Internal, "inline object %q has %d of its %d bytes", o.Key, len(o.Inline), o.Size)
		}
		return r.opener(o.Encryption, inlineIdentity, o.Size, bytesFetcher(o.Inline)).open(ctx, offset, length)
	}
	if o.Parts == nil {
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

// opener opens bytes of the object version with envelope env (nil:
// plaintext) bound to identity.
func (r *Reader) opener(env []byte, identity string, size int64, fetch func(off, n int64) (io.ReadCloser, error)) opener {
	return opener{s: r.s, bucket: r.Object.Bucket, key: r.Object.Key, envelope: env, identity: identity, size: size,
		customerKey: r.CustomerKey, fetch: fetch, plainOpenerErr: r.gone}
}

// blobOpener opens the blob blobKey of plaintext size bytes.
func (r *Reader) blobOpener(ctx context.Context, blobKey string, size int64, env []byte) opener {
	return r.opener(env, blobKey, size, func(off, n int64) (io.ReadCloser, error) { return r.s.blobs.Get(ctx, blobKey, off, n) })
}

// gone maps a missing blob to a missing object: the version was replaced
// and reclaimed between lookup and open (after the grace period).
func (r *Reader) gone(err error) error {
	if errcode.Is(err, errcode.NotFound) {
		return ErrNoObject(r.Object.Key)
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

// Delete removes bucket/key.
func (s *Service) Delete(ctx context.Context, a Actor, bucket, key string, cond meta.Cond) (meta.Object, error) {
	b, err := s.authorize(ctx, a, bucket, write)
	if err != nil {
		return meta.Object{}, err
	}
	if err := ValidKey(key); err != nil {
		return meta.Object{}, err
	}
	if b.IsGateway() {
		return s.gatewayDelete(ctx, b, key, cond)
	}
	o, err := s.meta.DeleteObject(ctx, bucket, key, cond)
	if errcode.Is(err, errcode.NotFound) {
		return meta.Object{}, ErrNoObject(key)
	}
	return o, err
}

// Move renames srcBucket/srcKey to dstBucket/dstKey (both owned by a).
func (s *Service) Move(ctx context.Context, a Actor, srcBucket, srcKey, dstBucket, dstKey string, cond meta.Cond) (meta.Object, error) {
	sb, err := s.authorize(ctx, a, srcBucket, write)
	if err != nil {
		return meta.Object{}, err
	}
	db, err := s.authorize(ctx, a, dstBucket, write)
	if err != nil {
		return meta.Object{}, err
	}
	if sb.IsGateway() || db.IsGateway() {
		return meta.Object{}, errGatewayUnsupported("moving an object")
	}
	if err := ValidKey(srcKey); err != nil {
		return meta.Object{}, err
	}
	if err := ValidKey(dstKey); err != nil {
		return meta.Object{}, err
	}
	o, err := s.meta.MoveObject(ctx, srcBucket, srcKey, dstBucket, dstKey, cond)
	if errcode.Is(err, errcode.NotFound) {
		return meta.Object{}, ErrNoObject(srcKey)
	}
	return o, err
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
	// SSE asks for the copy's encryption (the zero value: the server's
	// default), whatever the source's.
	SSE SSE
}

// Copy copies an object a may read into a bucket a owns. The bytes are
// copied into a fresh blob (server-side when the store can) and verified
// against the source's SHA-256.
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
	ct, md := src.Object.ContentType, src.Object.Metadata
	if in.ReplaceMetadata {
		ct, md = in.ContentType, in.Metadata
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
		ContentType: ct, Metadata: md, SHA256: sum, Cond: in.Cond, SSE: in.SSE,
	}
	if c := src.Object.Checksum; c.Algorithm != "" && c.Type == "FULL_OBJECT" {
		if want, err := base64.StdEncoding.DecodeString(c.Value); err == nil {
			in2.ChecksumAlgorithm, in2.ChecksumWant = c.Algorithm, want
		}
	}
	if src.gw == nil && src.Object.Parts == nil && src.Object.ETag != "" {
		if m, err := hex.DecodeString(src.Object.ETag); err == nil {
			in2.MD5 = m
		}
	}
	rc, err := src.Open(ctx, 0, -1)
	if err != nil {
		return meta.Object{}, err
	}
	defer rc.Close()
	in2.Body = rc
	return s.Put(ctx, a, in2)
}

// List lists a bucket a owns.
func (s *Service) List(ctx context.Context, a Actor, bucket string, opts meta.ListOptions) (meta.ListPage, error) {
	b, err := s.authorize(ctx, a, bucket, write)
	if err != nil {
		return meta.ListPage{}, err
	}
	if b.IsGateway() {
		return s.gatewayList(ctx, b, opts)
	}
	return s.meta.ListObjects(ctx, bucket, opts)
}

// newBlobKey returns a fresh, never reused blob key: a fan-out directory,
// then the creation time in milliseconds and 64 random bits.
func newBlobKey() string {
	var r [8]byte
	rand.Read(r[:])
	return fmt.Sprintf("o/%02x/%012x%016x", r[0], time.Now().UnixMilli(), binary.BigEndian.Uint64(r[:]))
}
