package diskblob

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/coffer-storage/coffer/internal/blob"
	"github.com/coffer-storage/coffer/internal/errcode"
)

// ReadOnly is a Store opened for reading only, without the lock: what a
// second process reads while the one holding the store writes (coffer
// fsck beside a running coffer serve). Blobs are immutable and appear
// whole (rename), so every Get, Stat and List sees a blob whole or not at
// all; Put and Delete are refused. It neither makes nor cleans anything.
type ReadOnly struct{ s *Store }

var _ blob.Store = (*ReadOnly)(nil)

// OpenReadOnly opens the store in dir for reading; dir must exist.
func OpenReadOnly(dir string) (*ReadOnly, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("diskblob: opening %s: %w", dir, err)
	}
	return &ReadOnly{&Store{dir: dir, root: root, durable: map[string]struct{}{}}}, nil
}

func errReadOnly(op string) error {
	return errcode.New(errcode.Unavailable, "diskblob: %s refused: the store is open read-only", op)
}

// Put implements blob.Store: refused.
func (r *ReadOnly) Put(context.Context, string, io.Reader, int64) (blob.Info, error) {
	return blob.Info{}, errReadOnly("put")
}

// Delete implements blob.Store: refused.
func (r *ReadOnly) Delete(context.Context, string) error { return errReadOnly("delete") }

// Get implements blob.Store.
func (r *ReadOnly) Get(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	return r.s.Get(ctx, key, offset, length)
}

// Stat implements blob.Store.
func (r *ReadOnly) Stat(ctx context.Context, key string) (blob.Info, error) {
	return r.s.Stat(ctx, key)
}

// List implements blob.Store.
func (r *ReadOnly) List(ctx context.Context, prefix string, fn func(blob.Info) error) error {
	return r.s.List(ctx, prefix, fn)
}

// Close implements blob.Closer.
func (r *ReadOnly) Close() error { return r.s.Close() }
