// Package memblob is an in-memory blob.Store, the test double for every
// package above blob. It buffers each blob whole (the only Store allowed
// to), but otherwise honours the full contract: size enforcement,
// cancellation between reads, atomic visibility and readers that survive a
// Delete. Nothing is durable beyond the process.
package memblob

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coffer-storage/coffer/internal/blob"
	"github.com/coffer-storage/coffer/internal/errcode"
)

// chunk is how much Put reads between checks of its context.
const chunk = 64 << 10

// maxPrealloc caps the buffer Put allocates up front from a declared size,
// so a lying size cannot make it allocate more than that before any byte
// arrives.
const maxPrealloc = 256 << 20

// Store is an in-memory blob.Store. The zero value is not usable; call New.
type Store struct {
	mu    sync.RWMutex
	blobs map[string]*entry
}

// entry is one stored blob. Its data is never modified after Put commits it,
// so readers share it without copying or locking.
type entry struct {
	data    []byte
	modTime time.Time
}

var _ blob.Store = (*Store)(nil)

// New returns an empty Store.
func New() *Store {
	return &Store{blobs: make(map[string]*entry)}
}

// Put implements blob.Store. It replaces an existing key atomically.
func (s *Store) Put(ctx context.Context, key string, r io.Reader, size int64) (blob.Info, error) {
	if err := blob.ValidKey(key); err != nil {
		return blob.Info{}, err
	}
	data, err := readAll(ctx, r, size)
	if err != nil {
		return blob.Info{}, err
	}
	if err := ctx.Err(); err != nil {
		return blob.Info{}, fmt.Errorf("memblob: put %q: %w", key, err)
	}
	e := &entry{data: data, modTime: time.Now()}
	s.mu.Lock()
	s.blobs[key] = e
	s.mu.Unlock()
	return blob.Info{Key: key, Size: int64(len(data)), ModTime: e.modTime}, nil
}

// readAll reads r to EOF, checking ctx between chunks and enforcing size
// when it is not -1.
func readAll(ctx context.Context, r io.Reader, size int64) ([]byte, error) {
	var buf []byte
	if size > 0 {
		buf = make([]byte, 0, min(size, maxPrealloc))
	}
	for {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("memblob: put aborted: %w", err)
		}
		var err error
		if size >= 0 && int64(len(buf)) == size {
			// All declared bytes are in: only EOF may follow. The probe
			// keeps buf from growing past size.
			var probe [1]byte
			var n int
			n, err = r.Read(probe[:])
			if n > 0 {
				return nil, errcode.New(errcode.TooLarge, "blob body is longer than the declared %d bytes", size)
			}
		} else {
			if len(buf) == cap(buf) {
				buf = slices.Grow(buf, chunk)
			}
			var n int
			n, err = r.Read(buf[len(buf):min(cap(buf), len(buf)+chunk)])
			buf = buf[:len(buf)+n]
			if size >= 0 && int64(len(buf)) > size {
				return nil, errcode.New(errcode.TooLarge, "blob body is longer than the declared %d bytes", size)
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("memblob: reading blob body: %w", err)
		}
	}
	if size >= 0 && int64(len(buf)) < size {
		return nil, errcode.New(errcode.IncompleteBody, "blob body ended after %d of the declared %d bytes", len(buf), size)
	}
	return buf, nil
}

// Get implements blob.Store. The reader keeps the bytes it was opened on
// whatever happens to the key afterwards.
func (s *Store) Get(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	e, err := s.lookup(ctx, key)
	if err != nil {
		return nil, err
	}
	size := int64(len(e.data))
	switch {
	case offset < 0 || length < -1:
		return nil, errcode.New(errcode.InvalidArgument, "invalid range: offset %d, length %d", offset, length)
	case offset > size:
		return nil, errcode.New(errcode.RangeNotSatisfiable, "range starts at %d, past the end of a %d-byte blob", offset, size)
	}
	end := size
	if length >= 0 && length < size-offset {
		end = offset + length
	}
	return io.NopCloser(bytes.NewReader(e.data[offset:end])), nil
}

// Stat implements blob.Store.
func (s *Store) Stat(ctx context.Context, key string) (blob.Info, error) {
	e, err := s.lookup(ctx, key)
	if err != nil {
		return blob.Info{}, err
	}
	return blob.Info{Key: key, Size: int64(len(e.data)), ModTime: e.modTime}, nil
}

func (s *Store) lookup(ctx context.Context, key string) (*entry, error) {
	if err := blob.ValidKey(key); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.RLock()
	e, ok := s.blobs[key]
	s.mu.RUnlock()
	if !ok {
		return nil, errcode.New(errcode.NotFound, "blob %q not found", key)
	}
	return e, nil
}

// Delete implements blob.Store.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := blob.ValidKey(key); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	delete(s.blobs, key)
	s.mu.Unlock()
	return nil
}

// List implements blob.Store. It lists a snapshot taken when it starts, and
// calls fn without holding any lock.
func (s *Store) List(ctx context.Context, prefix string, fn func(blob.Info) error) error {
	s.mu.RLock()
	infos := make([]blob.Info, 0, len(s.blobs))
	for k, e := range s.blobs {
		if strings.HasPrefix(k, prefix) {
			infos = append(infos, blob.Info{Key: k, Size: int64(len(e.data)), ModTime: e.modTime})
		}
	}
	s.mu.RUnlock()
	slices.SortFunc(infos, func(a, b blob.Info) int { return strings.Compare(a.Key, b.Key) })
	for _, info := range infos {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(info); err != nil {
			return err
		}
	}
	return nil
}
