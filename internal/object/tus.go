package object

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"strconv"

	"github.com/coffer-storage/coffer/internal/crypt"
	"github.com/coffer-storage/coffer/internal/detach"
	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

// AllParts returns every part of an upload in a bucket a owns, in part
// number order.
func (s *Uploads) AllParts(ctx context.Context, a Actor, id string) (meta.Upload, []meta.Part, error) {
	var all []meta.Part
	after := 0
	for {
		u, ps, more, err := s.ListParts(ctx, a, "", "", id, after, 1000)
		if err != nil {
			return meta.Upload{}, nil, err
		}
		all = append(all, ps...)
		if !more || len(ps) == 0 {
			return u, all, nil
		}
		after = ps[len(ps)-1].Number
	}
}

// OpenParts returns a reader over the concatenated bytes of parts (of an
// upload a may write: see AllParts).
func (s *Uploads) OpenParts(ctx context.Context, parts []meta.Part) io.ReadCloser {
	return &uploadPartsReader{ctx: ctx, s: s.core, parts: parts}
}

type uploadPartsReader struct {
	ctx   context.Context
	s     *core
	parts []meta.Part
	cur   io.ReadCloser
}

func (r *uploadPartsReader) Read(p []byte) (int, error) {
	for {
		if r.cur == nil {
			if len(r.parts) == 0 {
				return 0, io.EOF
			}
			// Through the part's envelope: with encryption on, the blob
			// holds ciphertext.
			part := r.parts[0]
			op := opener{s: r.s, envelope: part.Encryption, identity: part.BlobKey, size: part.Size,
				fetch: func(off, n int64) (io.ReadCloser, error) {
					return r.s.blobs.Get(r.ctx, part.BlobKey, off, n)
				},
				plainOpenerErr: func(err error) error { return err }}
			rc, err := op.open(r.ctx, 0, part.Size)
			if err != nil {
				return 0, err
			}
			r.cur, r.parts = rc, r.parts[1:]
		}
		n, err := r.cur.Read(p)
		if err == io.EOF {
			r.cur.Close()
			r.cur = nil
			if n > 0 {
				return n, nil
			}
			continue
		}
		return n, err
	}
}

func (r *uploadPartsReader) Close() error {
	if r.cur != nil {
		return r.cur.Close()
	}
	return nil
}

// CompleteWhole turns an upload in a bucket a owns into its object, of
// all its parts in number order whatever their sizes (a tus upload's
// parts are its PATCH requests), with the whole-object etag (MD5 hex) and
// sha256 (hex) the caller computed over the same bytes. One metadata
// transaction: the object appears whole or not at all.
func (s *Uploads) CompleteWhole(ctx context.Context, a Actor, id, etag, sha256 string) (meta.Object, error) {
	u, parts, err := s.AllParts(ctx, a, id)
	if err != nil {
		return meta.Object{}, err
	}
	if len(parts) == 0 {
		return meta.Object{}, errcode.New(errcode.InvalidArgument, "upload %q has no parts", id)
	}
	list := make([]meta.CompletePart, len(parts))
	for i, p := range parts {
		list[i] = meta.CompletePart{Number: p.Number, ETag: p.ETag}
	}
	obj := meta.Object{ETag: etag, SHA256: sha256, ContentType: u.ContentType, Metadata: u.Metadata, ModTime: s.now().UTC()}
	cctx, cancel := detach.Context(ctx)
	defer cancel()
	o, err := s.meta.CompleteUpload(cctx, id, obj, list, 0, meta.Cond{})
	if errcode.Is(err, errcode.NotFound) {
		return meta.Object{}, ErrNoUpload(id)
	}
	return o, err
}

// sealedStateMagic starts a state SealUploadState encrypted: it cannot
// start a raw state (the tus package's format begins with a 2-byte length
// of about a hundred).
const sealedStateMagic = "CST1"

// SealUploadState returns state, the running hash state of upload u (a tus
// upload a may write, looked up with GetUpload) after offset bytes, as it
// may rest in the metadata store. A hash state holds the last (offset mod
// 64) bytes of the plaintext: when u's parts are encrypted (as PutPart
// would write them now), so is the state — under a fresh data key of the
// same kind, as DARE bound to u's ID and offset (docs/encryption.md);
// otherwise it is returned as it is.
func (s *Uploads) SealUploadState(ctx context.Context, u meta.Upload, offset int64, state []byte) ([]byte, error) {
	sl, err := s.stateSealer(ctx, u, offset)
	if err != nil || sl == nil {
		return state, err
	}
	ct, err := io.ReadAll(sl.encrypt(bytes.NewReader(state)))
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(sealedStateMagic)+2+len(sl.envelope)+len(ct))
	out = append(out, sealedStateMagic...)
	out = binary.BigEndian.AppendUint16(out, uint16(len(sl.envelope)))
	return append(append(out, sl.envelope...), ct...), nil
}

// OpenUploadState returns the state SealUploadState made of stored for the
// same upload and offset. A sealed state that does not open (another
// upload's, another offset's, tampered) is an integrity error; a raw state
// where u's parts are encrypted is refused (InvalidArgument): the caller
// then hashes the parts again.
func (s *Uploads) OpenUploadState(ctx context.Context, u meta.Upload, offset int64, stored []byte) ([]byte, error) {
	rest, sealed := bytes.CutPrefix(stored, []byte(sealedStateMagic))
	if !sealed {
		sl, err := s.stateSealer(ctx, u, offset)
		if err != nil {
			return nil, err
		}
		if sl != nil {
			return nil, errcode.New(errcode.InvalidArgument, "upload %q: a plaintext hash state for encrypted parts", u.ID)
		}
		return stored, nil
	}
	if len(rest) < 2 || len(rest) < 2+int(binary.BigEndian.Uint16(rest)) {
		return nil, errcode.New(errcode.Internal, "upload %q: damaged sealed hash state", u.ID)
	}
	n := int(binary.BigEndian.Uint16(rest))
	env, ct := rest[2:2+n], rest[2+n:]
	size, err := crypt.PlaintextSize(int64(len(ct)))
	if err != nil {
		return nil, errcode.Wrap(errcode.Internal, err, "upload %q: damaged sealed hash state", u.ID)
	}
	op := opener{s: s.core, bucket: u.Bucket, key: u.Key, envelope: env, identity: stateIdentity(u.ID, offset), size: size,
		fetch: bytesFetcher(ct), plainOpenerErr: func(err error) error { return err }}
	rc, err := op.open(ctx, 0, size)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

// stateSealer is the sealer of u's hash state after offset bytes: nil
// when u's parts are not encrypted.
func (s *Uploads) stateSealer(ctx context.Context, u meta.Upload, offset int64) (*sealer, error) {
	b, err := s.meta.GetBucket(ctx, u.Bucket)
	if err != nil {
		return nil, err
	}
	sse, err := s.partSSE(u, b, nil)
	if err != nil {
		return nil, err
	}
	return s.newSealer(ctx, stateIdentity(u.ID, offset), sse)
}

// stateIdentity is what a sealed hash state is bound to.
func stateIdentity(uploadID string, offset int64) string {
	return "tus-hash-state/" + uploadID + "/" + strconv.FormatInt(offset, 10)
}
