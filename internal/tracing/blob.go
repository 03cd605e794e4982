package tracing

import (
	"context"
	"io"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/coffer-storage/coffer/internal/blob"
)

// Blobs returns s with a span around each of its calls that a request
// (a recording span in the context) makes: Put (the whole upload of the
// body, its size), Get (from the call to the reader's Close, the bytes
// read), Stat, Delete, List, and the optional Copier and
// MultipartPresigner that s implements (the decorator implements exactly
// those s does). Blob keys are Coffer's own random names, never an
// object's key, so they are attributes.
func Blobs(s blob.Store) blob.Store {
	t := &blobStore{inner: s}
	mp, isMP := s.(blob.MultipartPresigner)
	cp, isCP := s.(blob.Copier)
	switch {
	case isMP && isCP:
		return &struct {
			*blobStore
			blobMultipart
			blobCopier
		}{t, blobMultipart{mp}, blobCopier{cp}}
	case isMP:
		return &struct {
			*blobStore
			blobMultipart
		}{t, blobMultipart{mp}}
	case isCP:
		return &struct {
			*blobStore
			blobCopier
		}{t, blobCopier{cp}}
	}
	return t
}

type blobStore struct{ inner blob.Store }

func keyAttr(key string) attribute.KeyValue { return attribute.String("coffer.blob.key", key) }

func (s *blobStore) Put(ctx context.Context, key string, r io.Reader, size int64) (blob.Info, error) {
	ctx, span := Start(ctx, "blob put", keyAttr(key), attribute.Int64("coffer.blob.declared_size", size))
	info, err := s.inner.Put(ctx, key, r, size)
	if err == nil {
		span.SetAttributes(attribute.Int64("coffer.blob.size", info.Size))
	}
	End(span, err)
	return info, err
}

func (s *blobStore) Get(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	ctx, span := Start(ctx, "blob get", keyAttr(key), attribute.Int64("coffer.blob.offset", offset), attribute.Int64("coffer.blob.length", length))
	if !span.IsRecording() {
		return s.inner.Get(ctx, key, offset, length)
	}
	rc, err := s.inner.Get(ctx, key, offset, length)
	if err != nil {
		End(span, err)
		return nil, err
	}
	span.AddEvent("opened")
	return &spanReader{rc: rc, span: span}, nil
}

func (s *blobStore) Stat(ctx context.Context, key string) (blob.Info, error) {
	ctx, span := Start(ctx, "blob stat", keyAttr(key))
	info, err := s.inner.Stat(ctx, key)
	End(span, err)
	return info, err
}

func (s *blobStore) Delete(ctx context.Context, key string) error {
	ctx, span := Start(ctx, "blob delete", keyAttr(key))
	err := s.inner.Delete(ctx, key)
	End(span, err)
	return err
}

func (s *blobStore) List(ctx context.Context, prefix string, fn func(blob.Info) error) error {
	ctx, span := Start(ctx, "blob list")
	err := s.inner.List(ctx, prefix, fn)
	End(span, err)
	return err
}

// spanReader ends a Get's span when the reader is closed, with the bytes
// read. Its WriteTo hands the copy to the inner reader as io.Copy would
// have (sendfile from a file stays sendfile).
type spanReader struct {
	rc   io.ReadCloser
	span trace.Span
	n    int64
	err  error
	done bool
}

func (r *spanReader) Read(p []byte) (int, error) {
	n, err := r.rc.Read(p)
	r.n += int64(n)
	if err != nil && err != io.EOF && r.err == nil {
		r.err = err
	}
	return n, err
}

func (r *spanReader) WriteTo(w io.Writer) (int64, error) {
	n, err := io.Copy(w, r.rc)
	r.n += n
	if err != nil && r.err == nil {
		r.err = err
	}
	return n, err
}

func (r *spanReader) Close() error {
	err := r.rc.Close()
	if !r.done {
		r.done = true
		r.span.SetAttributes(attribute.Int64("coffer.blob.bytes_read", r.n))
		End(r.span, r.err)
	}
	return err
}

type blobMultipart struct{ mp blob.MultipartPresigner }

func (m blobMultipart) CreateMultipart(ctx context.Context, key string) (string, error) {
	ctx, span := Start(ctx, "blob create multipart", keyAttr(key))
	id, err := m.mp.CreateMultipart(ctx, key)
	End(span, err)
	return id, err
}

func (m blobMultipart) PresignPart(ctx context.Context, key, uploadID string, part int, ttl time.Duration) (string, error) {
	return m.mp.PresignPart(ctx, key, uploadID, part, ttl) // local: no call to the store
}

func (m blobMultipart) ListMultipartParts(ctx context.Context, key, uploadID string) ([]blob.PartInfo, error) {
	ctx, span := Start(ctx, "blob list parts", keyAttr(key))
	parts, err := m.mp.ListMultipartParts(ctx, key, uploadID)
	End(span, err)
	return parts, err
}

func (m blobMultipart) CompleteMultipart(ctx context.Context, key, uploadID string, parts []blob.PartInfo) (blob.Info, error) {
	ctx, span := Start(ctx, "blob complete multipart", keyAttr(key), attribute.Int("coffer.blob.parts", len(parts)))
	info, err := m.mp.CompleteMultipart(ctx, key, uploadID, parts)
	End(span, err)
	return info, err
}

func (m blobMultipart) AbortMultipart(ctx context.Context, key, uploadID string) error {
	ctx, span := Start(ctx, "blob abort multipart", keyAttr(key))
	err := m.mp.AbortMultipart(ctx, key, uploadID)
	End(span, err)
	return err
}

type blobCopier struct{ cp blob.Copier }

func (c blobCopier) Copy(ctx context.Context, src, dst string) (blob.Info, error) {
	ctx, span := Start(ctx, "blob copy", attribute.String("coffer.blob.src", src), keyAttr(dst))
	info, err := c.cp.Copy(ctx, src, dst)
	End(span, err)
	return info, err
}
