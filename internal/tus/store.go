// Package tus serves tus 1.0 resumable uploads (https://tus.io/protocols/
// resumable-upload) over Coffer's object service, with tusd's handler
// (github.com/tus/tusd/v2/pkg/handler) speaking the protocol and a data
// store of Coffer's own.
//
// Contracts:
//   - A tus upload is a multipart upload of the object service (so its
//     bytes are staged against the bucket owner's quota before they are
//     written, it is visible to nobody as an object, and the janitor aborts
//     it when it expires) plus a tus_uploads row (meta.Tus) with the
//     declared length, the tus metadata and the running MD5/SHA-256. The
//     running hash state holds the last (offset mod 64) bytes of the
//     plaintext: when the parts are encrypted, it is stored encrypted too
//     (object.Service.SealUploadState), so no node or restart needs more
//     than the key provider to resume.
//   - Every PATCH body becomes one part, streamed into the blob store; no
//     temporary file. Its bytes are hashed once per algorithm: into the
//     running MD5/SHA-256 (and the Upload-Checksum, if any); the part
//     gets no MD5 of its own (object.PartInput.WholeHashed): the object's
//     SHA-256 verifies its parts together. A body cut short is kept up to where it stopped (the
//     client resumes from there) unless it carried Upload-Checksum, which
//     is then checked over the whole body: a mismatch answers 460 and
//     stores nothing.
//   - The finished upload becomes its object in one metadata transaction
//     (object.Service.CompleteWhole) with the whole-object MD5 as ETag and
//     its SHA-256, as a plain PUT would have.
//   - Requests on one upload are serialised across nodes by a lease in the
//     metadata store (Locker), never by process memory. A PATCH's running
//     hash state is recorded by its unlock, in the same commit
//     (meta.Tus.UnlockTusHash), and only while it holds the lease.
//   - Target bucket and key come from Upload-Metadata: "bucket", and "key"
//     (or "filename"); "content-type" (or "filetype") sets the type.
//     Partial uploads (concatenation) need "bucket" too: they are uploads
//     in that bucket, charged to its owner.
package tus

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"hash"
	"io"
	"time"

	"github.com/tus/tusd/v2/pkg/handler"

	"github.com/coffer-storage/coffer/internal/detach"
	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/object"
)

// Objects is what the tus store calls of the object service
// (*object.Service; the contracts are its methods').
type Objects interface {
	CreateUpload(ctx context.Context, a object.Actor, in object.CreateUploadInput) (meta.Upload, error)
	GetUpload(ctx context.Context, a object.Actor, bucket, key, id string) (meta.Upload, error)
	AllParts(ctx context.Context, a object.Actor, id string) (meta.Upload, []meta.Part, error)
	PutPart(ctx context.Context, a object.Actor, in object.PartInput) (meta.Part, error)
	OpenParts(ctx context.Context, parts []meta.Part) io.ReadCloser
	OpenUploadState(ctx context.Context, u meta.Upload, offset int64, stored []byte) ([]byte, error)
	SealUploadState(ctx context.Context, u meta.Upload, offset int64, state []byte) ([]byte, error)
	CompleteWhole(ctx context.Context, a object.Actor, id, etag, sha256 string) (meta.Object, error)
	AbortUpload(ctx context.Context, a object.Actor, bucket, key, id string) error
	MaxObjectSize() int64
}

// Store is tusd's data store over the object service.
type Store struct {
	objects Objects
	meta    meta.Tus
	ttl     time.Duration
	mapErr  func(ctx context.Context, err error) error
}

type ctxKey int

const (
	actorKey ctxKey = iota
	stateKey
)

// WithActor returns ctx carrying the authenticated caller.
func WithActor(ctx context.Context, a object.Actor) context.Context {
	return context.WithValue(ctx, actorKey, a)
}

// reqState is what a request's store calls tell the handler wrapper and
// each other.
type reqState struct {
	checksum *checksum // Upload-Checksum of the request, if any
	expires  time.Time // the upload's expiry (Upload-Expires)
	finished bool
	mismatch bool
	// looked is the upload the lock's ownership check read, when the lock
	// was then taken at once (Store.lookup reads it again otherwise).
	looked *looked
	// hash is the running hash state after this request's PATCH, which
	// the unlock records (meta.Tus.UnlockTusHash): one tus write a PATCH.
	hash *pendingHash
}

type looked struct {
	id string
	a  object.Actor
	u  meta.Upload
}

// pendingHash is a hash state to record at the unlock: h after offset
// bytes, sealed as stored (see saveRunning).
type pendingHash struct {
	offset int64
	h      hashes
	sealed []byte
}

func stateOf(ctx context.Context) *reqState {
	if st, ok := ctx.Value(stateKey).(*reqState); ok {
		return st
	}
	return &reqState{}
}

func (s *Store) actor(ctx context.Context) (object.Actor, error) {
	a, ok := ctx.Value(actorKey).(object.Actor)
	if !ok || a.UserID == "" {
		return object.Actor{}, s.mapErr(ctx, errcode.New(errcode.Unauthenticated, "authentication required"))
	}
	return a, nil
}

// info is the tus state kept as JSON in meta.TusUpload.Info.
type info struct {
	Meta     map[string]string `json:"meta,omitempty"`
	Partial  bool              `json:"partial,omitempty"`
	Final    bool              `json:"final,omitempty"`
	Partials []string          `json:"partials,omitempty"`
}

// NewUpload implements handler.DataStore.
func (s *Store) NewUpload(ctx context.Context, fi handler.FileInfo) (handler.Upload, error) {
	a, err := s.actor(ctx)
	if err != nil {
		return nil, err
	}
	md := fi.MetaData
	bucket := md["bucket"]
	key := md["key"]
	if key == "" {
		key = md["filename"]
	}
	if fi.IsPartial && key == "" {
		key = "tus-partial-upload"
	}
	if bucket == "" || key == "" {
		return nil, s.mapErr(ctx, errcode.New(errcode.InvalidArgument, "Upload-Metadata must name the bucket (\"bucket\") and the key (\"key\" or \"filename\")"))
	}
	ct := md["content-type"]
	if ct == "" {
		ct = md["filetype"]
	}
	in := object.CreateUploadInput{Bucket: bucket, Key: key, ContentType: ct, TTL: s.ttl}
	length := int64(-1)
	if !fi.SizeIsDeferred {
		length = fi.Size
		in.Size = fi.Size
	}
	u, err := s.objects.CreateUpload(ctx, a, in)
	if err != nil {
		return nil, s.mapErr(ctx, err)
	}
	inf := info{Meta: md, Partial: fi.IsPartial, Final: fi.IsFinal, Partials: fi.PartialUploads}
	raw, _ := json.Marshal(inf)
	t := meta.TusUpload{UploadID: u.ID, Length: length, Info: raw}
	if err := s.meta.CreateTus(ctx, t); err != nil {
		actx, cancel := detach.Context(ctx)
		_ = s.objects.AbortUpload(actx, a, "", "", u.ID)
		cancel()
		return nil, s.mapErr(ctx, err)
	}
	stateOf(ctx).expires = u.ExpiresAt
	return &upload{s: s, a: a, u: u, t: t, info: inf}, nil
}

// GetUpload implements handler.DataStore. An upload of another user, an
// S3 multipart upload and an expired upload are all not found.
func (s *Store) GetUpload(ctx context.Context, id string) (handler.Upload, error) {
	a, u, err := s.lookup(ctx, id)
	if err != nil {
		return nil, err
	}
	t, err := s.meta.GetTus(ctx, id)
	if errcode.Is(err, errcode.NotFound) {
		return nil, handler.ErrNotFound
	}
	if err != nil {
		return nil, s.mapErr(ctx, err)
	}
	var inf info
	if err := json.Unmarshal(t.Info, &inf); err != nil {
		return nil, s.mapErr(ctx, errcode.Wrap(errcode.Internal, err, "tus upload %q: bad state", id))
	}
	stateOf(ctx).expires = u.ExpiresAt
	return &upload{s: s, a: a, u: u, t: t, info: inf}, nil
}

// lookup returns the caller and upload id, if it is the caller's and has
// not expired; else handler.ErrNotFound (whether it exists is nobody
// else's business).
func (s *Store) lookup(ctx context.Context, id string) (object.Actor, meta.Upload, error) {
	a, err := s.actor(ctx)
	if err != nil {
		return object.Actor{}, meta.Upload{}, err
	}
	st := stateOf(ctx)
	if l := st.looked; l != nil && l.id == id && l.a.UserID == a.UserID {
		// Read under this request's lock, taken right after: still so.
		st.looked = nil
		if !l.u.ExpiresAt.After(time.Now()) {
			return object.Actor{}, meta.Upload{}, handler.ErrNotFound
		}
		return a, l.u, nil
	}
	u, err := s.objects.GetUpload(ctx, a, "", "", id)
	if errcode.Is(err, errcode.NotFound) || err == nil && !u.ExpiresAt.After(time.Now()) {
		return object.Actor{}, meta.Upload{}, handler.ErrNotFound
	}
	if err != nil {
		return object.Actor{}, meta.Upload{}, s.mapErr(ctx, err)
	}
	return a, u, nil
}

// owns is Locker's check (see Locker.owns). What it read is kept for
// GetUpload, if the lock is then taken at once (Lock clears it else).
func (s *Store) owns(ctx context.Context, id string) error {
	a, u, err := s.lookup(ctx, id)
	if err == nil {
		stateOf(ctx).looked = &looked{id: id, a: a, u: u}
	}
	return err
}

// AsTerminatableUpload implements handler.TerminaterDataStore.
func (s *Store) AsTerminatableUpload(up handler.Upload) handler.TerminatableUpload {
	return up.(*upload)
}

// AsConcatableUpload implements handler.ConcaterDataStore.
func (s *Store) AsConcatableUpload(up handler.Upload) handler.ConcatableUpload {
	return up.(*upload)
}

// AsLengthDeclarableUpload implements handler.LengthDeferrerDataStore.
func (s *Store) AsLengthDeclarableUpload(up handler.Upload) handler.LengthDeclarableUpload {
	return up.(*upload)
}

type upload struct {
	s    *Store
	a    object.Actor
	u    meta.Upload
	t    meta.TusUpload
	info info
	// listed is what GetInfo listed, for this request's WriteChunk (the
	// request holds the upload's lock: nothing changed it since).
	listed *listedParts
}

type listedParts struct {
	ps  []meta.Part
	off int64
}

func (up *upload) parts(ctx context.Context) ([]meta.Part, int64, error) {
	_, ps, err := up.s.objects.AllParts(ctx, up.a, up.u.ID)
	if errcode.Is(err, errcode.NotFound) {
		return nil, 0, handler.ErrNotFound
	}
	if err != nil {
		return nil, 0, up.s.mapErr(ctx, err)
	}
	var n int64
	for _, p := range ps {
		n += p.Size
	}
	return ps, n, nil
}

// GetInfo implements handler.Upload.
func (up *upload) GetInfo(ctx context.Context) (handler.FileInfo, error) {
	ps, off, err := up.parts(ctx)
	if err != nil {
		return handler.FileInfo{}, err
	}
	up.listed = &listedParts{ps: ps, off: off}
	fi := handler.FileInfo{
		ID: up.u.ID, Size: up.t.Length, SizeIsDeferred: up.t.Length < 0, Offset: off,
		MetaData: up.info.Meta, IsPartial: up.info.Partial, IsFinal: up.info.Final, PartialUploads: up.info.Partials,
	}
	if fi.SizeIsDeferred {
		fi.Size = 0
	}
	return fi, nil
}

// GetReader implements handler.Upload; downloads are disabled.
func (up *upload) GetReader(context.Context) (io.ReadCloser, error) {
	return nil, handler.ErrNotImplemented
}

// hashes is the running MD5 and SHA-256 of an upload.
type hashes struct{ md5, sha hash.Hash }

func newHashes() hashes { return hashes{md5.New(), sha256.New()} }

func (h hashes) marshal() []byte {
	m, _ := h.md5.(encoding.BinaryMarshaler).MarshalBinary()
	s, _ := h.sha.(encoding.BinaryMarshaler).MarshalBinary()
	out := binary.BigEndian.AppendUint16(nil, uint16(len(m)))
	return append(append(out, m...), s...)
}

func unmarshalHashes(b []byte) (hashes, bool) {
	h := newHashes()
	if len(b) < 2 {
		return h, false
	}
	n := int(binary.BigEndian.Uint16(b))
	if len(b) < 2+n {
		return h, false
	}
	if h.md5.(encoding.BinaryUnmarshaler).UnmarshalBinary(b[2:2+n]) != nil || h.sha.(encoding.BinaryUnmarshaler).UnmarshalBinary(b[2+n:]) != nil {
		return h, false
	}
	return h, true
}

// running returns the hash state after offset bytes, if the row has it
// (and it opens: see object.Service.OpenUploadState).
func (up *upload) running(ctx context.Context, offset int64) (hashes, bool) {
	if offset == 0 {
		return newHashes(), true
	}
	if up.t.HashOffset != offset {
		return hashes{}, false
	}
	state, err := up.s.objects.OpenUploadState(ctx, up.u, offset, up.t.HashState)
	if err != nil {
		return hashes{}, false
	}
	return unmarshalHashes(state)
}

// saveRunning records h as the hash state after offset bytes: sealed like
// the upload's parts when they are encrypted (a hash state holds the last
// offset mod 64 bytes of plaintext), never in the clear then.
func (up *upload) saveRunning(ctx context.Context, offset int64, h hashes) error {
	state, err := up.s.objects.SealUploadState(ctx, up.u, offset, h.marshal())
	if err != nil {
		return err
	}
	return up.s.meta.SetTusHash(ctx, up.u.ID, offset, state)
}

// chunkReader feeds a part: it hashes what passes and checks the
// request's Upload-Checksum at the end, failing instead of io.EOF on a
// mismatch (so the blob store keeps nothing).
type chunkReader struct {
	r     io.Reader
	h     *hashes
	check *checksum
	sum   hash.Hash
	st    *reqState
	n     int64
}

var errMismatch = errors.New("tus: checksum mismatch")

func (c *chunkReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if n > 0 {
		c.n += int64(n)
		if c.h != nil {
			c.h.md5.Write(p[:n])
			c.h.sha.Write(p[:n])
		}
		if c.sum != nil {
			c.sum.Write(p[:n])
		}
	}
	if err == io.EOF && c.sum != nil && !bytes.Equal(c.sum.Sum(nil), c.check.want) {
		c.st.mismatch = true
		return n, errMismatch
	}
	return n, err
}

// ErrChecksumMismatch is the answer to a PATCH whose body does not match
// its Upload-Checksum (tus checksum extension: 460).
var ErrChecksumMismatch = handler.NewError("ERR_CHECKSUM_MISMATCH", "the body does not match Upload-Checksum; nothing was stored", 460)

// WriteChunk implements handler.Upload: the body becomes the next part.
func (up *upload) WriteChunk(ctx context.Context, offset int64, src io.Reader) (int64, error) {
	var ps []meta.Part
	var have int64
	if l := up.listed; l != nil {
		ps, have = l.ps, l.off
	} else {
		var err error
		if ps, have, err = up.parts(ctx); err != nil {
			return 0, err
		}
	}
	up.listed = nil // a part is added below
	if have != offset {
		return 0, handler.ErrMismatchOffset
	}
	st := stateOf(ctx)
	cr := &chunkReader{r: src, check: st.checksum, st: st}
	if st.checksum != nil {
		cr.sum = st.checksum.alg.new()
	}
	h, ok := up.running(ctx, offset)
	if ok {
		cr.h = &h
	}
	// An empty body adds no part (but its checksum is still checked).
	br := &peekReader{r: cr}
	if br.empty() {
		if st.mismatch {
			return 0, ErrChecksumMismatch
		}
		return 0, nil
	}
	next := 1
	if len(ps) > 0 {
		next = ps[len(ps)-1].Number + 1
	}
	// The part needs no MD5 of its own: the running hashes (here, or read
	// back at the end) are the object's, which verifies its parts whole.
	p, err := up.s.objects.PutPart(ctx, up.a, object.PartInput{UploadID: up.u.ID, Number: next, Body: br, Size: -1, WholeHashed: true})
	if st.mismatch {
		return 0, ErrChecksumMismatch
	}
	if err != nil {
		if errcode.Is(err, errcode.NotFound) {
			return 0, handler.ErrNotFound
		}
		return 0, up.s.mapErr(ctx, err)
	}
	if cr.h != nil {
		// Best effort: a stale state only costs a read-back at the end.
		// Under the handler, the unlock records it in its commit (Locker).
		sctx, cancel := detach.Context(ctx)
		if _, handled := ctx.Value(stateKey).(*reqState); !handled {
			_ = up.saveRunning(sctx, offset+p.Size, *cr.h)
		} else if sealed, err := up.s.objects.SealUploadState(sctx, up.u, offset+p.Size, cr.h.marshal()); err == nil {
			st.hash = &pendingHash{offset: offset + p.Size, h: *cr.h, sealed: sealed}
		}
		cancel()
	}
	return p.Size, nil
}

// peekReader reads one byte ahead to tell an empty body.
type peekReader struct {
	r    io.Reader
	buf  [1]byte
	have bool
	err  error
}

func (p *peekReader) empty() bool {
	n, err := io.ReadFull(p.r, p.buf[:])
	p.have = n == 1
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		p.err = err
	}
	return !p.have && p.err == nil
}

func (p *peekReader) Read(b []byte) (int, error) {
	if p.err != nil {
		return 0, p.err
	}
	if p.have {
		p.have = false
		b[0] = p.buf[0]
		if len(b) == 1 {
			return 1, nil
		}
		n, err := p.r.Read(b[1:])
		return n + 1, err
	}
	return p.r.Read(b)
}

// FinishUpload implements handler.Upload: a whole upload becomes its
// object; a partial one waits for its final upload.
func (up *upload) FinishUpload(ctx context.Context) error {
	if up.info.Partial {
		return nil
	}
	return up.complete(ctx)
}

func (up *upload) complete(ctx context.Context) error {
	ps, size, err := up.parts(ctx)
	if err != nil {
		return err
	}
	if len(ps) == 0 {
		// An empty upload: one empty part makes the empty object.
		if _, err := up.s.objects.PutPart(ctx, up.a, object.PartInput{UploadID: up.u.ID, Number: 1, Body: bytes.NewReader(nil), Size: 0}); err != nil {
			return up.s.mapErr(ctx, err)
		}
	}
	var h hashes
	ok := false
	if ph := stateOf(ctx).hash; ph != nil && ph.offset == size {
		// This request's PATCH ended the upload: its hashes are here.
		h, ok = ph.h, true
	} else {
		t, err := up.s.meta.GetTus(ctx, up.u.ID)
		if err != nil {
			return up.s.mapErr(ctx, err)
		}
		up.t = t
		h, ok = up.running(ctx, size)
	}
	if !ok {
		// The running state is stale (a node died between a part and its
		// hash update): read the bytes back once.
		h = newHashes()
		rc := up.s.objects.OpenParts(ctx, ps)
		_, err := io.Copy(io.MultiWriter(h.md5, h.sha), rc)
		rc.Close()
		if err != nil {
			return up.s.mapErr(ctx, err)
		}
	}
	if _, err := up.s.objects.CompleteWhole(ctx, up.a, up.u.ID, hex.EncodeToString(h.md5.Sum(nil)), hex.EncodeToString(h.sha.Sum(nil))); err != nil {
		return up.s.mapErr(ctx, err)
	}
	stateOf(ctx).finished = true
	return nil
}

// Terminate implements handler.TerminatableUpload.
func (up *upload) Terminate(ctx context.Context) error {
	err := up.s.objects.AbortUpload(ctx, up.a, "", "", up.u.ID)
	if errcode.Is(err, errcode.NotFound) {
		return handler.ErrNotFound
	}
	if err != nil {
		return up.s.mapErr(ctx, err)
	}
	return nil
}

// DeclareLength implements handler.LengthDeclarableUpload.
func (up *upload) DeclareLength(ctx context.Context, length int64) error {
	if err := up.s.meta.SetTusLength(ctx, up.u.ID, length); err != nil {
		return up.s.mapErr(ctx, err)
	}
	up.t.Length = length
	return nil
}

// ConcatUploads implements handler.ConcatableUpload: the partial uploads'
// parts are copied, in order, as the final upload's parts, which then
// becomes its object; the partial uploads are then discarded.
func (up *upload) ConcatUploads(ctx context.Context, partials []handler.Upload) error {
	h := newHashes()
	next := 1
	for _, pu := range partials {
		p := pu.(*upload)
		ps, _, err := p.parts(ctx)
		if err != nil {
			return err
		}
		for _, src := range ps {
			rc := up.s.objects.OpenParts(ctx, []meta.Part{src})
			body := io.TeeReader(rc, io.MultiWriter(h.md5, h.sha))
			_, err := up.s.objects.PutPart(ctx, up.a, object.PartInput{UploadID: up.u.ID, Number: next, Body: body, Size: src.Size, WholeHashed: true})
			rc.Close()
			if err != nil {
				return up.s.mapErr(ctx, err)
			}
			next++
		}
	}
	var size int64
	for _, pu := range partials {
		fi, err := pu.GetInfo(ctx)
		if err != nil {
			return err
		}
		size += fi.Offset
	}
	if err := up.saveRunning(ctx, size, h); err != nil {
		return up.s.mapErr(ctx, err)
	}
	if err := up.complete(ctx); err != nil {
		return err
	}
	tctx, cancel := detach.Context(ctx)
	defer cancel()
	for _, pu := range partials {
		_ = pu.(*upload).Terminate(tctx)
	}
	return nil
}
