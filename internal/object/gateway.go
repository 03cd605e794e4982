package object

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coffer-storage/coffer/internal/crypt"
	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

// Gateway buckets (docs/gateway.md)
//
// A bucket whose record has a Gateway URL fronts an existing bucket of an
// S3-compatible store: it has no object rows, and every object operation
// on it is answered from the backend by gatewayBackend, the bucket's
// backend (backend.go), which takes what it cannot do from unsupported.
// The APIs see the same Reader, meta.Object and errcode errors as for a
// native bucket.
//
//   - Keys map one to one to the backend's keys (under its prefix).
//   - An object's ETag is the backend's ETag: an object replaced behind
//     Coffer's back has a new ETag at once (every Get asks the backend),
//     and Open reads only the version Get saw (If-Match): a replacement
//     between the two is Unavailable (retry), never a mix of versions.
//     The gateway side may serve those bytes from a cache (package
//     gateway keys them by endpoint, bucket, backend key and ETag): then
//     Open serves the version Get saw even if it was replaced since.
//   - Listings are one ListObjectsV2 per page, never cached.
//   - Writes (mode=rw) stream to the backend through the integrity reader
//     (size cap, SHA-256 + MD5, client digests checked before the last
//     byte goes: nothing is stored on a mismatch); mode=ro refuses them
//     with PermissionDenied (reason read_only_gateway).
//   - Objects written through Coffer carry in their user metadata the
//     plaintext SHA-256 (coffer-sha256) and, when encrypted, the envelope
//     (coffer-sse, base64) and plaintext size (coffer-size): such objects
//     are ciphertext in the backend, readable only through Coffer.
//   - Not supported (NotImplemented): multipart uploads through Coffer,
//     atomic multi-file batches, moves. Quotas are not charged.

// GatewayStore is the backend of a gateway bucket; server opens it from
// the bucket's Gateway URL (Config.OpenGateway).
type GatewayStore interface {
	// Head returns what the backend says of key (Key, Size, ETag,
	// ContentType, Metadata, ModTime); NotFound if missing.
	Head(ctx context.Context, key string) (meta.Object, error)
	// Get streams [offset, offset+length) of key (length ≥ 1, or -1 for
	// to the end) if its ETag is still etag: PreconditionFailed if not.
	Get(ctx context.Context, key, etag string, offset, length int64) (io.ReadCloser, error)
	// List returns one page, as meta.Objects.ListObjects does.
	List(ctx context.Context, opts meta.ListOptions) (meta.ListPage, error)
	// Put streams size bytes of r (-1: unknown) to key; an error from r
	// must leave nothing stored. It returns the stored object's ETag.
	Put(ctx context.Context, key string, r io.Reader, size int64, contentType string, md map[string]string) (meta.Object, error)
	// Delete deletes key (a missing key is not an error).
	Delete(ctx context.Context, key string) error
	// Writable reports whether the gateway was configured mode=rw.
	Writable() bool
	// BackendKey is the backend's name of key (its prefix and key): what
	// the ciphertext of an object Coffer encrypted is bound to, so that it
	// reads the same through every gateway over that bucket.
	BackendKey(key string) string
}

// OpenGateway opens the backend of a gateway URL.
type OpenGateway func(ctx context.Context, url string) (GatewayStore, error)

// The user metadata Coffer keeps on the objects it writes to a gateway.
const (
	gwMetaSHA256 = "coffer-sha256"
	gwMetaSSE    = "coffer-sse"
	gwMetaSize   = "coffer-size"
)

// gateways caches the opened backends by URL.
type gateways struct {
	mu     sync.Mutex
	stores map[string]GatewayStore
}

// gateway returns the store of gateway bucket b, opening it on first use
// (not under the lock: an unreachable backend must not queue every
// request behind one attempt). An open that fails is retried by the next
// request, so a backend that comes back is used without a restart.
func (s *core) gateway(ctx context.Context, b meta.Bucket) (GatewayStore, error) {
	s.gw.mu.Lock()
	g, ok := s.gw.stores[b.Gateway]
	s.gw.mu.Unlock()
	if ok {
		return g, nil
	}
	if s.cfg.OpenGateway == nil {
		return nil, errcode.New(errcode.NotImplemented, "bucket %q is a gateway bucket, which this server cannot open", b.Name)
	}
	g, err := s.cfg.OpenGateway(ctx, b.Gateway)
	if err != nil {
		e := errcode.As(errcode.Retry(errcode.Unavailable, time.Second, "gateway bucket %q: cannot open its backend", b.Name))
		e.Err = err
		return nil, e
	}
	s.gw.mu.Lock()
	defer s.gw.mu.Unlock()
	if cur, ok := s.gw.stores[b.Gateway]; ok {
		return cur, nil // opened meanwhile by another request
	}
	if s.gw.stores == nil {
		s.gw.stores = map[string]GatewayStore{}
	}
	s.gw.stores[b.Gateway] = g
	return g, nil
}

// ErrReadOnlyGateway is the error of a write to a gateway bucket of mode
// ro: 403 on both APIs (S3 AccessDenied).
func ErrReadOnlyGateway(bucket string) error {
	return &errcode.Error{Code: errcode.PermissionDenied, Message: "bucket " + strconv.Quote(bucket) + " is a read-only gateway bucket",
		Detail: map[string]any{"reason": "read_only_gateway"}}
}

// gatewayBackend is the backend of a gateway bucket. Its store is opened
// when an operation first needs it (not when the bucket is resolved), so
// that what is refused without it is refused as before it.
type gatewayBackend struct {
	unsupported // multipart uploads, atomic batches, moves, deleting the bucket
	s           *core
	bucket      meta.Bucket
}

func newGatewayBackend(s *core, b meta.Bucket) *gatewayBackend {
	g := &gatewayBackend{s: s, bucket: b}
	g.unsupported = unsupported{bucket: b.Name, writable: func(ctx context.Context) error {
		_, err := g.writableStore(ctx)
		return err
	}}
	return g
}

// store returns the bucket's store.
func (g *gatewayBackend) store(ctx context.Context) (GatewayStore, error) {
	return g.s.gateway(ctx, g.bucket)
}

// writableStore returns the bucket's store for a write, or the refusal.
func (g *gatewayBackend) writableStore(ctx context.Context) (GatewayStore, error) {
	st, err := g.store(ctx)
	if err != nil {
		return nil, err
	}
	if !st.Writable() {
		return nil, ErrReadOnlyGateway(g.bucket.Name)
	}
	return st, nil
}

// lookup asks the backend (a HEAD): never cached, so an object replaced
// behind Coffer's back has its new ETag at once.
func (g *gatewayBackend) lookup(ctx context.Context, key string) (meta.Object, error) {
	st, err := g.store(ctx)
	if err != nil {
		return meta.Object{}, err
	}
	o, err := st.Head(ctx, key)
	if err != nil {
		return meta.Object{}, err
	}
	return gatewayObject(g.bucket.Name, o), nil
}

// gatewayObject turns what the backend says into the object the APIs see:
// Coffer's own metadata taken out of the user metadata.
func gatewayObject(bucket string, o meta.Object) meta.Object {
	o.Bucket = bucket
	if o.ContentType == "" {
		o.ContentType = guessType(o.Key)
	}
	md := o.Metadata
	o.Metadata = nil
	for k, v := range md {
		switch k {
		case gwMetaSHA256:
			if len(v) == 64 {
				o.SHA256 = v
			}
		case gwMetaSSE:
			env, err := base64.StdEncoding.DecodeString(v)
			if err != nil {
				env = []byte{0} // unparsable: the read reports the damage
			}
			o.Encryption = env
		case gwMetaSize:
		default:
			if o.Metadata == nil {
				o.Metadata = map[string]string{}
			}
			o.Metadata[k] = v
		}
	}
	if o.Encryption != nil {
		if n, err := crypt.PlaintextSize(o.Size); err == nil {
			o.Size = n
		}
		if v, err := strconv.ParseInt(md[gwMetaSize], 10, 64); err == nil && v != o.Size {
			o.Encryption = []byte{0} // sizes disagree: tampered; the read fails
		}
	}
	return o
}

// gatewayIdentity is what the ciphertext of a gateway object is bound to:
// its backend key (a copy to another key, or another bucket's envelope,
// fails authentication).
func gatewayIdentity(g GatewayStore, key string) string { return "gateway:" + g.BackendKey(key) }

// open reads the version lookup saw (If-Match on its ETag).
func (g *gatewayBackend) open(ctx context.Context, r *Reader, offset, length int64) (io.ReadCloser, error) {
	o := r.Object
	if length == 0 {
		return io.NopCloser(strings.NewReader("")), nil
	}
	st, err := g.store(ctx) // opened by lookup
	if err != nil {
		return nil, err
	}
	gone := func(err error) error {
		switch {
		case errcode.Is(err, errcode.NotFound):
			return ErrNoObject(o.Key)
		case errcode.Is(err, errcode.PreconditionFailed):
			return errcode.Retry(errcode.Unavailable, time.Second, "object %q was replaced while being read; retry", o.Key)
		}
		return err
	}
	fetch := func(off, n int64) (io.ReadCloser, error) {
		if n == 0 {
			return io.NopCloser(strings.NewReader("")), nil
		}
		return st.Get(ctx, o.Key, o.ETag, off, n)
	}
	op := r.opener(o.Encryption, gatewayIdentity(st, o.Key), o.Size, fetch)
	op.plainOpenerErr = gone
	return op.open(ctx, offset, length)
}

// md5: a gateway object's ETag is the backend's, which is not its
// plaintext's MD5 when Coffer encrypted it (or the backend assembled it
// from parts).
func (g *gatewayBackend) md5(meta.Object) []byte { return nil }

// blob: a gateway object is not in the blob store.
func (g *gatewayBackend) blob(meta.Object) (blobCopy, bool) { return blobCopy{}, false }

// put streams w to the backend: it is visible when stored.
func (g *gatewayBackend) put(ctx context.Context, w *incoming) (meta.Object, error) {
	st, err := g.writableStore(ctx)
	if err != nil {
		return meta.Object{}, err
	}
	if len(w.Tags) > 0 {
		return meta.Object{}, errGatewayUnsupported("object tagging")
	}
	if w.Lock.set() {
		return meta.Object{}, errGatewayUnsupported("object lock")
	}
	if w.Cond.IfNoneMatch || w.Cond.IfMatch != "" || w.Cond.IfNoneMatchETag != "" {
		// Checked before the write; the backend write itself is not
		// conditional (docs/gateway.md).
		old, err := st.Head(ctx, w.Key)
		exists := err == nil
		if err != nil && !errcode.Is(err, errcode.NotFound) {
			return meta.Object{}, err
		}
		if err := w.Cond.Check(old, exists); err != nil {
			return meta.Object{}, err
		}
	}
	if w.SSE.Mode == crypt.ModeCustomer {
		return meta.Object{}, errGatewayUnsupported("encryption with a customer key (SSE-C)")
	}
	sl, err := g.s.newSealer(ctx, gatewayIdentity(st, w.Key), w.SSE)
	if err != nil {
		return meta.Object{}, err
	}
	md := map[string]string{}
	for k, v := range w.Metadata {
		md[k] = v
	}
	for _, k := range []string{gwMetaSHA256, gwMetaSSE, gwMetaSize} {
		if _, ok := md[k]; ok {
			return meta.Object{}, errcode.New(errcode.InvalidArgument, "metadata name %q is reserved in gateway buckets", k)
		}
	}
	// The plaintext SHA-256 is known only at EOF, after the bytes went up:
	// the backend object keeps it only when the client announced it.
	if w.SHA256 != nil {
		md[gwMetaSHA256] = hex.EncodeToString(w.SHA256)
	}
	size := w.Size
	if sl != nil {
		if size, err = sl.blobSize(w.Size); err != nil {
			return meta.Object{}, err
		}
		if w.Size < 0 {
			// The envelope's plaintext size must be known up front.
			return meta.Object{}, errcode.New(errcode.InvalidArgument, "an encrypted upload to a gateway bucket needs a Content-Length")
		}
		md[gwMetaSSE] = base64.StdEncoding.EncodeToString(sl.envelope)
		md[gwMetaSize] = strconv.FormatInt(w.Size, 10)
	}
	r, err := w.hashed()
	if err != nil {
		return meta.Object{}, err
	}
	fr := &firstErrReader{r: r}
	stored, err := st.Put(ctx, w.Key, sl.encrypt(fr), size, w.ContentType, md)
	if err != nil {
		if fr.err != nil {
			return meta.Object{}, fr.err // the body's own failure (digest, size, client), not the transport's
		}
		return meta.Object{}, err
	}
	o := gatewayObject(g.bucket.Name, stored)
	o.Key, o.ContentType, o.Size = w.Key, w.ContentType, r.N()
	w.measured(&o, r)
	if sl != nil {
		o.Encryption = sl.envelope
	}
	if o.ModTime.IsZero() {
		o.ModTime = g.s.now().UTC()
	}
	return o, nil
}

// delete deletes key if cond holds for what the backend holds now.
func (g *gatewayBackend) delete(ctx context.Context, key string, cond meta.Cond) (meta.Object, error) {
	st, err := g.writableStore(ctx)
	if err != nil {
		return meta.Object{}, err
	}
	cur, err := st.Head(ctx, key)
	if errcode.Is(err, errcode.NotFound) {
		return meta.Object{}, ErrNoObject(key)
	}
	if err != nil {
		return meta.Object{}, err
	}
	if err := cond.Check(cur, true); err != nil {
		return meta.Object{}, err
	}
	if err := st.Delete(ctx, key); err != nil {
		return meta.Object{}, err
	}
	return gatewayObject(g.bucket.Name, cur), nil
}

// lookupVersion: a gateway bucket is never versioned in Coffer (its
// backend's versions are the backend's): its objects are their own null
// version.
func (g *gatewayBackend) lookupVersion(ctx context.Context, key, versionID string) (meta.Object, error) {
	if versionID != meta.NullVersion {
		return g.unsupported.lookupVersion(ctx, key, versionID)
	}
	return g.lookup(ctx, key)
}

// deleteVersion deletes the null version, the object; others are
// unsupported.
func (g *gatewayBackend) deleteVersion(ctx context.Context, key, versionID string, cond meta.Cond) (meta.Object, error) {
	if versionID != meta.NullVersion {
		return g.unsupported.deleteVersion(ctx, key, versionID, cond)
	}
	return g.delete(ctx, key, cond)
}

// listVersions lists the objects as S3 lists an unversioned bucket's:
// each its only version, null and latest (cleanup tools list versions
// before they delete a bucket, versioned or not).
func (g *gatewayBackend) listVersions(ctx context.Context, opts meta.VersionListOptions) (meta.VersionPage, error) {
	if err := meta.CheckVersionListOptions(opts); err != nil {
		return meta.VersionPage{}, err
	}
	if opts.VersionIDMarker != "" && opts.VersionIDMarker != meta.NullVersion {
		return meta.VersionPage{}, errcode.New(errcode.InvalidArgument, "Invalid version id specified")
	}
	p, err := g.list(ctx, meta.ListOptions{Prefix: opts.Prefix, Delimiter: opts.Delimiter, StartAfter: opts.KeyMarker, Limit: opts.Limit})
	if err != nil {
		return meta.VersionPage{}, err
	}
	out := meta.VersionPage{CommonPrefixes: p.CommonPrefixes, Truncated: p.Truncated, NextKeyMarker: p.NextStartAfter}
	for _, o := range p.Objects {
		o.VersionID, o.IsLatest = meta.NullVersion, true
		out.Versions = append(out.Versions, o)
	}
	if n := len(p.Objects); n > 0 && p.NextStartAfter == p.Objects[n-1].Key {
		out.NextVersionIDMarker = meta.NullVersion
	}
	return out, nil
}

// list lists one page: one ListObjectsV2, never cached. A gateway bucket
// has no delete markers in Coffer: a listing of them is refused.
func (g *gatewayBackend) list(ctx context.Context, opts meta.ListOptions) (meta.ListPage, error) {
	if opts.DeleteMarkers {
		return meta.ListPage{}, errGatewayUnsupported("a listing of deleted files")
	}
	st, err := g.store(ctx)
	if err != nil {
		return meta.ListPage{}, err
	}
	p, err := st.List(ctx, opts)
	if err != nil {
		return meta.ListPage{}, err
	}
	for i := range p.Objects {
		p.Objects[i].Bucket = g.bucket.Name
	}
	return p, nil
}

// firstErrReader remembers the first error (other than EOF) of r.
type firstErrReader struct {
	r   io.Reader
	err error
}

func (f *firstErrReader) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if err != nil && err != io.EOF && f.err == nil {
		f.err = err
	}
	return n, err
}
