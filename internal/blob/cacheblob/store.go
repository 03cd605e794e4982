package cacheblob

import (
	"context"
	"io"
	"time"

	"github.com/coffer-storage/coffer/internal/blob"
)

// Store is a blob.Store that reads through a Cache. Writes, Stat and List
// go to the backend; Put and Delete drop what the cache holds for the key
// (Coffer never writes a key twice, but the blob.Store contract lets a
// caller delete a key and write it again).
//
// If the backend is a blob.MultipartPresigner, so is the Store New
// returns (the calls pass through: the blob a backend multipart upload
// assembles is under a key that was never read before); if it is a
// blob.Copier, so is the Store (a copy is the backend's, and forgets what
// the cache holds of its destination, as Put does).
type Store struct {
	inner blob.Store
	cache *Cache
	key   func(blobKey string) string
}

var (
	_ blob.Store              = (*Store)(nil)
	_ blob.Closer             = (*Store)(nil)
	_ blob.MultipartPresigner = (*multipartStore)(nil)
	_ blob.Copier             = (*copyStore)(nil)
	_ blob.MultipartPresigner = (*multipartCopyStore)(nil)
	_ blob.Copier             = (*multipartCopyStore)(nil)
)

// New returns inner read through c. key derives the cache identity of a
// blob key (nil: the key itself, right for stores whose keys name
// immutable content, as Coffer's blob keys do).
func New(inner blob.Store, c *Cache, key func(blobKey string) string) blob.Store {
	if key == nil {
		key = func(k string) string { return k }
	}
	s := &Store{inner: inner, cache: c, key: key}
	mp, isMP := inner.(blob.MultipartPresigner)
	cp, isCP := inner.(blob.Copier)
	switch {
	case isMP && isCP:
		return &multipartCopyStore{&multipartStore{Store: s, mp: mp}, copier{s, cp}}
	case isMP:
		return &multipartStore{Store: s, mp: mp}
	case isCP:
		return &copyStore{s, copier{s, cp}}
	}
	return s
}

// Cache returns the store's cache (its Stats).
func (s *Store) Cache() *Cache { return s.cache }

// Put implements blob.Store.
func (s *Store) Put(ctx context.Context, key string, r io.Reader, size int64) (blob.Info, error) {
	info, err := s.inner.Put(ctx, key, r, size)
	if err == nil {
		s.cache.Forget(s.key(key))
	}
	return info, err
}

// Get implements blob.Store through the cache.
func (s *Store) Get(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	if err := blob.ValidKey(key); err != nil {
		return nil, err
	}
	fetch := func(ctx context.Context, off, n int64) (io.ReadCloser, error) { return s.inner.Get(ctx, key, off, n) }
	return s.cache.Open(ctx, s.key(key), fetch, offset, length)
}

// Stat implements blob.Store (from the backend).
func (s *Store) Stat(ctx context.Context, key string) (blob.Info, error) {
	return s.inner.Stat(ctx, key)
}

// Delete implements blob.Store, dropping the cached copy.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := blob.ValidKey(key); err != nil {
		return err
	}
	id := s.key(key)
	s.cache.Forget(id)
	err := s.inner.Delete(ctx, key)
	s.cache.Forget(id) // a fill that started before the backend's delete
	return err
}

// List implements blob.Store (from the backend).
func (s *Store) List(ctx context.Context, prefix string, fn func(blob.Info) error) error {
	return s.inner.List(ctx, prefix, fn)
}

// Close waits for the cache's fills, then closes the backend if it holds
// resources.
func (s *Store) Close() error {
	err := s.cache.Close()
	if c, ok := s.inner.(blob.Closer); ok {
		if cerr := c.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

// multipartStore is a Store over a backend with direct multipart uploads.
type multipartStore struct {
	*Store
	mp blob.MultipartPresigner
}

func (m *multipartStore) CreateMultipart(ctx context.Context, key string) (string, error) {
	return m.mp.CreateMultipart(ctx, key)
}

func (m *multipartStore) PresignPart(ctx context.Context, key, uploadID string, part int, ttl time.Duration) (string, error) {
	return m.mp.PresignPart(ctx, key, uploadID, part, ttl)
}

func (m *multipartStore) ListMultipartParts(ctx context.Context, key, uploadID string) ([]blob.PartInfo, error) {
	return m.mp.ListMultipartParts(ctx, key, uploadID)
}

func (m *multipartStore) CompleteMultipart(ctx context.Context, key, uploadID string, parts []blob.PartInfo) (blob.Info, error) {
	info, err := m.mp.CompleteMultipart(ctx, key, uploadID, parts)
	if err == nil {
		m.cache.Forget(m.key(key))
	}
	return info, err
}

func (m *multipartStore) AbortMultipart(ctx context.Context, key, uploadID string) error {
	return m.mp.AbortMultipart(ctx, key, uploadID)
}

// copier passes blob.Copier on to the backend.
type copier struct {
	s  *Store
	cp blob.Copier
}

// Copy implements blob.Copier in the backend, dropping what the cache
// holds of dst.
func (c copier) Copy(ctx context.Context, src, dst string) (blob.Info, error) {
	info, err := c.cp.Copy(ctx, src, dst)
	if err == nil {
		c.s.cache.Forget(c.s.key(dst))
	}
	return info, err
}

// copyStore is a Store over a backend that copies blobs itself.
type copyStore struct {
	*Store
	copier
}

// multipartCopyStore is a Store over a backend with direct multipart
// uploads that copies blobs itself (s3blob).
type multipartCopyStore struct {
	*multipartStore
	copier
}
