// Package cache holds a node's caches of what the metadata store knows,
// and how they are kept coherent with the store and with the other nodes
// that share it. It caches the authentication state of users, the S3
// access keys and verified access tokens (package auth, with Map), and
// the bucket and object records every read needs (Store, which wraps the
// roles of a meta.Stores that read or change them, see its doc); any
// cache of metadata should be built the same way.
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
//     wired to Bus.Handler) publishes it on its own Bus. Store's writes put
//     the entries in flux on every node before they commit (below), so
//     that no node serves the old record once the new one is readable
//     anywhere; auth's writes wait after the commit
//     (meta.ChangeListener.ExpectChange, at most Bus.SyncBound) until every
//     listening node has handled it, so the client's next request, on any
//     node, sees it. A node that does not acknowledge in time has stopped
//     trusting its caches by then (the lease, below). An announcement can be
//     lost while a node's listening connection is down: when it listens
//     again the store reports Reset, which flushes every Map, so nothing
//     loaded before or during the outage outlives it. It also reports
//     the drop itself (Bus.SetListening(false), then Reset): until it
//     listens again, Maps keep nothing they load.
//   - A process that does not listen (a CLI command) still announces its
//     changes (and puts Store's writes in flux) on a PostgreSQL store, but
//     cannot collect acknowledgements: its Store writes wait the whole
//     SyncBound, its account changes do not wait.
//     Against SQLite a second process can neither announce nor listen: its
//     changes reach the server within the TTL.
//
// # The lease: a listening connection that dies silently
//
// A connection cut without an error (a partition, a paused peer, a lost
// route) delivers nothing and reports nothing. So a node trusts its
// caches only under a lease of L (Bus.SetLease, --meta-cache-lease,
// default 1 s): the listener proves its connection every L/3 with a
// heartbeat, a notification it sends itself that comes back after every
// notification committed before it (PostgreSQL delivers to each listener
// in commit order), and reports it (meta.ChangeHandler.Alive, Bus.Alive)
// with the time t it sent it: every change committed before t has been
// handled. A Get trusts the caches only while now < t + L for the latest
// such t; otherwise it loads afresh and keeps nothing, as while the
// connection is known to be down. A writer whose change a listening node
// does not acknowledge waits W = 1.25 L after its commit (Bus.SyncBound,
// the least StoreOptions.Sync) before it answers. Then any read that
// reaches the silent node after the answer is correct: if the node's
// latest heartbeat was sent after the commit, it has handled the change;
// if before, the read comes more than W > L after it, so the lease has
// run out and the read goes to PostgreSQL. Each side measures only its
// own interval on its own monotonic clock (the quarter of L in W covers
// the two clocks' rates and scheduling); no clock is compared with
// another. The common case stays fast: every node acknowledges within
// milliseconds and the writer waits only for that. A node counted by the
// writers but silent makes every write wait W until PostgreSQL drops its
// connection (the listening connection asks for TCP keepalives of about
// 10 s) or the node reconnects (it then ends its old connection on the
// server itself). A heartbeat not back within 6 × L/3 (at least 2 s)
// fails the connection: it is reopened, with the Reset that follows.
//
// # Linearizable reads: entries in flux before a write commits
//
// Invalidating after the commit is not enough for single-key
// linearizability: between the commit and the arrival of its
// notification, a node reading PostgreSQL returns the new record while
// another node still serves the old one from its cache, so a read that
// begins after another read returned the new value could return the old
// one. So Store's writes put their entries in flux on every node before
// they commit (as Chubby's master invalidates every client cache before a
// modification proceeds, and has reads go to it meanwhile):
//
//  1. The writer announces "flux id: the changes cs" and a barrier in one
//     transaction (meta.ChangeListener.BeginFlux, at time A on the
//     server's clock) and waits until every listener acknowledged the
//     barrier, or W = SyncBound after the announcement returned. A node
//     that handles the flux (Bus.Flux) drops the entries and, until the
//     flux ends, neither serves nor keeps them: its reads go to
//     PostgreSQL, which is linearizable.
//  2. The write commits; its own announcement invalidates as before. Its
//     transaction checks on the server, in the statement right before
//     COMMIT (the same batch: no pause of the writer can come between),
//     that the server's clock is before A + CommitWithin and that every
//     listening connection (named coffer-listen only once its LISTEN is in
//     force) was listed at the announcement; otherwise it rolls back
//     (meta.ErrFenced) and the write announces again (at most 3 times,
//     then 503).
//  3. "flux id is over" is announced after the commit, so each node
//     receives it after the commit's own announcement (PostgreSQL delivers
//     in commit order): ending the flux there, the node has dropped the
//     entry and discarded any load that straddled the drop. A node ends a
//     flux on its own after FluxBound = CommitWithin + 3 leases (a writer
//     that died).
//
// The write answers right after its commit: no second wait. Why a read R
// served from node N's cache at time t, after the commit C, is never
// stale:
//
//   - N acknowledged the flux: it is in flux at t unless the flux ended.
//     By the "over" announcement: N handled C's announcement before it, and
//     what it cached since was loaded after it, i.e. after C. By its own
//     bound: t ≥ A + FluxBound and N serves from its cache only within a
//     lease of a heartbeat sent at h ≥ t − L ≥ A + CommitWithin + 2L >
//     C, and a heartbeat comes back after every notification committed
//     before it: N handled C.
//   - N did not acknowledge (it is slow, cut, or its listening connection
//     was terminated and it has not noticed): the writer waited W = 1.25 L
//     after the announcement committed, so C > A + 1.25 L, and N's cache
//     trust at t > C needs a heartbeat sent after t − L > A: N received
//     the flux before that heartbeat, and either still holds it or ended
//     it as above. The writer must not stop waiting early for such a node:
//     it waits for every listener PostgreSQL lists and every listener
//     whose heartbeat it received within 1.25 L (heartbeats go on a shared
//     channel), and for its own listener's acknowledgement, which
//     guarantees it received every heartbeat committed before the
//     barrier; a node left out last proved alive more than 1.25 L ago, so
//     its lease has run out.
//   - N started listening after the announcement (first start, or a
//     reconnect) and missed the flux: if its listener was named
//     coffer-listen when C's fence ran, the fence saw it unlisted and C
//     did not happen. Otherwise its LISTEN came into force after the
//     fence; after a Reset a node keeps nothing until a heartbeat sent
//     after the Reset comes back, and that heartbeat is committed after
//     the fence, hence (short of the server pausing between two
//     statements of one batch for longer than that round trip) after C:
//     N handled C before caching anything.
//   - A load that began before the flux reached N and finishes after:
//     the flux's drop discards it (otter discards a load straddling an
//     Invalidate of its key), and Map.Get does not keep a value whose key
//     went into flux meanwhile. A read served from the cache before N
//     handled the flux read a record that was current then: C had not
//     happened yet.
//
// Each side measures only its own intervals on its own clock (the
// server's, for A and the fence); every node must run with the same lease
// and CommitWithin. Costs: one statement before the write (the flux and
// its barrier, committed without a WAL flush), the wait for the slowest
// acknowledgement, the fence in the write's batch, one statement after
// (the "over"); reads of an entry in flux go to PostgreSQL for the
// milliseconds the flux lasts. The account caches of package auth do not
// go through Store: they invalidate after the commit and wait for the
// barrier (auth's publish), so a revocation is visible on every node
// before the change answers, but two reads on two nodes during those
// milliseconds may disagree.
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
// auth does for every account change (its core's publish).
package metacache

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/maypok86/otter/v2"
	"github.com/maypok86/otter/v2/stats"

	"github.com/coffer-storage/coffer/internal/meta"
)

// Bus carries changes to the caches of one process. The zero value is not
// usable; NewBus makes one. It is safe for concurrent use.
type Bus struct {
	mu      sync.RWMutex
	topics  map[string][]func(key string)
	resets  []func()
	changes atomic.Int64
	// down is set while announcements may be lost (the store's listening
	// connection is down): Maps then keep nothing they load.
	down atomic.Bool
	// lease is how long after an Alive's since the caches are trusted;
	// leaseEnd is the end of the current lease (time since base, by the
	// monotonic clock), 0 while no listener reported Alive (the bus is
	// then trusted as SetListening says).
	lease    time.Duration
	base     time.Time
	leaseEnd atomic.Int64
	// The entries in flux (see the package doc): fluxes by id, and how
	// many fluxes hold each topic+"\x00"+key (all: of meta.TopicAll);
	// fluxing counts the fluxes, so that Gets find none without a lock.
	// held (since base; 0: none) is when the listener last
	// (re)connected: no entry is kept or served until it reports Alive
	// for a heartbeat sent after that.
	fmu     sync.Mutex
	fluxes  map[string][]meta.Change
	inFlux  map[string]int
	all     int
	fluxing atomic.Int64
	held    atomic.Int64
	// commitWithin: see CommitWithin.
	commitWithin time.Duration
}

// DefaultLease is a Bus's lease unless SetLease changes it.
const DefaultLease = time.Second

// NewBus returns an empty bus, up (see SetListening), with the
// DefaultLease.
func NewBus() *Bus {
	return &Bus{topics: map[string][]func(string){}, lease: DefaultLease, commitWithin: DefaultCommitWithin, base: time.Now()}
}

// SetLease sets the lease (see Alive). Call it before the bus is used.
func (b *Bus) SetLease(d time.Duration) {
	if d > 0 {
		b.lease = d
	}
}

// Lease returns the lease.
func (b *Bus) Lease() time.Duration { return b.lease }

// DefaultCommitWithin is a Bus's CommitWithin unless SetCommitWithin
// changes it.
const DefaultCommitWithin = 7 * time.Second

// SetCommitWithin sets CommitWithin (tests shorten it). Every node must
// use the same, as the same lease. Call it before the bus is used.
func (b *Bus) SetCommitWithin(d time.Duration) {
	if d > 0 {
		b.commitWithin = d
	}
}

// CommitWithin is how long after its flux was announced a write may
// still commit (meta.WithCommitBy); later, it fails (retryable). It is at
// least the SyncBound (the longest wait for acknowledgements) and a
// lease, for the write itself.
func (b *Bus) CommitWithin() time.Duration { return max(b.commitWithin, b.SyncBound()+b.lease) }

// FluxBound is how long a node keeps entries in flux when the writer
// does not say the flux is over (it died): CommitWithin and three leases,
// so that a node that ends a flux on its own has handled the write's
// commit, or stopped trusting its caches (see the package doc).
func (b *Bus) FluxBound() time.Duration { return b.CommitWithin() + 3*b.lease }

// Flux puts the entries cs in flux (meta.ChangeHandler.Flux): they are
// dropped now, and no Get serves or keeps them until FluxOver(id), or
// FluxBound has passed.
func (b *Bus) Flux(id string, cs []meta.Change) {
	b.fmu.Lock()
	if b.fluxes == nil {
		b.fluxes, b.inFlux = map[string][]meta.Change{}, map[string]int{}
	}
	if _, ok := b.fluxes[id]; !ok {
		b.fluxing.Add(1)
		time.AfterFunc(b.FluxBound(), func() { b.FluxOver(id) })
	}
	b.fluxes[id] = append(b.fluxes[id], cs...)
	for _, c := range cs {
		if c.Topic == meta.TopicAll {
			b.all++
		} else {
			b.inFlux[c.Topic+"\x00"+c.Key]++
		}
	}
	b.fmu.Unlock()
	// After the entries are in flux: a Get that loaded them before sees
	// it when it ends (Map.Get), one that loads them after does not keep
	// them.
	for _, c := range cs {
		b.publish(c)
	}
}

// FluxOver ends the flux id (meta.ChangeHandler.FluxOver); an unknown id
// (ended already, or announced before this node listened) is ignored.
func (b *Bus) FluxOver(id string) {
	b.fmu.Lock()
	defer b.fmu.Unlock()
	cs, ok := b.fluxes[id]
	if !ok {
		return
	}
	delete(b.fluxes, id)
	b.fluxing.Add(-1)
	for _, c := range cs {
		if c.Topic == meta.TopicAll {
			b.all--
			continue
		}
		k := c.Topic + "\x00" + c.Key
		if b.inFlux[k]--; b.inFlux[k] <= 0 {
			delete(b.inFlux, k)
		}
	}
}

// cacheable reports whether a Get of key of topic may serve and keep the
// cached entry: the bus is listening (Listening), no hold after a
// (re)connection, and the entry is not in flux.
func (b *Bus) cacheable(topic, key string) bool {
	if !b.Listening() {
		return false
	}
	if b.held.Load() != 0 {
		return false
	}
	if b.fluxing.Load() == 0 {
		return true
	}
	b.fmu.Lock()
	defer b.fmu.Unlock()
	return b.all == 0 && b.inFlux[topic+"\x00"+key] == 0
}

// hold keeps nothing until the listener reports Alive for a heartbeat
// sent after now: it (re)connected, and a write in flux whose fence it
// passed just before the listener's LISTEN came in force commits before
// that heartbeat is delivered (see the package doc).
func (b *Bus) hold() {
	b.held.Store(max(int64(time.Since(b.base)), 1))
}

// SyncBound is how long a writer must wait, when a listening node does
// not acknowledge its change, before it may answer: the node's lease has
// then certainly run out (see the package doc), with a quarter of the
// lease as margin for the rates of two monotonic clocks and scheduling.
func (b *Bus) SyncBound() time.Duration { return b.lease + b.lease/4 }

// Await waits, after a change of a store shared by listening processes
// committed, until they all handled it: wait (meta.ChangeListener's
// ExpectChange) collects their acknowledgements, at most max (at least
// SyncBound). While this bus is not Listening (the connection is down,
// or the lease ran out) acknowledgements cannot be collected, so it
// waits the whole max: every process has then handled the change or
// stopped trusting its caches (see the package doc). The other processes
// still received the announcement with the commit.
func (b *Bus) Await(ctx context.Context, max time.Duration, wait func(context.Context, time.Duration)) {
	if b.Listening() {
		wait(ctx, max)
		return
	}
	t := time.NewTimer(max)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// Alive says every change committed before since has been handled
// (meta.ChangeHandler.Alive): the caches are trusted until since + the
// lease, and afterwards, unless Alive is called again, every Get loads
// afresh and keeps nothing, as while the bus is down.
func (b *Bus) Alive(since time.Time) {
	if h := b.held.Load(); h != 0 && int64(since.Sub(b.base)) > h {
		b.held.CompareAndSwap(h, 0)
	}
	end := int64(since.Sub(b.base) + b.lease)
	for {
		old := b.leaseEnd.Load()
		if end <= old || b.leaseEnd.CompareAndSwap(old, end) {
			return
		}
	}
}

// Subscribe calls invalidate with the key of every change of topic, and
// reset on every Reset (and every change of meta.TopicAll).
func (b *Bus) Subscribe(topic string, invalidate func(key string), reset func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.topics[topic] = append(b.topics[topic], invalidate)
	if reset != nil {
		b.resets = append(b.resets, reset)
	}
}

// Publish delivers a change to the subscribers of its topic before it
// returns (a change of meta.TopicAll: a Reset). Call it after the change
// committed.
func (b *Bus) Publish(c meta.Change) {
	b.changes.Add(1)
	b.publish(c)
}

func (b *Bus) publish(c meta.Change) {
	if c.Topic == meta.TopicAll {
		b.Reset()
		return
	}
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

// SetListening says whether changes made by other processes reach this
// bus (the store's listening connection is up). While they may not, Maps
// load every Get afresh and keep nothing. A new Bus is up: a process
// whose store no other process shares (SQLite) never calls it; the server
// calls SetListening(false) before it starts listening to a shared one.
func (b *Bus) SetListening(up bool) { b.down.Store(!up) }

// Listening reports whether the caches may keep and serve entries: the
// state SetListening set, and, once a listener reported Alive, its lease
// has not run out.
func (b *Bus) Listening() bool {
	if b.down.Load() {
		return false
	}
	end := b.leaseEnd.Load()
	return end == 0 || int64(time.Since(b.base)) < end
}

// Changes counts the changes published so far (for metrics).
func (b *Bus) Changes() int64 { return b.changes.Load() }

// Handler returns the meta.ChangeHandler that feeds a store's
// announcements into the bus; onError (may be nil) sees listening errors.
func (b *Bus) Handler(onError func(error)) meta.ChangeHandler {
	return meta.ChangeHandler{
		Changed: b.Publish, Error: onError, Listening: b.SetListening,
		Reset: func() {
			b.hold()
			b.Reset()
		},
		Alive: b.Alive, AliveEvery: b.lease / 3,
		Flux: b.Flux, FluxOver: b.FluxOver,
	}
}

// Options of a Map.
type Options struct {
	// MaxEntries bounds the entries. Default 100 000.
	MaxEntries int
	// MaxBytes bounds the sum of the entries' weights (Weigh), when set.
	// Both bounds hold at once: an entry weighs at least
	// MaxBytes/MaxEntries. Default 0: only MaxEntries bounds the Map.
	MaxBytes int64
	// TTL is how long an entry lives after it was loaded, at most.
	// Default 1s.
	TTL time.Duration
}

// Stats are a Map's counters since it was made.
type Stats struct {
	Hits, Misses, Evictions int64
	// Invalidations counts dropped keys (Invalidate, a change of the
	// Map's topic); Flushes counts Flush (a Reset, meta.TopicAll).
	Invalidations, Flushes int64
	// Bypassed counts Gets served while the bus was down (not cached).
	Bypassed int64
	Entries  int
	Bytes    uint64 // the sum of the entries' weights (with MaxBytes)
}

// Map is a bounded cache of values by string key, loaded on a miss,
// invalidated by key or wholesale (see the package doc). Loads of one key
// are coalesced: concurrent Gets of a missing key wait for one load.
type Map[V any] struct {
	c     *otter.Cache[string, V]
	bus   *Bus
	topic string
	st    *stats.Counter
	// gen counts flushes: a load that straddles one is not kept (otter
	// discards a load straddling an Invalidate of its key, but its
	// InvalidateAll does not promise that).
	gen                              atomic.Uint64
	invalidations, flushes, bypassed atomic.Int64
	weighed                          bool
}

// NewMap returns a Map subscribed to topic on bus (nil: none). weigh (may
// be nil; needed with MaxBytes) estimates an entry's size in bytes.
func NewMap[V any](bus *Bus, topic string, o Options, weigh ...func(key string, v V) int) *Map[V] {
	if o.MaxEntries <= 0 {
		o.MaxEntries = 100_000
	}
	if o.TTL <= 0 {
		o.TTL = time.Second
	}
	m := &Map[V]{bus: bus, topic: topic, st: stats.NewCounter()}
	opts := &otter.Options[string, V]{
		MaximumSize:      o.MaxEntries,
		ExpiryCalculator: otter.ExpiryWriting[string, V](o.TTL),
		StatsRecorder:    m.st,
	}
	if o.MaxBytes > 0 && len(weigh) > 0 && weigh[0] != nil {
		w, floor := weigh[0], max(1, o.MaxBytes/int64(o.MaxEntries))
		opts.MaximumSize = 0
		opts.MaximumWeight = uint64(o.MaxBytes)
		opts.Weigher = func(key string, v V) uint32 {
			return uint32(min(max(int64(w(key, v)), floor), math.MaxUint32))
		}
		m.weighed = true
	}
	m.c = otter.Must(opts)
	if bus != nil {
		bus.Subscribe(topic, m.Invalidate, m.Flush)
	}
	return m
}

// Get returns the value of key, loading it with load on a miss. Errors
// of load are returned and not cached. load must return the same value
// for a key whichever caller runs it (callers share loads). While the bus
// is down (SetListening(false)) every Get loads and nothing is kept.
func (m *Map[V]) Get(ctx context.Context, key string, load func(ctx context.Context, key string) (V, error)) (V, error) {
	if m.bus != nil && !m.bus.cacheable(m.topic, key) {
		m.bypassed.Add(1)
		return load(ctx, key)
	}
	g := m.gen.Load()
	v, err := m.c.Get(ctx, key, otter.LoaderFunc[string, V](load))
	if m.gen.Load() != g || (m.bus != nil && !m.bus.cacheable(m.topic, key)) {
		// A flush ran meanwhile, or the key went into flux: the value
		// may have been loaded before it and stored after it. Use it for
		// this call (it was current when the call began) but do not keep
		// it.
		m.c.Invalidate(key)
	}
	return v, err
}

// Invalidate drops key; a load of key running now is discarded.
func (m *Map[V]) Invalidate(key string) {
	m.invalidations.Add(1)
	m.c.Invalidate(key)
}

// Flush drops every entry; loads running now are not kept.
func (m *Map[V]) Flush() {
	m.gen.Add(1)
	m.flushes.Add(1)
	m.c.InvalidateAll()
}

// Stats returns the Map's counters.
func (m *Map[V]) Stats() Stats {
	s := m.st.Snapshot()
	out := Stats{
		Hits: int64(s.Hits), Misses: int64(s.Misses), Evictions: int64(s.Evictions),
		Invalidations: m.invalidations.Load(), Flushes: m.flushes.Load(), Bypassed: m.bypassed.Load(),
		Entries: m.c.EstimatedSize(),
	}
	if m.weighed {
		out.Bytes = m.c.WeightedSize()
	}
	return out
}
