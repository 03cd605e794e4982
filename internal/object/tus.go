package object

import (
	"context"
	"io"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

// AllParts returns every part of an upload in a bucket a owns, in part
// number order.
func (s *Service) AllParts(ctx context.Context, a Actor, id string) (meta.Upload, []meta.Part, error) {
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
func (s *Service) OpenParts(ctx context.Context, parts []meta.Part) io.ReadCloser {
	return &uploadPartsReader{ctx: ctx, s: s, parts: parts}
}

type uploadPartsReader struct {
	ctx   context.Context
	s     *Service
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
func (s *Service) CompleteWhole(ctx context.Context, a Actor, id, etag, sha256 string) (meta.Object, error) {
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
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	o, err := s.meta.CompleteUpload(cctx, id, obj, list, 0, meta.Cond{})
	if errcode.Is(err, errcode.NotFound) {
		return meta.Object{}, ErrNoUpload(id)
	}
	return o, err
}

// MaxObjectSize is the largest object an upload may make.
func (s *Service) MaxObjectSize() int64 { return s.cfg.MaxObjectSize }
