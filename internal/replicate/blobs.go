package replicate

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coffer-storage/coffer/internal/blob"
	"github.com/coffer-storage/coffer/internal/errcode"
)

// shipper copies the data folder's blobs to the destination, each once:
// every key a Put of the wrapped store wrote (enqueue), and at start every
// local blob the destination lacks (scan). Each key gets a sequence
// number; done is the highest number below which every key has been
// copied (or vanished locally). The metadata replica waits for done to
// reach the number given out before it made an LTX file (barrier).
type shipper struct {
	local, dest blob.Store
	log         *slog.Logger
	errs        *atomic.Uint64
	maxBackoff  time.Duration

	mu      sync.Mutex
	next    uint64              // the next sequence number
	low     uint64              // the lowest number not finished (next if none)
	queue   []item              // waiting, in sequence order
	busy    map[uint64]struct{} // sequence numbers not finished (queued, copying, the scan)
	keys    map[string]int      // keys queued or copying: a Delete waits for them
	changed chan struct{}       // closed and replaced when busy or queue change
	closed  bool

	copied, vanished atomic.Uint64
	wg               sync.WaitGroup
}

type item struct {
	seq uint64
	key string
}

func newShipper(local, dest blob.Store, log *slog.Logger, errs *atomic.Uint64) *shipper {
	return &shipper{local: local, dest: dest, log: log, errs: errs, maxBackoff: 30 * time.Second,
		next: 1, low: 1, busy: map[uint64]struct{}{}, keys: map[string]int{}, changed: make(chan struct{})}
}

// signal wakes every waiter; s.mu is held.
func (s *shipper) signal() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// reserve takes a sequence number that counts as not done until finish.
func (s *shipper) reserve() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	seq := s.next
	s.next++
	s.busy[seq] = struct{}{}
	return seq
}

func (s *shipper) finish(seq uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.busy, seq)
	s.advance()
	s.signal()
}

// advance moves low past the finished numbers (amortised O(1): each
// number is passed once); s.mu is held.
func (s *shipper) advance() {
	for s.low < s.next {
		if _, ok := s.busy[s.low]; ok {
			return
		}
		s.low++
	}
}

// enqueue queues key for copying.
func (s *shipper) enqueue(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	seq := s.next
	s.next++
	s.busy[seq] = struct{}{}
	s.keys[key]++
	s.queue = append(s.queue, item{seq, key})
	s.signal()
}

// mark is the number every key enqueued so far is below.
func (s *shipper) mark() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.next
}

// doneBelow reports whether every sequence number below seq finished.
func (s *shipper) doneBelow(seq uint64) (bool, chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.low >= seq, s.changed
}

// wait returns once every key enqueued before it was called has been
// copied, or ctx ends.
func (s *shipper) wait(ctx context.Context) error {
	seq := s.mark()
	for {
		ok, ch := s.doneBelow(seq)
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// waitKey waits, at most d, until key is neither queued nor being copied
// (a local Delete of a blob not yet at the destination).
func (s *shipper) waitKey(ctx context.Context, key string, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		s.mu.Lock()
		n, ch := s.keys[key], s.changed
		s.mu.Unlock()
		if n == 0 {
			return true
		}
		select {
		case <-ch:
		case <-t.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// take waits for the next queued item; false once closed.
func (s *shipper) take(ctx context.Context) (item, bool) {
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return item{}, false
		}
		if len(s.queue) > 0 {
			it := s.queue[0]
			s.queue[0] = item{}
			s.queue = s.queue[1:]
			s.mu.Unlock()
			return it, true
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return item{}, false
		}
	}
}

func (s *shipper) done(it item) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.busy, it.seq)
	if s.keys[it.key]--; s.keys[it.key] <= 0 {
		delete(s.keys, it.key)
	}
	s.advance()
	s.signal()
}

// start runs n copiers until ctx ends.
func (s *shipper) start(ctx context.Context, n int) {
	for range n {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			for {
				it, ok := s.take(ctx)
				if !ok {
					return
				}
				s.ship(ctx, it)
			}
		}()
	}
}

func (s *shipper) close() {
	s.mu.Lock()
	s.closed = true
	s.signal()
	s.mu.Unlock()
	s.wg.Wait()
}

// ship copies one key, retrying with backoff until it is at the
// destination, gone from the data folder, or ctx ends.
func (s *shipper) ship(ctx context.Context, it item) {
	backoff := 100 * time.Millisecond
	for {
		err := s.copy(ctx, it.key)
		if err == nil || ctx.Err() != nil {
			if err == nil {
				s.done(it)
			}
			return
		}
		s.errs.Add(1)
		s.log.Warn("replication: copying a blob failed; retrying", "key", it.key, "error", err, "retry_in", backoff.String())
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return
		}
		backoff = min(backoff*2, s.maxBackoff)
	}
}

// copy copies key to blobs/<key> unless it is there already (same size).
func (s *shipper) copy(ctx context.Context, key string) error {
	info, err := s.local.Stat(ctx, key)
	if isNotFound(err) {
		// Deleted before it could be copied (see Wrap's Delete).
		s.vanished.Add(1)
		return nil
	} else if err != nil {
		return err
	}
	if di, err := s.dest.Stat(ctx, blobPrefix+key); err == nil && di.Size == info.Size {
		return nil
	} else if err != nil && !isNotFound(err) {
		return err
	}
	rc, err := s.local.Get(ctx, key, 0, -1)
	if isNotFound(err) {
		s.vanished.Add(1)
		return nil
	} else if err != nil {
		return err
	}
	defer rc.Close()
	if _, err := s.dest.Put(ctx, blobPrefix+key, rc, info.Size); err != nil {
		return err
	}
	s.copied.Add(1)
	return nil
}

// scan enqueues every local blob the destination lacks (or holds at
// another size), walking both listings in their common key order. Until
// it returns, the sequence number it reserved keeps the barrier closed.
func (s *shipper) scan(ctx context.Context) error {
	type entry struct {
		key  string
		size int64
	}
	remote := make(chan entry, 256)
	rerr := make(chan error, 1)
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		defer close(remote)
		rerr <- s.dest.List(lctx, blobPrefix, func(i blob.Info) error {
			select {
			case remote <- entry{i.Key[len(blobPrefix):], i.Size}:
				return nil
			case <-lctx.Done():
				return lctx.Err()
			}
		})
	}()
	var cur *entry
	more := true
	advance := func() {
		if e, ok := <-remote; ok {
			cur = &e
		} else {
			cur, more = nil, false
		}
	}
	advance()
	n := 0
	err := s.local.List(ctx, "", func(i blob.Info) error {
		for more && cur.key < i.Key {
			advance()
		}
		if more && cur.key == i.Key && cur.size == i.Size {
			return nil
		}
		s.enqueue(i.Key)
		n++
		return nil
	})
	cancel()
	for range remote {
	}
	if e := <-rerr; err == nil && e != nil && !errors.Is(e, context.Canceled) {
		err = e
	}
	if err == nil {
		s.log.Info("replication: start-up scan done", "blobs_to_copy", n)
	}
	return err
}

// store is the data folder's blob store as the object service sees it
// with replication on: each Put's key is queued for the destination once
// the Put returned (so before the metadata naming it commits); a Delete of
// a blob still queued waits up to the window for its copy, and fails if it
// is not done by then (ErrNotReplicated), so that the metadata points
// naming it find it on the replica.
type store struct {
	blob.Store
	s      *shipper
	window time.Duration
}

func (w *store) Put(ctx context.Context, key string, r io.Reader, size int64) (blob.Info, error) {
	info, err := w.Store.Put(ctx, key, r, size)
	if err == nil {
		w.s.enqueue(key)
	}
	return info, err
}

// ErrNotReplicated is Delete's refusal of a blob not yet copied to the
// replica: the janitor keeps it queued and tries again on its next pass.
var ErrNotReplicated = errcode.New(errcode.Unavailable, "the blob is not yet copied to the replica (--replicate-to is behind); it is kept until it is")

func (w *store) Delete(ctx context.Context, key string) error {
	if !w.s.waitKey(ctx, key, w.window) {
		// Deleting it now would leave the replica's points between its
		// write and its delete naming a blob the replica never got: keep
		// it (the janitor's queue holds it) until the copy is done. The
		// local disk pays for the replica's lag; nothing is lost.
		w.s.errs.Add(1)
		w.s.log.Warn("replication: kept a blob the janitor would delete: not yet copied to the replica (behind by more than the window)", "key", key)
		return ErrNotReplicated
	}
	return w.Store.Delete(ctx, key)
}

// copierStore is store over a blob.Copier (the local disk's hard links).
type copierStore struct {
	*store
	c blob.Copier
}

func (w *copierStore) Copy(ctx context.Context, src, dst string) (blob.Info, error) {
	info, err := w.c.Copy(ctx, src, dst)
	if err == nil {
		w.s.enqueue(dst)
	}
	return info, err
}
