// Package cache holds a node's caches of what the metadata store knows,
// and how they are kept coherent with the store and with the other nodes
// that share it. Today it caches the authentication state of users and
// the S3 access keys (package auth); any cache of metadata should be
// built the same way.
//
// # Contract
//
// A Map is bounded in entries (W-TinyLFU eviction, github.com/maypok86/otter/v2)
// and every entry lives at most its TTL after it was loaded, whatever
// happens: the TTL is the hard upper bound on how stale an entry can be
// when every invalidation below is lost. Within it, invalidations make
// changes visible sooner:
//
//   - In this process, at once: the code that changes the store publishes
//     the change on the Bus (Bus.Publish) after the change committed. A
//     Get that starts after Publish returned loads afresh; a load that was
//     running when the change was published is discarded, never cached (so
//     a load that read the store before the change cannot cache the old
//     value after it).
//   - On the other processes sharing a PostgreSQL store, within the time a
//     notification takes (milliseconds): the store announces each change
//     with NOTIFY in the transaction of the change, so it is delivered
//     exactly when it commits, and every node's listener (meta.ChangeListener,
//     wired to Bus.Handler) publishes it on its own Bus. The node that made
//     the change waits (meta.ChangeListener.ExpectChange, at most a bound)
//     until every listening node has handled it before it answers, so the
//     client's next request, on any node, sees it. An announcement can be
//     lost while a node's listening connection is down: when it listens
//     again the store reports Reset, which flushes every Map, so nothing
//     loaded before or during the outage outlives it.
//   - A process that does not listen (a CLI command) still announces its
//     changes to a PostgreSQL store's nodes, but does not wait for them.
//     Against SQLite a second process can neither announce nor listen: its
//     changes reach the server within the TTL.
//
// Topics name what changed (meta.TopicUser, meta.TopicAccessKey); keys are
// the IDs of the entries. A Map subscribes to one topic and its keys are
// that topic's keys.
//
// # Adding a cache
//
// Name a topic in package meta and make every store method that changes
// what the cache holds announce it (PostgreSQL: txn.notify or notifySQL in
// the write's transaction; document it on meta.ChangeListener). Build the
// cache with NewMap(bus, topic, …) on the process's Bus, and make the
// code that writes call ExpectChange, write, Publish and wait, as
// auth.Service.publish does.
package cache

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/maypok86/otter/v2"

	"github.com/coffer-storage/coffer/internal/meta"
)

// Bus carries changes to the caches of one process. The zero value is not
// usable; NewBus makes one. It is safe for concurrent use.
type Bus struct {
	mu      sync.RWMutex
	topics  map[string][]func(key string)
	resets  []func()
	changes atomic.Int64
}

// NewBus returns an empty bus.
func NewBus() *Bus { return &Bus{topics: map[string][]func(string){}} }

// Subscribe calls invalidate with the key of every change of topic, and
// reset on every Reset.
func (b *Bus) Subscribe(topic string, invalidate func(key string), reset func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.topics[topic] = append(b.topics[topic], invalidate)
	if reset != nil {
		b.resets = append(b.resets, reset)
	}
}

// Publish delivers a change to the subscribers of its topic before it
// returns. Call it after the change committed.
func (b *Bus) Publish(c meta.Change) {
	b.changes.Add(1)
	b.mu.RLock()
	subs := b.topics[c.Topic]
	b.mu.RUnlock()
	for _, fn := range subs {
		fn(c.Key)
	}
}

// Reset flushes every subscriber: changes may have been missed.
func (b *Bus) Reset() {
	b.mu.RLock()
	resets := b.resets
	b.mu.RUnlock()
	for _, fn := range resets {
		fn()
	}
}

// Changes counts the changes published so far (for metrics).
func (b *Bus) Changes() int64 { return b.changes.Load() }

// Handler returns the meta.ChangeHandler that feeds a store's
// announcements into the bus; onError (may be nil) sees listening errors.
func (b *Bus) Handler(onError func(error)) meta.ChangeHandler {
	return meta.ChangeHandler{Changed: b.Publish, Reset: b.Reset, Error: onError}
}

// Options of a Map.
type Options struct {
	// MaxEntries bounds the entries. Default 100 000.
	MaxEntries int
	// TTL is how long an entry lives after it was loaded, at most.
	// Default 1s.
	TTL time.Duration
}

// Map is a bounded cache of values by string key, loaded on a miss,
// invalidated by key or wholesale (see the package doc). Loads of one key
// are coalesced: concurrent Gets of a missing key wait for one load.
type Map[V any] struct {
	c *otter.Cache[string, V]
	// gen counts flushes: a load that straddles one is not kept (otter
	// discards a load straddling an Invalidate of its key, but its
	// InvalidateAll does not promise that).
	gen atomic.Uint64
}

// NewMap returns a Map subscribed to topic on bus (nil: none).
func NewMap[V any](bus *Bus, topic string, o Options) *Map[V] {
	if o.MaxEntries <= 0 {
		o.MaxEntries = 100_000
	}
	if o.TTL <= 0 {
		o.TTL = time.Second
	}
	m := &Map[V]{
		c: otter.Must(&otter.Options[string, V]{
			MaximumSize:      o.MaxEntries,
			ExpiryCalculator: otter.ExpiryWriting[string, V](o.TTL),
		}),
	}
	if bus != nil {
		bus.Subscribe(topic, m.Invalidate, m.Flush)
	}
	return m
}

// Get returns the value of key, loading it with load on a miss. Errors
// of load are returned and not cached. load must return the same value
// for a key whichever caller runs it (callers share loads).
func (m *Map[V]) Get(ctx context.Context, key string, load func(ctx context.Context, key string) (V, error)) (V, error) {
	g := m.gen.Load()
	v, err := m.c.Get(ctx, key, otter.LoaderFunc[string, V](load))
	if m.gen.Load() != g {
		// A flush ran meanwhile: the value may have been loaded before
		// it and stored after it. Use it for this call (it was current
		// when the call began) but do not keep it.
		m.c.Invalidate(key)
	}
	return v, err
}

// Invalidate drops key; a load of key running now is discarded.
func (m *Map[V]) Invalidate(key string) { m.c.Invalidate(key) }

// Flush drops every entry; loads running now are not kept.
func (m *Map[V]) Flush() {
	m.gen.Add(1)
	m.c.InvalidateAll()
}
