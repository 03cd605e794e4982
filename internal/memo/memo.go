// Package memo remembers values derived from keys that repeat on every
// request (a parsed query, a content type's verdict, a metric's children):
// a bounded copy-on-write map whose reads are one atomic load and a map
// lookup, without a lock.
package memo

import "sync/atomic"

// Map remembers at most Max values; once full, Put does nothing and the
// caller derives the value again on each call. Writes copy the map, so it
// suits keys that are few and soon all seen. Safe for concurrent use; two
// racing Puts may lose one entry, derived again later. The zero Map with
// Max set is ready to use.
type Map[K comparable, V any] struct {
	Max int
	m   atomic.Pointer[map[K]V]
}

// Get returns the value remembered for k.
func (c *Map[K, V]) Get(k K) (V, bool) {
	if m := c.m.Load(); m != nil {
		v, ok := (*m)[k]
		return v, ok
	}
	var zero V
	return zero, false
}

// Put remembers v for k unless Max values are remembered already.
func (c *Map[K, V]) Put(k K, v V) {
	var old map[K]V
	if m := c.m.Load(); m != nil {
		old = *m
	}
	if len(old) >= c.Max {
		return
	}
	next := make(map[K]V, len(old)+1)
	for k, v := range old {
		next[k] = v
	}
	next[k] = v
	c.m.Store(&next)
}

// Len is how many values are remembered.
func (c *Map[K, V]) Len() int {
	if m := c.m.Load(); m != nil {
		return len(*m)
	}
	return 0
}
