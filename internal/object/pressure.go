package object

import (
	"io"
	"sync"
)

// Prompt reclaim under disk pressure.
//
// A deleted or replaced object's blob waits in the garbage queue for
// GarbageGrace (a minute) before the janitor deletes it, re-checking at
// that moment that no row points at it (meta.ClaimGarbage). The grace is
// for readers: a GET looks the object up, then opens its blob (a
// multipart object's parts one after another, as it streams); in the
// scale-out shape another node may also hold the row in its metadata
// cache, and an S3 store has no open file to keep the bytes alive.
//
// On a disk that is full, a minute is too long: users delete to make
// room. With Config.Pressure (the embedded shape only: one process reads
// the local disk) the janitor looks every second and, while the disk is
// short of space, deletes queued blobs PressureGrace after they were
// queued, skipping those a reader of this process has open (readers).
// Unlinking a file a reader holds open would be safe on Linux anyway (the
// open descriptor keeps the inode), but a multipart object opens its
// later parts only when it reaches them: its pins cover them all from
// the first byte to Close. What is left is a reader stalled for longer
// than PressureGrace between its lookup and its open: it finds the blob
// gone and answers 404, as if the delete had come first.

// readers counts the blobs open for reading in this process.
type readers struct {
	mu sync.Mutex
	n  map[string]int
}

// pin marks keys as being read until the returned function is called
// (once).
func (r *readers) pin(keys []string) (unpin func()) {
	r.mu.Lock()
	if r.n == nil {
		r.n = map[string]int{}
	}
	for _, k := range keys {
		r.n[k]++
	}
	r.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			r.mu.Lock()
			for _, k := range keys {
				if r.n[k]--; r.n[k] <= 0 {
					delete(r.n, k)
				}
			}
			r.mu.Unlock()
		})
	}
}

// pinned reports whether key is being read.
func (r *readers) pinned(key string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n[key] > 0
}

// pinnedReader is a reader whose blobs stay pinned until Close.
type pinnedReader struct {
	io.ReadCloser
	unpin func()
}

func (p *pinnedReader) Close() error {
	err := p.ReadCloser.Close()
	p.unpin()
	return err
}

// WriteTo keeps the inner reader's WriteTo (sendfile from a file).
func (p *pinnedReader) WriteTo(w io.Writer) (int64, error) {
	if wt, ok := p.ReadCloser.(io.WriterTo); ok {
		return wt.WriteTo(w)
	}
	return io.Copy(w, struct{ io.Reader }{p.ReadCloser})
}

// blobKeys returns the blobs of the object version r reads.
func (r *Reader) blobKeys() []string {
	o := r.Object
	if o.Parts == nil {
		if o.BlobKey == "" {
			return nil
		}
		return []string{o.BlobKey}
	}
	keys := make([]string, 0, len(o.Parts))
	for _, p := range o.Parts {
		keys = append(keys, p.BlobKey)
	}
	return keys
}

// underPressure reports whether the janitor reclaims promptly now.
func (s *core) underPressure() bool {
	return s.cfg.Pressure != nil && s.cfg.Pressure()
}
