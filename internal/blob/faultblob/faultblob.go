// Package faultblob is a blob.Store decorator that injects faults, for
// tests only: a Put, or a Get when it opens or after some bytes, fails
// with an error (by default EIO, as a failing disk gives it), for the keys
// a rule names. Everything else passes through to the wrapped store.
//
// Only tests import it (the server's test hook wraps its blob store in
// it); it is in the tree so that every layer's fault tests share one.
package faultblob

import (
	"context"
	"io"
	"io/fs"
	"strings"
	"sync"
	"syscall"

	"github.com/coffer-storage/coffer/internal/blob"
	"github.com/coffer-storage/coffer/internal/errcode"
)

// Op names the operation a Rule fails.
type Op int

const (
	Put Op = iota // Put fails after reading After bytes of its body
	Get           // Get fails at open (After < 0) or after After bytes
)

// Rule is one fault: Op on the keys starting with Prefix ("": every key)
// fails with Err (nil: EIO) after After bytes (Get: -1 = at open). Times
// is how many calls it fails (0: all).
type Rule struct {
	Op     Op
	Prefix string
	After  int64
	Err    error
	Times  int
}

// Store is the decorator; the zero value is not usable: use Wrap.
type Store struct {
	blob.Store
	mu    sync.Mutex
	rules []*Rule
	hits  int
}

var _ blob.Store = (*Store)(nil)

// Wrap returns s with no fault set.
func Wrap(s blob.Store) *Store { return &Store{Store: s} }

// Add adds a fault.
func (s *Store) Add(r Rule) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rules = append(s.rules, &r)
}

// Clear removes every fault.
func (s *Store) Clear() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rules = nil
}

// Hits returns how many calls failed by a rule so far.
func (s *Store) Hits() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits
}

// match returns the rule failing op on key now, if any (and counts it).
func (s *Store) match(op Op, key string) (Rule, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, r := range s.rules {
		if r.Op != op || !strings.HasPrefix(key, r.Prefix) {
			continue
		}
		s.hits++
		if r.Times > 0 {
			if r.Times--; r.Times == 0 {
				s.rules = append(s.rules[:i:i], s.rules[i+1:]...)
			}
		}
		return *r, true
	}
	return Rule{}, false
}

// eio is the error of r on key: r.Err, or EIO as the local disk reports
// it mid-read (*fs.PathError), classified at open as diskblob does.
func eio(r Rule, op, key string, open bool) error {
	if r.Err != nil {
		return r.Err
	}
	err := &fs.PathError{Op: op, Path: key, Err: syscall.EIO}
	if open {
		return errcode.Wrap(errcode.Unknown, err, "failed to %s blob %q on disk", op, key)
	}
	return err
}

// Put implements blob.Store.
func (s *Store) Put(ctx context.Context, key string, r io.Reader, size int64) (blob.Info, error) {
	if rule, ok := s.match(Put, key); ok {
		r = &failing{r: r, left: max(rule.After, 0), err: eio(rule, "write", key, false)}
	}
	return s.Store.Put(ctx, key, r, size)
}

// Get implements blob.Store.
func (s *Store) Get(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	rule, ok := s.match(Get, key)
	if ok && rule.After < 0 {
		return nil, eio(rule, "open", key, true)
	}
	rc, err := s.Store.Get(ctx, key, offset, length)
	if err != nil || !ok {
		return rc, err
	}
	return &failingCloser{failing{r: rc, left: rule.After, err: eio(rule, "read", key, false)}, rc}, nil
}

// failing reads left bytes of r, then fails with err.
type failing struct {
	r    io.Reader
	left int64
	err  error
}

func (f *failing) Read(p []byte) (int, error) {
	if f.left <= 0 {
		return 0, f.err
	}
	if int64(len(p)) > f.left {
		p = p[:f.left]
	}
	n, err := f.r.Read(p)
	f.left -= int64(n)
	return n, err
}

type failingCloser struct {
	failing
	io.Closer
}
