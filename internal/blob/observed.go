package blob

import (
	"context"
	"io"
	"time"
)

// Observed returns s with each call timed and handed to obs with its
// kind: put (the whole body written and durable), get (until the reader
// is open: time to first byte, not the transfer), stat, delete, list,
// copy, and the multipart calls (create multipart, list parts, complete
// multipart, abort multipart; presigning makes no call). The decorator
// implements exactly the optional Copier and MultipartPresigner s does.
// obs must be cheap and must not allocate: it runs for every call.
func Observed(s Store, obs func(op string, d time.Duration)) Store {
	o := &observed{Store: s, obs: obs}
	mp, isMP := s.(MultipartPresigner)
	cp, isCP := s.(Copier)
	switch {
	case isMP && isCP:
		return &struct {
			*observed
			observedMultipart
			observedCopier
		}{o, observedMultipart{mp, obs}, observedCopier{cp, obs}}
	case isMP:
		return &struct {
			*observed
			observedMultipart
		}{o, observedMultipart{mp, obs}}
	case isCP:
		return &struct {
			*observed
			observedCopier
		}{o, observedCopier{cp, obs}}
	}
	return o
}

type observed struct {
	Store
	obs func(op string, d time.Duration)
}

func (o *observed) Put(ctx context.Context, key string, r io.Reader, size int64) (Info, error) {
	t := time.Now()
	info, err := o.Store.Put(ctx, key, r, size)
	o.obs("put", time.Since(t))
	return info, err
}

func (o *observed) Get(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	t := time.Now()
	rc, err := o.Store.Get(ctx, key, offset, length)
	o.obs("get", time.Since(t))
	return rc, err
}

func (o *observed) Stat(ctx context.Context, key string) (Info, error) {
	t := time.Now()
	info, err := o.Store.Stat(ctx, key)
	o.obs("stat", time.Since(t))
	return info, err
}

func (o *observed) Delete(ctx context.Context, key string) error {
	t := time.Now()
	err := o.Store.Delete(ctx, key)
	o.obs("delete", time.Since(t))
	return err
}

func (o *observed) List(ctx context.Context, prefix string, fn func(Info) error) error {
	t := time.Now()
	err := o.Store.List(ctx, prefix, fn)
	o.obs("list", time.Since(t))
	return err
}

type observedCopier struct {
	c   Copier
	obs func(op string, d time.Duration)
}

func (o observedCopier) Copy(ctx context.Context, src, dst string) (Info, error) {
	t := time.Now()
	info, err := o.c.Copy(ctx, src, dst)
	o.obs("copy", time.Since(t))
	return info, err
}

type observedMultipart struct {
	mp  MultipartPresigner
	obs func(op string, d time.Duration)
}

func (o observedMultipart) CreateMultipart(ctx context.Context, key string) (string, error) {
	t := time.Now()
	id, err := o.mp.CreateMultipart(ctx, key)
	o.obs("create multipart", time.Since(t))
	return id, err
}

func (o observedMultipart) PresignPart(ctx context.Context, key, uploadID string, part int, ttl time.Duration) (string, error) {
	return o.mp.PresignPart(ctx, key, uploadID, part, ttl)
}

func (o observedMultipart) ListMultipartParts(ctx context.Context, key, uploadID string) ([]PartInfo, error) {
	t := time.Now()
	ps, err := o.mp.ListMultipartParts(ctx, key, uploadID)
	o.obs("list parts", time.Since(t))
	return ps, err
}

func (o observedMultipart) CompleteMultipart(ctx context.Context, key, uploadID string, parts []PartInfo) (Info, error) {
	t := time.Now()
	info, err := o.mp.CompleteMultipart(ctx, key, uploadID, parts)
	o.obs("complete multipart", time.Since(t))
	return info, err
}

func (o observedMultipart) AbortMultipart(ctx context.Context, key, uploadID string) error {
	t := time.Now()
	err := o.mp.AbortMultipart(ctx, key, uploadID)
	o.obs("abort multipart", time.Since(t))
	return err
}
